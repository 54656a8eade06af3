/** Canvas drawings for the inspector: activation views, attention maps, histograms. */
import type { AttentionData, Histogram, ViewData } from "../wire";
import { applyLut, applyNonfinite, cssColor, lut, NONFINITE_NAMES, nonfiniteColor, viridis } from "./colormap";
import { h } from "./dom";

function sized(canvas: HTMLCanvasElement, cssW: number, cssH: number): CanvasRenderingContext2D {
  const dpr = globalThis.devicePixelRatio || 1;
  canvas.width = Math.round(cssW * dpr);
  canvas.height = Math.round(cssH * dpr);
  canvas.style.width = `${cssW}px`;
  canvas.style.height = `${cssH}px`;
  const ctx = canvas.getContext("2d")!;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.imageSmoothingEnabled = false;
  return ctx;
}

function inkOf(el: Element, name: string, fallback: string): string {
  return getComputedStyle(el).getPropertyValue(name).trim() || fallback;
}

/** Raw pixels of `count` maps of h*w into one canvas laid out as a vertical strip. */
function strip(count: number, hh: number, w: number, fill: (img: Uint8ClampedArray, i: number) => void): HTMLCanvasElement {
  const c = document.createElement("canvas");
  c.width = w;
  c.height = hh * count;
  const ctx = c.getContext("2d")!;
  const img = ctx.createImageData(w, hh * count);
  for (let i = 0; i < count; i++) fill(img.data.subarray(i * hh * w * 4, (i + 1) * hh * w * 4), i);
  ctx.putImageData(img, 0, 0);
  return c;
}

/** A grid of tiles scaled to `width` css pixels, with labels when tiles are big enough. */
function tiles(canvas: HTMLCanvasElement, src: HTMLCanvasElement, count: number, th: number, tw: number, width: number, labels: string[] | null, maxH = 420) {
  const aspect = th / tw;
  const gap = count > 1 ? 3 : 0;
  // Roughly square grids, with tiles no bigger than about 76 px so that many stay in view.
  const least = Math.min(count, Math.max(1, Math.ceil(Math.sqrt(count / aspect)), count > 1 ? Math.ceil((width + gap) / (76 + gap)) : 1));
  // Among a few column counts, the one that leaves the fewest empty cells in the last row.
  let cols = least;
  for (let c = least; c <= Math.min(count, least + 3); c++) if ((c - (count % c)) % c < (cols - (count % cols)) % cols) cols = c;
  const labelH = labels && count > 1 ? 13 : 0;
  let cell = (width - gap * (cols - 1)) / cols;
  const rows = Math.ceil(count / cols);
  const heightFor = (c: number) => rows * (c * aspect + labelH) + gap * (rows - 1);
  if (heightFor(cell) > maxH) cell = Math.max(4, (maxH - gap * (rows - 1)) / rows / aspect - labelH / aspect);
  const showLabels = labelH > 0 && cell >= 34;
  const lh = showLabels ? labelH : 0;
  const cw = cols * cell + gap * (cols - 1);
  const ch = rows * (cell * aspect + lh) + gap * (rows - 1);
  const ctx = sized(canvas, Math.round(cw), Math.round(ch));
  ctx.font = `10px ${inkOf(canvas, "--nfw-mono", "monospace")}`;
  ctx.fillStyle = inkOf(canvas, "--nfw-fg2", "#6b7280");
  ctx.textBaseline = "top";
  for (let i = 0; i < count; i++) {
    const x = (i % cols) * (cell + gap);
    const y = Math.floor(i / cols) * (cell * aspect + lh + gap);
    ctx.drawImage(src, 0, i * th, tw, th, x, y, cell, cell * aspect);
    if (showLabels && labels?.[i]) ctx.fillText(labels[i], x + 1, y + cell * aspect + 2, cell - 2);
  }
}

/** Draw a kernel view ([tiles, h, w], [h, w] or [n] uint8) with its colormap; NaN / ±Inf in their own colours. */
export function drawView(canvas: HTMLCanvasElement, view: ViewData, width: number) {
  const table = lut(view.vmin, view.vmax, view.signed);
  let [count, th, tw] = view.shape.length === 3 ? view.shape : view.shape.length === 2 ? [1, ...view.shape] : [1, 1, view.shape[0] ?? 1];
  const marks = view.nonfinite;
  const src = strip(count, th, tw, (img, i) => {
    applyLut(view.pixels, table, img, i * th * tw, th * tw);
    if (marks) applyNonfinite(marks, img, i * th * tw, th * tw);
  });
  if (view.shape.length === 1) {
    // A vector: one row, stretched to a readable band.
    const ctx = sized(canvas, width, 28);
    ctx.drawImage(src, 0, 0, tw, 1, 0, 0, width, 28);
    return;
  }
  tiles(canvas, src, count, th, tw, width, view.labels);
}

function mapPixels(values: Float32Array, offset: number, n: number, vmax: number, img: Uint8ClampedArray) {
  for (let i = 0; i < n; i++) {
    const [r, g, b] = viridis(values[offset + i] / vmax);
    img[4 * i] = r;
    img[4 * i + 1] = g;
    img[4 * i + 2] = b;
    img[4 * i + 3] = 255;
  }
}

function maxOf(values: Float32Array, from = 0, n = values.length): number {
  let m = 0;
  for (let i = from; i < from + n; i++) if (values[i] > m) m = values[i];
  return m || 1;
}

