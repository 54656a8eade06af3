/** Canvas drawings for the inspector: activation views, histograms, colour bars, and the
 * canvas helpers the other drawings share (attention maps: attention_plots.ts). */
import type { Histogram, ViewData } from "../wire";
import {
  applyLut,
  applyNonfinite,
  categoricalColor,
  type ColorRange,
  cssColor,
  lut,
  lutOnRange,
  NONFINITE_NAMES,
  nonfiniteColor,
} from "./colormap";
import { h } from "./dom";

/** Where the tiles of a drawn grid are (css pixels), to find the tile under a click. */
export interface TileGeometry {
  count: number;
  cols: number;
  cellW: number;
  cellH: number; // the tile's height, without its label
  rowH: number; // from one row's top to the next
  gap: number;
}

/** The index of the tile at (x, y) in css pixels of the canvas, or -1. */
export function tileAt(g: TileGeometry, x: number, y: number): number {
  const col = Math.floor(x / (g.cellW + g.gap));
  const row = Math.floor(y / g.rowH);
  if (col < 0 || col >= g.cols || row < 0 || x - col * (g.cellW + g.gap) > g.cellW || y - row * g.rowH > g.cellH)
    return -1;
  const i = row * g.cols + col;
  return i < g.count ? i : -1;
}

export function sized(canvas: HTMLCanvasElement, cssW: number, cssH: number): CanvasRenderingContext2D {
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

export function inkOf(el: Element, name: string, fallback: string): string {
  return getComputedStyle(el).getPropertyValue(name).trim() || fallback;
}

/** Raw pixels of `count` maps of h*w into one canvas laid out as a vertical strip. */
export function strip(
  count: number,
  hh: number,
  w: number,
  fill: (img: Uint8ClampedArray, i: number) => void,
): HTMLCanvasElement {
  const c = document.createElement("canvas");
  c.width = w;
  c.height = hh * count;
  const ctx = c.getContext("2d")!;
  const img = ctx.createImageData(w, hh * count);
  for (let i = 0; i < count; i++) fill(img.data.subarray(i * hh * w * 4, (i + 1) * hh * w * 4), i);
  ctx.putImageData(img, 0, 0);
  return c;
}

/** An image view ([h, w, 3] colours) at its own size, or null for any other view. */
export function pictureOf(view: ViewData): HTMLCanvasElement | null {
  if (view.palette !== "rgb" || view.shape.length !== 3 || view.shape[2] !== 3) return null;
  const [h = 0, w = 0] = view.shape; // (three, checked above)
  return strip(1, h, w, (img) => {
    for (let i = 0; i < h * w; i++)
      img.set([view.pixels[3 * i]!, view.pixels[3 * i + 1]!, view.pixels[3 * i + 2]!, 255], 4 * i);
  });
}

/** A grid of tiles scaled to `width` css pixels, with labels when tiles are big enough. */
export function tiles(
  canvas: HTMLCanvasElement,
  src: HTMLCanvasElement,
  count: number,
  th: number,
  tw: number,
  width: number,
  labels: string[] | null,
  maxH = 420,
): TileGeometry {
  const aspect = th / tw;
  const gap = count > 1 ? 3 : 0;
  const labelH = labels && count > 1 ? 13 : 0;
  // Tiles of about 100 px where they fit (at most 130; smaller to stay within maxH), and
  // last rows that are full rather than ragged.
  let cols = 1;
  let best = Infinity;
  for (let c = 1; c <= count && count > 1; c++) {
    const cell = (width - gap * (c - 1)) / c;
    if (cell > 130 && c < count) continue;
    const rows = Math.ceil(count / c);
    const fit = Math.min(cell, (maxH - gap * (rows - 1)) / rows / aspect - labelH / aspect);
    if (fit < 16 && c > 1) break;
    const score = Math.abs(Math.log(Math.max(1, fit) / 100)) + ((c - (count % c)) % c) / count;
    if (score < best) [best, cols] = [score, c];
  }
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
    const label = labels?.[i];
    if (showLabels && label) ctx.fillText(label, x + 1, y + cell * aspect + 2, cell - 2);
  }
  return { count, cols, cellW: cell, cellH: cell * aspect, rowH: cell * aspect + lh + gap, gap };
}

export interface DrawOptions {
  range?: ColorRange; // colour the codes on this range instead of the view's own (A and B on one scale)
  perTile?: boolean; // each tile on the range of its own values
  maxH?: number;
}

/** The range of a tile's own values (symmetric about 0 for signed views). */
export function tileRange(view: ViewData, from: number, n: number): ColorRange {
  let lo = 255;
  let hi = 0;
  for (let i = from; i < from + n; i++) {
    const c = view.pixels[i]!;
    if (view.nonfinite?.[i]) continue;
    if (c < lo) lo = c;
    if (c > hi) hi = c;
  }
  if (lo > hi) return { vmin: view.vmin, vmax: view.vmax, signed: view.signed };
  const at = (c: number) => view.vmin + ((view.vmax - view.vmin) * c) / 255;
  if (!view.signed) return { vmin: at(lo), vmax: at(hi), signed: false };
  const m = Math.max(Math.abs(at(lo)), Math.abs(at(hi)));
  return { vmin: -m, vmax: m, signed: true };
}

