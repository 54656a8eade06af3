// Writes the JS-side golden fixtures under tests/fixtures/ (run: node scripts/make_fixtures.mjs).
// wire_unet.json will be replaced by the Python-generated one of the same shape.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { GraphBuilder, convBlock, transformerBlock } from "./graph_builder.mjs";

const out = (name) => fileURLToPath(new URL(`../../tests/fixtures/${name}`, import.meta.url));

export function unet() {
  const b = new GraphBuilder("UNet");
  const x = b.input("input:0");
  const e1 = convBlock(b, "enc1", x, 16, 64);
  const p1 = b.op(e1); // F.max_pool2d in the model's forward
  const e2 = convBlock(b, "enc2", p1, 32, 32);
  const p2 = b.op(e2);
  const bn = b.module("bottleneck", "ResBlock", [p2], {}, (b, [h0]) => {
    const shape = [1, 32, 16, 16];
    let h = b.module("bottleneck.conv1", "Conv2d", [h0], { params: 9248, shape });
    h = b.module("bottleneck.act", "ReLU", [h], { shape });
    h = b.module("bottleneck.conv2", "Conv2d", [h], { params: 9248, shape });
    return b.op(h, h0); // residual add inside the block
  });
  const u2 = b.module("up2", "ConvTranspose2d", [bn], { params: 4128, shape: [1, 32, 32, 32] });
  const c2 = b.op(u2, e2); // torch.cat([up, skip])
  const d2 = convBlock(b, "dec2", c2, 32, 32);
  const u1 = b.module("up1", "ConvTranspose2d", [d2], { params: 2064, shape: [1, 16, 64, 64] });
  const c1 = b.op(u1, e1);
  const d1 = convBlock(b, "dec1", c1, 16, 64);
  const y = b.module("head", "Conv2d", [d1], { params: 34, shape: [1, 2, 64, 64] });
  b.output("output:0", [y]);
  return b.build();
}

export function transformer12() {
  const b = new GraphBuilder("TinyGPT");
  const ids = b.input("input_ids");
  let h = b.module("embed", "Embedding", [ids], { params: 1000 * 64, shape: [1, 16, 64] });
  for (let i = 0; i < 12; i++) h = transformerBlock(b, `layers.${i}`, h, 64, 16);
  h = b.module("norm", "LayerNorm", [h], { params: 128, shape: [1, 16, 64] });
  const logits = b.module("lm_head", "Linear", [h], { params: 64 * 1000, shape: [1, 16, 1000] });
  b.output("logits", [logits]);
  const g = b.build();
  g.attention = g.calls.map((c, i) => (c.type === "MultiheadAttention" ? i : -1)).filter((i) => i >= 0);
  return g;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(out("wire_unet.json"), JSON.stringify(unet(), null, 1) + "\n");
  writeFileSync(out("wire_transformer12.json"), JSON.stringify(transformer12(), null, 1) + "\n");
  console.log("wrote tests/fixtures/wire_unet.json, wire_transformer12.json");
}
