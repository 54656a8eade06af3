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

export class Framing {
  private target: FitTarget | null = null;

  /** Data on the graph: nodes with pictures (scene/request.ts layoutRequest). */
  thumbs = false;

  /** Lay out a state (`fresh`: for a first view, with names readable at scale `k`: READ_K,
   * more in presentation mode; when nothing fits at a larger `k`, as at READ_K, and the
   * camera shows it as large as the canvas allows). Each layout is for the canvas as it is
   * now (the inspector beside it, the transport bar above); a state the user chose that does
   * not fit it has its open groups wrapped as far as that helps (layout/wrapping.ts). */
  async lay(
    client: LayoutClient,
    state: ViewState,
    view: ViewGraph,
    dir: Direction,
    canvas: HTMLElement,
    fresh: boolean,
    k = READ_K,
  ): Promise<Framed> {
    const room = { w: canvas.clientWidth || 960, h: canvas.clientHeight || 600 };
    if (fresh || !this.target) this.target = { ...room, k, reserve: MINIMAP_STRIP };
    else this.target = { ...this.target, ...room };
    const fit = this.target;
    // larger names where the same view fits with them (wrapped for them), else as at READ_K
    const tries = fresh && fit.k > READ_K ? [fit, { ...fit, k: READ_K }] : [fit];
    const layout = (req: LayoutRequest) => client.layout(req);
    const first = async (v: ViewGraph, wrap: boolean): Promise<[LayoutResult, FitTarget, boolean]> => {
      let lay: LayoutResult | null = null;
      for (const f of tries) {
        const req = layoutRequest(v, dir, f, this.thumbs) as LayoutRequest & { fit: FitTarget };
        lay = await client.layout(req);
        if (!fitsAt(lay, f) && wrap) lay = await wrapToFit(req, lay, layout);
        if (fitsAt(lay, f)) return [lay, f, true];
      }
      return [lay!, tries[tries.length - 1]!, false]; // (tries has one at least, so lay is set)
    };
    if (!state.auto) {
      const [lay, f] = await first(view, true);
      this.target = f;
      return { ...lay, state, view };
    }
    // the deepest level of at most 40 nodes that fits, however many layers (bands wrap them)
    const levels = levelStates(view.tree);
    for (let i = levels.length - 1; i >= 0; i--) {
      const level = at(levels, i);
      const v = buildView(view.tree, level);
      const [lay, f, fits] = await first(v, false);
      if (i === 0 || fits) {
        this.target = f;
        return { ...lay, state: { ...level, auto: true }, view: v };
      }
    }
    throw new Error("unreachable");
  }
}
