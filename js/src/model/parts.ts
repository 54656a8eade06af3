/**
 * The parts of a residual block: a call with two or more residual adds of its own (a
 * transformer layer, `h = x + attn(ln_1(x)); out = h + mlp(ln_2(h))`; model/residual.ts)
 * falls into the sublayers between them, each the children that run before its add: the
 * paper's "Self-Attention", "Cross-Attention", "Feed-Forward". A part of two or more children
 * may be drawn as one node, the (+) of its add beside it as ever (view_model.ts, where
 * `state.parts` holds it): a first view whose layers, opened one level, would not fit
 * otherwise (app/framing.ts; Whisper's and BART's layers hold their norms and their MLP's
 * fc1, activation_fn and fc2 as children of the layer itself, eleven rows a decoder layer).
 * Computed once per tree. Pure and DOM-free.
 */
import { formatParams, formatShape } from "./format";
import { residualAdds, residualBlocks } from "./residual";
import type { CallTree, Run } from "./tree";
import { findUnits } from "./units";
import { at } from "../wire_check";

export interface Parts {
  list: Run[]; // each `part: true`, period = members, count 1; the units (model/units.ts) last
  byKey: Map<string, Run>;
  of: Int32Array; // per call: index into list of the part it is in, else -1
}

const cache = new WeakMap<CallTree, Parts>();

/** Whether a module type is a normalization (a sublayer's pre-norm: named beside its body). */
const NORM = /norm/i;
/** Whether a module type passes its input on unchanged when evaluating (a dropout, a stochastic
 * depth's drop path, an identity), or scales it channel by channel (DINOv2's and CaiT's layer
 * scale, which the papers' figures leave out): not named on a part's node (in its tip). */
const PASS = /dropout|droppath|^identity$|layerscale/i;

/** The parts of every residual block of a tree (computed once per tree). */
export function partsOf(tree: CallTree): Parts {
  let parts = cache.get(tree);
  if (!parts) {
    parts = findParts(tree);
    cache.set(tree, parts);
  }
  return parts;
}

function findParts(tree: CallTree): Parts {
  const { calls, ops } = tree.graph;
  const list: Run[] = [];
  const of = new Int32Array(calls.length).fill(-1);
  // the first op of each call's subtree (ops are in execution order)
  const first = new Float64Array(calls.length).fill(Infinity);
  for (let o = 0; o < ops.length; o++)
    for (let c = at(ops, o)[0]; c >= 0 && first[c] === Infinity; c = at(calls, c).parent) first[c] = o;
  for (let c = 0; c < calls.length; c++) {
    const kids = at(tree.children, c);
    if (kids.length < 3) continue;
    const adds = residualAdds(tree, c);
    // or one add of its own (not a child's "Add & Norm": BERT's BertOutput) whose shortcut is
    // a child that adds its own: ALBERT's `LN(ffn_output(act(ffn(a))) + a)`, a its attention's
    // output, the feed-forward after it one part (not a Transformer2DModel's inside, whose
    // shortcut is its input)
    const single = adds.length === 1 && at(ops, at(adds, 0))[0] === c;
    if (adds.length < 2 && !single) continue;
    // each child's sublayer: how many adds ran before it (one without ops: its sibling's before it)
    const segments: number[][] = adds.map(() => []);
    segments.push([]); // after the last add
    let seg = 0;
    for (const k of kids) {
      if (first[k] !== Infinity) seg = adds.filter((a) => a < first[k]!).length;
      at(segments, seg).push(k);
    }
    // the children whose outputs reach an add through the call's own ops only (a dropout):
    // the branch's last child, and the shortcut's where it is a child (a post-norm block's norm)
    const childOf = (w: number) => {
      while (w >= 0 && at(calls, w).parent !== c) w = at(calls, w).parent;
      return w;
    };
    const feeding = (add: number) => {
      const found = new Set<number>();
      const seen = new Set<number>();
      const todo = [...at(ops, add)[1]];
      while (todo.length) {
        const o = todo.pop()!;
        if (seen.has(o)) continue;
        seen.add(o);
        const w = at(ops, o)[0];
        if (w === c) todo.push(...at(ops, o)[1]);
        else if (w >= 0 && childOf(w) >= 0) found.add(childOf(w));
      }
      return found;
    };
    for (const [i, segment] of segments.entries()) {
      // a part ends in the one child its add reads: one the add also reads before it (the
      // shortcut: BART's `residual = self_attn_layer_norm(h)`) stays out, with what is before it
      let members = segment;
      if (i < adds.length) {
        const read = feeding(at(adds, i));
        let cut = -1;
        for (let j = 0; j < segment.length - 1; j++) if (read.has(at(segment, j))) cut = j;
        members = segment.slice(cut + 1);
        if (single && !(cut >= 0 && residualBlocks(tree).has(at(segment, cut)))) continue;
      } else if (single) continue; // (what follows its one add: the layer's norm)
      if (members.length < 2 || members.some((m) => tree.runOf[m]! >= 0)) continue;
      const part: Run = {
        key: at(calls, at(members, members.length - 1)).id, // its output's stage: the attention, fc2
        members,
        type: members.map((m) => at(calls, m).type).join(" → "),
        prefix: at(calls, c).module,
        period: members.length,
        count: 1,
        part: true,
      };
      for (const m of members) of[m] = list.length;
      list.push(part);
    }
  }
  // the blocks' units (conv1 -> bn1 -> relu) among the calls no sublayer holds
  for (const unit of findUnits(tree, of)) {
    for (const m of unit.members) of[m] = list.length;
    list.push(unit);
  }
  return { list, byKey: new Map(list.map((p) => [p.key, p])), of };
}

