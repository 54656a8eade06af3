/**
 * The units of a block: a layer and the normalizations and activations that only pass its
 * output on, each a leaf call (torchvision's Bottleneck: `conv1 → bn1 → relu`,
 * `conv2 → bn2 → relu`, `conv3 → bn3`, the paper's "1×1, 64 / 3×3, 64 / 1×1, 256"), or the
 * norms and activations that only shape a layer's input, with it (a pre-activation unit:
 * DenseNet's "BN-ReLU-Conv", diffusers' ResnetBlock2D `GroupNorm → SiLU → Conv2d`; in a
 * block only: diffusers' own head, folded so, is wider than its U's column beside the
 * inspector, which it then pushes out of view). Each is a run of sibling calls where every
 * member after the first reads the one before it and nothing else, and every member but the
 * last is read by the next one alone (a unit folded hides no branch): a layer, then norms,
 * activations or dropouts; or norms, activations or dropouts (a norm or an activation
 * first), then a layer. A unit is drawn as one node only as
 * the last resort of a block opened that does not fit (app/framing.ts accordion), or on a
 * first view whose level fits only so, before a shallower level (view_state.ts levelStates:
 * a stack of inverted residuals open on a 720-line canvas rather than folded away). Computed
 * once per tree with the parts (model/parts.ts). Pure and DOM-free.
 */
import type { CallTree, Run } from "./tree";
import { at } from "../wire_check";

/** A module type that shapes a layer's output without being a layer of its own. */
const FOLLOWER = /norm|relu|gelu|silu|swish|mish|sigmoid|tanh|elu|softplus|hardswish|activation|glu/i;
/** A follower that only passes its input on when evaluating (named in the node's tip). */
const PASS = /dropout|droppath|^identity$/i;
const NONE = -1; // no sibling read (or reads) it yet
const OTHER = -2; // more than one, or something outside the parent, or the parent's own ops

/**
 * The units of a tree's blocks, among the calls that `taken` (per call: an index into the
 * parts already found, else -1) leaves free and no run holds: as parts (`part` and `unit`),
 * each keyed by its last member's stage.
 */
export function findUnits(tree: CallTree, taken: Int32Array): Run[] {
  const { calls, ops } = tree.graph;
  const n = calls.length;
  const depth = new Int32Array(n);
  for (let c = 0; c < n; c++) depth[c] = at(calls, c).parent < 0 ? 0 : depth[at(calls, c).parent]! + 1;
  const up = (c: number) => (c < 0 ? -1 : at(calls, c).parent);
  const deep = (c: number) => (c < 0 ? -1 : depth[c]!);
  // per call, the one sibling whose output it reads (`source`) and the one sibling that reads
  // its output (`reader`): every pair of an op and an op it reads, climbed to their common call
  const source = new Int32Array(n).fill(NONE);
  const reader = new Int32Array(n).fill(NONE);
  const note = (to: Int32Array, c: number, v: number) => {
    to[c] = to[c] === NONE || to[c] === v ? v : OTHER;
  };
  for (const [w, reads] of ops) {
    for (const r of reads) {
      const u = at(ops, r)[0];
      if (u === w) continue;
      // their common call `a`, and the calls just below it holding u and w (none: its own op)
      let a = u;
      let b = w;
      let topU = OTHER;
      let topW = OTHER;
      while (a !== b) {
        if (deep(a) >= deep(b)) {
          topU = a;
          a = up(a);
        } else {
          topW = b;
          b = up(b);
        }
      }
      for (let x = u; x !== a; x = up(x)) note(reader, x, x === topU ? topW : OTHER);
      for (let y = w; y !== a; y = up(y)) note(source, y, y === topW ? topU : OTHER);
    }
  }
  const units: Run[] = [];
  // a leaf (a block and the norm after it are no unit: T5's last block and final_layer_norm)
  const free = (c: number) => taken[c]! < 0 && tree.runOf[c]! < 0 && at(tree.children, c).length === 0;
  const type = (c: number) => at(calls, c).type;
  const follows = (k: number) => FOLLOWER.test(type(k)) || PASS.test(type(k));
  for (let c = -1; c < n; c++) {
    const kids = c < 0 ? tree.roots : at(tree.children, c);
    // the j-th sibling, where it reads the one before it alone and is its only reader
    const next = (j: number) => {
      if (j >= kids.length) return false;
      const k = at(kids, j);
      const prev = at(kids, j - 1);
      return free(k) && source[k] === prev && reader[prev] === k;
    };
    for (let i = 0; i < kids.length; ) {
      const head = at(kids, i);
      let j = i + 1;
      let pre = false; // a pre-activation unit: norms and activations, then the layer they feed
      if (free(head) && !follows(head)) while (next(j) && follows(at(kids, j))) j++;
      else if (c >= 0 && free(head) && FOLLOWER.test(type(head))) {
        while (next(j) && follows(at(kids, j))) j++;
        pre = next(j); // a layer (not a follower: the loop stopped before it)
        j = pre ? j + 1 : i + 1;
      }
      const members = kids.slice(i, j);
      const shaping = pre ? members.slice(0, -1) : members.slice(1);
      if (members.length >= 2 && shaping.some((m) => FOLLOWER.test(type(m))))
        units.push({
          key: at(calls, at(members, members.length - 1)).id, // its output's stage
          members,
          type: members.map(type).join(" → "),
          prefix: c >= 0 ? at(calls, c).module : "",
          period: members.length,
          count: 1,
          part: true,
          unit: true,
        });
      i = j;
    }
  }
  return units;
}
