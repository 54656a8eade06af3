/**
 * Where a bus's label ("cross-attention") is written along its line: beside its longest
 * straight stretch, clear of the nodes (scene/bus.ts draws the line). Pure, no DOM.
 */
import type { Box } from "../layout/layout";
import type { SceneBus } from "./types";

const LABEL_PX = 14; // a bus's label: its font size (.nfw-bus-label, view/styles.ts)
const LABEL_EM = 0.6; // and its characters' mean width, in em (bold system-ui: 0.575 in Chromium)

/** A label along the longest straight stretch of a line (`pts`, drawn coordinates), centred on it,
 * 5 px beside it (above a line across the flow, left of one along it in TB). A level label
 * takes the first place clear of every node: above, below, then in two lines where it breaks
 * ("cross-" over "attention") and so fits the stretch, then beginning 6 px from the line's
 * start on the side away from where the line turns next (its overhang then crosses no part
 * of the line); where none is clear, the first that fits its stretch. */
export function labelOn(pts: number[], text: string, tb: boolean, obstacles: Box[]): NonNullable<SceneBus["label"]> {
  const length = (i: number) => Math.hypot(pts[i + 2]! - pts[i]!, pts[i + 3]! - pts[i + 1]!);
  let best = 0;
  for (let i = 2; i + 3 < pts.length; i += 2) if (length(i) > length(best)) best = i;
  const [x0, y0, x1, y1] = [pts[best]!, pts[best + 1]!, pts[best + 2]!, pts[best + 3]!];
  const level = Math.abs(y1 - y0) < Math.abs(x1 - x0);
  // along the flow in TB is vertical: the text turned; across it (or any line in LR), level
  const vertical = tb && !level;
  const [x, y] = [(x0 + x1) / 2, (y0 + y1) / 2];
  if (vertical || !level) return { text, x: vertical ? x - 5 : x, y: vertical ? y : y - 5, vertical };
  const span = Math.abs(x1 - x0);
  const widthOf = (t: string) => t.length * LABEL_EM * LABEL_PX;
  const cut = [...text.matchAll(/[- ]/g)]
    .map((m) => m.index + 1)
    .sort((p, q) => Math.abs(2 * p - text.length) - Math.abs(2 * q - text.length))[0];
  const lines: [string, string] | undefined =
    cut === undefined ? undefined : [text.slice(0, cut).trimEnd(), text.slice(cut)];
  const [above, below] = [y - 5, y + 5 + LABEL_PX * 0.75]; // baselines
  type Place = { lines?: [string, string]; x: number; y: number; fits: boolean };
  const places: Place[] = [
    { x, y: above, fits: widthOf(text) + 8 <= span },
    { x, y: below, fits: widthOf(text) + 8 <= span },
  ];
  if (lines) {
    const fits = Math.max(...lines.map(widthOf)) + 8 <= span;
    places.push({ lines, x, y: above, fits }, { lines, x, y: below, fits });
  }
  const next = pts[best + 5]; // where the line goes after the stretch: up, down or nowhere
  const start = x0 + Math.sign(x1 - x0) * (6 + widthOf(text) / 2);
  places.push({ x: start, y: next !== undefined && next < y1 ? below : above, fits: false });
  // a node the label would cover (not a group around its line)
  const covers = (p: Place): boolean => {
    const w = Math.max(...(p.lines ?? [text]).map(widthOf));
    const top = p.y - LABEL_PX * (p.lines ? 1.9 : 0.75); // (cap height 0.75 em, descenders 0.2)
    const box: Box = [p.x - w / 2, top, w, p.y + LABEL_PX * 0.2 - top];
    return obstacles.some(
      (b) =>
        !(b[0] <= x && x <= b[0] + b[2] && b[1] <= y && y <= b[1] + b[3]) &&
        box[0] < b[0] + b[2] &&
        b[0] < box[0] + box[2] &&
        box[1] < b[1] + b[3] &&
        b[1] < box[1] + box[3],
    );
  };
  const last = places.at(-1)!;
  const chosen = places.find((p) => (p.fits || p === last) && !covers(p)) ?? places.find((p) => p.fits) ?? last;
  return { text, ...(chosen.lines ? { lines: chosen.lines } : {}), x: chosen.x, y: chosen.y, vertical };
}
