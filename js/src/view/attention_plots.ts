/**
 * Canvas drawings of attention: one map (probabilities on viridis from 0 to its top, or a
 * difference of two runs' maps on diverging colours), with the query and key tokens along
 * its sides where they fit, and the small multiples of every head. The tokens come from the
 * user's tokenizer and are drawn as text.
 */
import type { AttentionData } from "../wire";
import { diverging, viridis } from "./colormap";
import { inkOf, sized, strip, tiles } from "./plots";

function mapPixels(
  values: Float32Array,
  offset: number,
  n: number,
  vmax: number,
  img: Uint8ClampedArray,
  signed = false,
) {
  for (let i = 0; i < n; i++) {
    const [r, g, b] = signed ? diverging(values[offset + i]! / vmax) : viridis(values[offset + i]! / vmax);
    img[4 * i] = r;
    img[4 * i + 1] = g;
    img[4 * i + 2] = b;
    img[4 * i + 3] = 255;
  }
}

function maxOf(values: Float32Array, from = 0, n = values.length, abs = false): number {
  let m = 0;
  for (let i = from; i < from + n; i++) {
    const x = values[i]!;
    const v = abs ? Math.abs(x) : x;
    if (v > m) m = v;
  }
  return m || 1;
}

/** Small multiples of every head: each scaled to its own maximum, or all to `top`. */
export function drawHeads(canvas: HTMLCanvasElement, a: AttentionData, width: number, top?: number) {
  if (!a.grid || !a.gridShape) return;
  const [heads, gq, gk] = a.gridShape;
  const grid = a.grid;
  const per = gq * gk;
  const src = strip(heads, gq, gk, (img, i) => mapPixels(grid, i * per, per, top ?? maxOf(grid, i * per, per), img));
  tiles(
    canvas,
    src,
    heads,
    gq,
    gk,
    width,
    Array.from({ length: heads }, (_, i) => `head ${i}`),
    260,
  );
}

/**
 * The attention map of a record, with query / key token labels when they fit. Returns its
 * vmax. `signed`: a difference of two runs' maps (diverging colours, ±vmax); `vmax` a
 * common top for maps drawn side by side.
 */
export function drawAttention(
  canvas: HTMLCanvasElement,
  a: AttentionData,
  tokens: string[] | null,
  width: number,
  opts: { signed?: boolean; vmax?: number } = {},
): number {
  const [q, k] = a.mapShape;
  const vmax = opts.vmax ?? maxOf(a.map, 0, a.map.length, opts.signed);
  const src = strip(1, q, k, (img) => mapPixels(a.map, 0, q * k, vmax, img, opts.signed));
  // Labels only for exact (unpooled) maps of at most 64 positions a side, a token each.
  const [wq, , wk] = a.window;
  const exact = a.pool[0] === 1 && a.pool[1] === 1;
  const labelled = tokens !== null && exact && tokens.length >= Math.max(wq + q, wk + k) && q <= 64 && k <= 64;
  if (!labelled) {
    const g = tiles(canvas, src, 1, q, k, width, null, 360);
    canvas.dataset.cells = `0,0,${g.cellW / k},${g.cellH / q}`;
    return vmax;
  }
  const margin = Math.min(96, 10 + 7 * Math.max(...tokens.map((t) => Math.min(t.length, 12))));
  const cell = Math.max(3, Math.min((width - margin) / k, 360 / q));
  const ctx = sized(canvas, Math.round(margin + cell * k), Math.round(margin + cell * q));
  ctx.drawImage(src, 0, 0, k, q, margin, margin, cell * k, cell * q);
  canvas.dataset.cells = `${margin},${margin},${cell},${cell}`; // where the cells are (hover reads it)
  const fontPx = Math.max(7, Math.min(11, cell - 1));
  ctx.font = `${fontPx}px ${inkOf(canvas, "--nfw-mono", "monospace")}`;
  ctx.fillStyle = inkOf(canvas, "--nfw-fg2", "#6b7280");
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  const label = (t: string) => (t.length > 12 ? `${t.slice(0, 11)}…` : t);
  if (cell >= 7) {
    for (let i = 0; i < q; i++) ctx.fillText(label(tokens[wq + i] ?? ""), margin - 4, margin + (i + 0.5) * cell);
    for (let j = 0; j < k; j++) {
      ctx.save();
      ctx.translate(margin + (j + 0.5) * cell, margin - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      ctx.fillText(label(tokens[wk + j] ?? ""), 0, 0);
      ctx.restore();
    }
  }
  return vmax;
}
