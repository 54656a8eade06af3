// Attention over an image's patches: which image a sequence tiles, and the rollout, held
// against a plain matrix product of the mixed layers (a different formulation of the same sum).
import { describe, expect, it } from "vitest";
import { patchGrid, patchRow, received, rollout } from "../src/model/patches";
import type { WireGraph } from "../src/wire";
import { at } from "../src/wire_check";

/** A graph with one model input of `shape`, read as `reading`. */
function withInput(shape: number[], reading: string | null = "image"): WireGraph {
  return {
    inputs: ["pixel_values"],
    outputs: [],
    ends: { pixel_values: { shape, dtype: "float32", reading } },
  } as unknown as WireGraph;
}

describe("patch grid", () => {
  it("finds the CLS token and 14 × 14 patches of 16 px in ViT-B/16's 197 keys", () => {
    expect(patchGrid(withInput([1, 3, 224, 224]), 197)).toEqual({
      input: "pixel_values",
      rows: 14,
      cols: 14,
      extra: 1,
      patch: 16,
    });
  });

  it("finds two leading tokens (DeiT's CLS and distillation), registers, and no CLS at all", () => {
    expect(patchGrid(withInput([1, 3, 224, 224]), 198)).toMatchObject({ extra: 2, rows: 14, cols: 14 });
    expect(patchGrid(withInput([1, 3, 224, 224]), 1 + 4 + 256)).toMatchObject({ extra: 5, rows: 16, patch: 14 });
    expect(patchGrid(withInput([2, 3, 64, 64]), 256)).toMatchObject({ extra: 0, rows: 16, cols: 16, patch: 4 });
  });

  it("tiles a wide image with square patches, rows × cols in its proportions", () => {
    expect(patchGrid(withInput([1, 3, 224, 320]), 1 + 14 * 20)).toMatchObject({
      rows: 14,
      cols: 20,
      patch: 16,
      extra: 1,
    });
  });

  it("says no where nothing tiles: text keys, a cross-attention's 77 prompt tokens, no image input", () => {
    expect(patchGrid(withInput([1, 3, 64, 64]), 77)).toBeNull();
    expect(patchGrid(withInput([1, 3, 224, 224]), 13)).toBeNull();
    expect(patchGrid(withInput([1, 16], "ids"), 17)).toBeNull();
    expect(patchGrid(withInput([1, 3, 224, 224], null), 197)).toBeNull();
  });
});

/** Random row-stochastic n × n maps, from a seeded generator. */
function layers(count: number, n: number, seed = 1): Float32Array[] {
  let s = seed;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  return Array.from({ length: count }, () => {
    const a = new Float32Array(n * n);
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (let j = 0; j < n; j++) sum += a[i * n + j] = rand() ** 3;
      for (let j = 0; j < n; j++) a[i * n + j]! /= sum;
    }
    return a;
  });
}

/** Â_L ⋯ Â_1 as full matrices, Â = (I + A) / 2 (rows of A sum to 1). */
function product(maps: Float32Array[], n: number): number[][] {
  let r: number[][] = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
  for (const a of maps) {
    const hat = (i: number, j: number) => 0.5 * (i === j ? 1 : 0) + 0.5 * a[i * n + j]!;
    r = r.map((_, i) => r.map((__, j) => r.reduce((sum, ___, k) => sum + hat(i, k) * r[k]![j]!, 0)));
  }
  return r;
}

describe("rollout", () => {
  it("equals row 0 of the product of the residual-mixed layers, last layer on the left", () => {
    const n = 9;
    const maps = layers(4, n);
    const want = product(maps, n)[0]!;
    const got = rollout(maps, n);
    for (let j = 0; j < n; j++) expect(got[j]).toBeCloseTo(want[j]!, 6);
    expect(got.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 10);
  });

  it("of one layer is half the token itself and half its attention", () => {
    const a = at(layers(1, 5, 7), 0);
    const got = rollout([a], 5, 2);
    for (let j = 0; j < 5; j++) expect(got[j]).toBeCloseTo(0.5 * a[2 * 5 + j]! + (j === 2 ? 0.5 : 0), 6);
  });

  it("of no layers stays where it starts, and refuses a map of the wrong size", () => {
    expect(Array.from(rollout([], 3, 1))).toEqual([0, 1, 0]);
    expect(() => rollout([new Float32Array(8)], 3)).toThrow(/3 × 3/);
  });
});

describe("rows over the patches", () => {
  it("take the CLS row past the leading tokens, or the mean each patch receives", () => {
    const map = new Float32Array([0.1, 0.2, 0.7, 0.3, 0.3, 0.4, 0.5, 0.25, 0.25]);
    expect(Array.from(patchRow(map, 3, 0, 1))).toEqual([map[1], map[2]]);
    const got = Array.from(received(map, 3, 3, 1));
    expect(got[0]).toBeCloseTo((0.2 + 0.3 + 0.25) / 3, 6);
    expect(got[1]).toBeCloseTo((0.7 + 0.4 + 0.25) / 3, 6);
  });
});
