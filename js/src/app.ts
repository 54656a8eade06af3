/**
 * The flow view: ties wire -> view model -> layout -> drawing together and handles the user.
 * Used by the live widget (widget.ts) and by the static export (renderStatic).
 */
import type { Direction, LayoutResult } from "./layout";
import { LayoutClient } from "./layout_client";
import {
  buildTree, buildView, initialState, nodeKeyForCall, revealCall, searchCalls, stageKey,
  toggleExpanded, toggleUnfolded, type CallTree, type ViewGraph, type ViewState,
} from "./model";
import { buildScene, layoutRequest, type Scene, type SceneNode } from "./scene";
import { buildChrome, fillLegend, type Chrome, type ColorMode } from "./view/chrome";
import { download, Listeners } from "./view/dom";
import { GraphView, type NodeFill } from "./view/graph_view";
import { Inspector, type FetchStage } from "./view/inspector";
import { Minimap } from "./view/minimap";
import { moveFocus } from "./view/navigate";
import { exportSvg, svgToPng } from "./view/export";
import { statFills, statRange } from "./view/stat_colors";
import { CSS } from "./view/styles";
import { PanZoom } from "./view/zoom";
import { decodeGraph, type WireGraph } from "./wire";

export interface FlowOptions {
  fetchStage: FetchStage;
  onSelect?: (stage: string | null) => void; // the user picked a stage
  onDirection?: (dir: Direction) => void; // the user switched TB / LR
  useWorker?: boolean;
  maxInitialNodes?: number;
}

export interface PaintInfo {
  reason: string;
  ms: number; // from the state change to the painted frame
  layoutMs: number;
  nodes: number;
  laidOut: number;
}

export class FlowApp {
  readonly root: HTMLElement;
  private ui: Chrome;
  private graphView: GraphView;
  private zoom: PanZoom;
  private minimap: Minimap;
  private inspector: Inspector;
  private layout: LayoutClient;
  private listeners = new Listeners();
  private tree: CallTree | null = null;
  private state: ViewState = { expanded: new Set(), unfolded: new Set() };
  private view: ViewGraph | null = null;
  private scene: Scene | null = null;
  private dir: Direction = "TB";
  private colorMode: ColorMode = "type";
  private selectedId: string | null = null;
  private focusKey: string | null = null;
  private needsFit = true;
  private generation = 0;
  private matches: number[] = [];
  private matchCursor = -1;
  private searchTimer = 0;
  private hintTimer = 0;
  private resize: ResizeObserver | null = null;
  private disposed = false;

  constructor(private readonly el: HTMLElement, private readonly opts: FlowOptions) {
    this.ui = buildChrome(CSS);
    this.root = this.ui.root;
    this.layout = new LayoutClient(opts.useWorker ?? true);
    this.graphView = new GraphView(
      {
        activate: (n) => this.activate(n),
        toggle: (key) => this.toggle(key),
        background: () => this.setFocus(null),
      },
      () => this.zoom.suppressClick,
    );
    this.ui.canvas.prepend(this.graphView.svg);
    this.zoom = new PanZoom(this.ui.canvas, (t) => this.onTransform(t), () => this.showHint());
    this.minimap = new Minimap((x, y) => this.centerOn(x, y, 0));
    this.ui.canvas.append(this.minimap.canvas);
    this.inspector = new Inspector(opts.fetchStage, () => this.onInspectorClosed());
    this.ui.main.append(this.inspector.el);
    this.bindUi();
    el.append(this.root);
    if (typeof ResizeObserver !== "undefined") {
      this.resize = new ResizeObserver(() => this.onResize());
      this.resize.observe(this.ui.canvas);
    }
  }

