/** Colormaps applied in JS to the kernel's uint8 views and attention maps. DOM-free. */
import table from "../../../neural_flow_widget/capture/colormaps.json";
import { at } from "../wire_check";

export type RGB = [number, number, number];

/** Rows of the shared JSON as RGB triples, checked once on load: `size` rows (when given) of three numbers. */
function rgbTable(name: string, rows: readonly (readonly number[])[], size?: number): readonly RGB[] {
  if (size !== undefined && rows.length !== size)
    throw new Error(`colormaps.json: ${name} has ${rows.length} entries, not ${size}`);
  return rows.map((c, i): RGB => {
    const [r, g, b] = c;
    if (c.length !== 3 || r === undefined || g === undefined || b === undefined)
      throw new Error(`colormaps.json: ${name}[${i}] is not an RGB triple`);
    return [r, g, b];
  });
}

// The one table shared with Python (capture/views.py colours the PNG views from it):
// 256 RGB entries per map, code 0 first. esbuild and vitest bundle the JSON as is.
const VIRIDIS = rgbTable("viridis", table.viridis, 256);
// Blue - white - red: code 0 is the bluest (-1), 255 the reddest (+1), the middle is white.
const DIVERGING = rgbTable("diverging", table.diverging, 256);
// Outside both ramps: the colours of values that are not numbers, by a view's nonfinite mark.
const NF = table.nonfinite;
const NONFINITE = rgbTable("nonfinite", [[0, 0, 0], NF.nan, NF.posinf, NF.neginf]);

/** A view's nonfinite marks: 1 NaN, 2 +Inf, 3 −Inf (0: finite); their names, by mark. */
export const NONFINITE_NAMES = ["", "NaN", "+Inf", "−Inf"] as const;
export const NAN_MARK = 1;

/** The colour of a nonfinite mark (1 NaN, 2 +Inf, 3 −Inf). */
export function nonfiniteColor(mark: number): RGB {
  const [r, g, b] = at(NONFINITE, mark >= 1 && mark <= 3 ? mark : NAN_MARK);
  return [r, g, b];
}

/** The entry of a 256-entry map for u in [0, 1] (clamped; not finite -> code 0). */
function pick(map: readonly RGB[], u: number): RGB {
  const [r, g, b] = at(map, Math.round(Math.min(1, Math.max(0, Number.isFinite(u) ? u : 0)) * 255));
  return [r, g, b];
}

/** t in [0, 1]. */
export function viridis(t: number): RGB {
  return pick(VIRIDIS, t);
}

/** t in [-1, 1]; 0 is white. */
export function diverging(t: number): RGB {
  return pick(DIVERGING, (Math.min(1, Math.max(-1, t)) + 1) / 2);
}

/** The colour of a value for a view's range: diverging around 0 when signed, else viridis. */
export function colorOf(v: number, vmin: number, vmax: number, signed: boolean): RGB {
  if (signed) {
    const m = Math.max(Math.abs(vmin), Math.abs(vmax)) || 1;
    return diverging(v / m);
  }
  const span = vmax - vmin;
  return viridis(span > 0 ? (v - vmin) / span : 0.5);
}

/**
 * A 256-entry RGBA lookup table for uint8 pixels that encode vmin..vmax linearly
 * (byte b stands for vmin + (vmax - vmin) * b / 255).
 */
export function lut(vmin: number, vmax: number, signed: boolean): Uint8ClampedArray {
  const out = new Uint8ClampedArray(256 * 4);
  for (let b = 0; b < 256; b++) {
    const [r, g, bl] = colorOf(vmin + ((vmax - vmin) * b) / 255, vmin, vmax, signed);
    out.set([r, g, bl, 255], b * 4);
  }
  return out;
}

