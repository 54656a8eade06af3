import { describe, expect, it } from "vitest";
import { decodeGraph, decodeStageReply, SCHEMA, WireError } from "../src/wire";
import { loadGraph, loadRaw, type Raw } from "./fixtures";
import { at } from "../src/wire_check";

describe("decodeGraph", () => {
  it("reads the golden U-Net fixture", () => {
    const g = loadGraph("wire_unet.json");
    expect(g.schema).toBe(SCHEMA);
    expect(g.model).toBe("UNet");
    expect(g.inputs).toEqual(["input:0"]);
    expect(g.outputs).toEqual(["output:0"]);
    const top = g.calls.filter((c) => c.parent === -1).map((c) => c.id);
    expect(top).toEqual(["enc1", "enc2", "bottleneck", "up2", "dec2", "up1", "dec1", "head"]);
    for (const c of g.calls) {
      if (c.parent >= 0) expect(c.id.startsWith(`${at(g.calls, c.parent).id}.`)).toBe(true);
      expect(c.leaf).toBe(!g.calls.some((d) => d.parent === g.calls.indexOf(c)));
    }
    expect(g.stats.length).toBe(g.calls.length);
  });

  it("reads real traces of tests/fixture_models.py: parameters, inputs, outputs, attention", () => {
    const unet = loadGraph("wire_unet.json");
    const u = (id: string) => unet.calls.find((c) => c.id === id)!;
    // Conv2d(cin, cout, k): cout * cin * k * k + cout; ConvTranspose2d(cin, cout, 2): cin * cout * 4 + cout.
    expect([
      u("enc1.conv1").params,
      u("enc1.conv2").params,
      u("up2").params,
      u("up1").params,
      u("head").params,
    ]).toEqual([160, 2320, 4128, 2064, 34]);
    expect(u("head").shapes).toEqual([[1, 2, 64, 64]]);
    // Blocks hold no parameters of their own: a container's count is its children's sum.
    for (const [i, c] of unet.calls.entries()) {
      const kids = unet.calls.filter((d) => d.parent === i);
      if (kids.length) expect(c.params, c.id).toBe(kids.reduce((sum, d) => sum + d.params, 0));
    }
    const gpt = loadGraph("wire_transformer12.json");
    expect([gpt.inputs, gpt.outputs]).toEqual([["input:input_ids"], ["output:logits"]]);
    const g = (id: string) => gpt.calls.find((c) => c.id === id)!;
    expect([g("embed").params, g("lm_head").params, g("layers.0.norm1").params]).toEqual([
      1000 * 64,
      64 * 1000 + 1000,
      2 * 64,
    ]);
    expect(g("lm_head").shapes).toEqual([[1, 16, 1000]]);
    expect(gpt.attention).toEqual(gpt.calls.flatMap((c, i) => (c.type === "MultiheadAttention" ? [i] : [])));
    expect(gpt.attention.length).toBe(12);
    for (const graph of [unet, gpt]) expect(graph.stats.every((s) => s !== null && s[0] > 0 && s[1] > 0)).toBe(true);
  });

  it("accepts the JSON text as well as the object", () => {
    const raw = loadRaw("wire_unet.json");
    expect(decodeGraph(JSON.stringify(raw))).toEqual(decodeGraph(raw));
  });

  it("rejects another schema version with the fix in the message", () => {
    const raw = { ...(loadRaw("wire_unet.json") as object), schema: SCHEMA + 1 };
    expect(() => decodeGraph(raw)).toThrow(WireError);
    expect(() => decodeGraph(raw)).toThrow(new RegExp(`schema ${SCHEMA + 1} .*npm run build`));
  });

  it("reads graph.initial: a list of call indices, or null", () => {
    expect(loadGraph("wire_unet.json").initial).toBeNull();
    const raw = loadRaw("wire_unet.json") as Record<string, unknown>;
    expect(decodeGraph({ ...raw, initial: [1, 3] }).initial).toEqual([1, 3]);
    expect(() => decodeGraph({ ...raw, initial: [0, 999] })).toThrow(/graph\.initial: call index 999 is out of range/);
    expect(() => decodeGraph({ ...raw, initial: "enc1" })).toThrow(/graph\.initial: expected a list of integers/);
  });

  it("refuses a graph that lacks a field, naming it, instead of filling it in", () => {
    // the U-Net's graph with every optional part present, so that each can go missing
    const raw = loadRaw("wire_unet.json") as Raw;
    raw.nonfinite_origin = {
      op: "torch.Tensor.div",
      module: "",
      type: "UNet",
      function: "UNet.forward",
      file: "model.py",
      line: 12,
      text: "x / 0",
      before: 0,
      after: 1,
    };
    raw.failure = { message: "stage 'enc1' raised ValueError: bad", stage: 0, call: 1 };
    expect(decodeGraph(raw).failure).toEqual(raw.failure);
    const fields = Object.keys(raw);
    expect(fields.length).toBeGreaterThanOrEqual(19);
    for (const field of fields) {
      const { [field]: _, ...without } = raw;
      expect(() => decodeGraph(without), field).toThrow(new RegExp(`^graph\\.${field}: missing;`));
    }
    for (const field of Object.keys(raw.calls[0])) {
      const broken = structuredClone(raw);
      delete broken.calls[2][field];
      expect(() => decodeGraph(broken), field).toThrow(new RegExp(`^graph\\.calls\\[2\\]\\.${field}: missing;`));
    }
    for (const field of Object.keys(raw.nonfinite_origin)) {
      const broken = structuredClone(raw);
      delete broken.nonfinite_origin[field];
      expect(() => decodeGraph(broken), field).toThrow(new RegExp(`^graph\\.nonfinite_origin\\.${field}: missing;`));
    }
    for (const field of Object.keys(raw.ends["input:0"])) {
      const broken = structuredClone(raw);
      delete broken.ends["input:0"][field];
      expect(() => decodeGraph(broken), field).toThrow(new RegExp(`^graph\\.ends\\.input:0\\.${field}: missing;`));
    }
    for (const field of Object.keys(raw.failure)) {
      const broken = structuredClone(raw);
      delete broken.failure[field];
      expect(() => decodeGraph(broken), field).toThrow(new RegExp(`^graph\\.failure\\.${field}: missing;`));
    }
  });

  it("names the place of a broken field", () => {
    const raw = loadRaw("wire_unet.json") as { calls: { parent: number }[] };
    raw.calls[3]!.parent = 7;
    expect(() => decodeGraph(raw)).toThrow(/graph\.calls\[3\] \(enc1\.conv2\): parent 7/);
    const dup = loadRaw("wire_unet.json") as { calls: { id: string }[] };
    dup.calls[2]!.id = "enc1";
    expect(() => decodeGraph(dup)).toThrow(/duplicate stage id "enc1"/);
  });
});

