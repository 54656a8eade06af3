// Runs drawn as a stack (the paper's "N×" figure): which runs stack, the stacked view's nodes
// and edges (derived by hand from the models), the member shown, playback through a stack.
import { describe, expect, it } from "vitest";
import { computeLayout } from "../src/layout/layout";
import { formatParams } from "../src/model/format";
import { junctions } from "../src/model/junctions";
import { playbackSteps } from "../src/model/playback";
import { problemsOf, viewMarks } from "../src/model/problems";
import { counterpart, stackable } from "../src/model/stack";
import { buildTree, type CallTree } from "../src/model/tree";
import {
  buildView,
  followStepper,
  nodeKeyForCall,
  stackedRuns,
  type ViewGraph,
  type ViewState,
} from "../src/model/view_model";
import { initialState, isShown, revealCall, toggleKey } from "../src/model/view_state";
import { buildScene, layoutRequest } from "../src/scene/scene";
import { decodeGraph } from "../src/wire";
import { loadGraph, loadRaw } from "./fixtures";
import { at } from "../src/wire_check";

const gpt = buildTree(loadGraph("wire_transformer12.json"));
const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const goldenTree = (name: string) => buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
const edgeText = (v: ViewGraph) =>
  v.edges.map((e) => `${v.byKey.get(e.src)!.id} -> ${v.byKey.get(e.dst)!.id} ${e.kind}`).sort();
const keyText = (v: ViewGraph) => v.edges.map((e) => `${e.src} -> ${e.dst} ${e.kind}`).sort();
const stacked = (tree: CallTree, k = 0, expanded: number[] = []): ViewState => ({
  expanded: new Set(expanded),
  unfolded: new Set(),
  stacked: new Map([...stackedRuns(tree).keys()].map((r) => [r, k])),
});

describe("a 12-block transformer opens as one block, × 12", () => {
  const state = initialState(gpt);
  const view = buildView(gpt, state);

  it("draws the stack with member 0's children, not twelve boxes", () => {
    expect(state.stacked).toEqual(new Map([["layers.0", 0]]));
    expect(view.items.map((i) => i.kind)).toEqual(["stage", "stack", "stage", "stage"]);
    expect(view.nodes.map((n) => `${n.kind} ${n.id}`)).toEqual([
      "input input:input_ids",
      "stage embed",
      "stage layers.0.norm1",
      "stage layers.0.attn",
      "stage layers.0.norm2",
      "stage layers.0.mlp",
      "stage norm",
      "stage lm_head",
      "output output:logits",
    ]);
    expect(view.byKey.get("s:layers.0.attn")!.path).toEqual(["", "k:layers.0"]);
    // the edge walk's selection: member 0's children, members 1..11 whole, the rest
    const members = gpt.runs.get("layers.0")!.members;
    expect(view.selection.filter((c) => members.includes(c))).toEqual(members.slice(1));
  });

  it("the residual stream enters and leaves the stack once: embed in, attn and mlp out to norm", () => {
    // A pre-norm block: x + attn(norm1(x)), then + mlp(norm2(.)). embed feeds norm1 and (the
    // residual) norm2; member 11's output is the last add, which reads the first add (embed +
    // attn: attn's data as a skip) and the mlp; nothing enters or leaves members 1..11.
    expect(edgeText(view)).toEqual([
      "embed -> layers.0.norm1 flow",
      "embed -> layers.0.norm2 skip",
      "input:input_ids -> embed flow",
      "layers.0.attn -> layers.0.norm2 flow",
      "layers.0.attn -> norm skip",
      "layers.0.mlp -> norm flow",
      "layers.0.norm1 -> layers.0.attn flow",
      "layers.0.norm2 -> layers.0.mlp flow",
      "lm_head -> output:logits flow",
      "norm -> lm_head flow",
    ]);
  });

  it("draws both ⊕ of the block inside the stack, the second feeding norm", () => {
    const d = junctions(gpt, view);
    expect(d.junctions.map((j) => [j.glyph, j.path.at(-1), j.outs])).toEqual([
      ["+", "k:layers.0", ["s:layers.0.norm2"]],
      ["+", "k:layers.0", ["s:norm"]],
    ]);
    const [first, second] = d.junctions.map((j) => j.key);
    expect(
      d.edges
        .filter((e) => e.dst === second)
        .map((e) => e.src)
        .sort(),
    ).toEqual([first, "s:layers.0.mlp"]); // attn -> norm, through the first add
  });

  it("a scene header says 'TransformerBlock × 12' and carries the stepper", () => {
    const scene = buildScene(gpt, view, computeLayout(layoutRequest(view, "TB")), "TB");
    const c = scene.clusters.find((x) => x.kind === "stack")!;
    expect(c.label).toBe("TransformerBlock × 12");
    expect(c.stack).toMatchObject({
      count: 12,
      shown: 0,
      steppable: true,
      next: "n:layers.0",
      prev: "p:layers.0",
      unfold: "u:layers.0",
      fold: "k:layers.0",
    });
    expect(scene.nodes.filter((n) => n.kind === "stage").length).toBe(7);
  });
});

