import { describe, expect, it } from "vitest";
import { stageEdges, topologyIndex } from "../src/model/topology";
import type { WireGraph } from "../src/wire";
import { at } from "../src/wire_check";
import { loadGraph } from "./fixtures";

const g = loadGraph("wire_unet.json");
const idx = topologyIndex(g);
const call = (id: string) => g.calls.findIndex((c) => c.id === id);
const text = (edges: { src: string; dst: string; kind: string }[]) =>
  edges.map((e) => `${e.src} -> ${e.dst} ${e.kind}`);
const top = g.calls.flatMap((c, i) => (c.parent === -1 ? [i] : []));
const leaves = g.calls.flatMap((c, i) => (c.leaf ? [i] : []));

describe("stageEdges on the U-Net", () => {
  it("top-level stages: cat skips, no residual leak from the collapsed bottleneck", () => {
    expect(text(stageEdges(idx, top))).toEqual([
      "input:0 -> enc1 flow",
      "enc1 -> enc2 flow",
      "enc2 -> bottleneck flow",
      "bottleneck -> up2 flow",
      "enc2 -> dec2 skip",
      "up2 -> dec2 flow",
      "dec2 -> up1 flow",
      "enc1 -> dec1 skip",
      "up1 -> dec1 flow",
      "dec1 -> head flow",
      "head -> output:0 flow",
    ]);
  });

  it("bottleneck expanded: its residual add becomes a skip edge into up2", () => {
    const sel = top
      .filter((c) => c !== call("bottleneck"))
      .concat(["bottleneck.conv1", "bottleneck.act", "bottleneck.conv2"].map(call));
    expect(text(stageEdges(idx, sel))).toEqual([
      "input:0 -> enc1 flow",
      "enc1 -> enc2 flow",
      "enc2 -> bottleneck.conv1 flow",
      "bottleneck.conv1 -> bottleneck.act flow",
      "bottleneck.act -> bottleneck.conv2 flow",
      "enc2 -> up2 skip",
      "bottleneck.conv2 -> up2 flow",
      "enc2 -> dec2 skip",
      "up2 -> dec2 flow",
      "dec2 -> up1 flow",
      "enc1 -> dec1 skip",
      "up1 -> dec1 flow",
      "dec1 -> head flow",
      "head -> output:0 flow",
    ]);
  });

  it("all leaves: skips land on the first conv of each decoder", () => {
    const edges = text(stageEdges(idx, leaves));
    expect(edges.filter((e) => e.endsWith("skip"))).toEqual([
      "enc2.act2 -> up2 skip",
      "enc2.act2 -> dec2.conv1 skip",
      "enc1.act2 -> dec1.conv1 skip",
    ]);
    expect(edges).toContain("input:0 -> enc1.conv1 flow");
    expect(edges).toContain("head -> output:0 flow");
    expect(edges.length).toBe(leaves.length + 1 + 3);
  });

  it("a merge: two sources where neither is an ancestor of the other", () => {
    // Two inputs, two branches, one fusion stage.
    const two: WireGraph = {
      ...g,
      inputs: ["image", "clinical"],
      outputs: ["out"],
      calls: [
        { ...at(g.calls, 0), id: "cnn", module: "cnn", parent: -1, in: [0], args: [0], state: -1 },
        { ...at(g.calls, 0), id: "mlp", module: "mlp", parent: -1, in: [1], args: [0], state: -1 },
        { ...at(g.calls, 0), id: "fusion", module: "fusion", parent: -1, in: [4], args: [0], state: -1 },
      ],
      ops: [
        [-1, []],
        [-1, []],
        [0, [0]],
        [1, [1]],
        [-1, [2, 3]],
        [2, [4]],
      ],
      input_ops: [
        ["image", 0],
        ["clinical", 1],
      ],
      output_ops: [["out", [5]]],
    };
    expect(text(stageEdges(topologyIndex(two), [0, 1, 2]))).toEqual([
      "image -> cnn flow",
      "clinical -> mlp flow",
      "cnn -> fusion flow", // tie on ancestors: the earliest in canonical order is primary
      "mlp -> fusion merge",
      "fusion -> out flow",
    ]);
  });

  it("a stage without sources is attached to the previous selected stage", () => {
    const lonely: WireGraph = {
      ...g,
      calls: [
        { ...at(g.calls, 0), id: "a", module: "a", parent: -1, in: [0], args: [0], state: -1 },
        { ...at(g.calls, 0), id: "const", module: "const", parent: -1, in: [], args: [], state: -1 },
      ],
      ops: [
        [-1, []],
        [0, [0]],
        [1, []],
      ],
      input_ops: [["input:0", 0]],
      output_ops: [["output:0", [1]]],
    };
    expect(text(stageEdges(topologyIndex(lonely), [0, 1]))).toEqual([
      "input:0 -> a flow",
      "a -> const order",
      "a -> output:0 flow",
    ]);
    expect(text(stageEdges(topologyIndex(lonely), [1]))).toEqual([
      "input:0 -> const order",
      "input:0 -> output:0 flow",
    ]);
  });

  it("sequential topology ignores ops", () => {
    const seq = { ...g, topology: "sequential" as const };
    expect(text(stageEdges(topologyIndex(seq), [call("enc1"), call("up2"), call("head")]))).toEqual([
      "input:0 -> enc1 flow",
      "enc1 -> up2 flow",
      "up2 -> head flow",
      "head -> output:0 flow",
    ]);
    expect(text(stageEdges(topologyIndex(seq), []))).toEqual(["input:0 -> output:0 flow"]);
  });
});
