// Synthetic transformer-like graphs for the benchmark: an encoder and a decoder group, each a
// run of identical blocks (so they fold), plus embedding, final norm and head.
import { GraphBuilder, transformerBlock } from "./graph_builder.mjs";

function decoderBlock(b, name, x, memory, dim, tokens) {
  const shape = [1, tokens, dim];
  return b.module(name, "DecoderBlock", [x, memory], {}, (b, [h, mem]) => {
    const s = transformerBlock(b, `${name}.self`, h, dim, tokens);
    const n = b.module(`${name}.norm_x`, "LayerNorm", [s], { params: 2 * dim, shape });
    const q = b.module(`${name}.cross_q`, "Linear", [n], { params: dim * dim, shape });
    const kv = b.module(`${name}.cross_kv`, "Linear", [mem], { params: 2 * dim * dim, shape });
    return b.op(s, b.module(`${name}.cross_out`, "Linear", [b.op(q, kv)], { params: dim * dim, shape }));
  });
}

/** About `stages` calls in all (12 per encoder block, 17 per decoder block). */
export function synthTransformer(stages) {
  const perPair = 12 + 17; // an encoder block, a decoder block (with its inner transformer block)
  const blocks = Math.max(1, Math.round((stages - 5) / perPair));
  const b = new GraphBuilder(`Synth${stages}`);
  const ids = b.input("input_ids");
  const dim = 64,
    tokens = 32;
  let h = b.module("embed", "Embedding", [ids], { params: 32000 * dim, shape: [1, tokens, dim] });
  const memory = b.module("encoder", "Encoder", [h], {}, (b, [x]) => {
    for (let i = 0; i < blocks; i++) x = transformerBlock(b, `encoder.layers.${i}`, x, dim, tokens);
    return x;
  });
  h = b.module("decoder", "Decoder", [h, memory], {}, (b, [x, mem]) => {
    for (let i = 0; i < blocks; i++) x = decoderBlock(b, `decoder.layers.${i}`, x, mem, dim, tokens);
    return x;
  });
  h = b.module("norm", "LayerNorm", [h], { params: 2 * dim, shape: [1, tokens, dim] });
  const logits = b.module("lm_head", "Linear", [h], { params: dim * 32000, shape: [1, tokens, 32000] });
  b.output("logits", [logits]);
  return b.build();
}
