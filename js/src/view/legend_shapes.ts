/**
 * The shapes the legend can take: one row (its own), or, where that row is long (a language
 * model's: edge kinds, ⊕, the logit lens's entry), wrapped into rows about half as wide; each in
 * the bottom-left corner (its own) or the bottom-right. The camera places a whole view beside
 * each and takes the one that leaves the graph largest and nearest the middle (view/whole.ts
 * chooseShape): a tall view, its output at the bottom, keeps to the middle beside the wrapped
 * legend or the legend moves to the corner it leaves free; a wide view keeps the row.
 */
import type { Box } from "../layout/layout";

/** A row narrower than this (px) is not wrapped. */
const WRAP_FROM = 480;
/** The wrapped shape's width, as a fraction of the row's (two rows, as the entries break). */
const WRAP_FRACTION = 0.56;

/** One shape: its box (px, in the canvas), wrapped or a row, in which corner. */
export interface LegendShape {
  box: Box;
  wrapped: boolean;
  right: boolean;
}

/** The legend's shapes, in order of preference (the row at the left first): each measured (the
 * legend is left as it was), so the answer does not depend on the shape it is in; none while it
 * is empty or not drawn. `origin`: the canvas' box. */
export function legendShapes(legend: HTMLElement, origin: DOMRect): LegendShape[] {
  if (!legend.childElementCount) return [];
  const was = { wrapped: legend.dataset.shape === "wrapped", right: legend.dataset.corner === "right" };
  const measure = (wrapped: boolean): Box => {
    draw(legend, { wrapped, right: false });
    const r = legend.getBoundingClientRect();
    return [r.left - origin.left, r.top - origin.top, r.width, r.height];
  };
  const row = measure(false);
  const boxes: [Box, boolean][] = [];
  if (row[2] > 0 && row[3] > 0) {
    boxes.push([row, false]);
    if (row[2] > WRAP_FROM) {
      legend.dataset.wrapWidth = String(Math.ceil(row[2] * WRAP_FRACTION));
      boxes.push([measure(true), true]);
    }
  }
  draw(legend, was);
  const mirror = ([x, y, w, h]: Box): Box => [origin.width - x - w, y, w, h];
  return [
    ...boxes.map(([box, wrapped]) => ({ box, wrapped, right: false })),
    ...boxes.map(([box, wrapped]) => ({ box: mirror(box), wrapped, right: true })),
  ];
}

/** Draw the legend in a shape of legendShapes'; its own (a row at the left) without one. */
export function drawLegend(legend: HTMLElement, shape: Pick<LegendShape, "wrapped" | "right"> | undefined) {
  draw(legend, shape ?? { wrapped: false, right: false });
}

/** (Inline: over the stylesheet's rules, the lens' wrapping where a row overflows included.) */
function draw(legend: HTMLElement, { wrapped, right }: Pick<LegendShape, "wrapped" | "right">) {
  const s = legend.style;
  const wrap = wrapped && !!legend.dataset.wrapWidth;
  legend.dataset.shape = wrap ? "wrapped" : "row";
  legend.dataset.corner = right ? "right" : "left";
  s.maxWidth = wrap ? `min(${legend.dataset.wrapWidth}px, calc(100% - 20px))` : "";
  s.flexWrap = wrap ? "wrap" : "";
  s.rowGap = wrap ? "4px" : "";
  s.left = right ? "auto" : "";
  s.right = right ? "10px" : "";
}
