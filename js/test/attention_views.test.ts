// Attention views without a DOM: labels of rows and columns of a (zoomed, pooled) map, and
// where a click zooms to.
import { describe, expect, it } from "vitest";
import { positionLabel, topOf, windowLabel, zoomWindow } from "../src/view/attention_views";
import type { AttentionData } from "../src/wire";

function att(q: number, k: number, pool: [number, number], window: [number, number, number, number]): AttentionData {
  const rows = Math.ceil((window[1] - window[0]) / pool[0]);
  const cols = Math.ceil((window[3] - window[2]) / pool[1]);
  return {
    heads: 2,
    q_len: q,
    k_len: k,
    pool,
    source: "sdpa",
    causal: false,
    head: null,
    window,
    map: new Float32Array(rows * cols),
    mapShape: [rows, cols],
    grid: null,
    gridShape: null,
  };
}

describe("labels", () => {
  it("name a single position by its token and a block by its positions", () => {
    const tokens = ["the", "cat", "sat"];
    expect(windowLabel(1, 0, 3, 1, tokens)).toBe("cat");
    expect(windowLabel(2, 256, 512, 2, null)).toBe("260–261");
    expect(windowLabel(127, 256, 511, 2, null)).toBe("510–510"); // a short last block
    expect(positionLabel(0, 2, 5, null)).toBe("0–2");
    expect(positionLabel(1, 3, 3, tokens)).toBe("cat");
  });
});

describe("zoom", () => {
  it("goes ×4 around the clicked cell, at least 64 positions, within the sequence", () => {
    const overview = att(4096, 4096, [16, 16], [0, 4096, 0, 4096]);
    expect(zoomWindow(overview, 0, 255)).toEqual([0, 1024, 3072, 4096]);
    expect(zoomWindow(overview, 128, 128)).toEqual([1544, 2568, 1544, 2568]);
    const deep = att(4096, 4096, [1, 1], [100, 164, 200, 264]);
    expect(zoomWindow(deep, 3, 3)).toBeNull(); // exact and small already
    const small = att(100, 100, [2, 2], [0, 100, 0, 100]);
    expect(zoomWindow(small, 10, 10)).toEqual([0, 64, 0, 64]);
  });

  it("scales: 1, the map's own top, or the top of the heads shown", () => {
    const maps = new Float32Array([0.1, 0.2, 0.5, 0.4]); // two heads of two values
    expect(topOf(maps, 2, 0, [0, 1], "absolute")).toBe(1);
    expect(topOf(maps, 2, 0, [0, 1], "per map")).toBeCloseTo(0.2);
    expect(topOf(maps, 2, 0, [0, 1], "shared")).toBeCloseTo(0.5);
  });
});
