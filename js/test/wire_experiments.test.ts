// Issue 22 on the wire: the graph's gradients and readouts, the `intervention` and `patching`
// traitlets, and the stage replies' gradient norm and readout, decoded from real runs
// (tests/fixtures/wire_experiments.json, scripts/make_fixtures.py) and refused when malformed.
import { describe, expect, it } from "vitest";
import { decodeStageReply, type WireGraph, WireError } from "../src/wire";
import { experiment, type Raw } from "./fixtures";

const id = (g: WireGraph, call: number) => g.calls[call]?.id;

describe("the graph's gradients and readouts", () => {
  it("reads a run with a loss: one norm per call, the trunk's flow, the readouts named", () => {
    const g = experiment("gpt2");
    expect(g.grad).not.toBeNull();
    expect(g.grad!.length).toBe(g.calls.length);
    expect(g.grad!.every((v) => v === null || v > 0)).toBe(true);
    expect(g.gradient_flow?.kind).toBe("healthy");
    // the logit lens at the last position: the blocks of the residual stream, named by the tokenizer
    const blocks = g.readouts.map(([c]) => id(g, c));
    for (const b of ["transformer.h.0", "transformer.h.1", "transformer.h.2", "transformer.h.3"])
      expect(blocks).toContain(b);
    for (const [, token, p] of g.readouts) {
      expect(g.readout_names[String(token)]).toBeTypeOf("string");
      expect(p).toBeGreaterThan(0);
      expect(p).toBeLessThanOrEqual(1);
    }
    expect(Object.values(g.readout_names)).toContain("<b>bold</b>"); // text as it is
  });

  it("reads a vanishing gradient and where it vanished, and a NaN that entered the backward pass", () => {
    const mlp = experiment("sigmoid_mlp");
    const flow = mlp.gradient_flow!;
    expect(flow.kind).toBe("vanishing");
    expect(id(mlp, flow.at!)).toMatch(/^blocks\.\d+/);
    expect(flow.ratio!).toBeLessThan(1e-3);
    expect(flow.norms.length).toBe(flow.calls.length);
    const chain = experiment("nan_chain");
    expect(chain.nonfinite_grad.map((c) => id(chain, c))).toEqual(["b", "a"]);
    expect(chain.grad![chain.nonfinite_grad[0]!]).toBeNull(); // its norm is NaN: no colour of the ramp
  });

  it("refuses gradients and readouts that do not fit the calls, naming the field", () => {
    const bad = (edit: (r: Raw) => void, field: string) =>
      expect(() => experiment("gpt2", edit)).toThrow(new RegExp(field.replace(/[.[\]]/g, "\\$&")));
    bad((r) => r.graph.grad.pop(), "graph.grad");
    bad((r) => (r.graph.grad[0] = "big"), "graph.grad");
    bad((r) => r.graph.nonfinite_grad.push(9999), "graph.nonfinite_grad");
    bad((r) => r.graph.gradient_flow.norms.pop(), "graph.gradient_flow.norms");
    bad((r) => (r.graph.gradient_flow.kind = "fine"), "graph.gradient_flow");
    bad((r) => (r.graph.readouts[0] = [9999, 1, 0.5]), "graph.readouts[0]");
    bad((r) => (r.graph.readouts[1] = [4, "x", 0.5]), "graph.readouts[1]");
    bad((r) => (r.graph.readout_names["49"] = 49), "graph.readout_names.49");
    expect(() => experiment("gpt2", (r) => r.graph.grad.pop())).toThrow(WireError);
  });
});

describe("the intervention and patching traitlets", () => {
  it("reads run B's intervention beside its comparison", () => {
    const g = experiment("gpt2");
    expect(g.intervention).toEqual({ stage: 18, spec: "zero" });
    expect(id(g, 18)).toBe("transformer.h.1.attn");
    expect(g.comparison?.first).toBe(18); // the runs part where the intervention is
  });

  it("reads patching by position: each stage's share of the gap, whole and per position", () => {
    const g = experiment("gpt2");
    const p = g.patching!;
    expect(p.stages.map((c) => id(g, c))).toEqual([
      "transformer.h.0",
      "transformer.h.1",
      "transformer.h.2",
      "transformer.h.3",
    ]);
    expect(p.positions).toBe(8);
    expect(p.byPosition!.length).toBe(4);
    expect(p.byPosition!.every((row) => row.length === 8)).toBe(true);
    // restoring the last block's output at the last position restores the clean run's answer
    expect(p.byPosition![3]![7]).toBeCloseTo(1, 6);
    // a whole output restored: its share of the gap, from the scores (the oracle: the definition)
    const gap = p.clean! - p.corrupted!;
    for (const [i, s] of p.scores.entries()) expect(p.whole[i]).toBeCloseTo((s! - p.corrupted!) / gap, 9);
  });

  it("reads patching of whole outputs, and none", () => {
    const g = experiment("gpt2", (r) => {
      r.patching.positions = 0;
      r.patching.restored = [0.25, null, 1, -0.5];
    });
    expect(g.patching!.byPosition).toBeNull();
    expect(g.patching!.whole).toEqual([0.25, null, 1, -0.5]);
    for (const none of [null, undefined, {}])
      expect(experiment("gpt2", (r) => (r.patching = none)).patching).toBeNull();
    expect(experiment("gpt2", (r) => (r.intervention = null)).intervention).toBeNull();
  });

  it("refuses traitlets that do not fit the graph, naming the field", () => {
    const bad = (edit: (r: Raw) => void, field: string) =>
      expect(() => experiment("gpt2", edit)).toThrow(new RegExp(field.replace(/[.[\]]/g, "\\$&")));
    bad((r) => (r.intervention.stage = 999), "intervention.stage");
    bad((r) => (r.intervention.spec = 3), "intervention.spec");
    bad((r) => r.patching.stages.push(999), "patching.stages");
    bad((r) => r.patching.scores.pop(), "patching.scores");
    bad((r) => r.patching.restored[2].pop(), "patching.restored[2]");
    bad((r) => (r.patching.positions = 0), "patching.restored");
  });
});

describe("stage replies of gradients and readouts", () => {
  const readout = {
    k: 2,
    position: null,
    ids: [
      [3, 1],
      [4, 1],
    ],
    probs: [
      [0.5, 0.25],
      [0.75, 0.125],
    ],
    names: [
      ["<i>x</i>", "b"],
      ["c", "b"],
    ],
  };
  const reply = (more: Raw) => ({
    ok: true,
    stage: "h.0",
    summaries: [],
    views: [],
    view: null,
    attention: [],
    ...more,
  });

  it("reads what a reply is of, its gradient's norm and its readout", () => {
    const summary = { leaf: "0", shape: [1, 2], dtype: "float32", kind: "float", numel: 2, norm: 0.5, stats: null };
    const r = decodeStageReply(reply({ of: "grad", summaries: [summary], readout }));
    if (!r.ok) throw new Error(r.error);
    expect(r.of).toBe("grad");
    expect(r.summaries[0]?.norm).toBe(0.5);
    expect(r.readout?.names?.[0]?.[0]).toBe("<i>x</i>");
    const plain = decodeStageReply(reply({}));
    expect(plain.ok && [plain.of, plain.readout]).toEqual(["output", null]);
  });

  it("refuses a readout whose rows do not match", () => {
    expect(() => decodeStageReply(reply({ readout: { ...readout, probs: [[0.5]] } }))).toThrow(/reply\.readout/);
    expect(() => decodeStageReply(reply({ readout: { ...readout, ids: [["a"]] } }))).toThrow(/reply\.readout\.ids/);
  });
});
