// Where q, k and v meet in an attention opened: one "attention" junction (F.scaled_dot_
// product_attention in the module's own forward, or softmax(q kᵀ) v written out), read by the
// output projection, not three lines into it (GPT-2's fused c_attn: one line through it).
// Expected from each model's code: the attention reads its q, k and v projections (T5's also
// its relative position bias, the demo's a mask), and the output projection reads it.
import { describe, expect, it } from "vitest";
import { glyphOf } from "../src/model/glyphs";
import { junctions } from "../src/model/junctions";
import { computeLayout } from "../src/layout/layout";
import { buildScene, layoutRequest } from "../src/scene/scene";
import { showMember } from "../src/model/stack";
import { buildTree } from "../src/model/tree";
import { buildView, stageKey } from "../src/model/view_model";
import { initialState, revealCall } from "../src/model/view_state";
import { decodeGraph, type WireGraph } from "../src/wire";
import { at } from "../src/wire_check";
import { loadGraph, loadRaw } from "./fixtures";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const goldenTree = (name: string) => buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));

describe.each([
  // case, the attention, its q k v, what reads the attention, what it does
  [
    "bert_padded",
    "encoder.layer.0.attention.self",
    ["query", "key", "value"],
    "encoder.layer.0.attention.output",
    "attention",
  ],
  [
    "whisper",
    "model.encoder.layers.0.self_attn",
    ["q_proj", "k_proj", "v_proj"],
    "out_proj",
    "scaled_dot_product_attention",
  ],
  ["t5_3", "encoder.block.0.layer.0.SelfAttention", ["q", "k", "v"], "o", "scaled_dot_product_attention"],
  [
    "fixture_transformer12",
    "layers.0.attn",
    ["q_proj", "k_proj", "v_proj"],
    "out_proj",
    "scaled_dot_product_attention",
  ],
  ["demo_transformer", "blocks.0.attn", ["q_proj", "k_proj", "v_proj"], "out_proj", "attention"],
  // q, k and v from one fused projection: the attention drawn between it and c_proj all the same
  ["gpt2", "transformer.h.0.attn", ["c_attn"], "c_proj", "scaled_dot_product_attention"],
] as const)("%s's attention opened", (name, attention, qkv, reader, what) => {
  const tree = goldenTree(name);
  const inside = (child: string) => (child.includes(".") ? child : `${attention}.${child}`);
  const state = { ...revealCall(tree, initialState(tree), tree.byId.get(inside(qkv[0]))!), auto: false };
  const view = buildView(tree, state);
  const drawing = junctions(tree, view);
  const j = drawing.junctions.find((x) => x.glyph === "attention");

  it("draws q, k and v meeting in one attention junction, read by the output projection", () => {
    expect(j, `junctions: ${drawing.junctions.map((x) => x.what)}`).toBeDefined();
    expect(j!.what).toBe(what);
    const into = new Set(drawing.edges.filter((e) => e.dst === j!.key).map((e) => e.src));
    for (const c of qkv) expect(into, c).toContain(stageKey(inside(c)));
    expect(j!.outs).toEqual([stageKey(inside(reader))]);
  });

  it("draws no line from q, k or v into the output projection", () => {
    const direct = drawing.edges.filter((e) => e.dst === stageKey(inside(reader)) && e.src !== j!.key);
    expect(direct.map((e) => e.src).filter((s) => qkv.some((c) => s === stageKey(inside(c))))).toEqual([]);
  });
});

describe("an attention's junction in a stack", () => {
  it("names the stage of the layer the stack shows (a click opens that layer's maps)", () => {
    const tree = goldenTree("fixture_transformer12");
    const open = { ...revealCall(tree, initialState(tree), tree.byId.get("layers.0.attn.q_proj")!), auto: false };
    expect(open.stacked?.size, "the layers drawn as a stack").toBe(1);
    const [run] = [...open.stacked!.keys()];
    for (const k of [0, 3]) {
      const state = { ...open, ...showMember(open, run!, k) };
      const pill = junctions(tree, buildView(tree, state)).junctions.find((j) => j.glyph === "attention");
      expect(pill?.stage, `layer ${k}`).toBe(`layers.${k}.attn`);
    }
  });
});

describe("a junction's glyph", () => {
  it("names every attention kind of the wire 'attention', the arithmetic by its sign", () => {
    for (const what of ["scaled_dot_product_attention", "attention", "multi_head_attention_forward"])
      expect(glyphOf(what)).toBe("attention");
    expect(["add", "sub", "mul", "cat", "matmul"].map(glyphOf)).toEqual(["+", "−", "×", "⧺", "@"]);
    expect(glyphOf("where")).toBe("where");
    expect(glyphOf("index_put")).toBe("index_…");
  });
});

