/**
 * Framing the first view: the depth, the arrangement and the zoom at which the whole model is
 * on the canvas with names at least MIN_NAME_PX high. Of the starting levels (view_model.ts
 * levelStates) the deepest whose layout, wrapped to the canvas (layout/bands.ts), fits at
 * READ_K is opened: a shallower view rather than smaller text. When none fits, the
 * shallowest, laid out to leave the minimap's strip free (the camera then shows its start at
 * READ_K, the minimap the rest). Later states are wrapped for the same canvas. Presentation
 * mode asks for larger names (PRESENT_K): the same level, wrapped for them where it then
 * fits, else laid out as at READ_K (the camera shows it whole, as large as the canvas allows).
 */
import type { LayoutClient } from "../layout/client";
import { FIT_MARGIN as MARGIN } from "../layout/flow";
import type { Direction, FitTarget, LayoutRequest, LayoutResult } from "../layout/layout";
import { wrapToFit } from "../layout/wrapping";
import { buildView, type ViewGraph, type ViewState } from "../model/view_model";
import { levelStates } from "../model/view_state";
import { MINIMAP_STRIP, READ_K, layoutRequest } from "../scene/scene";
import { at } from "../wire_check";

export type Framed = LayoutResult & { state: ViewState; view: ViewGraph };

/** Whether a layout fits a canvas at the target's scale. */
export function fitsAt(lay: { width: number; height: number }, fit: FitTarget): boolean {
  return (
    Math.min((fit.w - 2 * MARGIN) / Math.max(lay.width, 1), (fit.h - 2 * MARGIN) / Math.max(lay.height, 1)) >=
    fit.k - 1e-6
  );
}

/** How far the canvas may change size before a view laid out for it is laid out again (the
 * inspector opening, the page resized): the camera alone handles less. */
export const RELAY_PX = 48;

export class Framing {
  private target: FitTarget | null = null;

  constructor(
    private readonly client: LayoutClient,
    private readonly canvas: HTMLElement,
  ) {}

  /** Data on the graph: nodes with pictures (scene/request.ts layoutRequest). */
  thumbs = false;

  /** Whether the canvas has changed size by RELAY_PX or more since the view was laid out: its
   * wrapping (or its level) was chosen for another canvas. */
  outgrown(): boolean {
    const { target: t, canvas } = this;
    if (!t || !canvas.clientWidth || !canvas.clientHeight) return false;
    return Math.abs(canvas.clientWidth - t.w) >= RELAY_PX || Math.abs(canvas.clientHeight - t.h) >= RELAY_PX;
  }

  /** Lay out a state (`fresh`: for a first view, with names readable at scale `k`: READ_K,
   * more in presentation mode). Each layout is for the canvas as it is now (the inspector
   * beside it, the transport bar above). A state the user chose has its open groups wrapped
   * as far as that helps (layout/wrapping.ts), at `k` where it then fits, else at READ_K;
   * one that fits at neither while presenting or with data on the graph gives way to the
   * starting levels (Present and Data show the whole model; lecture.ts gives the user's state
   * back at their end). A starting level is
   * the deepest that fits at `k`, else the deepest at READ_K (Present prefers the larger type
   * to a deeper level), else the shallowest at READ_K (the camera shows its start, the
   * minimap the rest). `relaid`: the same view for a canvas that changed size (the inspector
   * opened): a starting level is kept, wrapped as a chosen state is, where it then fits. */
  async lay(
    state: ViewState,
    view: ViewGraph,
    dir: Direction,
    fresh: boolean,
    k = READ_K,
    relaid = false,
  ): Promise<Framed> {
    const { client, canvas } = this;
    const room = { w: canvas.clientWidth || 960, h: canvas.clientHeight || 600 };
    if (fresh || !this.target) this.target = { ...room, k, reserve: MINIMAP_STRIP };
    else this.target = { ...this.target, ...room };
    const fit = this.target;
    const tries = fresh && fit.k > READ_K ? [fit, { ...fit, k: READ_K }] : [fit];
    const layout = (req: LayoutRequest) => client.layout(req);
    const trial = async (v: ViewGraph, f: FitTarget, wrap: boolean): Promise<LayoutResult> => {
      const req = layoutRequest(v, dir, f, this.thumbs) as LayoutRequest & { fit: FitTarget };
      const lay = await client.layout(req);
      return !fitsAt(lay, f) && wrap ? wrapToFit(req, lay, layout) : lay;
    };
    const done = (lay: LayoutResult, f: FitTarget, s: ViewState, v: ViewGraph): Framed => {
      this.target = f;
      return { ...lay, state: s, view: v };
    };
    if (!state.auto || relaid) {
      let last: LayoutResult | null = null;
      for (const f of tries) {
        last = await trial(view, f, true);
        if (fitsAt(last, f)) return done(last, f, state, view);
      }
      // a chosen state gives way to a starting level only for an overview (Present, Data)
      if (!state.auto && !(fresh && (fit.k > READ_K || this.thumbs))) return done(last!, fit, state, view);
    }
    // the deepest level of at most 40 nodes that fits, however many layers (bands wrap them)
    const levels = levelStates(view.tree);
    for (const f of tries) {
      for (let i = levels.length - 1; i >= 0; i--) {
        const level = { ...at(levels, i), auto: true };
        const v = buildView(view.tree, level);
        const lay = await trial(v, f, false);
        if (fitsAt(lay, f)) return done(lay, f, level, v);
      }
    }
    const root = { ...at(levels, 0), auto: true };
    const v = buildView(view.tree, root);
    const f = at(tries, tries.length - 1);
    return done(await trial(v, f, false), f, root, v);
  }
}