describe("the member shown only changes the data", () => {
  const k2 = buildView(gpt, stacked(gpt, 2));
  const k0 = buildView(gpt, stacked(gpt, 0));

  it("keeps member 0's keys and edges, with layer k's ids and calls", () => {
    expect(keyText(k2)).toEqual(keyText(k0));
    const attn = k2.byKey.get("s:layers.0.attn")!;
    expect(attn.id).toBe("layers.2.attn");
    expect(attn.call).toBe(gpt.byId.get("layers.2.attn"));
    expect(attn.base).toBe(gpt.byId.get("layers.0.attn"));
    expect(k2.nodes.filter((n) => n.base !== undefined).map((n) => n.id)).toEqual([
      "layers.2.norm1",
      "layers.2.attn",
      "layers.2.norm2",
      "layers.2.mlp",
    ]);
    expect(k2.stacks.map((s) => [s.key, s.shown])).toEqual([["k:layers.0", 2]]);
  });

  it("maps every call of member 0 to member k's by relative path", () => {
    const run = gpt.runs.get("layers.0")!;
    const map = counterpart(gpt, run, 11)!;
    expect(map.size).toBe(12); // the block and its 11 descendants
    for (const [a, b] of map)
      expect(at(gpt.graph.calls, b).id).toBe(at(gpt.graph.calls, a).id.replace(/^layers\.0/, "layers.11"));
  });

  it("steps with n: / p:, within 1..12, and the inspector's stage follows", () => {
    const s = stacked(gpt, 0);
    expect(toggleKey(gpt, s, "p:layers.0")).toBeNull();
    const next = toggleKey(gpt, s, "n:layers.0")!;
    expect(next.key).toBe("k:layers.0");
    expect(next.state.stacked!.get("layers.0")).toBe(1);
    expect(followStepper(gpt, next.state, "layers.0.attn")).toBe("layers.1.attn");
    expect(followStepper(gpt, next.state, "layers.1.attn")).toBeNull();
    expect(followStepper(gpt, next.state, "norm")).toBeNull();
    expect(toggleKey(gpt, stacked(gpt, 11), "n:layers.0")).toBeNull();
  });

  it("shows, reveals and finds a layer's calls in the stack", () => {
    const s = stacked(gpt, 2);
    expect(isShown(gpt, s, gpt.byId.get("layers.2.attn")!)).toBe(true);
    expect(isShown(gpt, s, gpt.byId.get("layers.3.attn")!)).toBe(false);
    expect(isShown(gpt, s, gpt.byId.get("layers.2")!)).toBe(false); // the block is the stack
    expect(isShown(gpt, s, gpt.byId.get("layers.2.mlp.fc1")!)).toBe(false); // inside a collapsed mlp
    const shown = revealCall(gpt, s, gpt.byId.get("layers.7.mlp.fc1")!);
    expect(shown.stacked!.get("layers.0")).toBe(7);
    expect(shown.unfolded.size).toBe(0);
    expect([...shown.expanded].map((c) => at(gpt.graph.calls, c).id)).toEqual(["layers.0.mlp"]);
    const v = buildView(gpt, shown);
    expect(v.byKey.get("s:layers.0.mlp.fc1")!.id).toBe("layers.7.mlp.fc1");
    expect(nodeKeyForCall(gpt, v, gpt.byId.get("layers.7.mlp.fc1")!)).toBe("s:layers.0.mlp.fc1");
    expect(nodeKeyForCall(gpt, v, gpt.byId.get("layers.6.mlp.fc1")!)).toBeNull();
    // a block itself has no node in a stack: revealing it unfolds its run
    const block = revealCall(gpt, s, gpt.byId.get("layers.5")!);
    expect([...block.unfolded]).toEqual(["layers.0"]);
    expect(buildView(gpt, block).byKey.has("s:layers.5")).toBe(true);
  });

  it("folds, unfolds all, and opens again as a stack", () => {
    const s = stacked(gpt, 3);
    const fold = toggleKey(gpt, s, "k:layers.0")!;
    expect(fold.key).toBe("f:layers.0");
    expect(buildView(gpt, fold.state).items.map((i) => i.kind)).toEqual(["stage", "fold", "stage", "stage"]);
    const open = toggleKey(gpt, fold.state, "f:layers.0")!;
    expect(open.key).toBe("k:layers.0");
    const all = toggleKey(gpt, s, "u:layers.0")!;
    expect(all.key).toBe("r:layers.0");
    expect(buildView(gpt, all.state).items.map((i) => i.kind)).toEqual(["stage", "run", "stage", "stage"]);
    const back = toggleKey(gpt, all.state, "r:layers.0")!;
    expect(back.key).toBe("k:layers.0");
    expect(buildView(gpt, back.state).stacks[0]!.shown).toBe(3);
  });
});

