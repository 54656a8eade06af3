// Encoder-decoders (T5 and Whisper from their configs, tests/fixture_models.py): runs of
// blocks whose first block holds more than the others (T5's relative position bias), the
// edges out of a stack as its last member makes them, the two columns side by side with the
// cross-attention bus between them, and the buses of what every layer of a stack reads;
// expectations derived by hand from the models' code.
import { describe, expect, it } from "vitest";
import { segmentHitsBox } from "../src/layout/flow";
import { type Box, computeLayout, type Direction } from "../src/layout/layout";
import { counterpart, stackable, wrappers } from "../src/model/stack";
import { buildTree, type CallTree, holds } from "../src/model/tree";
import { buildView, stackedRuns, type ViewGraph, type ViewState } from "../src/model/view_model";
import { initialState, levelStates } from "../src/model/view_state";
import { fitsAt } from "../src/app/framing";
import { buildScene, drawnOf, layoutRequest, MINIMAP_STRIP, READ_K } from "../src/scene/scene";
import { decodeGraph } from "../src/wire";
import { loadRaw, must } from "./fixtures";
import { at } from "../src/wire_check";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const goldenTree = (name: string) => buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
const edgeText = (v: ViewGraph) =>
  v.edges.map((e) => `${v.byKey.get(e.src)!.id} -> ${v.byKey.get(e.dst)!.id} ${e.kind}`).sort();

describe("T5: the first block holds the position bias, and is one of the run", () => {
  // T5Block(has_relative_attention_bias=(i == 0)): block 0's T5Attention owns an Embedding
  // (relative_attention_bias) the others lack, computes the bias with it once and hands it
  // on; all else is the same module for module, parameter shape for parameter shape.
  const t5 = goldenTree("t5_3");
  const id = (c: number) => at(t5.graph.calls, c).id;
  const call = (name: string) => t5.byId.get(name)!;

  it("runs of three from block 0, both stacks stackable", () => {
    expect(t5.runList.map((r) => r.members.map(id))).toEqual([
      ["encoder.block.0", "encoder.block.1", "encoder.block.2"],
      ["decoder.block.0", "decoder.block.1", "decoder.block.2"],
    ]);
    for (const run of t5.runList) expect(stackable(t5, run), run.key).toBe(true);
  });

  it("block 0 holds block 1: every call of block 1 has its own in block 0; the Embedding stands for itself", () => {
    const map = holds(t5.graph, t5.children, call("encoder.block.0"), call("encoder.block.1"))!;
    expect(map).not.toBeNull();
    const bias = call("encoder.block.0.layer.0.SelfAttention.relative_attention_bias");
    expect(map.has(bias)).toBe(false);
    for (const [a, b] of map) expect(id(b)).toBe(id(a).replace(/^encoder\.block\.0/, "encoder.block.1"));
    // member 2 through the run: the stepper shows it in the same drawing
    const run = t5.runs.get("encoder.block.0")!;
    expect(counterpart(t5, run, 2)!.get(call("encoder.block.0.layer.1"))).toBe(call("encoder.block.2.layer.1"));
  });

  it("but not a block with more than leaves, nor a block of other shapes", () => {
    // the decoder's block 0 has a whole cross-attention sublayer the encoder's blocks lack
    expect(holds(t5.graph, t5.children, call("decoder.block.0"), call("encoder.block.1"))).toBeNull();
    expect(holds(t5.graph, t5.children, call("encoder.block.1"), call("encoder.block.0"))).toBeNull();
    // torchvision's first Bottleneck: a projection (downsample: conv, bn) and other shapes
    const resnet = goldenTree("torchvision_resnet");
    const [b0, b1] = [resnet.byId.get("layer1.0")!, resnet.byId.get("layer1.1")!];
    expect(holds(resnet.graph, resnet.children, b0, b1)).toBeNull();
  });

  it("the stacks' edges out are the last block's: no skip from the self-attention to the final norm", () => {
    // T5LayerFF returns x + FF(norm(x)), the block's output; block k's self-attention
    // sublayer returns the bias it was given, which block k + 1 reads, but the final norm
    // reads the last block's hidden state only.
    const v = buildView(t5, initialState(t5, 1000, 1000));
    expect(v.stacks.map((s) => s.key)).toEqual(["k:encoder.block.0", "k:decoder.block.0"]);
    const out = edgeText(v).filter((e) => e.includes("final_layer_norm") && !e.startsWith("encoder.final"));
    expect(out.filter((e) => !e.startsWith("decoder.final"))).toEqual([
      "decoder.block.0.layer.2 -> decoder.final_layer_norm flow",
      "encoder.block.0.layer.1 -> encoder.final_layer_norm flow",
    ]);
    expect(edgeText(v)).toContain("encoder.dropout#1 -> decoder.block.0.layer.1 merge"); // the cross-attention
  });
});

