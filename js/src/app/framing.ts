/**
 * Framing the first view: the depth, the arrangement and the zoom at which the whole model is
 * on the canvas with names at least MIN_NAME_PX high. Of the starting levels (view_model.ts
 * levelStates) the deepest whose layout, wrapped to the canvas (layout/bands.ts), fits at
 * READ_K is opened: a shallower view rather than smaller text. When none fits, the
 * shallowest, laid out to leave the minimap's strip free (the camera then shows its start at
 * READ_K, the minimap the rest). Later states are wrapped for the same canvas.
 */
import type { LayoutClient } from "../layout/client";
import type { Direction, FitTarget, LayoutResult } from "../layout/layout";
import { buildView, levelStates, type ViewGraph, type ViewState } from "../model/view_model";
import { MINIMAP_STRIP, READ_K, layoutRequest } from "../scene/scene";

const MARGIN = 32; // PanZoom.fitBox's margin

export type Framed = LayoutResult & { state: ViewState; view: ViewGraph };

/** Whether a layout fits a canvas at the target's scale. */
export function fitsAt(lay: { width: number; height: number }, fit: FitTarget): boolean {
  return Math.min((fit.w - 2 * MARGIN) / Math.max(lay.width, 1), (fit.h - 2 * MARGIN) / Math.max(lay.height, 1)) >= fit.k - 1e-6;
}

export class Framing {
  private target: FitTarget | null = null;

  /** Data on the graph: nodes with pictures (scene/request.ts layoutRequest). */
  thumbs = false;

  /** Lay out a state (`fresh`: for a first view, on the canvas as it is now, with names
   * readable at scale `k`: READ_K, more in presentation mode). */
  async lay(client: LayoutClient, state: ViewState, view: ViewGraph, dir: Direction, canvas: HTMLElement, fresh: boolean, k = READ_K): Promise<Framed> {
    if (fresh || !this.target) {
      this.target = { w: canvas.clientWidth || 960, h: canvas.clientHeight || 600, k, reserve: MINIMAP_STRIP };
    }
    const fit = this.target;
    if (!state.auto) return { ...(await client.layout(layoutRequest(view, dir, fit, this.thumbs))), state, view };
    // the deepest level of at most 40 nodes that fits, however many layers (bands wrap them)
    const levels = levelStates(view.tree);
    for (let i = levels.length - 1; i >= 0; i--) {
      const v = buildView(view.tree, levels[i]);
      const lay = await client.layout(layoutRequest(v, dir, fit, this.thumbs));
      if (i === 0 || fitsAt(lay, fit)) return { ...lay, state: { ...levels[i], auto: true }, view: v };
    }
    throw new Error("unreachable");
  }
}
