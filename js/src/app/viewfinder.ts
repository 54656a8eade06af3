/**
 * Where the flow view looks as things change (the camera, view/camera.ts, makes the moves):
 * once a scene is drawn, a first view when one is owed, and after an action (open, fold, a
 * step of playback, Data, Present) the whole graph where it fits at the camera's least
 * scale (names 12 px high), else the part around the toggled group, the step or the
 * selection at that scale; when the canvas or the legend changes size (the inspector, the transport bar, the
 * page), the whole graph again, or the selected node and its neighbours kept in view; and
 * how wide the inspector opens, so that a graph shown whole keeps its names readable.
 */
import { FIT_MARGIN } from "../layout/flow";
import type { Box, Direction } from "../layout/layout";
import { READ_K } from "../scene/scene";
import type { Scene } from "../scene/types";
import type { Camera } from "../view/camera";
import type { Chrome } from "../view/chrome";
import type { GraphView } from "../view/graph_view";
import { drawLegend, legendShapes, type LegendShape } from "../view/legend_shapes";
import { MIN_K } from "../view/zoom";

/** The reasons for a state that end with the whole graph in view where it fits at the
 * camera's least scale (a fresh first view, "graph" "reset", asks for READ_K; "present" and
 * "pictures" frame afresh too), else with the part of it around what the action was about;
 * "direction" shows the whole however small (as Fit): a U-Net laid on its side is wider than
 * the canvas at READ_K, and a user who turned it wants to see it turned. */
const ACTIONS = new Set(["expand", "collapse", "playback", "present", "pictures", "direction"]);
export const INSPECTOR_MIN = 360; // the inspector's least width in its CSS

export interface ViewfinderHost {
  readonly ui: Chrome;
  readonly camera: Camera;
  readonly graphView: GraphView;
  readonly inspector: HTMLElement;
  scene(): Scene | null;
  dir(): Direction;
  /** The node that shows the selected stage, if any. */
  selectedKey(): string | null;
  /** Draw the graph at the camera's transform as it is. */
  redraw(): void;
  /** Put the transport of playback where it belongs now (app/lecture.ts dock): on top of the
   * inspector while it is open, else above the canvas. */
  dock(): void;
  /** Lay the view out again if the canvas outgrew its layout (app/framing.ts outgrown), the
   * step, the selection or the toggled thing kept where it is on the canvas (`anchor`);
   * `focus`: playback's step, kept open where others fold to fit (app/framing.ts lay). */
  relay(anchor?: { key: string; box: Box }, focus?: string): void;
}

/** How long the canvas's size must hold still before the view is laid out for it again. */
const RELAY_MS = 150;

export class Viewfinder {
  /** A layout is in flight: the scene it brings is framed for the canvas as it is then. The
   * root carries `data-settling` meanwhile (tests wait for none). */
  get laying(): boolean {
    return this.host.ui.root.hasAttribute("data-settling");
  }
  set laying(on: boolean) {
    this.host.ui.root.toggleAttribute("data-settling", on);
  }
  private firstLeast = READ_K; // the least scale of the first view the camera owes (needsFit)
  private width = 0;
  private height = 0;
  private toggled: string | null = null; // the group or node opened or folded last
  private partKey: string | null = null; // what the part shown after an action centres on
  private relayTimer = 0;
  private legend: LegendShape[] = []; // the legend's shapes (view/legend_shapes.ts), as the camera has them
  private growWhole = false; // the inspector narrowed: the canvas grown shows the whole graph (a step shown meanwhile or not)

  constructor(private readonly host: ViewfinderHost) {
    host.camera.onLegendShape = (i) => drawLegend(host.ui.legend, this.legend[i]); // as a whole view chose
  }

