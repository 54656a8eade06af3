// A residual block's sublayers (model/parts.ts): the children between its residual adds,
// expected parts derived by hand from the models' forward code (Hugging Face transformers:
// WhisperEncoderLayer, WhisperDecoderLayer, GPT2Block, BertLayer, T5Block; torchvision's
// Bottleneck), and the first view that folds them where the layers opened one level would not
// fit otherwise: Whisper's, whose norms and MLP (fc1, activation_fn, fc2) are the layer's own
// children, eleven rows a decoder layer.
import { describe, expect, it } from "vitest";
import { Framing, fitsAt } from "../src/app/framing";
import { LayoutClient } from "../src/layout/client";
import { partLines, partsOf } from "../src/model/parts";
import { playbackSteps } from "../src/model/playback";
import { buildTree, type CallTree } from "../src/model/tree";
import { buildView, nodeKeyForCall, type ViewState } from "../src/model/view_model";
import { initialState, isShown, levelStates, revealCall, toggleKey } from "../src/model/view_state";
import { buildScene, READ_K } from "../src/scene/scene";
import { estimate, partWidth } from "../src/scene/request";
import { decodeGraph } from "../src/wire";
import { loadRaw } from "./fixtures";
import { at } from "../src/wire_check";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const goldenTree = (name: string) => buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
const names = (t: CallTree) =>
  partsOf(t).list.flatMap((p) => (p.unit ? [] : [p.members.map((m) => at(t.graph.calls, m).id)])); // units: units.test
const client = new LayoutClient(false);
const canvas = (w: number, h: number) => ({ clientWidth: w, clientHeight: h }) as HTMLElement;