// ---------------------------------------------------------------- the figure: two columns

/** A scene of a state, and what a reader checks on it. */
function sceneOf(tree: CallTree, state: ViewState, dir: Direction = "TB") {
  const view = buildView(tree, state);
  const req = layoutRequest(view, dir);
  const lay = computeLayout(req);
  return { view, req, lay, scene: buildScene(tree, view, lay, dir) };
}
const centreX = (b: Box) => b[0] + b[2] / 2;
/** The boxes a line's segments pass through (inset 2), but those it starts or ends in. */
function behind(points: number[], boxes: [string, Box][], ends: Box[]): string[] {
  const hit: string[] = [];
  for (const [key, box] of boxes) {
    if (ends.some((e) => e === box)) continue;
    for (let i = 0; i + 3 < points.length; i += 2)
      if (segmentHitsBox(points[i]!, points[i + 1]!, points[i + 2]!, points[i + 3]!, box, 2)) {
        hit.push(key);
        break;
      }
  }
  return hit;
}
/** The state with the wrappers around the stacks opened (boxless), the runs folded; with
 * `stacked`, drawn as stacks. */
const wrapped = (tree: CallTree, stacked: boolean): ViewState => {
  const stacks = stackedRuns(tree);
  const around = wrappers(tree, stacks);
  return { expanded: around, unfolded: new Set(), inlined: around, ...(stacked ? { stacked: stacks } : {}) };
};