  /** A scene was drawn for `reason`; `anchor`: the toggled thing, kept in place on the way.
   * After an action: the whole graph where it fits with names MIN_NAME_PX high, else the
   * part of it around the toggled thing, the step of playback or the selection at that scale. */
  drawn(scene: Scene, reason: string, anchor?: { key: string; box: Box }) {
    const { camera, graphView } = this.host;
    this.growWhole = false;
    if (anchor && reason !== "canvas") this.toggled = anchor.key;
    if (camera.needsFit) {
      this.firstLeast = reason === "direction" ? MIN_K : ACTIONS.has(reason) ? camera.least : READ_K;
      camera.firstView(scene, this.host.dir(), this.firstLeast);
      if (!ACTIONS.has(reason) || camera.framed) return;
      const focus = this.focus(); // (at 12 px while presenting too, as camera.firstView shows)
      if (focus) camera.showPart(scene, focus, this.host.dir(), 0, READ_K);
      return;
    }
    this.partKey = anchor?.key ?? this.focusKey();
    const after = anchor && (graphView.node(anchor.key)?.box ?? scene.clusters.find((c) => c.key === anchor.key)?.box);
    const chosen = camera.framed || camera.parted; // the view the camera chose, not moved since
    if (anchor && after) camera.keepAnchor(anchor.box, after, scene);
    // (laid out again for a canvas that changed size: the whole where it now fits, else the
    // part kept where it was)
    const whole = ACTIONS.has(reason) || reason === "canvas" || camera.framed;
    if (whole && camera.showWhole(scene, camera.least, 260)) return;
    // laid out for the canvas beside the inspector and still too wide: the inspector gives
    // way where that shows it whole (its canvas then grows, and the view is framed for it)
    if (whole && this.narrowInspector(scene)) return;
    // (the part kept where it was, but never smaller than names read: an opened block wider
    // than the canvas beside the inspector is shown in part at that scale, not whole smaller)
    const small = reason === "canvas" && camera.zoom.target.k < camera.readK - 1e-6;
    if (ACTIONS.has(reason) || small) camera.showPart(scene, after ?? this.focus(), this.host.dir());
    // (laid out again where the camera chose the view: at the scale it is at, around the node
    // kept in place or from the start, no more empty canvas beyond the graph's ends than that
    // needs; the inspector closed after playback gave back a first view that does not fit,
    // laid out wider than the step's was. A node the user centred stays centred.)
    else if (reason === "canvas" && chosen)
      camera.showPart(scene, after ?? null, this.host.dir(), 260, camera.zoom.target.k);
    else if (!(anchor && after)) this.host.redraw();
  }

  /** What a part of the graph shown after an action centres on: the step of playback, else
   * the selected node, else the group or node toggled last (Present after opening a block). */
  private focus(): Box | null {
    this.partKey = this.focusKey();
    return this.boxOf(this.partKey);
  }

  private focusKey(): string | null {
    return this.host.graphView.currentKey ?? this.host.selectedKey() ?? this.toggled;
  }

  /** A node's or a group's box in the scene drawn. */
  private boxOf(key: string | null): Box | null {
    if (!key) return null;
    return this.host.graphView.node(key)?.box ?? this.host.scene()?.clusters.find((c) => c.key === key)?.box ?? null;
  }

  /** The canvas or the legend changed size (read here, after the browser laid them out). */
  resized() {
    const {
      ui: { canvas, legend },
      camera,
    } = this.host;
    const width = canvas.clientWidth;
    const height = canvas.clientHeight;
    camera.zoom.setSize(width, height);
    const grew = this.width > 0 ? width - this.width : 0;
    const taller = this.height > 0 ? height - this.height : 0;
    this.width = width;
    this.height = height;
    const c = canvas.getBoundingClientRect();
    this.legend = legendShapes(legend, c);
    const moved = camera.setLegend(this.legend.map((s) => s.box));
    const scene = this.host.scene();
    if (scene && !this.laying) {
      if (camera.attached && camera.needsFit) camera.firstView(scene, this.host.dir(), this.firstLeast);
      else if (grew || taller || moved) {
        const whole = this.growWhole || camera.showsAll(scene, width - grew);
        this.growWhole = false;
        camera.resized(scene, grew, whole, this.keep(), this.host.dir(), grew || camera.zoom.moving ? 200 : 0);
      }
      this.host.redraw(); // the viewport changed even where the transform did not (the minimap's note)
    } else if (!scene) return;
    // a canvas much wider or narrower (the inspector opened or closed, the page resized) wants
    // the view wrapped (or its level chosen) for it again, once its size has settled (the busy
    // mark carries data-settling until then: tests wait for it); so does one that changed while
    // a view was being laid out (for the canvas as it was: playback's end, the inspector closed)
    window.clearTimeout(this.relayTimer);
    this.host.ui.busy.setAttribute("data-settling", "");
    this.relayTimer = window.setTimeout(() => this.relay(), RELAY_MS);
  }