describe("the sublayers of a residual block", () => {
  it("Whisper: self-attention, (cross-attention,) MLP: the children before each residual add", () => {
    // WhisperEncoderLayer.forward: residual = h; h = self_attn(self_attn_layer_norm(h));
    // h = residual + dropout(h); residual = h; h = fc2(dropout(activation_fn(fc1(final_layer_norm(h)))));
    // h = residual + dropout(h). The decoder layer adds encoder_attn_layer_norm, encoder_attn
    // and a third add between them.
    const t = goldenTree("whisper");
    const enc = (i: number) => `model.encoder.layers.${i}`;
    const dec = (i: number) => `model.decoder.layers.${i}`;
    const expected: string[][] = [];
    for (let i = 0; i < 3; i++)
      expected.push(
        [`${enc(i)}.self_attn_layer_norm`, `${enc(i)}.self_attn`],
        [`${enc(i)}.final_layer_norm`, `${enc(i)}.fc1`, `${enc(i)}.activation_fn`, `${enc(i)}.fc2`],
      );
    for (let i = 0; i < 3; i++)
      expected.push(
        [`${dec(i)}.self_attn_layer_norm`, `${dec(i)}.self_attn`],
        [`${dec(i)}.encoder_attn_layer_norm`, `${dec(i)}.encoder_attn`],
        [`${dec(i)}.final_layer_norm`, `${dec(i)}.fc1`, `${dec(i)}.activation_fn`, `${dec(i)}.fc2`],
      );
    expect(names(t)).toEqual(expected);
    // each is named for its body, its key the stage of its output (the attention, fc2)
    const lines = partsOf(t)
      .list.slice(0, 2)
      .map((p) => {
        const { title, type } = partLines(t, p);
        return [p.key, { title, type }];
      });
    expect(lines).toEqual([
      ["model.encoder.layers.0.self_attn", { title: "self_attn", type: "WhisperAttention" }],
      ["model.encoder.layers.0.fc2", { title: "fc1 → activation_fn → fc2", type: "Linear → GELUActivation → Linear" }],
    ]);
  });

  it("a part's node names neither its pre-norm nor its dropouts (Segformer's attention → hidden_dropout → drop_path)", () => {
    // Whisper's MLP with its activation replaced by a dropout and a drop path after fc2 (as
    // SegformerLayer has them): the node says "fc1 → fc2", the tip names all
    const graph = decodeGraph(structuredClone(golden.cases.find((c) => c.name === "whisper")!.graph));
    const fc2 = "model.encoder.layers.0.fc2";
    for (const c of graph.calls)
      if (c.module === "model.encoder.layers.0.activation_fn") c.type = "Dropout";
      else if (c.module === fc2) c.type = "SegformerDropPath";
    const t = buildTree(graph);
    const part = partsOf(t).list.find((p) => p.key === fc2)!;
    expect(partLines(t, part)).toMatchObject({ title: "fc1", type: "Linear" });
    // a part of dropouts alone is named for them
    for (const c of graph.calls) if (c.module === "model.encoder.layers.0.fc1") c.type = "Dropout";
    expect(partLines(buildTree(graph), part)).toMatchObject({ title: "fc1 → activation_fn → fc2" });
  });

  it("a sandwich's norms go unnamed together: Gemma's post-norm is not named alone as if the block were post-norm", () => {
    // Whisper's MLP part (final_layer_norm, fc1, activation_fn, fc2) with fc2 a norm, as
    // Gemma's `pre_feedforward_layernorm → mlp → post_feedforward_layernorm`: neither norm is
    // named, as its pre-norm alone is not; with no norm before, a norm after is named (post-norm)
    const graph = decodeGraph(structuredClone(golden.cases.find((c) => c.name === "whisper")!.graph));
    const fc2 = "model.encoder.layers.0.fc2";
    for (const c of graph.calls) if (c.module === fc2) c.type = "Gemma3RMSNorm";
    const part = (g: typeof graph) => {
      const t = buildTree(g);
      return partLines(t, partsOf(t).list.find((p) => p.key === fc2)!);
    };
    expect(part(graph)).toMatchObject({ title: "fc1 → activation_fn", type: "Linear → GELUActivation" });
    // a layer scale after the body (DINOv2's) goes unnamed as a dropout does
    for (const c of graph.calls) if (c.module === fc2) c.type = "Dinov2WithRegistersLayerScale";
    expect(part(graph)).toMatchObject({ title: "fc1 → activation_fn", type: "Linear → GELUActivation" });
    for (const c of graph.calls) if (c.module === fc2) c.type = "Gemma3RMSNorm";
    for (const c of graph.calls) if (c.module === "model.encoder.layers.0.final_layer_norm") c.type = "Linear";
    expect(part(graph)).toMatchObject({
      title: "final_layer_norm → fc1 → activation_fn → fc2",
      type: "Linear → Linear → GELUActivation → Gemma3RMSNorm",
    });
  });

  it("BART, post-norm: a norm that makes the add's shortcut stays out of the sublayer after it", () => {
    // BartEncoderLayer.forward: h = self_attn_layer_norm(x + self_attn(x)); residual = h;
    // out = final_layer_norm(residual + fc2(activation_fn(fc1(h)))): the second add reads
    // self_attn_layer_norm's output as its shortcut, so the MLP's sublayer is fc1 ... fc2 alone
    // (with the norm folded in, the (+) would add the part to itself). The decoder layer's
    // encoder_attn follows self_attn_layer_norm the same way: alone, no part.
    const t = goldenTree("bart");
    const mlp = (p: string) => [`${p}.fc1`, `${p}.activation_fn`, `${p}.fc2`];
    expect(names(t)).toEqual([
      mlp("model.encoder.layers.0"),
      mlp("model.encoder.layers.1"),
      mlp("model.decoder.layers.0"),
      mlp("model.decoder.layers.1"),
    ]);
  });

  it("GPT-2: attention and MLP; none where the adds are the sublayers' own (BERT, T5) or one (ResNet)", () => {
    // GPT2Block: h = x + attn(ln_1(x)); out = h + mlp(ln_2(h))
    const gpt2 = goldenTree("gpt2");
    const h = (i: number) => `transformer.h.${i}`;
    expect(names(gpt2)).toEqual(
      [0, 1, 2, 3].flatMap((i) => [
        [`${h(i)}.ln_1`, `${h(i)}.attn`],
        [`${h(i)}.ln_2`, `${h(i)}.mlp`],
      ]),
    );
    // BertLayer's adds are its children's (BertSelfOutput, BertOutput: "Add & Norm"), one each;
    // T5Block's are its T5LayerSelfAttention's and T5LayerFF's; a Bottleneck has one add
    for (const name of ["bert_padded", "t5_3", "torchvision_resnet"]) expect(names(goldenTree(name)), name).toEqual([]);
  });

  it("ALBERT: the feed-forward after an attention that adds its own", () => {
    // AlbertLayer.forward: a = attention(h) (AlbertAttention: LayerNorm(h + dropout(dense(ctx))));
    // ffn_output = ffn_output(activation(ffn(a))); out = full_layer_layer_norm(ffn_output + a)
    const t = goldenTree("albert");
    const layer = "encoder.albert_layer_groups.0.albert_layers.0";
    // the shared layer called once per layer (the golden config: 4 layers, one group)
    const calls = names(t);
    expect(calls.length).toBe(4);
    for (const [i, part] of calls.entries())
      expect(part).toEqual([`${layer}.ffn#${i}`, `${layer}.activation#${i}`, `${layer}.ffn_output#${i}`]);
  });
});