/** Small multiples of every head (each scaled to its own maximum). */
export function drawHeads(canvas: HTMLCanvasElement, a: AttentionData, width: number) {
  if (!a.grid || !a.gridShape) return;
  const [heads, gq, gk] = a.gridShape;
  const grid = a.grid;
  const per = gq * gk;
  const src = strip(heads, gq, gk, (img, i) => mapPixels(grid, i * per, per, maxOf(grid, i * per, per), img));
  tiles(canvas, src, heads, gq, gk, width, Array.from({ length: heads }, (_, i) => `head ${i}`), 260);
}

/** The attention map of a record, with query / key token labels when they fit. Returns its vmax. */
export function drawAttention(canvas: HTMLCanvasElement, a: AttentionData, tokens: string[] | null, width: number): number {
  const [q, k] = a.mapShape;
  const vmax = maxOf(a.map);
  const src = strip(1, q, k, (img) => mapPixels(a.map, 0, q * k, vmax, img));
  // Labels only for exact (unpooled) maps, one token per position.
  const labelled = tokens !== null && q === a.q_len && k === a.k_len && tokens.length >= Math.max(q, k) && q <= 64 && k <= 64;
  if (!labelled) {
    tiles(canvas, src, 1, q, k, width, null, 360);
    return vmax;
  }
  const margin = Math.min(96, 10 + 7 * Math.max(...tokens.map((t) => Math.min(t.length, 12))));
  const cell = Math.max(3, Math.min((width - margin) / k, 360 / q));
  const ctx = sized(canvas, Math.round(margin + cell * k), Math.round(margin + cell * q));
  ctx.drawImage(src, 0, 0, k, q, margin, margin, cell * k, cell * q);
  const fontPx = Math.max(7, Math.min(11, cell - 1));
  ctx.font = `${fontPx}px ${inkOf(canvas, "--nfw-mono", "monospace")}`;
  ctx.fillStyle = inkOf(canvas, "--nfw-fg2", "#6b7280");
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  const label = (t: string) => (t.length > 12 ? `${t.slice(0, 11)}…` : t);
  if (cell >= 7) {
    for (let i = 0; i < q; i++) ctx.fillText(label(tokens[i]), margin - 4, margin + (i + 0.5) * cell);
    for (let j = 0; j < k; j++) {
      ctx.save();
      ctx.translate(margin + (j + 0.5) * cell, margin - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      ctx.fillText(label(tokens[j]), 0, 0);
      ctx.restore();
    }
  }
  return vmax;
}

/** Histogram bars with the lo / hi range under them. */
export function drawHistogram(canvas: HTMLCanvasElement, hist: Histogram, width: number) {
  const H = 90;
  const ctx = sized(canvas, width, H);
  const counts = hist.counts;
  const max = Math.max(1, ...counts);
  // One towering bin (the zeros after a ReLU) flattens the rest: switch to a square-root scale.
  const sorted = [...counts].filter((c) => c > 0).sort((a, b) => a - b);
  const sqrt = sorted.length > 2 && max > 12 * sorted[sorted.length - 2];
  const scale = (c: number) => (sqrt ? Math.sqrt(c / max) : c / max);
  const axisH = 14;
  const bw = width / Math.max(1, counts.length);
  ctx.fillStyle = inkOf(canvas, "--nfw-accent", "#2563eb");
  for (let i = 0; i < counts.length; i++) {
    const bh = counts[i] > 0 ? Math.max(1, scale(counts[i]) * (H - axisH - 4)) : 0;
    ctx.fillRect(i * bw + 0.5, H - axisH - bh, Math.max(1, bw - 1), bh);
  }
  ctx.fillStyle = inkOf(canvas, "--nfw-border", "#d1d5db");
  ctx.fillRect(0, H - axisH, width, 1);
  if (hist.lo < 0 && hist.hi > 0) {
    const x0 = ((0 - hist.lo) / (hist.hi - hist.lo)) * width;
    ctx.fillRect(x0, 2, 1, H - axisH - 2);
  }
  ctx.fillStyle = inkOf(canvas, "--nfw-fg2", "#6b7280");
  ctx.font = `10px ${inkOf(canvas, "--nfw-mono", "monospace")}`;
  ctx.textBaseline = "bottom";
  ctx.textAlign = "left";
  ctx.fillText(fmt(hist.lo), 0, H);
  ctx.textAlign = "right";
  ctx.fillText(fmt(hist.hi), width, H);
  if (sqrt) {
    ctx.textBaseline = "top";
    ctx.fillText("√ count", width, 0);
  }
}

function fmt(x: number): string {
  return Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-2 && x !== 0) ? x.toExponential(1) : Number(x.toPrecision(3)).toString();
}

/**
 * A colour bar: the gradient between vmin and vmax labels (none when no value is finite),
 * then a swatch for each of NaN, +Inf, −Inf that the view holds (`marks`: pixel counts
 * [finite, NaN, +Inf, −Inf]).
 */
export function colorBar(gradient: string | null, vmin: number, vmax: number, marks: readonly number[] = [1, 0, 0, 0]): HTMLElement {
  const out = h("div", { class: "nfw-colorbar" });
  if (gradient !== null) {
    const bar = h("i");
    bar.style.background = `linear-gradient(to right, ${gradient})`;
    out.append(fmt(vmin), bar, fmt(vmax));
  } else {
    out.append(h("span", { class: "nfw-colorbar-none" }, "no finite values"));
  }
  for (let m = 1; m <= 3; m++) {
    if (!marks[m]) continue;
    const chip = h("b", { class: "nfw-swatch-chip" });
    chip.style.background = cssColor(nonfiniteColor(m));
    out.append(h("span", { class: "nfw-swatch", "data-swatch": NONFINITE_NAMES[m], title: `${marks[m]} pixels are ${NONFINITE_NAMES[m]}` }, chip, NONFINITE_NAMES[m]));
  }
  return out;
}
