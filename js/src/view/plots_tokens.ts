/**
 * Token maps with their axes named: a (token × feature) view drawn with rows tall enough to
 * read and labelled (the decoded tokens where the reply has them, else positions), the
 * feature axis with its ends; one-row views (per-token norms, values, top-k) as a strip with
 * ticks. Canvas; the labels come from the user's tokenizer and are drawn as text.
 */
import type { ViewData } from "../wire";
import { type ColorRange, lut, lutOnRange } from "./colormap";
import { textWidth } from "./dom";
import { inkOf, paint, sized, strip } from "./plots";
import { visible } from "./plots_ends";

export interface AxisInfo {
  rows: number; // the length of the row axis before pooling (tokens)
  cols: number; // the length of the column axis before pooling (features)
}

const clip = (t: string, n = 14) => (t.length > n ? `${t.slice(0, n - 1)}…` : t);

/** Labels of `n` drawn rows standing for `full` positions: tokens when one per row, else position ranges. */
export function rowLabels(n: number, full: number, tokens: string[] | null): string[] {
  if (tokens && tokens.length === n && full === n) return tokens.map((t) => clip(visible(t)));
  const per = full / n;
  return Array.from({ length: n }, (_, i) => {
    const a = Math.floor(i * per);
    const b = Math.max(a, Math.ceil((i + 1) * per) - 1);
    return a === b ? String(a) : `${a}–${b}`;
  });
}

/** A token × feature map: readable rows (≥ 12 px up to 40 rows, then as many as fit 560 px), labelled; the axes named. */
export function drawTokenMap(
  canvas: HTMLCanvasElement,
  view: ViewData,
  tokens: string[] | null,
  width: number,
  axis: AxisInfo,
  range?: ColorRange,
) {
  const [rows = 0, cols = 0] = view.shape; // a token map is [tokens, features]
  const table = range ? lutOnRange(view.vmin, view.vmax, range) : lut(view.vmin, view.vmax, view.signed);
  const src = strip(1, rows, cols, (img) => paint(view, img, 0, rows * cols, table));
  const mono = inkOf(canvas, "--nfw-mono", "monospace");
  const font = `11px ${mono}`;
  const labels = rowLabels(rows, axis.rows, tokens);
  const rowH = Math.max(1.5, Math.min(16, Math.max(rows <= 40 ? 12 : 0, 560 / rows)));
  const stride = Math.max(1, Math.ceil(12 / rowH));
  const margin = Math.min(
    130,
    8 + Math.max(30, ...labels.filter((_, i) => i % stride === 0).map((t) => textWidth(t, font))),
  );
  const top = 16;
  const bottom = 18;
  const mapW = Math.max(40, width - margin);
  const mapH = rows * rowH;
  const ctx = sized(canvas, Math.round(margin + mapW), Math.round(top + mapH + bottom));
  ctx.drawImage(src, 0, 0, cols, rows, margin, top, mapW, mapH);
  ctx.font = font;
  ctx.fillStyle = inkOf(canvas, "--nfw-fg2", "#6b7280");
  const [rowName, colName] = [view.axes[0] || "row", view.axes[1] || "column"];
  ctx.textBaseline = "alphabetic";
  ctx.textAlign = "left";
  ctx.fillText(`${rowName} ↓`, 0, 11);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (let i = 0; i < rows; i += stride) ctx.fillText(labels[i]!, margin - 5, top + (i + 0.5) * rowH, margin - 8);
  ctx.textBaseline = "top";
  ctx.textAlign = "left";
  ctx.fillText("0", margin, top + mapH + 4);
  ctx.textAlign = "right";
  ctx.fillText(String(axis.cols - 1), margin + mapW, top + mapH + 4);
  ctx.textAlign = "center";
  const pooled = axis.cols > cols ? ` (${cols} columns, ${Math.round(axis.cols / cols)} per column)` : "";
  ctx.fillText(`${colName} →${pooled}`, margin + mapW / 2, top + mapH + 4);
}

/** A one-row view (per-token norms, the first values, the top-k): a strip with its axis named and, where they fit, a label per cell. */
export function drawStrip(
  canvas: HTMLCanvasElement,
  view: ViewData,
  labels: string[] | null,
  width: number,
  axis: AxisInfo,
  range?: ColorRange,
) {
  const n = view.pixels.length;
  const table = range ? lutOnRange(view.vmin, view.vmax, range) : lut(view.vmin, view.vmax, view.signed);
  const src = strip(1, 1, n, (img) => paint(view, img, 0, n, table));
  const font = `10px ${inkOf(canvas, "--nfw-mono", "monospace")}`;
  const cell = width / n;
  const names = labels && labels.length === n && cell >= 9 ? labels.map((t) => clip(visible(t), 12)) : null;
  const under = names ? Math.min(90, 6 + Math.max(...names.map((t) => textWidth(t, font)))) : 16;
  const H = 30;
  const ctx = sized(canvas, width, H + under);
  ctx.drawImage(src, 0, 0, n, 1, 0, 0, width, H);
  ctx.font = font;
  ctx.fillStyle = inkOf(canvas, "--nfw-fg2", "#6b7280");
  if (names) {
    for (let i = 0; i < n; i++) {
      ctx.save();
      ctx.translate((i + 0.5) * cell + 3, H + 4);
      ctx.rotate(Math.PI / 2);
      ctx.textAlign = "left";
      ctx.textBaseline = "middle";
      ctx.fillText(names[i]!, 0, 0, under - 4);
      ctx.restore();
    }
    return;
  }
  const name = view.axes[1] || "index";
  ctx.textBaseline = "top";
  ctx.textAlign = "left";
  ctx.fillText("0", 0, H + 3);
  ctx.textAlign = "right";
  ctx.fillText(String(Math.max(n, axis.cols) - 1), width, H + 3);
  ctx.textAlign = "center";
  ctx.fillText(`${name} →${axis.cols > n ? ` (${n} cells of ${axis.cols})` : ""}`, width / 2, H + 3);
}
