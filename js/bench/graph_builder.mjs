// Builds wire-format graphs (the schema of js/src/wire.ts, see neural_flow_widget/wire/__init__.py) by replaying a
// forward pass by hand: module calls nest, every tensor op records its owner call and its
// parent ops. Only the benchmark's synthetic graphs (synth.mjs) come from here: the test
// fixtures are real traces, written by scripts/make_fixtures.py.

import { readFileSync } from "node:fs";

const SCHEMA = Number(
  /export const SCHEMA = (\d+);/.exec(readFileSync(new URL("../src/wire_schema.ts", import.meta.url), "utf8"))[1],
);

function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

export class GraphBuilder {
  constructor(model, topology = "dataflow") {
    this.model = model;
    this.topology = topology;
    this.calls = [];
    this.ops = [];
    this.stack = [];
    this.inputs = [];
    this.outputs = [];
    this.inputOps = [];
    this.outputOps = [];
    this.callCount = new Map();
    this.kids = [];
  }

  owner() {
    return this.stack.length ? this.stack[this.stack.length - 1] : -1;
  }

  /** A model input; returns its op id. */
  input(name) {
    const op = this.ops.push([-1, []]) - 1;
    this.inputs.push(name);
    this.inputOps.push([name, op]);
    return op;
  }

  /** A tensor op in the current call (or the model body); returns its op id. */
  op(...parents) {
    return this.ops.push([this.owner(), parents.flat()]) - 1;
  }

  /**
   * A module call. `body(b, inOps)` runs the call's forward and returns its output op; a
   * call without a body is a leaf that makes one op from its inputs.
   */
  module(module, type, inOps, opts = {}, body = null) {
    const k = this.callCount.get(module) ?? 0;
    this.callCount.set(module, k + 1);
    const index = this.calls.length;
    const parent = this.owner();
    this.calls.push({
      id: k > 0 ? `${module}#${k}` : module,
      module,
      type,
      call: k,
      parent,
      depth: this.stack.length + 1,
      leaf: body === null,
      params: opts.params ?? 0,
      shapes: [opts.shape ?? [1]],
      dtypes: ["float32"],
      sig: "",
      error: opts.error ?? null,
      in: [...inOps],
      args: inOps.map((_, k) => k),
      state: -1,
    });
    this.kids.push([]);
    if (parent >= 0) this.kids[parent].push(index);
    this.stack.push(index);
    const out = body ? body(this, inOps) : this.op(...inOps);
    this.stack.pop();
    if (!opts.shape && body) {
      // Output shape of a container: that of the call that made its output (or its last child).
      const owner = this.ops[out][0];
      const from = owner !== index && owner >= 0 ? owner : this.kids[index][this.kids[index].length - 1];
      if (from !== undefined) this.calls[index].shapes = this.calls[from].shapes.map((s) => [...s]);
    }
    return out;
  }

  output(name, ops) {
    this.outputs.push(name);
    this.outputOps.push([name, [ops].flat()]);
  }

  build({ attention = [], initial = null } = {}) {
    // Children come after their parent: fill params and signatures from the end.
    for (let i = this.calls.length - 1; i >= 0; i--) {
      const c = this.calls[i];
      const kids = this.kids[i];
      if (kids.length) c.params += kids.reduce((s, j) => s + this.calls[j].params, 0);
      c.sig = hash(`${c.type}(${kids.map((j) => this.calls[j].sig).join(",")})`);
    }
    const stats = this.calls.map((_, i) => [
      Number((0.1 + ((i * 37) % 23) / 10).toFixed(3)),
      Number((0.5 + ((i * 13) % 17) / 20).toFixed(3)),
    ]);
    // Where data of two or more ops meets: the residual adds, the cross-attention's mix.
    const joins = this.ops.flatMap(([, parents], op) => (parents.length > 1 ? [[op, "add"]] : []));
    return {
      schema: SCHEMA,
      model: this.model,
      topology: this.topology,
      inputs: this.inputs,
      outputs: this.outputs,
      calls: this.calls,
      ops: this.ops,
      input_ops: this.inputOps,
      output_ops: this.outputOps,
      joins,
      operands: [],
      leads: [],
      selected: this.calls.map((c, i) => (c.depth === 1 ? i : -1)).filter((i) => i >= 0),
      initial,
      attention,
      stats,
      nonfinite: [],
      nonfinite_origin: null,
      failure: null,
      notes: [],
      ends: {},
      grad: null,
      nonfinite_grad: [],
      gradient_flow: null,
      readouts: [],
      readout_names: {},
    };
  }
}

/** A pre-norm transformer block with residual adds in the block's own forward. */
export function transformerBlock(b, name, x, dim, tokens) {
  const shape = [1, tokens, dim];
  return b.module(name, "TransformerBlock", [x], {}, (b, [h]) => {
    const n1 = b.module(`${name}.norm1`, "LayerNorm", [h], { params: 2 * dim, shape });
    const a = b.module(`${name}.attn`, "MultiheadAttention", [n1], {}, (b, [q]) => {
      const qq = b.module(`${name}.attn.q_proj`, "Linear", [q], { params: dim * dim + dim, shape });
      const kk = b.module(`${name}.attn.k_proj`, "Linear", [q], { params: dim * dim + dim, shape });
      const vv = b.module(`${name}.attn.v_proj`, "Linear", [q], { params: dim * dim + dim, shape });
      const sdpa = b.op(qq, kk, vv);
      return b.module(`${name}.attn.out_proj`, "Linear", [sdpa], { params: dim * dim + dim, shape });
    });
    const r1 = b.op(h, a); // x + attn(norm1(x))
    const n2 = b.module(`${name}.norm2`, "LayerNorm", [r1], { params: 2 * dim, shape });
    const m = b.module(`${name}.mlp`, "MLP", [n2], {}, (b, [u]) => {
      u = b.module(`${name}.mlp.fc1`, "Linear", [u], { params: 4 * dim * dim + 4 * dim, shape: [1, tokens, 4 * dim] });
      u = b.module(`${name}.mlp.act`, "GELU", [u], { shape: [1, tokens, 4 * dim] });
      return b.module(`${name}.mlp.fc2`, "Linear", [u], { params: 4 * dim * dim + dim, shape });
    });
    return b.op(r1, m); // r1 + mlp(norm2(r1))
  });
}