/** The members a part's node names: all but a sublayer's leading norm (its pre-norm), with
 * it a trailing one (a sandwich: Gemma's `post_attention_layernorm` after its attention, not
 * named alone as if the block were post-norm), and its dropouts (named in the node's tip; the
 * paper's figure draws "Self-Attention", "MLP"; Segformer's "attention → hidden_dropout →
 * drop_path" is "attention"); a unit's norm is named (diffusers' "conv_norm_out → conv_act
 * → conv_out", GroupNorm → SiLU → Conv2d). */
function bodyOf(tree: CallTree, part: Run): number[] {
  const { calls } = tree.graph;
  const { members } = part;
  const norm = (m: number) => NORM.test(at(calls, m).type);
  const lead = members.length > 1 && !part.unit && norm(at(members, 0)) ? 1 : 0;
  const body = members.slice(lead);
  const kept = body.filter((m) => !PASS.test(at(calls, m).type));
  const named = kept.length ? kept : body;
  const trail = lead && named.length > 1 && norm(at(named, named.length - 1)) ? 1 : 0;
  return named.slice(0, named.length - trail);
}

/** What a part's node says: its name ("self_attn", "fc1 → activation_fn → fc2"), the same
 * members' types ("WhisperAttention", "Linear → GELUActivation → Linear"), all its members'
 * parameters and its output's shape (its last member's). */
export function partLines(tree: CallTree, part: Run): { title: string; type: string; params: string; shape: string } {
  const { calls } = tree.graph;
  const params = formatParams(part.members.reduce((t, m) => t + at(calls, m).params, 0));
  const shape = formatShape(at(calls, at(part.members, part.members.length - 1)).shapes[0]);
  const short = (m: number) => {
    const name = at(calls, m).module;
    return name.slice(name.lastIndexOf(".") + 1);
  };
  const named = bodyOf(tree, part);
  return { title: named.map(short).join(" → "), type: named.map((m) => at(calls, m).type).join(" → "), params, shape };
}

/** The keys of every residual block's sublayer (no unit: model/units.ts), for a state that
 * draws them folded. */
export function allParts(tree: CallTree): ReadonlySet<string> {
  return new Set(partsOf(tree).list.flatMap((p) => (p.unit ? [] : [p.key])));
}

/** The keys of the blocks' units (model/units.ts: "conv1 → bn1 → relu") that are not all of
 * their block (a ConvBlock's "conv → act" reads best as the block folded), for a starting
 * level that fits only with them folded. */
export function allUnits(tree: CallTree): ReadonlySet<string> {
  const { calls } = tree.graph;
  const siblings = (c: number) => {
    const parent = at(calls, c).parent;
    return parent < 0 ? tree.roots : at(tree.children, parent);
  };
  return new Set(
    partsOf(tree).list.flatMap((p) => (p.unit && p.members.length < siblings(at(p.members, 0)).length ? [p.key] : [])),
  );
}