describe("which runs stack", () => {
  it("two layers that attend are a run (T5's two blocks a side, BART's), two blocks that do not are two", () => {
    // T5Block: self-attention (F.scaled_dot_product_attention) and feed-forward; torchvision's
    // Bottleneck has no attention: layer1.0 and layer1.1 stay two nodes
    const ids = (t: ReturnType<typeof goldenTree>) => t.runList.map((r) => r.members.map((m) => t.graph.calls[m]!.id));
    const t5 = goldenTree("t5");
    expect(ids(t5)).toEqual([
      ["encoder.block.0", "encoder.block.1"],
      ["decoder.block.0", "decoder.block.1"],
    ]);
    expect(t5.runList.every((r) => stackable(t5, r))).toBe(true);
    expect(ids(goldenTree("bart")).length).toBe(2);
    expect(ids(goldenTree("torchvision_resnet"))).toEqual([]);
  });

  it("a run that is not a pure chain keeps today's fold", () => {
    // random_23: blocks.4.layers.0 feeds layers.2 (a skip over layers.1) and output:1 (an
    // intermediate output); random_3: blocks.7 reads blocks.3, not blocks.6 (no chain).
    for (const [name, key] of [
      ["random_23", "blocks.4.layers.0"],
      ["random_3", "blocks.6"],
    ] as const) {
      const tree = goldenTree(name);
      const run = tree.runs.get(key)!;
      expect(stackable(tree, run), `${name} ${key}`).toBe(false);
      const state: ViewState = {
        expanded: new Set(
          tree.graph.calls.map((_, i) => i).filter((i) => at(tree.children, i).length && tree.runOf[i]! < 0),
        ),
        unfolded: new Set(),
        stacked: new Map([[key, 0]]),
      };
      const kinds = (items: ReturnType<typeof buildView>["items"]): string[] =>
        items.flatMap((i) => [i.kind, ...("items" in i ? kinds(i.items) : [])]);
      expect(kinds(buildView(tree, state).items)).not.toContain("stack");
      expect(buildView(tree, state).nodes.some((n) => n.kind === "fold" && n.id === key)).toBe(true);
    }
  });

  it("identical blocks each reading a source of their own do not stack (DPT's fusion of four scales)", () => {
    // Fusion.forward: h = layers.0(convs.3(x)); h = layers.k(h, convs.(3 - k)(x)): a chain of
    // four FusionBlocks, but drawn as one the other three convolutions would feed nothing
    const tree = goldenTree("fusion_scales");
    const run = tree.runs.get("layers.0")!;
    expect(run.members.length).toBe(4);
    expect(stackable(tree, run)).toBe(false);
    const state: ViewState = { expanded: new Set(), unfolded: new Set(tree.runs.keys()), stacked: new Map() };
    const view = buildView(tree, state);
    const edges = new Set(view.edges.map((e) => `${view.byKey.get(e.src)!.id} -> ${view.byKey.get(e.dst)!.id}`));
    for (let k = 0; k < 4; k++)
      expect(edges, `convs.${3 - k} -> layers.${k}`).toContain(`convs.${3 - k} -> layers.${k}`);
    // a mask, an encoder's output, read by every member alike, still stacks (BERT's, T5's)
    for (const [name, key] of [
      ["bert_padded", "encoder.layer.0"],
      ["t5", "decoder.block.0"],
    ] as const)
      expect(stackable(goldenTree(name), goldenTree(name).runs.get(key)!), name).toBe(true);
  });

  it("a first block with an Identity where the others have a DropPath stands for each of them; another module does not", () => {
    // BEiT, Swin, SegFormer: drop_path = DropPath(rate) if rate > 0 else nn.Identity(), the
    // rates rising from 0, so layer 0 holds an Identity; both hand their input on when
    // evaluating: one signature (tracing/structure.py PASS_THROUGH), here GPT-2's block 0's
    // mlp.dropout (a Dropout, of that signature) retyped
    const raw = golden.cases.find((c) => c.name === "gpt2")!.graph as {
      calls: { id: string; type: string; sig: string }[];
    };
    const retyped = (type: string, sig?: string) => {
      const copy = structuredClone(raw);
      const call = copy.calls.find((c) => c.id === "transformer.h.0.mlp.dropout")!;
      call.type = type;
      if (sig !== undefined) call.sig = sig;
      return buildTree(decodeGraph(copy));
    };
    const identity = retyped("Identity");
    const run = identity.runs.get("transformer.h.0")!;
    expect(run.members.length).toBe(4);
    expect(stackable(identity, run)).toBe(true);
    const map = counterpart(identity, run, 2)!;
    const [a, b] = ["transformer.h.0.mlp.dropout", "transformer.h.2.mlp.dropout"].map((id) => identity.byId.get(id)!);
    expect(map.get(a!)).toBe(b);
    // a module of another type and signature in its place: no longer block 1's structure
    const gelu = retyped("GELU", "0badc0de");
    expect(counterpart(gelu, gelu.runs.get("transformer.h.0")!, 2)).toBeNull();
  });

  it("a flat pattern (Linear → ReLU) × 5 and a sequential-topology GPT-2 do not stack", () => {
    for (const name of ["flat_mlp", "gpt2_sequential"]) {
      const tree = goldenTree(name);
      expect(tree.runList.length).toBeGreaterThan(0);
      expect(stackedRuns(tree).size, name).toBe(0);
    }
  });

  it("GPT-2: drop -> [ln_1 -> attn -> ⊕ -> ln_2 -> mlp -> ⊕] × 4 -> ln_f", () => {
    const tree = goldenTree("gpt2");
    const v = buildView(tree, stacked(tree, 0, [tree.byId.get("transformer")!]));
    const e = edgeText(v);
    const block = e.filter((x) => x.includes("h.0") || x.includes("ln_f"));
    expect(block).toEqual([
      "transformer.drop -> transformer.h.0.ln_1 flow",
      "transformer.drop -> transformer.h.0.ln_2 skip",
      "transformer.h.0.attn -> transformer.h.0.ln_2 flow",
      "transformer.h.0.attn -> transformer.ln_f skip",
      "transformer.h.0.ln_1 -> transformer.h.0.attn flow",
      "transformer.h.0.ln_2 -> transformer.h.0.mlp flow",
      "transformer.h.0.mlp -> transformer.ln_f flow",
      "transformer.ln_f -> lm_head flow",
    ]);
    expect(
      junctions(tree, v)
        .junctions.filter((j) => j.path.at(-1) === "k:transformer.h.0")
        .map((j) => j.outs),
    ).toEqual([["s:transformer.h.0.ln_2"], ["s:transformer.ln_f"]]);
  });

  it("Mamba: a block that adds its own residual once draws its ⊕ in the stack, read by norm_f", () => {
    // MambaBlock.forward: residual = x; x = mixer(norm(x)); return residual + x. The sum of
    // layer k is read by layer k + 1's norm (not drawn: the stack draws layer 0), and the
    // last by norm_f: the ⊕ stands in the stack, adding the stream from before it (the
    // embeddings, dashed) to the mixer's output, and feeds norm_f.
    const tree = goldenTree("mamba");
    const v = buildView(tree, stacked(tree, 0, [tree.byId.get("backbone")!]));
    expect(v.stacks.map((st) => st.key)).toEqual(["k:backbone.layers.0"]);
    const d = junctions(tree, v);
    const mine = d.junctions.filter((j) => j.path.at(-1) === "k:backbone.layers.0");
    expect(mine.map((j) => [j.glyph, j.outs])).toEqual([["+", ["s:backbone.norm_f"]]]);
    const into = d.edges.filter((e) => e.dst === mine[0]!.key).map((e) => `${e.src} ${e.kind}`);
    expect(into.sort()).toEqual(["s:backbone.embeddings skip", "s:backbone.layers.0.mixer flow"]);
  });

  it("Phi: attention and MLP in one sum with the residual: the stream from before the stack skips round the layer into its ⊕", () => {
    // PhiDecoderLayer.forward: residual = x; h = ln(x); return attn(h) + mlp(h) + residual
    // (both dropped out first). The residual of layer k + 1 is layer k's sum, read by no node
    // of layer k's: drawn, it is the stream that enters the stack (embed_dropout), dashed into
    // the ⊕ that adds attention and MLP, which feeds final_layernorm.
    const tree = goldenTree("phi");
    const v = buildView(tree, stacked(tree, 0, [tree.byId.get("model")!]));
    expect(v.stacks.map((st) => st.key)).toEqual(["k:model.layers.0"]);
    expect(edgeText(v).filter((x) => x.includes("final_layernorm ") || x.endsWith("final_layernorm skip"))).toContain(
      "model.embed_dropout -> model.final_layernorm skip",
    );
    const d = junctions(tree, v);
    const mine = d.junctions.filter((j) => j.path.at(-1) === "k:model.layers.0");
    expect(mine.map((j) => j.outs)).toEqual([["s:model.final_layernorm"]]);
    const into = d.edges.filter((e) => mine.some((j) => j.key === e.dst)).map((e) => `${e.src} ${e.kind}`);
    expect(into.sort()).toEqual([
      "s:model.embed_dropout skip",
      "s:model.layers.0.resid_dropout#0 flow",
      "s:model.layers.0.resid_dropout#1 merge",
    ]);
  });

  it("BERT: the attention mask enters member 0's attention; the last layer's output leaves", () => {
    const tree = goldenTree("bert_padded");
    const v = buildView(tree, stacked(tree, 1, [tree.byId.get("encoder")!]));
    const e = edgeText(v).map((x) => x.replace(/encoder\.layer\.1\./g, "L."));
    expect(e.filter((x) => x.includes("L."))).toEqual([
      "embeddings -> L.attention flow",
      "L.attention -> L.intermediate flow",
      "L.attention -> L.output skip",
      "L.intermediate -> L.output flow",
      "L.output -> output:last_hidden_state flow",
      "L.output -> pooler flow",
      "input:attention_mask -> L.attention merge",
    ]);
  });
});

