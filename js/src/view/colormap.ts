/** Colormaps applied in JS to the kernel's uint8 views and attention maps. DOM-free. */

export type RGB = [number, number, number];

// Viridis sampled at nine evenly spaced stops; linear in between.
const VIRIDIS: RGB[] = [
  [68, 1, 84], [72, 40, 120], [62, 73, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [110, 206, 88], [253, 231, 37],
];

// Blue - white - red, symmetric around the middle stop (value 0).
const DIVERGING: RGB[] = [
  [33, 102, 172], [103, 169, 207], [209, 229, 240], [247, 247, 247],
  [253, 219, 199], [239, 138, 98], [178, 24, 43],
];

function ramp(stops: RGB[], t: number): RGB {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const a = stops[i];
  const b = stops[i + 1];
  return [Math.round(a[0] + (b[0] - a[0]) * f), Math.round(a[1] + (b[1] - a[1]) * f), Math.round(a[2] + (b[2] - a[2]) * f)];
}

/** t in [0, 1]. */
export function viridis(t: number): RGB {
  return ramp(VIRIDIS, t);
}

/** t in [-1, 1]; 0 is white. */
export function diverging(t: number): RGB {
  return ramp(DIVERGING, (Math.min(1, Math.max(-1, t)) + 1) / 2);
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
export function applyLut(pixels: Uint8Array, table: Uint8ClampedArray, dst: Uint8ClampedArray, offset = 0, count = pixels.length - offset): void {
  for (let i = 0; i < count; i++) {
    const p = pixels[offset + i] * 4;
    const o = i * 4;
    dst[o] = table[p];
    dst[o + 1] = table[p + 1];
    dst[o + 2] = table[p + 2];
    dst[o + 3] = 255;
  }
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
