/**
 * The flow view: runs the pipeline wire -> view model -> layout -> scene -> drawing for each expansion
 * state, and keeps the selection, the inspector, the banners and the marks in step. The user's
 * controls are in controls.ts, where the view looks in viewfinder.ts (and view/camera.ts).
 * Used by the live widget (widget.ts) and by the static export (renderStatic). */
import { LayoutClient } from "../layout/client";
import type { Box, Direction } from "../layout/layout";
import { endKey, sameCalls, targetOf, type EndTarget } from "../model/ends";
import { problemsOf } from "../model/problems";
import { buildTree, type CallTree } from "../model/tree";
import { buildView, followStepper, type ViewGraph, type ViewState } from "../model/view_model";
import { initialState, isShown, revealCall, toggleKey } from "../model/view_state";
import { buildScene } from "../scene/scene";
import type { Scene, SceneNode } from "../scene/types";
import { Camera } from "../view/camera";
import { fillBanners } from "../view/banners";
import { buildChrome, flashHint, showFatal, type Chrome, type ColorMode } from "../view/chrome";
import { exportSvg, svgToPng } from "../view/export";
import { GraphView } from "../view/graph_view";
import { Inspector, type FetchStage } from "../view/inspector";
import { Minimap } from "../view/minimap";
import { CSS } from "../view/styles";
import type { Transform } from "../view/zoom";
import { decodeGraph, type Experiments, type StageRequest, type WireCall, type WireGraph } from "../wire";
import { Controls, type ControlsHost } from "./controls";
import type { Intervened, Spec } from "./intervene";
import { Lab } from "./lab";
import { Framing, type Framed } from "./framing";
import { Lecture, type LectureHost } from "./lecture";
import { Selection } from "./selection";
import { Viewfinder } from "./viewfinder";
import type { PlaybackState } from "./player";

export interface FlowOptions {
  fetchStage: FetchStage;
  onSelect?: (stage: string | null) => void; // the user picked a stage, or closed the inspector (null)
  onDirection?: (dir: Direction) => void; // the user switched TB / LR
  useWorker?: boolean;
  maxInitialNodes?: number;
  available?: (req: StageRequest) => boolean; // what the stage data can answer (an offline page: what it baked)
  onPlayback?: (p: PlaybackState) => void; // playback moved, started, paused or stopped
  onPresent?: (on: boolean) => void; // the user started or ended presentation mode
  intervene?: (stage: string, spec: Spec) => Promise<Intervened>; // run B = this run with it (a kernel)
  endComparison?: () => void; // drop run B (a kernel)
}

export interface PaintInfo {
  reason: string;
  ms: number; // from the state change to the painted frame
  layoutMs: number;
  nodes: number;
  laidOut: number;
}

export class FlowApp implements ControlsHost {
  readonly root: HTMLElement;
  readonly ui: Chrome;
  readonly graphView: GraphView;
  readonly camera: Camera;
  private minimap: Minimap;
  private inspector: Inspector;
  private controls: Controls;
  readonly lecture: Lecture; // playback, presentation, data on the graph
  readonly lab: Lab; // the colouring and legend, the logit lens's chips, the context menu's interventions
  private layout: LayoutClient;
  private tree: CallTree | null = null;
  private state: ViewState = { expanded: new Set(), unfolded: new Set() };
  private view: ViewGraph | null = null;
  private scene: Scene | null = null;
  private dir: Direction = "TB";
  private selection: Selection; // the selected stage, the focused node, the matches
  private generation = 0;
  private finder: Viewfinder; // where the view looks as things change
  private keysTaken = false;
  private resize: ResizeObserver | null = null;
  private disposed = false;
  private raw: { graph: unknown; comparison: unknown; more: Experiments } = { graph: null, comparison: null, more: {} };
  private framing: Framing; // the first view's depth, arrangement and zoom

