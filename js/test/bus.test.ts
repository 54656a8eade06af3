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
const tap = (dst: string): DrawnEdge => ({
  src: "i:text",
  dst,
  kind: "merge",
  edge: { src: "i:text", dst, kind: "merge" } as unknown as DrawnEdge["edge"],
});

describe("a bus down to its readers", () => {
  it("turns onto its lane under what its way across would cross", () => {
    const view = { byKey: new Map() } as unknown as ViewGraph;
    const { buses } = drawBuses(
      new Map([["i:text", [tap("s:a"), tap("s:b")]]]),
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