describe("playback through a stack", () => {
  const steps = playbackSteps(gpt, initialState(gpt));

  it("walks the stack's children once per member, the stack showing that member", () => {
    const inside = steps.filter((s) => s.key.startsWith("s:layers.0."));
    expect(inside.length).toBe(4 * 12);
    expect(inside.map((s) => s.id)).toEqual(
      Array.from({ length: 12 }, (_, k) => ["norm1", "attn", "norm2", "mlp"].map((p) => `layers.${k}.${p}`)).flat(),
    );
    for (const s of inside) {
      const k = Number(/^layers\.(\d+)\./.exec(s.id)![1]);
      expect(s.state.stacked!.get("layers.0")).toBe(k);
      const v = buildView(gpt, s.state);
      expect(v.byKey.get(s.key)!.id).toBe(s.id);
      expect(s.call).toBe(gpt.byId.get(s.id));
    }
    expect(steps.map((s) => s.id).filter((id) => !id.startsWith("layers."))).toEqual([
      "input:input_ids",
      "embed",
      "norm",
      "lm_head",
      "output:logits",
    ]);
  });

  it("goes in execution order", () => {
    const calls = steps.filter((s) => s.call >= 0).map((s) => s.call);
    for (let i = 1; i < calls.length; i++) expect(at(calls, i)).toBeGreaterThan(at(calls, i - 1));
  });
});

