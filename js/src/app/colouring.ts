/**
 * What the nodes (and, by gradient norm, the edges) are coloured by, and the legend that
 * says so: the colour menu's choice, the colourings a run offers (A vs B with a comparison,
 * gradient norm after a backward pass, patching with activation patching; view/chrome.ts),
 * the fills of a drawn scene (view/stat_colors.ts), and the legend, with the logit lens's
 * entry and its position picker when the graph carries chips.
 */
import { signsDrawn } from "../model/glyphs";
import type { CallTree } from "../model/tree";
import type { ViewGraph } from "../model/view_model";
import type { Scene } from "../scene/types";
import type { NodeFill } from "../view/cards";
import { type Chrome, type ColorMode, colorModeFor, fillLegend, type Offered } from "../view/chrome";
import type { GraphView } from "../view/graph_view";
import { residualLegendWords } from "../view/residual_mark";
import { edgeStrokes, statFills, statRange } from "../view/stat_colors";
import type { WireGraph } from "../wire";

type Shown = { tree: CallTree; view: ViewGraph; scene: Scene } | null;

export class Colouring {
  mode: ColorMode = "type";
  private offered: Offered | null = null;

  constructor(
    private readonly ui: Chrome,
    private readonly graphView: GraphView,
    private readonly shown: () => Shown,
    /** More of the legend after its colour scale (the logit lens's entry), or none. */
    private readonly extra: () => HTMLElement | null = () => null,
  ) {}

  /** A run came: the colourings it offers, the mode (a comparison or patching that came is chosen). */
  run(graph: WireGraph) {
    const offered: Offered = {
      divergence: !!graph.comparison,
      grad: graph.grad !== null,
      patching: !!graph.patching,
    };
    this.mode = colorModeFor(this.ui.color, offered, this.offered, this.mode);
    this.offered = offered;
  }

  /** The fills and edge strokes of a scene in the current mode. */
  paints(tree: CallTree, view: ViewGraph, scene: Scene) {
    const fills = statFills(tree, view, scene, this.mode);
    return { fills, strokes: edgeStrokes(scene, fills, this.mode) };
  }

  /** The user (or a banner) chose a mode: the drawing and the legend follow. */
  set(mode: ColorMode) {
    this.mode = mode;
    this.ui.color.value = mode;
    const shown = this.shown();
    if (!shown) return;
    const { fills, strokes } = this.paints(shown.tree, shown.view, shown.scene);
    this.graphView.setFills(fills, strokes);
    this.legend();
  }

  /** Whether a mode is offered by the run shown. */
  offers(mode: keyof Offered): boolean {
    return this.offered?.[mode] ?? false;
  }

  legend() {
    const shown = this.shown();
    const scale = shown ? statRange(shown.tree, shown.view, shown.scene, this.mode) : null;
    const scene = shown?.scene;
    fillLegend(
      this.ui.legend,
      scale,
      new Set(scene?.edges.map((e) => e.kind)),
      signsDrawn(scene?.junctions ?? []),
      residualLegendWords(scene?.nodes ?? []),
    );
    const extra = this.extra();
    if (extra) this.ui.legend.append(extra);
    this.ui.legend.setAttribute("aria-hidden", String(!extra)); // (its picker is a control)
  }

  /** The fills alone (the selection's ring is drawn over them). */
  fills(): Map<string, NodeFill> | null {
    const shown = this.shown();
    return shown ? statFills(shown.tree, shown.view, shown.scene, this.mode) : null;
  }
}
