/**
 * The user's controls around the flow view: toolbar buttons, search (type to highlight,
 * Enter to step through matches), and the keyboard. The keys are heard at the widget's root,
 * wherever focus is inside it but in a field (the search box, a select, a text area); the
 * widget takes focus when it is first shown (not from a field being typed in: a notebook cell
 * being edited keeps its keys), and a click on a control (Play, the toolbar's buttons, the
 * inspector) gives it back to the graph. They drive FlowApp through the small ControlsHost
 * surface below.
 */
import type { Direction } from "../layout/layout";
import type { CallTree } from "../model/tree";
import { nodeKeyForCall, searchCalls, stageKey, type ViewGraph } from "../model/view_model";
import type { Scene, SceneNode } from "../scene/types";
import type { Camera } from "../view/camera";
import type { Chrome, ColorMode } from "../view/chrome";
import { download, Listeners } from "../view/dom";
import type { GraphView } from "../view/graph_view";
import type { Lecture } from "./lecture";
import { moveFocus } from "../view/navigate";
import { at } from "../wire_check";

export interface ControlsHost {
  readonly ui: Chrome;
  readonly graphView: GraphView;
  readonly camera: Camera;
  readonly lecture: Lecture;
  /** The graph on screen now, or null before the first paint. */
  shown(): { tree: CallTree; view: ViewGraph; scene: Scene; dir: Direction } | null;
  focused(): string | null;
  setFocus(key: string | null, scroll?: boolean): void;
  activate(node: SceneNode): void;
  toggle(key: string): void;
  fit(): void;
  reset(): void;
  setDirection(dir: Direction, fromUser: boolean): void;
  setColorMode(mode: ColorMode): void;
  /** Close the inspector; false when it was not open. */
  closeInspector(): boolean;
  /** Expand and unfold what hides a call; resolves once it is painted. */
  reveal(call: number): Promise<void>;
  setMatches(calls: number[]): void;
  exportSvg(): string;
  exportPng(): Promise<Blob>;
  /** Select a stage by id and open its inspector (fromUser: tell the kernel). */
  selectStage(id: string | null, fromUser: boolean): void;
  selected(): string | null;
  /** The context menu of a drawn node or group (what if it were switched off). */
  readonly lab: { interventions: { openFor(key: string | null): void } };
}

/** Where keys are typed: they are theirs. */
const FIELDS = "input, select, textarea, [contenteditable]:not([contenteditable='false'])";
/** A control of its own: Space and Enter on it press it. */
const CONTROLS = "button, a[href], [tabindex], [role='button']";

function typing(el: Element | null): boolean {
  return !!el && ((el as HTMLElement).isContentEditable || !!el.closest(FIELDS));
}

export class Controls {
  private listeners = new Listeners();
  private matches: number[] = [];
  private cursor = -1;
  private timer = 0;

  constructor(private readonly host: ControlsHost) {
    const L = this.listeners;
    const ui = host.ui;
    L.on(ui.fit, "click", () => host.fit());
    L.on(ui.reset, "click", () => host.reset());
    L.on(ui.helpButton, "click", () => this.toggleHelp());
    L.on(ui.dirTB, "click", () => host.setDirection("TB", true));
    L.on(ui.dirLR, "click", () => host.setDirection("LR", true));
    L.on(ui.color, "change", () => host.setColorMode(ui.color.value as ColorMode));
    L.on(ui.svg, "click", () =>
      download(new Blob([host.exportSvg()], { type: "image/svg+xml" }), `${this.fileStem()}.svg`),
    );
    L.on(ui.png, "click", () => void host.exportPng().then((b) => download(b, `${this.fileStem()}.png`)));
    L.on(ui.search, "input", () => {
      clearTimeout(this.timer);
      this.timer = window.setTimeout(() => this.search(), 120);
    });
    L.on(ui.search, "keydown", (e: KeyboardEvent) => {
      if (e.key === "Enter") {
        e.preventDefault();
        this.step(e.shiftKey ? -1 : 1);
      } else if (e.key === "Escape") {
        ui.search.value = "";
        this.search();
        ui.canvas.focus();
      }
      e.stopPropagation();
    });
    L.on(ui.root, "keydown", (e: KeyboardEvent) => this.onKey(e));
    // A click (a pointer's, not a key's) on a control or on the panels: the keys back to the graph.
    L.on(ui.root, "click", (e: MouseEvent) => {
      const t = e.target as Element;
      if (e.detail === 0 || typing(t) || t.closest("label") || !ui.root.contains(t)) return;
      if (document.activeElement !== ui.canvas) ui.canvas.focus({ preventScroll: true });
    });
    L.on(ui.canvas, "pointerdown", () => {
      if (document.activeElement !== ui.canvas && !ui.canvas.contains(document.activeElement))
        ui.canvas.focus({ preventScroll: true });
    });
  }

  private fileStem(): string {
    return (this.host.shown()?.tree.graph.model ?? "graph").replace(/[^\w.-]+/g, "_");
  }

  /**
   * Select a stage, drawn and centred, with its inspector open (the banners' buttons);
   * `shown`: it is drawn in the current state, else it is revealed first.
   */
  showStage(id: string, shown: boolean) {
    const { host } = this;
    const centre = () => {
      host.selectStage(id, true);
      // After the inspector has taken its width (the resize moves the view once).
      requestAnimationFrame(() =>
        requestAnimationFrame(() => {
          const n = host.graphView.node(stageKey(id));
          if (!n || host.selected() !== id) return;
          host.setFocus(n.key, false);
          host.camera.centerOn(n.box[0] + n.box[2] / 2, n.box[1] + n.box[3] / 2, 280, Math.max(host.camera.t.k, 0.8));
        }),
      );
    };
    const call = host.shown()?.tree.byId.get(id);
    if (shown || call === undefined) centre();
    else void host.reveal(call).then(centre);
  }

