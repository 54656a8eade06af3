/**
 * Attention over an image's patches (a vision transformer, or self-attention over a feature
 * map): which input image a sequence of keys tiles, and attention rollout across layers.
 * Pure and DOM-free.
 *
 * A sequence of `keys` tiles an H × W input image when, after `extra` leading tokens (the CLS
 * token, a distillation token, registers: at most MAX_EXTRA), the rest is a grid of
 * rows × cols square patches of p × p pixels that covers the image exactly: H = rows·p,
 * W = cols·p. The fewest extra tokens that make such a grid win (197 keys over 224 × 224: one
 * CLS token and 14 × 14 patches of 16 px).
 */
import type { WireGraph } from "../wire";

export const MAX_EXTRA = 8;

/** How a sequence lies over an input image: `extra` leading tokens, then rows × cols patches. */
export interface PatchGrid {
  input: string; // the model input read as an image
  rows: number;
  cols: number;
  extra: number;
  patch: number; // pixels a side
}

/** The image input whose patches `keys` positions are (see the module doc), or null. */
export function patchGrid(graph: WireGraph, keys: number): PatchGrid | null {
  for (const input of graph.inputs) {
    const end = Object.hasOwn(graph.ends, input) ? graph.ends[input] : undefined;
    if (end?.reading !== "image" || end.shape.length < 2) continue;
    const [height = 0, width = 0] = end.shape.slice(-2); // (two at least, checked above)
    for (let extra = 0; extra <= MAX_EXTRA && extra < keys; extra++) {
      const grid = tiling(height, width, keys - extra);
      if (grid) return { input, extra, ...grid };
    }
  }
  return null;
}

/** Square patches of p px that tile height × width in exactly n, at least 2 × 2 of them. */
function tiling(height: number, width: number, n: number): { rows: number; cols: number; patch: number } | null {
  for (let rows = 2; rows * 2 <= n && rows <= height; rows++) {
    if (n % rows || height % rows) continue;
    const patch = height / rows;
    const cols = n / rows;
    if (cols >= 2 && cols * patch === width) return { rows, cols, patch };
  }
  return null;
}

/**
 * Attention rollout (Abnar & Zuidema 2020) of query `from`: how much of each position flows
 * into it through the layers given (first to last, each an n × n map of probabilities, rows
 * summing to 1, e.g. the mean over heads). Each layer's map is mixed with the residual path,
 * Â = residual·I + (1 − residual)·A, rows renormalised, and the product Â_L ⋯ Â_1 taken; its
 * row `from` is returned (n values summing to 1).
 */
export function rollout(layers: Float32Array[], n: number, from = 0, residual = 0.5): Float64Array {
  let v = new Float64Array(n);
  v[from] = 1;
  for (let l = layers.length - 1; l >= 0; l--) {
    const a = layers[l]!;
    if (a.length !== n * n) throw new Error(`rollout: layer ${l} is ${a.length} values, not ${n} × ${n}`);
    const next = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      if (v[i] === 0) continue;
      let sum = 0;
      for (let j = 0; j < n; j++) sum += a[i * n + j]!;
      // a row that attends nowhere (masked) keeps only its residual path
      const mix = (1 - residual) / (residual + (1 - residual) * sum || 1);
      const self = residual / (residual + (1 - residual) * sum || 1);
      const w = v[i]!;
      for (let j = 0; j < n; j++) next[j]! += w * mix * a[i * n + j]!;
      next[i]! += w * self;
    }
    v = next;
  }
  return v;
}

/** Row `row` of an n-column map, the keys from `extra` on (the patches), as rows × cols. */
export function patchRow(map: Float32Array | Float64Array, n: number, row: number, extra: number): Float64Array {
  const out = new Float64Array(n - extra);
  for (let j = extra; j < n; j++) out[j - extra] = map[row * n + j]!;
  return out;
}

/** The attention each patch receives, averaged over every query (when there is no CLS token). */
export function received(map: Float32Array, q: number, n: number, extra: number): Float64Array {
  const out = new Float64Array(n - extra);
  for (let i = 0; i < q; i++) for (let j = extra; j < n; j++) out[j - extra]! += map[i * n + j]! / q;
  return out;
}