describe("marks on a stack", () => {
  it("a stack carries the NaN marks of the layers it hides; the layer shown, on its stages", () => {
    const raw = structuredClone(loadRaw("wire_transformer12.json")) as { calls: { id: string }[]; nonfinite: number[] };
    raw.nonfinite = ["layers.4.attn", "layers.4", "layers.5", "norm"].map((id) =>
      raw.calls.findIndex((c) => c.id === id),
    );
    const tree = buildTree(decodeGraph(raw));
    const marks = (k: number) => viewMarks(tree, buildView(tree, stacked(tree, k)), problemsOf(tree.graph));
    expect(marks(0).get("k:layers.0")).toEqual({ nonfinite: 3, first: true, failed: false });
    expect(marks(0).get("s:norm")?.nonfinite).toBe(1);
    const at4 = marks(4);
    expect(at4.get("s:layers.0.attn")).toEqual({ nonfinite: 1, first: true, failed: false });
    expect(at4.get("k:layers.0")).toEqual({ nonfinite: 2, first: false, failed: false }); // layers.4 itself, layers.5
  });
});

describe("one module called again and again (ALBERT's shared layer)", () => {
  // albert_layer_groups.0 is one module the encoder calls 4 times (transformers' AlbertTransformer):
  // its calls share a module name, so no index counts them, yet they are the paper's "x 4"
  const albert = goldenTree("albert");
  const group = "encoder.albert_layer_groups.0";
  const run = albert.runList.find((r) => at(albert.graph.calls, at(r.members, 0)).module === group)!;

  it("is a run of its 4 calls, one set of weights, drawn as one stack of passes", () => {
    expect(run).toBeDefined();
    expect(run.shared).toBe(true);
    expect(run.members.map((m) => at(albert.graph.calls, m).id)).toEqual([0, 1, 2, 3].map((k) => `${group}#${k}`));
    expect(stackable(albert, run)).toBe(true);
    for (let k = 1; k < 4; k++) expect(counterpart(albert, run, k), `pass ${k}`).not.toBeNull();
    const state = initialState(albert);
    expect(state.stacked?.has(run.key)).toBe(true);
    const view = buildView(albert, state);
    const scene = buildScene(albert, view, computeLayout(layoutRequest(view, "TB")), "TB");
    const c = scene.clusters.find((x) => x.kind === "stack")!;
    expect(c.label).toBe("AlbertLayerGroup × 4");
    expect(c.stack).toMatchObject({ count: 4, steppable: true, shared: true });
    // one level open is its one AlbertLayer's attention and FFN (the group holds nothing else)
    const layer = `${group}.albert_layers.0#0`;
    expect(view.byKey.has(`s:${layer}`)).toBe(false);
    for (const kid of ["attention", "ffn", "ffn_output", "full_layer_layer_norm"])
      expect(view.byKey.has(`s:${group}.albert_layers.0.${kid}#0`), kid).toBe(true);
  });

  it("folded, counts its weights once and says they are shared", () => {
    const view = buildView(albert, { ...initialState(albert), stacked: new Map() });
    const fold = view.nodes.find((n) => n.run === run)!;
    const scene = buildScene(albert, view, computeLayout(layoutRequest(view, "TB")), "TB");
    const node = scene.nodes.find((n) => n.key === fold.key)!;
    expect(node.title).toBe("AlbertLayerGroup × 4");
    expect(node.range).toBe("albert_layer_groups.0 · shared");
    expect(node.params).toBe(formatParams(at(albert.graph.calls, at(run.members, 0)).params));
  });
});