function f64(values: number[]): ArrayBuffer {
  return new Float64Array(values).buffer;
}

describe("decodeStageReply", () => {
  const msg = {
    ok: true,
    stage: "enc1",
    summaries: [
      {
        leaf: "0",
        shape: [1, 2, 2, 2],
        dtype: "float32",
        device: "cpu",
        kind: "float",
        stats: {
          min: -1,
          max: 2,
          mean: 0.5,
          std: 0.7,
          mean_abs: 0.9,
          zero_fraction: 0.25,
          nan: 0,
          posinf: 0,
          neginf: 0,
        },
        sampled: null,
        hist: { lo: -1, hi: 2, bins: 4, buffer: 0 },
        values: null,
        error: null,
      },
    ],
    views: ["grid", "channel"],
    view: {
      kind: "grid",
      shape: [2, 2, 2],
      vmin: -1,
      vmax: 2,
      signed: true,
      axes: ["y", "x"],
      labels: ["ch 0", "ch 1"],
      channels: [0, 1],
      buffer: 1,
    },
    attention: [
      {
        heads: 2,
        q_len: 2,
        k_len: 3,
        pool: [1, 1],
        source: "sdpa",
        causal: false,
        head: null,
        map: { shape: [2, 3], buffer: 2 },
        grid: { shape: [2, 2, 3], buffer: 3 },
      },
    ],
    tokens: ["a", "b", "c"],
    error: null,
  };

  const grid = new Float32Array([0.1, 0.2, 0.7, 0.3, 0.3, 0.4, 1, 0, 0, 0.5, 0.5, 0]);
  const mean = new Float32Array([0.55, 0.1, 0.35, 0.4, 0.4, 0.2]);

  it("resolves buffers: float64 histogram, uint8 view, float32 attention map and grid", () => {
    // DataViews with an odd offset, as a comm message may hand them over.
    const padded = new Uint8Array(3 + grid.byteLength);
    padded.set(new Uint8Array(grid.buffer), 3);
    const r = decodeStageReply(msg, [
      f64([1, 2, 3, 4]),
      new DataView(new Uint8Array([0, 10, 20, 30, 40, 50, 60, 255]).buffer),
      mean,
      new DataView(padded.buffer, 3),
    ]);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Array.from(r.summaries[0]!.hist!.counts)).toEqual([1, 2, 3, 4]);
    expect(r.view!.pixels[7]).toBe(255);
    expect(r.view!.labels).toEqual(["ch 0", "ch 1"]);
    const a = r.attention[0]!;
    expect([a.head, a.mapShape, a.gridShape, a.source]).toEqual([null, [2, 3], [2, 2, 3], "sdpa"]);
    expect(a.map[0]).toBeCloseTo(0.55);
    expect(a.grid![2]).toBeCloseTo(0.7);
    expect(r.tokens).toEqual(["a", "b", "c"]);
    expect(r.views).toEqual(["grid", "channel"]);
  });

  it("reports a wrong buffer size at its place", () => {
    expect(() => decodeStageReply(msg, [f64([1, 2, 3]), new Uint8Array(8), mean, grid])).toThrow(
      /reply\.summaries\[0\]\.hist/,
    );
    expect(() => decodeStageReply(msg, [f64([1, 2, 3, 4]), new Uint8Array(7), mean, grid])).toThrow(/reply\.view/);
    expect(() => decodeStageReply(msg, [f64([1, 2, 3, 4]), new Uint8Array(8), grid, grid])).toThrow(
      /reply\.attention\[0\]\.map: shape \[2,3\] needs 6/,
    );
    expect(() => decodeStageReply(msg, [f64([1, 2, 3, 4]), new Uint8Array(8), mean])).toThrow(/buffer index 3/);
  });

  it("passes an error reply through", () => {
    const r = decodeStageReply({ ok: false, stage: "enc1", error: "unknown view kind 'foo'" });
    expect(r).toEqual({ ok: false, stage: "enc1", error: "unknown view kind 'foo'" });
  });
});