  constructor(
    private readonly el: HTMLElement,
    private readonly opts: FlowOptions,
  ) {
    this.ui = buildChrome(CSS);
    this.root = this.ui.root;
    this.layout = new LayoutClient(opts.useWorker ?? true);
    this.framing = new Framing(this.layout, this.ui.canvas, (text, kind) => this.graphView.measure(text, kind));
    this.graphView = new GraphView(
      {
        activate: (n) => this.activate(n),
        open: (id) => this.selection.inspect(id),
        toggle: (key) => this.toggle(key),
        background: () => this.setFocus(null),
      },
      () => this.camera.zoom.suppressClick,
    );
    this.ui.canvas.prepend(this.graphView.svg);
    this.camera = new Camera(
      this.ui.canvas,
      (t) => this.onTransform(t),
      () => flashHint(this.ui.hint),
    );
    this.selection = new Selection({
      tree: () => this.tree,
      view: () => this.view,
      state: () => this.state,
      graphView: this.graphView,
      camera: this.camera,
      inspector: () => this.inspector,
      finder: () => this.finder,
      canvas: this.ui.canvas,
      onSelect: opts.onSelect,
      reveal: (call) => this.reveal(call),
      showStage: (id, shown) => this.controls.showStage(id, shown),
    });
    const centre = (x: number, y: number) => this.camera.centerOn(x, y, 0);
    const dims = () => this.camera.zoom.dims();
    this.minimap = new Minimap(centre, this.ui.legend, dims, () => this.fit(), this.ui.title.parentElement);
    this.ui.canvas.append(this.minimap.el, this.minimap.note);
    this.inspector = new Inspector(opts.fetchStage, () => this.selection.inspectorClosed(), {
      available: opts.available,
    });
    this.inspector.onOpen = (id) => this.selection.opened(id);
    this.ui.main.append(this.inspector.el);
    this.finder = new Viewfinder({
      ui: this.ui,
      camera: this.camera,
      graphView: this.graphView,
      inspector: this.inspector.el,
      scene: () => this.scene,
      dir: () => this.dir,
      selectedKey: () => this.selection.key(),
      redraw: () => this.onTransform(this.camera.t),
      dock: () => this.lecture.dock(),
      relay: (a, focus) => void (this.framing.outgrown() && this.setState(this.state, "canvas", a, focus)),
    });
    const open = (target: WireCall | EndTarget) => this.selection.openInspector(target);
    const setState: LectureHost["setState"] = (...a) => this.setState(...a);
    this.lecture = new Lecture({
      ...opts,
      ui: this.ui,
      inspector: this.inspector.el,
      graphView: this.graphView,
      camera: this.camera,
      framing: this.framing,
      shown: () => this.shown(),
      state: () => this.state,
      setState,
      open,
      onPlayback: (p) => {
        opts.onPlayback?.(p);
        this.lab.lens.draw();
      },
      onTurn: (backward) => this.inspector.setOf(backward ? "grad" : "output"),
    });
    this.lab = new Lab({
      ...opts,
      ui: this.ui,
      graphView: this.graphView,
      shown: () => this.shown(),
      player: () => this.lecture.player,
      selectStage: (id, fromUser) => this.selectStage(id, fromUser),
      graph: () => this.tree?.graph ?? null,
    });
    this.controls = new Controls(this);
    el.append(this.root);
    if (typeof ResizeObserver !== "undefined") {
      this.resize = new ResizeObserver(() => this.onResize());
      this.resize.observe(this.ui.canvas);
      this.resize.observe(this.ui.legend); // an overlay the whole view keeps clear of
    }
  }

  // -- the pipeline ---------------------------------------------------------------------

