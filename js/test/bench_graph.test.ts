// The benchmark's synthetic graphs (bench/synth.mjs, built by bench/graph_builder.mjs by hand)
// are messages the front end accepts: a field added to the wire (wire/schema.py) is added there
// too, or `npm run bench` paints nothing.
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript, no types
import { synthTransformer } from "../bench/synth.mjs";
import { decodeGraph } from "../src/wire";

describe("the benchmark's synthetic graphs", () => {
  it.each([63, 991])("of about %i stages decode as the wire's graph message", (stages) => {
    const graph = decodeGraph(synthTransformer(stages));
    expect(Math.abs(graph.calls.length - stages)).toBeLessThan(40);
  });
});