  private bindUi() {
    const L = this.listeners;
    const ui = this.ui;
    L.on(ui.fit, "click", () => this.fit());
    L.on(ui.reset, "click", () => {
      if (!this.tree) return;
      this.needsFit = true;
      void this.setState(initialState(this.tree, this.opts.maxInitialNodes), "reset");
    });
    L.on(ui.dirTB, "click", () => this.setDirection("TB", true));
    L.on(ui.dirLR, "click", () => this.setDirection("LR", true));
    L.on(ui.color, "change", () => this.setColorMode(ui.color.value as ColorMode));
    L.on(ui.svg, "click", () => download(new Blob([this.exportSvg()], { type: "image/svg+xml" }), `${this.fileStem()}.svg`));
    L.on(ui.png, "click", () => void this.exportPng().then((b) => download(b, `${this.fileStem()}.png`)));
    L.on(ui.search, "input", () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => this.runSearch(), 120);
    });
    L.on(ui.search, "keydown", (e: KeyboardEvent) => {
      if (e.key === "Enter") {
        e.preventDefault();
        this.nextMatch(e.shiftKey ? -1 : 1);
      } else if (e.key === "Escape") {
        ui.search.value = "";
        this.runSearch();
        ui.canvas.focus();
      }
      e.stopPropagation();
    });
    L.on(this.root, "keydown", (e: KeyboardEvent) => this.onKey(e));
    L.on(ui.canvas, "pointerdown", () => {
      if (document.activeElement !== ui.canvas && !ui.canvas.contains(document.activeElement)) ui.canvas.focus({ preventScroll: true });
    });
  }

  // -- data ---------------------------------------------------------------------------

  /** Show a graph (the graph traitlet, decoded or not). */
  setGraph(raw: unknown) {
    let graph: WireGraph;
    try {
      graph = decodeGraph(raw);
    } catch (err) {
      this.fatal(err);
      return;
    }
    this.tree = buildTree(graph);
    this.ui.title.textContent = graph.model;
    this.inspector.close();
    this.needsFit = true;
    this.setState(initialState(this.tree, this.opts.maxInitialNodes), "graph");
    if (this.selectedId) this.selectStage(this.selectedId, false);
  }

  private fatal(err: unknown) {
    const box = document.createElement("div");
    box.className = "nfw-fatal";
    box.textContent = `neural_flow_widget cannot show this graph.\n${(err as Error)?.message ?? String(err)}`;
    this.ui.canvas.replaceChildren(box);
  }

  private async setState(state: ViewState, reason: string, anchor?: { key: string; box: [number, number, number, number] }) {
    const tree = this.tree;
    if (!tree) return;
    const t0 = performance.now();
    const gen = ++this.generation;
    this.state = state;
    const view = buildView(tree, state);
    const busy = window.setTimeout(() => (this.ui.busy.hidden = false), 150);
    let lay: LayoutResult;
    const tl = performance.now();
    try {
      lay = await this.layout.layout(layoutRequest(view, this.dir));
    } catch (err) {
      clearTimeout(busy);
      this.fatal(err);
      return;
    }
    clearTimeout(busy);
    if (gen !== this.generation || this.disposed) return;
    const layoutMs = performance.now() - tl;
    this.ui.busy.hidden = true;
    this.view = view;
    this.scene = buildScene(tree, view, lay, this.dir);
    this.graphView.setScene(this.scene, this.fills());
    this.minimap.setScene(this.scene);
    this.syncMarks();
    const stages = tree.graph.calls.length;
    this.ui.counts.textContent = `${stages} stage${stages === 1 ? "" : "s"} · ${this.scene.nodes.filter((n) => n.kind === "stage" || n.kind === "fold").length} shown`;
    fillLegend(this.ui.legend, this.colorMode, this.statRange());
    if (this.needsFit) this.initialFit();
    else if (anchor) this.keepAnchor(anchor.key, anchor.box);
    else this.onTransform(this.zoom.t);
    requestAnimationFrame(() =>
      requestAnimationFrame(() => {
        if (gen !== this.generation) return;
        const info: PaintInfo = { reason, ms: performance.now() - t0, layoutMs, nodes: this.scene?.nodes.length ?? 0, laidOut: lay.laidOut };
        this.el.dispatchEvent(new CustomEvent("nfw-painted", { detail: info }));
      }),
    );
  }

  // -- view -------------------------------------------------------------------------------

  private onTransform(t: { x: number; y: number; k: number }) {
    const vp = this.zoom.viewport();
    this.graphView.transform(t, vp);
    this.minimap.setViewport(vp);
  }

  private onResize() {
    const w = this.ui.canvas.clientWidth;
    if (w > 0 && this.needsFit && this.scene) this.initialFit();
    else if (this.scene) this.onTransform(this.zoom.t);
    this.inspector.redraw();
  }

  fit(ms = 280) {
    const scene = this.scene;
    if (!scene) return;
    if (this.ui.canvas.clientWidth === 0) return; // not attached yet: the resize observer fits later
    this.needsFit = false;
    this.zoom.animateTo(this.zoom.fitBox(0, 0, scene.width, scene.height), ms);
  }

  /**
   * The first view: the whole graph when it fits at a readable scale; else readable text
   * from the start of the network (top in TB, left in LR), the rest a pan away.
   */
  private initialFit() {
    const scene = this.scene;
    if (!scene || this.ui.canvas.clientWidth === 0) return;
    const READABLE = 0.8;
    const all = this.zoom.fitBox(0, 0, scene.width, scene.height);
    if (all.k >= READABLE) return this.fit(0);
    this.needsFit = false;
    const W = this.ui.canvas.clientWidth;
    const H = this.ui.canvas.clientHeight;
    const m = 24;
    const tb = this.dir === "TB";
    const across = tb ? scene.width : scene.height;
    const room = tb ? W : H;
    const k = Math.max(0.45, Math.min(READABLE, (room - 2 * m) / Math.max(across, 1)));
    const offAcross = (room - across * k) / 2;
    this.zoom.set(tb ? { x: offAcross, y: m, k } : { x: m, y: offAcross, k });
  }

  private centerOn(x: number, y: number, ms = 250, k = this.zoom.t.k) {
    const W = this.ui.canvas.clientWidth || 800;
    const H = this.ui.canvas.clientHeight || 500;
    this.zoom.animateTo({ x: W / 2 - x * k, y: H / 2 - y * k, k }, ms);
  }

  private ensureVisible(key: string) {
    const n = this.graphView.node(key);
    if (!n) return;
    const [vx, vy, vw, vh] = this.zoom.viewport();
    const [x, y, w, h] = n.box;
    if (x < vx || y < vy || x + w > vx + vw || y + h > vy + vh) this.centerOn(x + w / 2, y + h / 2, 250, Math.max(this.zoom.t.k, 0.6));
  }

  /** After expanding or collapsing, keep the toggled thing where the user was looking. */
  private keepAnchor(key: string, before: [number, number, number, number]) {
    const after = this.scene && (this.graphView.node(key)?.box ?? this.scene.clusters.find((c) => c.key === key)?.box);
    if (!after) return this.onTransform(this.zoom.t);
    const { k } = this.zoom.t;
    const dx = (before[0] + before[2] / 2 - (after[0] + after[2] / 2)) * k;
    const dy = (before[1] - after[1]) * k;
    this.zoom.set({ x: this.zoom.t.x + dx, y: this.zoom.t.y + dy, k });
    const [vx, vy, vw, vh] = this.zoom.viewport();
    const [x, y, w, h] = after;
    if (x < vx || y < vy || x + w > vx + vw || y + h > vy + vh) {
      const fitK = this.zoom.fitBox(x, y, w, h, k).k;
      this.zoom.animateTo(this.zoom.fitBox(x, y, w, h, Math.min(k, Math.max(fitK, 0.35))), 260);
    }
  }

  /** Top-to-bottom or left-to-right; lays the view out again. */
  setDirection(dir: Direction, fromUser = false) {
    if (dir === this.dir) return;
    this.dir = dir;
    this.needsFit = true;
    this.ui.dirTB.setAttribute("aria-pressed", String(dir === "TB"));
    this.ui.dirLR.setAttribute("aria-pressed", String(dir === "LR"));
    if (fromUser) this.opts.onDirection?.(dir);
    void this.setState(this.state, "direction");
  }

  private setColorMode(mode: ColorMode) {
    this.colorMode = mode;
    this.ui.color.value = mode;
    this.graphView.setFills(this.fills());
    this.syncMarks();
    fillLegend(this.ui.legend, mode, this.statRange());
  }

  private statRange(): [number, number] | null {
    return this.tree && this.view && this.scene ? statRange(this.tree, this.view, this.scene, this.colorMode) : null;
  }

  private fills(): Map<string, NodeFill> | null {
    return this.tree && this.view && this.scene ? statFills(this.tree, this.view, this.scene, this.colorMode) : null;
  }

  private showHint() {
    this.ui.hint.classList.add("nfw-show");
    clearTimeout(this.hintTimer);
    this.hintTimer = window.setTimeout(() => this.ui.hint.classList.remove("nfw-show"), 1200);
  }

  // -- interaction ------------------------------------------------------------------------

  private activate(n: SceneNode) {
    this.setFocus(n.key, false);
    if (n.kind === "fold") return this.toggle(n.key);
    if (n.kind === "stage") this.selectStage(n.id, true);
  }

  /** Expand / collapse / unfold / refold by node or cluster key. */
  toggle(key: string) {
    const tree = this.tree;
    if (!tree) return;
    const id = key.slice(2);
    const before = this.graphView.node(key)?.box ?? this.scene?.clusters.find((c) => c.key === key)?.box;
    let next: ViewState = this.state;
    let anchorKey = key;
    if (key.startsWith("s:") || key.startsWith("c:")) {
      const call = tree.byId.get(id);
      if (call === undefined) return;
      next = toggleExpanded(tree, this.state, call);
      anchorKey = key.startsWith("s:") ? `c:${id}` : `s:${id}`;
    } else if (key.startsWith("f:") || key.startsWith("r:")) {
      next = toggleUnfolded(this.state, id);
      anchorKey = key.startsWith("f:") ? `r:${id}` : `f:${id}`;
    }
    if (next === this.state) return;
    if (this.focusKey === key) this.focusKey = anchorKey.startsWith("c:") || anchorKey.startsWith("r:") ? null : anchorKey;
    void this.setState(next, key.startsWith("s:") || key.startsWith("f:") ? "expand" : "collapse", before ? { key: anchorKey, box: before } : undefined);
  }

  /** Select a stage (by id), reveal it and open the inspector. */
  selectStage(id: string | null, fromUser: boolean) {
    const tree = this.tree;
    this.selectedId = id;
    if (!tree || id === null) {
      this.inspector.close();
      this.syncMarks();
      return;
    }
    const call = tree.byId.get(id);
    if (call === undefined) return;
    if (fromUser) this.opts.onSelect?.(id);
    this.inspector.open(tree.graph.calls[call]);
    if (!this.view) return;
    if (!this.view.byKey.has(stageKey(id))) {
      void this.setState(revealCall(tree, this.state, call), "reveal").then(() => {
        this.setFocus(stageKey(id));
      });
      return;
    }
    this.syncMarks();
    if (!fromUser) this.setFocus(stageKey(id));
  }

  private onInspectorClosed() {
    if (this.selectedId !== null) {
      this.selectedId = null;
      this.opts.onSelect?.(null);
    }
    this.syncMarks();
    this.ui.canvas.focus({ preventScroll: true });
  }

  private syncMarks() {
    const tree = this.tree;
    const view = this.view;
    if (!tree || !view) return;
    const call = this.selectedId === null ? undefined : tree.byId.get(this.selectedId);
    this.graphView.setSelected(call === undefined ? null : nodeKeyForCall(tree, view, call));
    this.graphView.setFocused(this.focusKey && view.byKey.has(this.focusKey) ? this.focusKey : null);
    this.graphView.setMatches(this.matches.map((c) => nodeKeyForCall(tree, view, c)).filter((k): k is string => k !== null));
  }

  private setFocus(key: string | null, scroll = true) {
    this.focusKey = key;
    this.graphView.setFocused(key);
    if (key && scroll) this.ensureVisible(key);
  }

  private onKey(e: KeyboardEvent) {
    const target = e.target as HTMLElement;
    if (e.key !== "Escape" && target.closest("input,select,textarea")) return;
    if (e.key === "Escape") {
      if (this.inspector.stage) this.inspector.close();
      else this.setFocus(null);
      e.preventDefault();
      return;
    }
    if (!this.scene || !this.ui.canvas.contains(target) && target !== this.ui.canvas) return;
    const focus = this.focusKey && this.graphView.node(this.focusKey) ? this.focusKey : null;
    if (e.key === "Enter" || e.key === " ") {
      const n = focus && this.graphView.node(focus);
      if (n) this.activate(n);
    } else if ((e.key === "+" || e.key === "=") && focus) {
      this.toggle(focus);
    } else if (e.key === "-" && focus) {
      const path = this.view?.byKey.get(focus)?.path ?? [];
      const parent = path[path.length - 1];
      if (parent) this.toggle(parent);
    } else if (e.key === "f" || e.key === "F") {
      this.fit();
    } else if (e.key.startsWith("Arrow")) {
      const next = moveFocus(this.graphView, this.scene, focus, e.key, this.dir);
      if (next) this.setFocus(next);
    } else {
      return;
    }
    e.preventDefault();
  }

  // -- search ---------------------------------------------------------------------------

  private runSearch() {
    const tree = this.tree;
    if (!tree) return;
    const q = this.ui.search.value;
    this.matches = searchCalls(tree, q);
    this.matchCursor = -1;
    this.ui.searchCount.textContent = q.trim() ? `${this.matches.length}${this.matches.length >= 200 ? "+" : ""} match${this.matches.length === 1 ? "" : "es"}` : "";
    this.syncMarks();
    if (!this.view || !this.scene || !this.matches.length) return;
    const keys = new Set(this.matches.map((c) => nodeKeyForCall(tree, this.view!, c)).filter((k): k is string => k !== null));
    const boxes = [...keys].map((k) => this.graphView.node(k)?.box).filter((b) => b !== undefined);
    if (!boxes.length) return;
    const x0 = Math.min(...boxes.map((b) => b[0]));
    const y0 = Math.min(...boxes.map((b) => b[1]));
    const x1 = Math.max(...boxes.map((b) => b[0] + b[2]));
    const y1 = Math.max(...boxes.map((b) => b[1] + b[3]));
    this.zoom.animateTo(this.zoom.fitBox(x0, y0, x1 - x0, y1 - y0, 1));
  }

  /** Step to the next search match, unfolding and expanding what hides it. */
  private nextMatch(step: number) {
    const tree = this.tree;
    if (!tree || !this.matches.length) return;
    this.matchCursor = (this.matchCursor + step + this.matches.length) % this.matches.length;
    const call = this.matches[this.matchCursor];
    const key = stageKey(tree.graph.calls[call].id);
    const go = () => {
      this.syncMarks();
      this.setFocus(key, false);
      const n = this.graphView.node(key);
      if (n) this.centerOn(n.box[0] + n.box[2] / 2, n.box[1] + n.box[3] / 2, 280, Math.max(this.zoom.t.k, 0.8));
    };
    if (this.view?.byKey.has(key)) go();
    else void this.setState(revealCall(tree, this.state, call), "reveal").then(go);
    this.ui.searchCount.textContent = `${this.matchCursor + 1} / ${this.matches.length}`;
  }

  // -- export -----------------------------------------------------------------------------

  private fileStem(): string {
    return (this.tree?.graph.model ?? "graph").replace(/[^\w.-]+/g, "_");
  }

  /** The whole laid-out graph as an SVG document, in the current theme's colours. */
  exportSvg(): string {
    return exportSvg(this.graphView, this.root);
  }

  /** The same as a PNG (2x, capped at 8192 px a side). */
  exportPng(scale = 2): Promise<Blob> {
    return svgToPng(this.exportSvg(), scale);
  }

  dispose() {
    this.disposed = true;
    this.generation++;
    clearTimeout(this.searchTimer);
    clearTimeout(this.hintTimer);
    this.resize?.disconnect();
    this.listeners.dispose();
    this.zoom.dispose();
    this.graphView.dispose();
    this.minimap.dispose();
    this.inspector.dispose();
    this.layout.dispose();
    this.root.remove();
  }
}