/** RGBA of `n` codes of a view from `from`, in its palette or on a range; NaN / ±Inf in their own colours. */
export function paint(
  view: ViewData,
  img: Uint8ClampedArray,
  from: number,
  n: number,
  table: Uint8ClampedArray | null,
) {
  if (view.palette === "categorical") {
    for (let i = 0; i < n; i++) {
      const [r, g, b] = categoricalColor(view.pixels[from + i]!);
      img.set([r, g, b, 255], i * 4);
    }
  } else if (table) {
    applyLut(view.pixels, table, img, from, n);
  }
  if (view.nonfinite) applyNonfinite(view.nonfinite, img, from, n);
}

/** Draw a kernel view ([tiles, h, w], [h, w], [n] uint8 codes, or [h, w, 3] colours) in its palette; NaN / ±Inf in their own colours. Returns where its tiles are. */
export function drawView(
  canvas: HTMLCanvasElement,
  view: ViewData,
  width: number,
  opts: DrawOptions = {},
): TileGeometry {
  const picture = pictureOf(view);
  if (picture) return tiles(canvas, picture, 1, picture.height, picture.width, width, null, opts.maxH ?? 420);
  const own = opts.range ? lutOnRange(view.vmin, view.vmax, opts.range) : lut(view.vmin, view.vmax, view.signed);
  const [count = 1, th = 1, tw = 1] =
    view.shape.length === 3 ? view.shape : view.shape.length === 2 ? [1, ...view.shape] : [1, 1, view.shape[0] ?? 1];
  const src = strip(count, th, tw, (img, i) => {
    const table =
      opts.perTile && count > 1 ? lutOnRange(view.vmin, view.vmax, tileRange(view, i * th * tw, th * tw)) : own;
    paint(view, img, i * th * tw, th * tw, table);
  });
  if (view.shape.length === 1) {
    // A vector: one row, stretched to a readable band.
    const ctx = sized(canvas, width, 28);
    ctx.drawImage(src, 0, 0, tw, 1, 0, 0, width, 28);
    return { count: 1, cols: 1, cellW: width, cellH: 28, rowH: 28, gap: 0 };
  }
  const labels =
    opts.perTile && view.labels && count > 1
      ? view.labels.map((l, i) => {
          const r = tileRange(view, i * th * tw, th * tw);
          return `${l} ${r.signed ? `±${fmt(r.vmax)}` : `${fmt(r.vmin)}–${fmt(r.vmax)}`}`;
        })
      : view.labels;
  // A grid may be as tall as it is wide (the panel scrolls); one map stays within 420 px.
  return tiles(canvas, src, count, th, tw, width, labels, opts.maxH ?? (count > 1 ? Math.max(420, width) : 420));
}

/** Histogram bars with the lo / hi range under them. */
export function drawHistogram(canvas: HTMLCanvasElement, hist: Histogram, width: number) {
  const H = 90;
  const ctx = sized(canvas, width, H);
  const counts = hist.counts;
  const max = Math.max(1, ...counts);
  // One towering bin (the zeros after a ReLU) flattens the rest: switch to a square-root scale.
  const sorted = [...counts].filter((c) => c > 0).sort((a, b) => a - b);
  const sqrt = sorted.length > 2 && max > 12 * sorted[sorted.length - 2]!;
  const scale = (c: number) => (sqrt ? Math.sqrt(c / max) : c / max);
  const axisH = 14;
  const bw = width / Math.max(1, counts.length);
  ctx.fillStyle = inkOf(canvas, "--nfw-accent", "#2563eb");
  for (const [i, c] of counts.entries()) {
    const bh = c > 0 ? Math.max(1, scale(c) * (H - axisH - 4)) : 0;
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

export function fmt(x: number): string {
  return Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-2 && x !== 0)
    ? x.toExponential(1)
    : Number(x.toPrecision(3)).toString();
}

/**
 * A colour bar: the gradient between vmin and vmax labels (none when no value is finite),
 * "≤" / "≥" at an end that clips values (`clipped`: how many lie below / above: they are
 * drawn in the end colour), then a swatch for each of NaN, +Inf, −Inf that the view holds
 * (`marks`: pixel counts [finite, NaN, +Inf, −Inf]).
 */
export function colorBar(
  gradient: string | null,
  vmin: number,
  vmax: number,
  marks: readonly number[] = [1, 0, 0, 0],
  clipped: readonly [number, number] | null = null,
): HTMLElement {
  const out = h("div", { class: "nfw-colorbar" });
  if (gradient !== null) {
    const bar = h("i");
    bar.style.background = `linear-gradient(to right, ${gradient})`;
    const end = (x: number, n: number, sign: string, where: string) =>
      n > 0
        ? h(
            "span",
            {
              class: "nfw-clip",
              "data-clipped": where,
              title: `${n.toLocaleString("en-US")} values ${where} ${fmt(x)} are drawn in this end's colour`,
            },
            `${sign}${fmt(x)}`,
          )
        : fmt(x);
    out.append(end(vmin, clipped?.[0] ?? 0, "≤", "below"), bar, end(vmax, clipped?.[1] ?? 0, "≥", "above"));
  } else {
    out.append(h("span", { class: "nfw-colorbar-none" }, "no finite values"));
  }
  for (let m = 1; m <= 3; m++) {
    if (!marks[m]) continue;
    const chip = h("b", { class: "nfw-swatch-chip" });
    chip.style.background = cssColor(nonfiniteColor(m));
    out.append(
      h(
        "span",
        {
          class: "nfw-swatch",
          "data-swatch": NONFINITE_NAMES[m],
          title: `${marks[m]} pixels are ${NONFINITE_NAMES[m]}`,
        },
        chip,
        NONFINITE_NAMES[m],
      ),
    );
  }
  return out;
}