describe("an encoder-decoder is two columns side by side, the cross-attention one bus between", () => {
  // Whisper: model.encoder (conv1, conv2, embed_positions, layers × 3, layer_norm) and
  // model.decoder (embed_tokens, embed_positions, layers × 3, layer_norm), proj_out. The
  // decoder's layers read the encoder's output (encoder_hidden_states) in their cross-
  // attention: by a merge edge each, the only edges from the one chain to the other.
  const whisper = goldenTree("whisper");
  for (const stacked of [false, true]) {
    it(`Whisper, ${stacked ? "both stacks open" : "runs folded"}: the encoder left, the decoder right, both from the top`, () => {
      const { view, req, lay, scene } = sceneOf(whisper, wrapped(whisper, stacked));
      expect(new Set(req.root.columns)).toEqual(new Set([0, 1]));
      const encoder = view.nodes.filter((n) => n.id.startsWith("model.encoder") || n.id === "input:input_features");
      const decoder = view.nodes.filter((n) => n.id.startsWith("model.decoder") || n.id === "proj_out");
      expect(encoder.length).toBeGreaterThan(3);
      const right = Math.max(...encoder.map((n) => must(lay.boxes, n.key)).map((b) => b[0] + b[2]));
      const left = Math.min(...decoder.map((n) => must(lay.boxes, n.key)).map((b) => b[0]));
      expect(left).toBeGreaterThan(right); // side by side, a gap between
      const top = (id: string) => must(lay.boxes, view.nodes.find((n) => n.id === id)!.key)[1];
      expect(top("input:input_features")).toBe(top("input:decoder_input_ids"));
      // one bus from the encoder's output, labelled, into the decoder's layers (the cross-
      // attention of member 0 when stacked; the fold of them all when folded)
      const bus = scene.buses.find((b) => b.srcId === "model.encoder.layer_norm")!;
      expect(bus.label?.text).toBe("cross-attention");
      const taps = scene.edges.filter((e) => e.from === bus.key);
      expect(taps.map((e) => e.dstId)).toEqual([
        stacked ? "model.decoder.layers.0.encoder_attn" : "model.decoder.layers.0",
      ]);
      // its line and its tap pass behind no node: between the columns, then across in
      const boxes = scene.nodes.map((n): [string, Box] => [n.key, n.box]);
      const src = scene.nodes.find((n) => n.id === "model.encoder.layer_norm")!.box;
      const dst = scene.nodes.find((n) => n.key === taps[0]!.dst)!.box;
      expect(behind(bus.points, boxes, [src, dst])).toEqual([]);
      expect(behind(taps[0]!.points, boxes, [src, dst])).toEqual([]);
      const lane = bus.points.filter((_, i) => i % 2 === 0);
      expect(Math.max(...lane)).toBeGreaterThan(right); // right of the encoder ...
      expect(Math.max(...lane)).toBeLessThanOrEqual(dst[0]); // ... into its reader from the left
      // no other edge between the chains: no line loops round the encoder
      const side = (key: string) =>
        encoder.some((n) => n.key === key) ? 0 : decoder.some((n) => n.key === key) ? 1 : -1;
      for (const e of scene.edges.filter((x) => !x.from.startsWith("b:"))) {
        const [a, b] = [side(e.src), side(e.dst)];
        if (a >= 0 && b >= 0) expect(a, `${e.srcId} -> ${e.dstId}`).toBe(b);
      }
    });
  }

  it("Whisper, the decoder's cross-attention opened to its projections: still two columns", () => {
    // WhisperAttention.forward as cross-attention: q_proj(hidden_states), k_proj and v_proj
    // of key_value_states (the encoder's output), then the attention and out_proj. k_proj
    // reads the encoder alone (a flow edge: its trunk), and goes on only as the attention's
    // keys: the edge into it links the columns as the cross-attention's merge did, so the
    // encoder stands on the left, the decoder on the right, not the one above the other
    const state = wrapped(whisper, true);
    const attn = whisper.byId.get("model.decoder.layers.0.encoder_attn")!;
    const { view, req, lay, scene } = sceneOf(whisper, { ...state, expanded: new Set([...state.expanded, attn]) });
    expect(edgeText(view)).toContain("model.encoder.layer_norm -> model.decoder.layers.0.encoder_attn.k_proj flow");
    expect(new Set(req.root.columns)).toEqual(new Set([0, 1]));
    const boxes = view.nodes.map((n) => [n.id, must(lay.boxes, n.key)] as const);
    const right = Math.max(...boxes.filter(([n]) => n.startsWith("model.encoder")).map(([, b]) => b[0] + b[2]));
    const box = (name: string) => boxes.find(([n]) => n === `model.decoder.layers.0.encoder_attn.${name}`)![1];
    expect(box("k_proj")[0]).toBeGreaterThan(right);
    // the encoder's output one bus, "cross-attention", tapping k_proj and v_proj; they stand
    // one above the other facing it (left of q_proj: the decoder's column faces the encoder)
    const bus = scene.buses.find((b) => b.srcId === "model.encoder.layer_norm")!;
    expect(bus.label?.text).toBe("cross-attention");
    const taps = scene.edges.filter((e) => e.from === bus.key);
    expect(taps.map((e) => e.dstId.split(".").at(-1)).sort()).toEqual(["k_proj", "v_proj"]);
    expect(box("k_proj")[1]).toBeLessThan(box("v_proj")[1]);
    for (const p of ["k_proj", "v_proj"]) expect(box(p)[0] + box(p)[2]).toBeLessThan(box("q_proj")[0]);
    const all = scene.nodes.map((n): [string, Box] => [n.key, n.box]);
    const src = scene.nodes.find((n) => n.id === "model.encoder.layer_norm")!.box;
    for (const t of taps) {
      const dst = scene.nodes.find((n) => n.key === t.dst)!.box;
      expect(behind(t.points, all, [src, dst]), t.dstId).toEqual([]);
    }
    expect(behind(bus.points, all, [src])).toEqual([]);
    // the encoder drawn as one node (folded to fit, at 1024 px): its line still says what it is
    const encoder = whisper.byId.get("model.encoder")!;
    const folded = new Set([...state.expanded, attn].filter((c) => c !== encoder));
    const one = sceneOf(whisper, { ...state, expanded: folded }).scene;
    const from = one.buses.find((b) => b.srcId === "model.encoder")!;
    expect(from.label?.text).toBe("cross-attention");
  });

  it("a decoder of two layers, both stacks open: the encoder's output one labelled bus all the same", () => {
    // T5 of 2 + 2 blocks: the encoder's final dropout read by the decoder's two blocks'
    // EncDecAttention (key_value_states), fewer than a bus's three readers elsewhere
    const t5two = goldenTree("t5");
    const { scene } = sceneOf(t5two, wrapped(t5two, true));
    const bus = scene.buses.find((b) => b.srcId.startsWith("encoder."))!;
    expect(bus.label?.text).toBe("cross-attention");
    expect(scene.edges.filter((e) => e.from === bus.key).map((e) => e.dstId)).toEqual(["decoder.block.0.layer.1"]);
  });

  it("no other model's bus is labelled so, in any starting level: only these five read an encoder", () => {
    // from their code: T5's, Whisper's and BART's decoder layers and nn.Transformer's
    // decoder read the encoder's output as keys and values; no other golden model has a
    // cross-attention (a ResNet's shortcut into a stack of blocks is a residual's skip)
    const encoderDecoders = ["t5", "t5_3", "whisper", "bart", "nn_transformer"];
    const labelled = new Set<string>();
    for (const { name } of golden.cases)
      for (const state of levelStates(goldenTree(name))) {
        const { trunk } = drawnOf(buildView(goldenTree(name), state));
        if ([...trunk.labels.values()].includes("cross-attention")) labelled.add(name);
      }
    expect([...labelled].sort()).toEqual([...encoderDecoders].sort());
  });

  it("T5, both runs unfolded, every cross-attention opened: one labelled line into each block's k and v", () => {
    // T5Attention as cross-attention: k and v of key_value_states (the encoder's output)
    const t5 = goldenTree("t5_3");
    const ids = ["encoder", "decoder"];
    for (const b of [0, 1, 2])
      ids.push(...["", ".layer.1", ".layer.1.EncDecAttention"].map((s) => `decoder.block.${b}${s}`));
    const expanded = new Set(ids.map((i) => t5.byId.get(i)!));
    const { scene } = sceneOf(t5, { expanded, unfolded: new Set(t5.runList.map((r) => r.key)) });
    const bus = scene.buses.find((b) => b.srcId === "encoder.dropout#1")!;
    expect(bus.label?.text).toBe("cross-attention");
    const taps = scene.edges.filter((e) => e.from === bus.key).map((e) => e.dstId);
    expect(taps.sort()).toEqual(
      [0, 1, 2].flatMap((b) => ["k", "v"].map((p) => `decoder.block.${b}.layer.1.EncDecAttention.${p}`)),
    );
  });

  it("the decoder's blocks face the encoder: their residual stream on the right, the sublayers left of it", () => {
    const { view, scene } = sceneOf(whisper, wrapped(whisper, true));
    const box = (id: string) => scene.nodes.find((n) => n.id === id)!.box;
    const { drawing } = drawnOf(view);
    const joins = (stack: string) =>
      drawing.junctions
        .filter((j) => j.path.at(-1) === stack)
        .map((j) => must(Object.fromEntries(scene.junctions.map((x) => [x.key, x])), j.key));
    const enc = joins("k:model.encoder.layers.0");
    const dec = joins("k:model.decoder.layers.0");
    expect(enc.length).toBeGreaterThanOrEqual(2);
    expect(dec.length).toBeGreaterThanOrEqual(3);
    for (const j of enc) expect(centreX(j.box)).toBeLessThan(centreX(box("model.encoder.layers.0.self_attn")));
    for (const j of dec) expect(centreX(j.box)).toBeGreaterThan(centreX(box("model.decoder.layers.0.encoder_attn")));
  });

  it("T5: two columns of T5Block × 3; the encoder's output into the decoder's cross-attention sublayer", () => {
    const t5 = goldenTree("t5_3");
    const { scene } = sceneOf(t5, wrapped(t5, true));
    // one type in both columns: each header says which (the module its run is in)
    expect(scene.clusters.filter((c) => c.kind === "stack").map((c) => c.label)).toEqual([
      "T5Block × 3 · encoder",
      "T5Block × 3 · decoder",
    ]);
    const bus = scene.buses.find((b) => b.label?.text === "cross-attention")!;
    expect(bus.srcId).toBe("encoder.dropout#1");
    expect(scene.edges.filter((e) => e.from === bus.key).map((e) => e.dstId)).toEqual(["decoder.block.0.layer.1"]);
    // the mask reaches the encoder's self-attention and the decoder's cross-attention: a bus too
    const mask = scene.buses.find((b) => b.srcId === "input:attention_mask")!;
    expect(mask.label).toBeUndefined();
    expect(
      scene.edges
        .filter((e) => e.from === mask.key)
        .map((e) => e.dstId)
        .sort(),
    ).toEqual(["decoder.block.0.layer.1", "encoder.block.0.layer.0"]);
  });

  it("T5 at a lecture hall's 1280 x 674: both stacks open one level, the columns wrapped into bands to fit", () => {
    // open, the decoder's column (input, embed_tokens, dropout, T5Block x 3 of three
    // sublayers, final_layer_norm, dropout, lm_head, output) is taller than the canvas at
    // names 12 px high: it wraps into bands (layout/bands.ts wrapColumns), the encoder's
    // band(s) left of the decoder's, each column from the top
    const t5 = goldenTree("t5_3");
    const fit = { w: 1280, h: 674, k: READ_K, reserve: MINIMAP_STRIP };
    const view = buildView(t5, wrapped(t5, true));
    const req = layoutRequest(view, "TB", fit);
    const lay = computeLayout(req);
    expect(fitsAt(lay, fit)).toBe(true);
    const scene = buildScene(t5, view, lay, "TB");
    const box = (id: string) => scene.nodes.find((n) => n.id === id)!.box;
    const of = (prefix: string) => scene.nodes.filter((n) => n.id.startsWith(prefix)).map((n) => n.box);
    const encoderRight = Math.max(...of("encoder.").map((b) => b[0] + b[2]));
    const decoderLeft = Math.min(...of("decoder.").map((b) => b[0]));
    expect(decoderLeft).toBeGreaterThan(encoderRight);
    expect(box("input:input_ids")[1]).toBe(box("input:decoder_input_ids")[1]);
    // the decoder's column in two bands: its head beside its blocks, from the top
    const block = scene.clusters.find((c) => c.label === "T5Block × 3 · decoder")!.box;
    expect(box("lm_head")[0]).toBeGreaterThan(block[0] + block[2]);
    expect(box("lm_head")[1]).toBeLessThan(block[1] + block[3]);
    // the cross-attention still passes behind no node
    const bus = scene.buses.find((b) => b.label?.text === "cross-attention")!;
    const boxes = scene.nodes.map((n): [string, Box] => [n.key, n.box]);
    const tap = scene.edges.find((e) => e.from === bus.key)!;
    const ends = [box("encoder.dropout#1"), box("decoder.block.0.layer.1")];
    expect(behind(bus.points, boxes, ends)).toEqual([]);
    expect(behind(tap.points, boxes, ends)).toEqual([]);
  });

  it("nn.Transformer: its encoder, whose output is only the decoder's memory, a column beside the decoder", () => {
    // forward(src, tgt): memory = self.encoder(src); output = self.decoder(tgt, memory): the
    // memory is no model output, and every decoder layer reads it (multihead_attn)
    const tree = goldenTree("nn_transformer");
    const { view, req, lay, scene } = sceneOf(tree, wrapped(tree, true));
    const column = (id: string) => {
      const i = req.root.items.findIndex((it) => it.key === view.nodes.find((n) => n.id === id)?.key);
      return i < 0 ? -1 : req.root.columns?.[i];
    };
    for (const id of ["input:0", "encoder.norm"]) expect(column(id), id).toBe(0);
    for (const id of ["input:1", "decoder.norm", "output:0"]) expect(column(id), id).toBe(1);
    // the target enters its own column from the top, level with the source
    const top = (id: string) => must(lay.boxes, view.nodes.find((n) => n.id === id)!.key)[1];
    expect(top("input:1")).toBe(top("input:0"));
    const bus = scene.buses.find((b) => b.srcId === "encoder.norm")!;
    expect(bus.label?.text).toBe("cross-attention");
    expect(scene.edges.filter((e) => e.from === bus.key).map((e) => e.dstId)).toEqual([
      "decoder.layers.0.multihead_attn",
    ]);
  });

  it("T5 folded (its first level): the encoder's column left, the decoder's right, what it reads from the side", () => {
    // T5ForConditionalGeneration.forward: encoder(input_ids, attention_mask) -> output 0;
    // decoder(input_ids=decoder_input_ids, ..., encoder_hidden_states, encoder_attention_mask)
    // -> lm_head -> logits. The decoder continues its own ids (flow); the encoder's output
    // and the mask merge: two chains, each ending in a model output, met by merges only
    const t5 = goldenTree("t5_3");
    const { view, req, scene } = sceneOf(t5, { expanded: new Set(), unfolded: new Set() });
    expect(edgeText(view)).toContain("encoder -> decoder merge");
    const column = (id: string) =>
      req.root.columns?.[req.root.items.findIndex((it) => it.key === view.nodes.find((n) => n.id === id)!.key)];
    for (const id of ["input:input_ids", "input:attention_mask", "encoder", "output:encoder_last_hidden_state"])
      expect(column(id), id).toBe(0);
    for (const id of ["input:decoder_input_ids", "decoder", "lm_head", "output:logits"]) expect(column(id), id).toBe(1);
    const box = (id: string) => scene.nodes.find((n) => n.id === id)!.box;
    const boxes = scene.nodes.map((n): [string, Box] => [n.key, n.box]);
    const into = scene.edges.filter((e) => e.dstId === "decoder" && e.kind === "merge");
    expect(into.map((e) => e.srcId).sort()).toEqual(["encoder", "input:attention_mask"]);
    for (const e of into) {
      // behind no node, into the decoder's left side (not over its top, round its column)
      expect(behind(e.points, boxes, [box(e.srcId), box("decoder")]), e.srcId).toEqual([]);
      expect(e.points.at(-2), e.srcId).toBeCloseTo(box("decoder")[0], 0);
      expect(Math.min(...e.points.filter((_, i) => i % 2 === 1)), e.srcId).toBeGreaterThanOrEqual(box(e.srcId)[1]);
    }
  });

  it("Whisper folded in a notebook's cell: WhisperModel, around both stacks, boxless, so encoder and decoder stand in columns", () => {
    // WhisperForConditionalGeneration.forward: model(input_features, decoder_input_ids) ->
    // proj_out; WhisperModel.forward: encoder(input_features), decoder(input_ids=
    // decoder_input_ids, encoder_hidden_states=...). The level with only `model` open (a
    // canvas too small for the stacks) drew it as a box, the two lines from above crossing
    // in it; it wraps the stacks only, so it is drawn without a box, as where they open
    const level = levelStates(whisper).find((s) => s.expanded.size === 1 && !s.stacked)!;
    expect([...level.expanded].map((c) => at(whisper.graph.calls, c).id)).toEqual(["model"]);
    expect(level.inlined).toEqual(level.expanded);
    const { view, req } = sceneOf(whisper, level);
    const column = (id: string) =>
      req.root.columns?.[req.root.items.findIndex((it) => it.key === view.nodes.find((n) => n.id === id)!.key)];
    for (const id of ["input:input_features", "model.encoder", "output:encoder_last_hidden_state"])
      expect(column(id), id).toBe(0);
    for (const id of ["input:decoder_input_ids", "model.decoder", "proj_out", "output:logits"])
      expect(column(id), id).toBe(1);
  });

  it("one column where the chains meet, or where one model output is all (GPT-2, a U-Net)", () => {
    for (const name of ["gpt2", "bert_padded", "unet2d_condition", "demo_unet"]) {
      const tree = goldenTree(name);
      expect(sceneOf(tree, initialState(tree)).req.root.columns, name).toBeUndefined();
    }
  });
});

