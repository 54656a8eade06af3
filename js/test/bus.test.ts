// A bus (scene/bus.ts) down to its readers turns onto its lane below a node its way across
// would cross, not through it: diffusers' U with its head beside the text's input, as a
// hand-made drawing (boxes x, y, w, h in TB). The encoder's column stands between the left
// lane and the readers, so the lane is right of the readers and the way there passes the head.
import { describe, expect, it } from "vitest";
import type { Box } from "../src/layout/layout";
import { segmentHitsBox } from "../src/layout/flow";
import type { DrawnEdge } from "../src/model/junctions";
import type { ViewGraph } from "../src/model/view_model";
import { drawBuses } from "../src/scene/bus";

const boxes: Record<string, Box> = {
  "i:text": [100, 0, 150, 32], // the source
  "s:head": [240, 20, 320, 50], // beside it, in the way across
  "s:enc": [240, 150, 300, 400], // the encoder's column, between the left lane and the readers
  "s:a": [600, 200, 200, 50],
  "s:b": [600, 320, 200, 50],
};
/** A merge edge into `dst` as drawn (`more`: what the wire edge says besides). */
const tap = (src: string, dst: string, more: object = {}): DrawnEdge => ({
  src,
  dst,
  kind: "merge",
  edge: { src, dst, kind: "merge", ...more } as unknown as DrawnEdge["edge"],
});

describe("a bus down to its readers", () => {
  it("turns onto its lane under what its way across would cross", () => {
    const view = { byKey: new Map() } as unknown as ViewGraph;
    const { buses } = drawBuses(
      new Map([["i:text", [tap("i:text", "s:a"), tap("i:text", "s:b")]]]),
      new Map(),
      view,
      (k) => boxes[k],
      Object.values(boxes),
      "TB",
    );
    expect(buses.length).toBe(1);
    const pts = buses[0]!.points;
    const crossed: string[] = [];
    for (let i = 0; i + 3 < pts.length; i += 2)
      for (const [k, b] of Object.entries(boxes))
        if (k !== "i:text" && segmentHitsBox(pts[i]!, pts[i + 1]!, pts[i + 2]!, pts[i + 3]!, b, 1)) crossed.push(k);
    expect(crossed).toEqual([]);
    // it leaves its source downwards and runs across below the head, above its first reader
    const across = Math.max(...pts.filter((_, i) => i % 2 === 1 && i < 6));
    expect(across).toBeGreaterThan(70);
    expect(across).toBeLessThan(225);
  });
});

describe("a bus up to a reader earlier in the flow", () => {
  // VisionEncoderDecoder (ViT and GPT-2 with cross-attention) at 1280 x 674, as laid out
  // (boxes x, y, w, h in TB): the encoder's final layernorm at the bottom of the left column,
  // the decoder's cross-attention above its level in the right column, the encoder's stack
  // above the layernorm. The line went out of the layernorm's left side to a lane at the
  // canvas's edge (its label off the canvas) and tapped across the layernorm's top and the
  // line into it; now it takes the gap between the columns, its tap clear of the source.
  const ved: Record<string, Box> = {
    "s:ln": [16, 442, 196, 50], // the source
    "k:vit": [89, 150, 275, 258], // the encoder's stack, above it
    "s:pooler": [16, 526, 196, 50],
    "o:out": [252, 535, 271, 32],
    "s:wpe": [581, 130, 193, 48], // the decoder's column: its embeddings, then its stack
    "k:gpt2": [677, 262, 289, 370],
    "s:cross": [691, 414, 210, 50],
  };
  it("leaves the source towards the reader and taps it from the gap, not along the source", () => {
    const view = { byKey: new Map() } as unknown as ViewGraph;
    const { buses, taps } = drawBuses(
      new Map([["s:ln", [tap("s:ln", "s:cross", { readers: 3 })]]]), // (one edge into the stack, its three layers' readers)
      new Map([["s:ln", "cross-attention"]]),
      view,
      (k) => ved[k],
      Object.values(ved),
      "TB",
    );
    const pts = [...buses[0]!.points, ...taps.flatMap((t) => t.points)];
    const xs = pts.filter((_, i) => i % 2 === 0);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(16); // not round the source's far side
    const [x, y, w] = ved["s:ln"]!;
    for (let i = 0; i + 3 < pts.length; i += 2)
      if (pts[i + 1] === pts[i + 3] && pts[i + 1]! < y)
        // a level segment above the source
        expect(Math.max(pts[i]!, pts[i + 2]!) <= x || Math.min(pts[i]!, pts[i + 2]!) >= x + w).toBe(true);
    const label = buses[0]!.label!;
    expect(label.x).toBeGreaterThan(x + w);
    expect(label.x).toBeLessThan(ved["s:cross"]![0]);
  });
});