describe("a view that folds them", () => {
  const t = goldenTree("whisper");
  const levels = levelStates(t);
  const folded = levels.find((s) => s.parts?.size && s.stacked?.size === 2)!; // both stacks open

  it("is a starting level just shallower than the same with the sublayers open", () => {
    expect(folded).toBeDefined();
    const i = levels.indexOf(folded);
    expect(at(levels, i + 1)).toEqual({ ...folded, parts: undefined });
    // GPT-2's open blocks have parts too: its deepest level keeps them open (framing tries it
    // first), the same with them folded just before it
    const g = levelStates(goldenTree("gpt2"));
    expect(at(g, g.length - 1).parts).toBeUndefined();
    expect(at(g, g.length - 2)).toEqual({ ...at(g, g.length - 1), parts: at(g, g.length - 2).parts });
    expect(at(g, g.length - 2).parts!.size).toBeGreaterThan(0);
  });

  it("Whisper's first view at 1280 x 674 and 1024 x 722: both stacks open one level, each sublayer one node", async () => {
    for (const [w, h] of [
      [1280, 674],
      [1024, 722],
    ] as const) {
      const start = initialState(t);
      const framed = await new Framing(client, canvas(w, h)).lay(start, buildView(t, start), "TB", true);
      expect(fitsAt(framed, { w, h, k: READ_K, reserve: 0 }), `${w}`).toBe(true);
      expect(framed.view.stacks.map((s) => s.run.key)).toEqual(["model.encoder.layers.0", "model.decoder.layers.0"]);
      const ids = framed.view.nodes.map((n) => n.id);
      for (const id of [
        "model.encoder.layers.0.self_attn",
        "model.decoder.layers.0.encoder_attn",
        "model.decoder.layers.0.fc2",
      ])
        expect(ids).toContain(id);
      expect(ids).not.toContain("model.decoder.layers.0.fc1");
      // the paper's sides: the encoder's residual stream left of its sublayers, the decoder's right
      const scene = buildScene(t, framed.view, framed, "TB");
      const box = (id: string) => scene.nodes.find((n) => n.id === id)!.box;
      const x = (b: readonly number[]) => b[0]! + b[2]! / 2;
      const stackOf = (k: string) => scene.clusters.find((c) => c.key === k)!.box;
      const enc = stackOf("k:model.encoder.layers.0");
      const dec = stackOf("k:model.decoder.layers.0");
      const joinsIn = (b: readonly number[]) =>
        scene.junctions.filter(
          (j) => x(j.box) > b[0]! && x(j.box) < b[0]! + b[2]! && j.box[1] > b[1]! && j.box[1] < b[1]! + b[3]!,
        );
      expect(joinsIn(enc).length).toBe(2);
      expect(joinsIn(dec).length).toBe(3);
      for (const j of joinsIn(enc)) expect(x(j.box)).toBeLessThan(x(box("model.encoder.layers.0.self_attn")));
      for (const j of joinsIn(dec)) expect(x(j.box)).toBeGreaterThan(x(box("model.decoder.layers.0.encoder_attn")));
    }
  });

  it("a sublayer opens by its key, stands for its last stage, and hides its others", () => {
    const attn = t.byId.get("model.encoder.layers.0.self_attn")!;
    const norm = t.byId.get("model.encoder.layers.0.self_attn_layer_norm")!;
    const view = buildView(t, folded);
    expect(nodeKeyForCall(t, view, attn)).toBe("f:model.encoder.layers.0.self_attn");
    expect(isShown(t, folded, attn)).toBe(true);
    expect(isShown(t, folded, norm)).toBe(false);
    // revealing a member opens its sublayer only
    const revealed = revealCall(t, folded, norm);
    expect(isShown(t, revealed, norm)).toBe(true);
    expect(revealed.parts!.size).toBe(folded.parts!.size - 1);
    // its (+): the members drawn, the others still folded
    const opened = toggleKey(t, folded, "f:model.encoder.layers.0.self_attn")!;
    const ids = buildView(t, opened.state).nodes.map((n) => n.id);
    expect(ids).toContain("model.encoder.layers.0.self_attn_layer_norm");
    expect(ids).toContain("model.encoder.layers.0.fc2"); // the MLP's fold, by its key
    expect(ids).not.toContain("model.encoder.layers.0.fc1");
    expect(opened.state.auto).toBeUndefined();
  });

  it("a sublayer opened that does not fit folds what is farthest from it (Whisper's at 1024 x 722)", async () => {
    const [w, h] = [1024, 722];
    const f = new Framing(client, canvas(w, h));
    const start = initialState(t);
    const first = await f.lay(start, buildView(t, start), "TB", true);
    const key = "f:model.decoder.layers.0.self_attn";
    const opened = toggleKey(t, first.state, key)!.state;
    const fit = { w, h, k: READ_K, reserve: 0 };
    const asIs = await new Framing(client, canvas(w, h)).lay(opened, buildView(t, opened), "TB", false);
    expect(fitsAt(asIs, fit)).toBe(false); // one row more than the first view
    const framed = await f.lay(opened, buildView(t, opened), "TB", false, READ_K, "expand");
    expect(fitsAt(framed, fit)).toBe(true);
    const ids = framed.view.nodes.map((n) => n.id);
    expect(ids).toContain("model.decoder.layers.0.self_attn_layer_norm"); // still open
    expect(framed.view.stacks.map((s) => s.run.key)).toEqual(["model.decoder.layers.0"]); // the encoder's folded
  });

  it("where nothing makes it fit (a notebook's cell), what is far from it folds where that shows more", async () => {
    const [w, h] = [845, 450];
    const f = new Framing(client, canvas(w, h));
    const chosen = { ...folded, auto: undefined } as ViewState; // both stacks open, sublayers folded
    await f.lay(chosen, buildView(t, chosen), "TB", false);
    const opened = toggleKey(t, chosen, "f:model.decoder.layers.0.self_attn")!.state;
    const framed = await f.lay(opened, buildView(t, opened), "TB", false, READ_K, "expand");
    expect(fitsAt(framed, { w, h, k: READ_K, reserve: 0 })).toBe(false);
    expect(framed.view.nodes.map((n) => n.id)).toContain("model.decoder.layers.0.self_attn_layer_norm");
    expect(framed.view.stacks.map((s) => s.run.key)).not.toContain("model.encoder.layers.0");
  });

  it("playback steps through each layer's sublayers, the stack showing that layer's data", () => {
    const steps = playbackSteps(t, { ...folded, auto: undefined } as ViewState);
    const ids = steps.map((s) => s.id);
    for (let i = 0; i < 3; i++) {
      expect(ids).toContain(`model.encoder.layers.${i}.self_attn`);
      expect(ids).toContain(`model.encoder.layers.${i}.fc2`);
      expect(ids).toContain(`model.decoder.layers.${i}.encoder_attn`);
    }
    expect(ids).not.toContain("model.encoder.layers.0.fc1");
    // in layer order: layer 1's attention after layer 0's MLP
    expect(ids.indexOf("model.encoder.layers.1.self_attn")).toBeGreaterThan(ids.indexOf("model.encoder.layers.0.fc2"));
  });
});