  /**
   * Show a graph (the graph traitlet, decoded or not) and its comparison with run B (the
   * comparison traitlet; null: none). A graph of the same model (a re-run, a comparison
   * made) keeps the view: its open groups, the selection, the zoom.
   */
  setGraph(raw: unknown, comparison: unknown = this.raw.comparison, more: Experiments = this.raw.more) {
    let graph: WireGraph;
    try {
      graph = decodeGraph(raw, comparison, more);
    } catch (err) {
      showFatal(this.ui.canvas, err);
      return;
    }
    this.raw = { graph: raw, comparison, more };
    const before = this.tree?.graph;
    const tree = buildTree(graph);
    this.tree = tree;
    this.ui.title.textContent = graph.model;
    this.ui.title.title = graph.model; // the whole name where the toolbar cuts it
    const problems = problemsOf(graph);
    this.inspector.setRun(graph, problems);
    fillBanners(this.ui.banners, graph, problems, (id) => this.showStage(id), {
      endComparison: this.opts.endComparison,
      byGradient: () => this.setColorMode("grad"),
      notes: this.ui.notes,
    });
    this.lab.colouring.run(graph);
    const same = !!before && sameCalls(before, graph);
    this.lab.lens.newRun(graph, tree, same);
    if (same) {
      this.inspector.refresh(targetOf(graph, tree.byId, this.selection.id));
      // a stage intervened on stays drawn (chosen, so no later level folds it away)
      const iv = graph.intervention?.stage ?? -1;
      const shown = iv < 0 || isShown(tree, this.state, iv);
      void this.setState(
        { ...(shown ? this.state : revealCall(tree, this.state, iv)), auto: this.state.auto && iv < 0 },
        "graph",
      );
      this.lecture.newRun(true);
      return this.controls.refresh();
    }
    this.lecture.newRun(false);
    this.graphView.setCurrent(null);
    this.inspector.close();
    this.camera.needsFit = true;
    let state = initialState(tree, this.opts.maxInitialNodes);
    // A selection that came before the graph (set from Python) is revealed in the first view.
    const selected = this.selection.id === null ? undefined : tree.byId.get(this.selection.id);
    if (selected !== undefined && !isShown(tree, state, selected)) state = revealCall(tree, state, selected);
    void this.setState(state, "graph");
    this.controls.refresh();
    if (this.selection.id) this.selectStage(this.selection.id, false);
  }

  /** Lay out and draw an expansion state; `anchor` keeps a toggled group where it was;
   * `focus`: the node the action is about (playback's step: app/framing.ts lay). */
  private async setState(state: ViewState, reason: string, anchor?: { key: string; box: Box }, focus?: string) {
    const tree = this.tree;
    if (!tree) return;
    const t0 = performance.now();
    const gen = ++this.generation;
    this.state = state;
    let view = buildView(tree, state);
    const busy = window.setTimeout(() => (this.ui.busy.hidden = false), 150);
    let lay: Framed;
    const tl = performance.now();
    this.finder.laying = true;
    try {
      lay = await this.framing.lay(state, view, this.dir, this.camera.needsFit, this.camera.readK, reason, focus);
    } catch (err) {
      clearTimeout(busy);
      if (gen === this.generation) this.finder.laying = false;
      showFatal(this.ui.canvas, err);
      return;
    }
    clearTimeout(busy);
    if (gen !== this.generation || this.disposed) return;
    this.finder.laying = false;
    const layoutMs = performance.now() - tl;
    this.ui.busy.hidden = true;
    ({ state: this.state, view } = lay);
    this.view = view;
    const scene = buildScene(tree, view, lay, this.dir);
    this.scene = scene;
    const { fills, strokes } = this.lab.colouring.paints(tree, view, scene);
    this.graphView.setScene(scene, fills, strokes);
    this.lab.lens.draw();
    this.lecture.painted(scene);
    this.minimap.setScene(scene);
    this.selection.sync();
    const stages = tree.graph.calls.length;
    const shown = scene.nodes.filter((n) => n.kind === "stage" || n.kind === "fold").length;
    this.ui.counts.textContent = `${stages} stage${stages === 1 ? "" : "s"} · ${shown} shown`;
    this.lab.colouring.legend();
    this.finder.drawn(scene, reason, anchor);
    requestAnimationFrame(() =>
      requestAnimationFrame(() => {
        if (gen !== this.generation) return;
        const info: PaintInfo = {
          reason,
          ms: performance.now() - t0,
          layoutMs,
          nodes: scene.nodes.length,
          laidOut: lay.laidOut,
        };
        this.el.dispatchEvent(new CustomEvent("nfw-painted", { detail: info }));
        if (!this.keysTaken) {
          this.keysTaken = true;
          this.controls.takeKeys();
        }
      }),
    );
  }

  shown() {
    return this.tree && this.view && this.scene
      ? { tree: this.tree, view: this.view, scene: this.scene, dir: this.dir }
      : null;
  }

  // -- the view -------------------------------------------------------------------------

  private onTransform(t: Transform) {
    const vp = this.camera.viewport();
    this.graphView.transform(t, vp);
    this.minimap.setViewport(vp, t);
  }