/** Apply a lookup table to uint8 pixels, writing RGBA into `dst` (an ImageData's data). */
export function applyLut(
  pixels: Uint8Array,
  table: Uint8ClampedArray,
  dst: Uint8ClampedArray,
  offset = 0,
  count = pixels.length - offset,
): void {
  for (let i = 0; i < count; i++) {
    const p = pixels[offset + i]! * 4; // a byte: p + 2 < 256 * 4, the table's length
    const o = i * 4;
    dst[o] = table[p]!;
    dst[o + 1] = table[p + 1]!;
    dst[o + 2] = table[p + 2]!;
    dst[o + 3] = 255;
  }
}

/** Paint the pixels whose mark is set in their nonfinite colour (RGBA `dst`, as applyLut wrote it). */
export function applyNonfinite(
  marks: Uint8Array,
  dst: Uint8ClampedArray,
  offset = 0,
  count = marks.length - offset,
): void {
  for (let i = 0; i < count; i++) {
    const m = marks[offset + i]!;
    if (m < 1 || m > 3) continue;
    const [r, g, b] = at(NONFINITE, m);
    dst[i * 4] = r;
    dst[i * 4 + 1] = g;
    dst[i * 4 + 2] = b;
    dst[i * 4 + 3] = 255;
  }
}

/** How many pixels carry each mark: [finite, NaN, +Inf, −Inf]. */
export function markCounts(marks: Uint8Array | null, total: number): [number, number, number, number] {
  const n: [number, number, number, number] = [total, 0, 0, 0];
  if (!marks) return n;
  for (const m of marks) {
    if (m === 1 || m === 2 || m === 3) {
      n[m]++;
      n[0]--;
    }
  }
  return n;
}

export function cssColor([r, g, b]: RGB): string {
  return `rgb(${r}, ${g}, ${b})`;
}

/** CSS linear-gradient stops for a colour bar, low to high. */
export function gradientStops(signed: boolean, vmin = -1, vmax = 1, steps = 11): string {
  const parts: string[] = [];
  for (let i = 0; i < steps; i++) {
    const t = i / (steps - 1);
    parts.push(`${cssColor(colorOf(vmin + (vmax - vmin) * t, vmin, vmax, signed))} ${(t * 100).toFixed(0)}%`);
  }
  return parts.join(", ");
}

// Class indices (a segmentation map, palette "categorical"): the shared table, cycled.
const CATEGORICAL = rgbTable("categorical", table.categorical.colors);

/** The colour of class `code` (cycled beyond the table's 20). */
export function categoricalColor(code: number): RGB {
  const [r, g, b] = at(CATEGORICAL, ((code % CATEGORICAL.length) + CATEGORICAL.length) % CATEGORICAL.length);
  return [r, g, b];
}

/** A colour range: codes are drawn as the values they stand for, coloured on this range. */
export interface ColorRange {
  vmin: number;
  vmax: number;
  signed: boolean;
}

/**
 * A lookup table for uint8 codes that encode vmin..vmax, coloured on another range `to`
 * (views of two runs drawn on one scale, a tile on its own); values beyond `to` clip.
 */
export function lutOnRange(vmin: number, vmax: number, to: ColorRange): Uint8ClampedArray {
  const out = new Uint8ClampedArray(256 * 4);
  for (let b = 0; b < 256; b++) {
    const v = vmin + ((vmax - vmin) * b) / 255;
    const [r, g, bl] = colorOf(to.signed ? v : Math.min(to.vmax, Math.max(to.vmin, v)), to.vmin, to.vmax, to.signed);
    out.set([r, g, bl, 255], b * 4);
  }
  return out;
}

/** The range that holds two ranges (symmetric about 0 when either is signed). */
export function unionRange(a: ColorRange, b: ColorRange): ColorRange {
  if (a.signed || b.signed) {
    const m = Math.max(Math.abs(a.vmin), Math.abs(a.vmax), Math.abs(b.vmin), Math.abs(b.vmax));
    return { vmin: -m, vmax: m, signed: true };
  }
  return { vmin: Math.min(a.vmin, b.vmin), vmax: Math.max(a.vmax, b.vmax), signed: false };
}