  private relay() {
    if (this.laying || this.host.camera.zoom.moving) {
      this.relayTimer = window.setTimeout(() => this.relay(), RELAY_MS);
      return;
    }
    this.host.ui.busy.removeAttribute("data-settling");
    const key = this.focusKey();
    const box = this.boxOf(key);
    this.host.relay(key && box ? { key, box } : undefined, this.host.graphView.currentKey ?? undefined);
  }

  dispose() {
    window.clearTimeout(this.relayTimer);
  }

  /** The step of playback, else what the part an action showed centres on (while it is
   * shown), else the selected node, and its neighbours: kept in view when the canvas shrinks. */
  private keep(): { box: Box; around: Box[] } | null {
    const { graphView, camera } = this.host;
    const part = !graphView.currentKey && camera.parted ? this.boxOf(this.partKey) : null;
    if (part) return { box: part, around: [] };
    const key = graphView.currentKey ?? this.host.selectedKey();
    const n = key ? graphView.node(key) : undefined;
    if (!key || !n) return null;
    const around = graphView.edgesAt(key).map((e) => graphView.node(e.src === key ? e.dst : e.src)?.box);
    return { box: n.box, around: around.filter((b): b is Box => b !== undefined) };
  }

  /**
   * Open the inspector (`open` does). When it opens over a graph shown whole at the readable
   * scale, or over the part of it an action showed, it takes no more width than leaves the
   * whole graph in view at that scale where it can (down to its least, 360 px): the names
   * stay MIN_NAME_PX high. A width the user dragged is kept.
   */
  openInspector(open: () => void) {
    const { inspector: el, ui, camera } = this.host;
    const was = el.hidden;
    const total = ui.canvas.clientWidth;
    open();
    this.host.dock();
    const scene = this.host.scene();
    const k = camera.readK;
    if (
      !was ||
      el.hidden ||
      !scene ||
      el.style.width ||
      k > READ_K ||
      !(camera.framed || camera.parted || camera.showsAll(scene))
    )
      return;
    this.narrowInspector(scene, total);
  }

  /** Narrow the open inspector (not below its least, 360 px) so that the whole graph shows
   * beside it at the readable scale, where that does; `total`: the canvas and the inspector
   * together. A width the user dragged is kept. Whether it narrowed. */
  private narrowInspector(scene: Scene, total?: number): boolean {
    const { inspector: el, ui, camera } = this.host;
    if (el.hidden || (el.style.width && el.style.width !== el.dataset.fitted) || camera.readK > READ_K) return false;
    const width = el.getBoundingClientRect().width;
    const all = total ?? ui.canvas.clientWidth + width;
    const k = camera.readK;
    const need = Math.ceil(scene.width * k + 2 * FIT_MARGIN);
    const room = all - width;
    if (need <= room || all - need < INSPECTOR_MIN || scene.height * k + 2 * FIT_MARGIN > ui.canvas.clientHeight)
      return false;
    el.style.width = el.dataset.fitted = `${Math.floor(all - need)}px`;
    this.growWhole = true;
    return true;
  }

  /** The inspector closed: its next opening is fitted afresh; the whole graph in view again
   * once the canvas grows back. */
  inspectorClosed() {
    this.host.dock();
    const el = this.host.inspector;
    if (el.dataset.fitted && el.style.width === el.dataset.fitted) el.style.width = "";
    delete el.dataset.fitted;
    this.host.camera.framed = true;
  }
}