describe("a folded sublayer's name", () => {
  it("is whole where it names three modules (BEiT's relative_position_bias → layernorm_before → attention)", () => {
    const lines = {
      title: "relative_position_bias → layernorm_before → attention",
      type: "BeitRelativePositionBias → LayerNorm → BeitAttention",
      params: "16.9K",
      shape: "1×17×64",
    };
    // the card's name line: 40 px of bar and padding, the name, the parameters beside it
    const need = 40 + estimate(lines.title, "t1") + estimate(lines.params, "num") + 10;
    expect(partWidth(lines)).toBeGreaterThanOrEqual(need);
  });
});

describe("an encoder-decoder whose two stacks do not fit open together", () => {
  // BART is post-norm, `LayerNorm(x + f(x))` in each layer's own forward: each sublayer is
  // the attention (or fc1 → activation_fn → fc2), its (+) and its norm, three rows. With both
  // stacks open the decoder's column (input, embed_tokens, embed_positions, (+),
  // layernorm_embedding, three sublayers, lm_head, + final_logits_bias, output) is taller than
  // a lecture hall's canvas at READ_K; the encoder alone opened fits, the decoder folded
  const t = goldenTree("bart");
  it("BART at 1280 x 674: the encoder's stack open, an attention and its (+) drawn, the decoder folded", async () => {
    const [w, h] = [1280, 674];
    const start = initialState(t);
    const framed = await new Framing(client, canvas(w, h)).lay(start, buildView(t, start), "TB", true);
    expect(fitsAt(framed, { w, h, k: READ_K, reserve: 0 })).toBe(true);
    expect(framed.view.stacks.map((s) => s.run.key)).toEqual(["model.encoder.layers.0"]);
    const ids = framed.view.nodes.map((n) => n.id);
    for (const id of ["self_attn", "self_attn_layer_norm", "final_layer_norm"])
      expect(ids).toContain(`model.encoder.layers.0.${id}`);
    expect(ids).toContain("model.decoder.layers.0"); // the fold, "BartDecoderLayer × 2"
    const scene = buildScene(t, framed.view, framed, "TB");
    const stack = scene.clusters.find((c) => c.key === "k:model.encoder.layers.0")!.box;
    const within = (j: { box: readonly number[] }, i: 0 | 1) =>
      j.box[i]! > stack[i]! && j.box[i]! < stack[i]! + stack[i + 2]!;
    const inside = scene.junctions.filter((j) => within(j, 0) && within(j, 1));
    expect(inside.length).toBe(2); // the attention's (+) and the MLP's
  });
});