describe("stage_replies.json (real replies from encode_stage_reply)", () => {
  const data = loadRaw("stage_replies.json") as {
    schema: number;
    cases: { request: { stage: string; head: number | null }; reply: unknown; buffers: string[] }[];
  };
  const decode = (c: (typeof data.cases)[number]) =>
    decodeStageReply(
      c.reply,
      c.buffers.map((b) => new Uint8Array(Buffer.from(b, "base64"))),
    );

  it("decodes every case", () => {
    expect(data.schema).toBe(SCHEMA);
    for (const c of data.cases) {
      const r = decode(c);
      expect(r.stage).toBe(c.request.stage);
      if (!r.ok) {
        expect(r.error).toMatch(/no stage/);
        continue;
      }
      expect(r.summaries.length).toBeGreaterThan(0);
      const s = r.summaries[0]!;
      expect(s.hist!.counts.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(r.view!.pixels.length).toBe(r.view!.shape.reduce((a, b) => a * b, 1));
      expect(r.views).toContain(r.view!.kind);
    }
  });

  it("attention: the mean map or one head, a grid of every head, token labels", () => {
    const [mean, head1] = data.cases
      .filter((c) => (c.reply as { attention?: unknown[] }).attention?.length)
      .map(decode);
    if (!mean?.ok || !head1?.ok) throw new Error("attention cases must decode");
    const a = mean.attention[0]!;
    expect(a.head).toBeNull();
    expect(head1.attention[0]!.head).toBe(1);
    const [heads, q, k] = a.gridShape!;
    expect(a.map.length).toBe(a.mapShape[0] * a.mapShape[1]);
    // The mean map is the mean of the heads (the grid is exact at this size).
    for (let i = 0; i < q * k; i++) {
      let sum = 0;
      for (let h = 0; h < heads; h++) sum += a.grid![h * q * k + i]!;
      expect(a.map[i]).toBeCloseTo(sum / heads, 5);
    }
    // Each query row is a distribution.
    const row = Array.from(head1.attention[0]!.map.slice(0, k)).reduce((x, y) => x + y, 0);
    expect(row).toBeCloseTo(1, 4);
    expect(mean.tokens).toEqual(["t0", "t1", "t2", "t3", "t4"]);
  });
});