describe("a sum of conditioning alone conditions what reads it", () => {
  // SDXL: emb = time_embedding(t) + add_embedding(cat(text_embeds, add_time_proj(time_ids))),
  // read by every block beside its data: the sum's lines are conditioning, as its sources'
  // were; GPT-2's residual sums, whose sources carry the data, feed on as flow
  it("SDXL's time plus text-time embedding: merge out of the sum; GPT-2's residual: flow", () => {
    const sdxl = goldenTree("unet2d_text_time");
    const d = junctions(sdxl, buildView(sdxl, initialState(sdxl)));
    const sum = d.junctions.find((j) => j.glyph === "+")!;
    expect(sum.outs.length).toBeGreaterThanOrEqual(4);
    const out = d.edges.filter((e) => e.src === sum.key);
    expect(out.map((e) => e.kind)).toEqual(out.map(() => "merge"));
    expect(d.edges.filter((e) => e.dst === sum.key).map((e) => [e.src, e.kind])).toEqual([
      ["s:time_embedding", "merge"],
      ["s:add_embedding", "merge"],
    ]);
    const gpt2 = goldenTree("gpt2");
    const g = junctions(gpt2, buildView(gpt2, initialState(gpt2)));
    const outs = g.edges.filter((e) => e.src.startsWith("j:") && !e.dst.startsWith("j:"));
    expect(outs.length).toBeGreaterThan(0);
    expect(new Set(outs.map((e) => e.kind))).toEqual(new Set(["flow"]));
  });
});

// ViTEmbeddings.forward: cat((cls_token.expand(...), patch_embeddings(x))), then
// + position_embeddings, then dropout: two parameters of the module joined in its own forward
describe("ViT's embeddings opened", () => {
  const tree = goldenTree("vit");
  const state = { ...revealCall(tree, initialState(tree), tree.byId.get("embeddings.dropout")!), auto: false };
  const drawing = junctions(tree, buildView(tree, state));
  const named = (glyph: string) => drawing.junctions.find((j) => j.glyph === glyph && j.operand);
  const patches = stageKey("embeddings.patch_embeddings.projection"); // (the patches' conv, revealed)

  it("draws the [CLS] token's ⧺ and the position embedding's + named, the patches through both", () => {
    const cat = named("⧺")!;
    const add = named("+")!;
    expect(cat.operand).toBe("cls_token");
    expect(add.operand).toBe("position_embeddings");
    const edge = (src: string, dst: string) => drawing.edges.some((e) => e.src === src && e.dst === dst);
    expect(edge(patches, cat.key)).toBe(true);
    expect(edge(cat.key, add.key)).toBe(true);
    expect(add.outs).toEqual([stageKey("embeddings.dropout")]);
    expect(edge(add.key, stageKey("embeddings.dropout"))).toBe(true);
    // the patches reach the dropout through the two junctions only
    expect(drawing.edges.filter((e) => e.src === patches).map((e) => e.dst)).toEqual([cat.key]);
  });

  it("draws both lines of the patches' edge, each of its own key", () => {
    const view = buildView(tree, state);
    const scene = buildScene(tree, view, computeLayout(layoutRequest(view, "TB")), "TB");
    const [cat, add] = [named("⧺")!.key, named("+")!.key];
    const lines = scene.edges.filter((e) => (e.from === patches && e.to === cat) || (e.from === cat && e.to === add));
    expect(lines.length).toBe(2);
    expect(new Set(lines.map((e) => e.key)).size).toBe(2);
    expect(scene.junctions.find((j) => j.key === add)?.operand).toBe("position_embeddings");
  });

  it("names no junction where the embeddings are one node", () => {
    const folded = junctions(
      tree,
      buildView(tree, { ...initialState(tree), expanded: new Set<number>(), inlined: new Set<number>(), auto: false }),
    );
    expect(folded.junctions.filter((j) => j.operand)).toEqual([]);
  });
});

// ViT-MAE's embeddings, by hand: embed(x) = norm(cat(cls + pos[:, :1], proj(x))), the [CLS]
// token a sum of two of embed's parameters, named so by the tracer (tracing/dataflow.py)
describe("a parameter computation joined in", () => {
  const base = at(loadGraph("wire_unet.json").calls, 0);
  const call = (id: string, type: string, parent: number, args: number[], leaf: boolean) => ({
    ...base,
    ...{ id, module: id, type, parent, in: args, args: [0], state: -1, leaf, depth: parent < 0 ? 1 : 2 },
  });
  const g: WireGraph = {
    ...loadGraph("wire_unet.json"),
    inputs: ["input:0"],
    outputs: ["output:0"],
    calls: [
      call("embed", "Embed", -1, [0], false),
      call("embed.proj", "Conv2d", 0, [0], true),
      call("embed.norm", "LayerNorm", 0, [3], true),
    ],
    ops: [
      [-1, []],
      [1, [0]],
      [0, []],
      [0, [2, 1]],
      [2, [3]],
    ],
    input_ops: [["input:0", 0]],
    output_ops: [["output:0", [4]]],
    joins: [[3, "cat"]],
    operands: [[2, "embed.cls + embed.pos"]],
    selected: [1, 2],
    initial: null,
    attention: [],
    stats: [null, null, null],
    nonfinite: [],
  };
  it("names it in the pill by the names within the module: ⧺ cls + pos", () => {
    const tree = buildTree(g);
    const state = { ...revealCall(tree, initialState(tree), tree.byId.get("embed.norm")!), auto: false };
    const drawing = junctions(tree, buildView(tree, state));
    const j = drawing.junctions.find((x) => x.glyph === "⧺")!;
    expect(j.operand).toBe("cls + pos");
    expect(drawing.edges.map((e) => `${e.src}>${e.dst}`)).toContain(`${stageKey("embed.proj")}>${j.key}`);
    expect(j.outs).toEqual([stageKey("embed.norm")]);
  });
});