describe("conditioning read by every layer of a stack is a bus with one tap", () => {
  it("BERT's mask: into member 0's attention from the side, standing for the 3 layers", () => {
    const bert = goldenTree("bert_padded");
    const { view, scene } = sceneOf(bert, wrapped(bert, true));
    const e = view.edges.find((x) => view.byKey.get(x.src)!.id === "input:attention_mask")!;
    expect(view.byKey.get(e.dst)!.id).toBe("encoder.layer.0.attention");
    expect(e.readers).toBe(3);
    const bus = scene.buses.find((b) => b.srcId === "input:attention_mask")!;
    expect(bus.label).toBeUndefined();
    const [tap] = scene.edges.filter((x) => x.from === bus.key);
    const dst = scene.nodes.find((n) => n.id === "encoder.layer.0.attention")!.box;
    const end = tap!.points.slice(-2);
    expect(Math.abs(end[0]! - dst[0]) < 1 || Math.abs(end[0]! - dst[0] - dst[2]) < 1).toBe(true); // from a side
  });

  it("what only the first layer reads is an edge, not a bus (Whisper's positions, added before the stack)", () => {
    const whisper = goldenTree("whisper");
    const { scene } = sceneOf(whisper, wrapped(whisper, true));
    expect(scene.buses.map((b) => b.srcId).sort()).toEqual(["model.encoder.layer_norm"]);
  });
});