  /** The canvas or the legend changed size. */
  private onResize = () => {
    this.finder.resized();
    this.inspector.redraw();
  };

  fit(ms = 280) {
    if (this.scene) this.camera.fit(this.scene, ms);
  }

  /** Back to the starting expansion and the first view. */
  reset() {
    if (!this.tree) return;
    this.camera.needsFit = true;
    void this.setState(initialState(this.tree, this.opts.maxInitialNodes), "reset");
  }

  /** Top-to-bottom or left-to-right; lays the view out again. */
  setDirection(dir: Direction, fromUser = false) {
    if (dir === this.dir) return;
    this.dir = dir;
    this.camera.needsFit = true;
    this.ui.dirTB.setAttribute("aria-pressed", String(dir === "TB"));
    this.ui.dirLR.setAttribute("aria-pressed", String(dir === "LR"));
    if (fromUser) this.opts.onDirection?.(dir);
    void this.setState(this.state, "direction");
  }

  /** Colour by a mode; by gradient norm, the inspector shows gradients too (and outputs again after). */
  setColorMode(mode: ColorMode) {
    if (mode === "grad" || this.lab.colouring.mode === "grad")
      this.inspector.setOf(mode === "grad" ? "grad" : "output");
    this.lab.colouring.set(mode);
    this.selection.sync();
  }

  // -- expansion, selection, marks ------------------------------------------------------

  activate(n: SceneNode) {
    this.setFocus(n.key, false);
    if (n.kind === "fold" && !n.part) return this.toggle(n.key); // a sublayer shows its last stage's data
    if (n.kind === "stage" || n.part || (this.tree && endKey(this.tree.graph, n.id))) this.selectStage(n.id, true);
  }

  /** Expand / collapse / unfold / refold by node or cluster key, the toggled thing kept in place. */
  toggle(key: string) {
    const next = this.tree && toggleKey(this.tree, this.state, key);
    if (!next) return;
    const before = this.graphView.node(key)?.box ?? this.scene?.clusters.find((c) => c.key === key)?.box;
    const grouped = next.key.startsWith("c:") || next.key.startsWith("r:");
    if (this.selection.focusKey === key) this.selection.focusKey = grouped ? null : next.key;
    // opened: a group, a run, a stack, a sublayer drawn as one node ("f:" -> its stage)
    const opened = grouped || next.key.startsWith("k:") || (key.startsWith("f:") && next.key.startsWith("s:"));
    void this.setState(next.state, opened ? "expand" : "collapse", before ? { key: next.key, box: before } : undefined);
    const follow = followStepper(this.tree!, next.state, this.selection.id); // the stage of the member a stack now shows
    if (follow) this.selectStage(follow, true);
  }

  async reveal(call: number) {
    if (this.tree) await this.setState(revealCall(this.tree, this.state, call), "reveal");
  }

  /** Select a stage by id and open its inspector (fromUser: tell the kernel); from Python, also
   * reveal it and bring it into view. null clears. */
  selectStage = (id: string | null, fromUser: boolean) => this.selection.select(id, fromUser);
  /** Select a stage, drawn and centred, with its inspector open (the banners' buttons). */
  showStage = (id: string) => this.selection.show(id);
  selected = (): string | null => this.selection.id;
  closeInspector = (): boolean => this.selection.closeInspector();
  setMatches = (calls: number[]) => this.selection.setMatches(calls);
  focused = (): string | null => this.selection.focusKey;
  setFocus = (key: string | null, scroll = true) => this.selection.focus(key, scroll);

  // -- export ---------------------------------------------------------------------------

  /** The whole laid-out graph as an SVG document, in the current theme's colours; or as a PNG (2x, capped at 8192 px a side). */
  exportSvg = (): string => exportSvg(this.graphView, this.root);
  exportPng = (scale = 2): Promise<Blob> => svgToPng(this.exportSvg(), scale);

  dispose() {
    this.disposed = true;
    this.generation++;
    flashHint(this.ui.hint, 0);
    this.resize?.disconnect();
    this.finder.dispose();
    this.controls.dispose();
    this.lab.dispose();
    this.lecture.dispose();
    this.camera.dispose();
    this.graphView.dispose();
    this.minimap.dispose();
    this.inspector.dispose();
    this.layout.dispose();
    this.root.remove();
  }
}
