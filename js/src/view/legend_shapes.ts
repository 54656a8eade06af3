/**
 * The shapes the legend can take: one row (its own), or, where that row is long (a language
 * model's: edge kinds, ⊕, the logit lens's entry), wrapped into rows about half as wide, or one
 * entry a line (a column, where it has three or more); each in the bottom-left corner (its own)
 * or the bottom-right. The camera places a whole view beside each and takes the one that leaves
 * the graph largest and nearest the middle, and no line behind the legend where one does so at
 * that size (view/whole.ts chooseShape): a tall view, its output at the bottom, keeps to the
 * middle beside the wrapped legend or the legend moves to the corner it leaves free; a wide
 * view keeps the row; GPT-2's at 1024 x 768, whose way from its blocks up to ln_f runs along
 * the bottom and up the middle, has the column in the corner right of it.
 */
import type { Box } from "../layout/layout";

/** A row narrower than this (px) is not wrapped. */
const WRAP_FROM = 480;
/** The wrapped shape's width, as a fraction of the row's (two rows, as the entries break). */
const WRAP_FRACTION = 0.56;

/** One shape: its box (px, in the canvas), wrapped or a row (or a column), in which corner. */
export interface LegendShape {
  box: Box;
  wrapped: boolean;
  right: boolean;
  column?: boolean;
}
type Drawn = Pick<LegendShape, "wrapped" | "right" | "column">;

/** The legend's shapes, in order of preference (the row at the left first): each measured (the
 * legend is left as it was), so the answer does not depend on the shape it is in; none while it
 * is empty or not drawn. `origin`: the canvas' box. */
export function legendShapes(legend: HTMLElement, origin: DOMRect): LegendShape[] {
  if (!legend.childElementCount) return [];
  const shape = legend.dataset.shape;
  const was = { wrapped: shape === "wrapped", column: shape === "column", right: legend.dataset.corner === "right" };
  const measure = (d: Omit<Drawn, "right">): Box => {
    draw(legend, { ...d, right: false });
    const r = legend.getBoundingClientRect();
    return [r.left - origin.left, r.top - origin.top, r.width, r.height];
  };
  const row = measure({ wrapped: false });
  const shapes: Omit<LegendShape, "right">[] = [];
  if (row[2] > 0 && row[3] > 0) {
    shapes.push({ box: row, wrapped: false });
    if (row[2] > WRAP_FROM) {
      legend.dataset.wrapWidth = String(Math.ceil(row[2] * WRAP_FRACTION));
      shapes.push({ box: measure({ wrapped: true }), wrapped: true });
    }
    if (legend.childElementCount >= 3)
      shapes.push({ box: measure({ wrapped: false, column: true }), wrapped: false, column: true });
  }
  draw(legend, was);
  const mirror = ([x, y, w, h]: Box): Box => [origin.width - x - w, y, w, h];
  return [
    ...shapes.map((s) => ({ ...s, right: false })),
    ...shapes.map((s) => ({ ...s, box: mirror(s.box), right: true })),
  ];
}

/** Draw the legend in a shape of legendShapes'; its own (a row at the left) without one. */
export function drawLegend(legend: HTMLElement, shape: Drawn | undefined) {
  draw(legend, shape ?? { wrapped: false, right: false });
}

/** (Inline: over the stylesheet's rules, the lens' wrapping where a row overflows included.) */
function draw(legend: HTMLElement, { wrapped, right, column = false }: Drawn) {
  const s = legend.style;
  const wrap = wrapped && !!legend.dataset.wrapWidth;
  legend.dataset.shape = column ? "column" : wrap ? "wrapped" : "row";
  legend.dataset.corner = right ? "right" : "left";
  s.maxWidth = wrap ? `min(${legend.dataset.wrapWidth}px, calc(100% - 20px))` : "";
  s.flexWrap = wrap ? "wrap" : "";
  s.gap = column ? "3px" : ""; // (clears the row gap too: set after it)
  if (wrap) s.rowGap = "4px";
  s.flexDirection = column ? "column" : "";
  s.alignItems = column ? "flex-start" : "";
  s.left = right ? "auto" : "";
  s.right = right ? "10px" : "";
}
