// model/branches.ts: a merge whose source forks from the stream its reader continues is a
// branch of that stream (drawn as flow); conditioning, from a tree of its own, stays a merge.
// Expected edges from the models' code (the golden cases, every call open, nothing stacked).
import { describe, expect, it } from "vitest";
import { computeLayout } from "../src/layout/layout";
import { branchMerges, drawnKinds } from "../src/model/branches";
import { buildScene, layoutRequest } from "../src/scene/scene";
import { buildTree } from "../src/model/tree";
import { buildView, type ViewGraph, type ViewState } from "../src/model/view_model";
import { initialState } from "../src/model/view_state";
import { decodeGraph } from "../src/wire";
import { loadRaw } from "./fixtures";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };

function opened(name: string): ViewGraph {
  const tree = buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
  const all = tree.graph.calls.map((_, i) => i).filter((i) => tree.children[i]!.length > 0);
  const state: ViewState = { expanded: new Set(all), unfolded: new Set(tree.runs.keys()), stacked: new Map() };
  return buildView(tree, state);
}

/** The view's merges as "src -> dst" by stage id, split into branches and the others. */
function merges(view: ViewGraph): { branches: string[]; others: string[] } {
  const found = branchMerges(view);
  const id = (k: string) => view.byKey.get(k)!.id;
  const text = (e: ViewGraph["edges"][number]) => `${id(e.src)} -> ${id(e.dst)}`;
  const all = view.edges.filter((e) => e.kind === "merge");
  return { branches: all.filter((e) => found.has(e)).map(text), others: all.filter((e) => !found.has(e)).map(text) };
}

describe("branches of a stream are not conditioning", () => {
  it("Phi: the MLP beside the attention, both reading input_layernorm, into one sum", () => {
    // PhiDecoderLayer.forward: h = ln(x); out = attn(h) + mlp(h) + x, read by the next norm
    const { branches, others } = merges(opened("phi"));
    expect(branches).toContain("model.layers.0.resid_dropout#1 -> model.layers.1.input_layernorm");
    expect(others).toContain("model.rotary_emb -> model.layers.0.self_attn.dense"); // (positions)
  });

  it("torchvision's Bottleneck: the projected shortcut (downsample) beside conv3 -> bn3", () => {
    // out = bn3(conv3(...)); identity = downsample(x); out += identity; relu(out)
    const view = opened("torchvision_resnet");
    const { branches, others } = merges(view);
    expect(branches).toContain("layer1.0.downsample.1 -> layer1.0.relu#2");
    expect(others.filter((e) => e.includes("downsample"))).toEqual([]);
    // drawn so: its line into the ⊕ is a flow line (it was "merge / conditioning")
    const scene = buildScene(view.tree, view, computeLayout(layoutRequest(view, "TB")), "TB");
    const line = scene.edges.find((e) => e.srcId === "layer1.0.downsample.1" && e.dstId === "layer1.0.relu#2")!;
    expect(line.to.startsWith("j:")).toBe(true);
    expect(line.kind).toBe("flow");
  });

  it("a self-attention's keys and values beside its queries", () => {
    // the demo transformer: q, k, v = q_proj(h), k_proj(h), v_proj(h), all of one norm
    const { branches, others } = merges(opened("demo_transformer"));
    expect(branches.some((e) => e.startsWith("blocks.0.attn.k_proj ->"))).toBe(true);
    expect(branches.some((e) => e.startsWith("blocks.0.attn.v_proj ->"))).toBe(true);
    expect(others.filter((e) => /[kv]_proj ->/.test(e))).toEqual([]);
  });

  it("conditioning stays a merge: a timestep, an encoder's output, a second modality, a position embedding", () => {
    // UNet2DConditionModel: the text into each transformer block's attn2 (its keys, values)
    const unet = merges(opened("unet2d_condition"));
    const attn = "down_blocks.0.attentions.0.transformer_blocks.0";
    expect(unet.others).toContain(`${attn}.attn2.to_k -> ${attn}.attn2.to_out.0`);
    expect(unet.branches).toContain(`${attn}.attn1.to_k -> ${attn}.attn1.to_out.0`);
    // T5 at its first view: the encoder's output into the decoder's layers
    const tree = buildTree(decodeGraph(golden.cases.find((c) => c.name === "t5")!.graph));
    const t5 = merges(buildView(tree, initialState(tree)));
    expect(t5.others.some((e) => /^encoder\..* -> decoder\./.test(e))).toBe(true);
    expect(t5.branches.filter((e) => e.startsWith("encoder."))).toEqual([]);
    // two inputs fused (the image's and the clinical record's), and GPT-2's position embedding
    expect(merges(opened("multimodal"))).toEqual({ branches: [], others: ["clinical_mlp.1 -> fusion"] });
    expect(merges(opened("gpt2")).others).toContain("transformer.wpe -> transformer.drop");
  });
});

describe("token ids read again are not a skip", () => {
  it("CLIP's pooled output, at each text's end token found from the ids, draws the ids as a merge", () => {
    // CLIPTextTransformer: pooled = last_hidden_state[arange, (input_ids == eos).argmax(-1)];
    // the ids are on the path (ids -> embeddings -> ... -> final_layer_norm): a skip on the
    // wire, drawn as a merge where the page says they are integers (a traced run's ends)
    const raw = structuredClone(golden.cases.find((c) => c.name === "clip_text")!.graph) as Record<string, unknown>;
    const tree = (dtype: string) => {
      raw.ends = { "input:input_ids": { shape: [1, 5], dtype, reading: null } };
      return buildTree(decodeGraph(raw));
    };
    const kindOf = (dtype: string) => {
      const t = tree(dtype);
      const view = buildView(t, initialState(t));
      const e = view.edges.find((e) => e.src === "i:input:input_ids" && e.dst === "o:output:pooler_output")!;
      return [e.kind, drawnKinds(view).get(e) ?? e.kind];
    };
    expect(kindOf("int64")).toEqual(["skip", "merge"]);
    expect(kindOf("float32")).toEqual(["skip", "skip"]); // (data carried on: a skip as ever)
  });
});