  /** Search again, without moving the view (after a new graph: matches are call indices of the old one). */
  refresh() {
    this.search(false);
  }

  // -- search ---------------------------------------------------------------------------

  private search(move = true) {
    const { host } = this;
    const shown = host.shown();
    const q = host.ui.search.value;
    this.matches = shown ? searchCalls(shown.tree, q) : [];
    this.cursor = -1;
    const n = this.matches.length;
    host.ui.searchCount.textContent = q.trim() ? `${n}${n >= 200 ? "+" : ""} match${n === 1 ? "" : "es"}` : "";
    host.setMatches(this.matches);
    if (!shown || !n || !move) return;
    const keys = new Set(
      this.matches.map((c) => nodeKeyForCall(shown.tree, shown.view, c)).filter((k): k is string => k !== null),
    );
    host.camera.showBoxes([...keys].map((k) => host.graphView.node(k)?.box).filter((b) => b !== undefined));
  }

  /** Step to the next search match, unfolding and expanding what hides it. */
  private step(by: number) {
    const { host } = this;
    const shown = host.shown();
    if (!shown || !this.matches.length) return;
    this.cursor = (this.cursor + by + this.matches.length) % this.matches.length;
    const call = at(this.matches, this.cursor);
    const id = at(shown.tree.graph.calls, call).id;
    const key = stageKey(id);
    const go = () => {
      host.setMatches(this.matches);
      host.setFocus(key, false);
      host.selectStage(id, true); // and open it
      const n = host.graphView.node(key);
      if (n)
        host.camera.centerOn(n.box[0] + n.box[2] / 2, n.box[1] + n.box[3] / 2, 280, Math.max(host.camera.t.k, 0.8));
    };
    if (shown.view.byKey.has(key)) go();
    else void host.reveal(call).then(go);
    host.ui.searchCount.textContent = `${this.cursor + 1} / ${this.matches.length}`;
  }

  // -- keyboard -------------------------------------------------------------------------

  /** The widget is shown: take the keys, unless something is being typed into (a notebook
   * cell being edited, a field) or the widget is off screen. */
  takeKeys() {
    const { canvas } = this.host.ui;
    const active = document.activeElement;
    if (typing(active) || (active && active !== document.body && this.host.ui.root.contains(active))) return;
    const r = canvas.getBoundingClientRect();
    if (
      r.width <= 0 ||
      r.bottom <= 0 ||
      r.top >= (window.innerHeight || 0) ||
      r.right <= 0 ||
      r.left >= (window.innerWidth || 0)
    )
      return;
    canvas.focus({ preventScroll: true });
  }

  /** A key the graph takes is the graph's alone: the page, or a notebook around the widget
   * (JupyterLab's command mode binds the arrows), does not act on it as well. */
  private onKey(e: KeyboardEvent) {
    const { host } = this;
    const target = e.target as HTMLElement;
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    // Shift + Enter runs a notebook cell; shifted arrows and Space are not the graph's either
    if (e.shiftKey && (e.key === "Enter" || e.key === " " || e.key.startsWith("Arrow"))) return;
    const taken = () => {
      e.preventDefault();
      e.stopPropagation();
    };
    if ((e.key === "ContextMenu" || (e.shiftKey && e.key === "F10")) && !typing(target)) {
      host.lab.interventions.openFor(host.focused() ?? host.graphView.currentKey);
      return taken();
    }
    if (e.key === "Escape") {
      // the nearest thing first: the help, playback, the inspector, the presentation, the focus
      if (!host.ui.help.hidden) this.toggleHelp(false);
      else if (host.lecture.player.active) host.lecture.player.stop();
      else if (host.closeInspector()) return taken();
      else if (host.lecture.presenter.on) host.lecture.presenter.set(false, true);
      else host.setFocus(null);
      return taken();
    }
    // Keys typed into fields are theirs; Space and Enter on a control press it.
    if (typing(target)) return;
    if (e.key === "?") {
      this.toggleHelp();
      return taken();
    }
    const control = target.closest(CONTROLS);
    if ((e.key === " " || e.key === "Enter") && control && control !== host.ui.canvas) return;
    const shown = host.shown();
    if (!shown) return;
    const focusKey = host.focused();
    const focus = focusKey && host.graphView.node(focusKey) ? focusKey : null;
    if (e.key === " ") {
      host.lecture.player.toggle();
    } else if (host.lecture.player.active && (e.key === "ArrowLeft" || e.key === "ArrowRight")) {
      host.lecture.player.step(e.key === "ArrowLeft" ? -1 : 1);
    } else if (e.key === "Enter") {
      const n = focus && host.graphView.node(focus);
      if (n) host.activate(n);
    } else if ((e.key === "+" || e.key === "=") && focus) {
      host.toggle(focus);
    } else if (e.key === "-" && focus) {
      const path = shown.view.byKey.get(focus)?.path ?? [];
      const parent = path[path.length - 1];
      if (parent) host.toggle(parent);
    } else if (e.key === "f" || e.key === "F") {
      host.fit();
    } else if (e.key === "/") {
      host.ui.search.focus();
    } else if (e.key.startsWith("Arrow")) {
      const next = moveFocus(host.graphView, shown.scene, focus, e.key, shown.dir);
      if (next) host.setFocus(next);
    } else {
      return;
    }
    taken();
  }

  /** Show or hide the keyboard help. */
  toggleHelp(show = this.host.ui.help.hidden) {
    const { help, helpButton } = this.host.ui;
    help.hidden = !show;
    helpButton.setAttribute("aria-expanded", String(show));
  }

  dispose() {
    clearTimeout(this.timer);
    this.listeners.dispose();
  }
}
