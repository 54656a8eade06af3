/**
 * Residual blocks: the calls whose output is `f(x) + x`, found once per graph from
 * `graph.ops`, `graph.joins` and `at(calls, ).in`, so that a collapsed block (a ResNet
 * Bottleneck, a pre-norm transformer block) or a fold of them can still show its residual.
 * Pure and DOM-free.
 *
 * A call c is a residual block when one of its outputs is made by a *residual add* of c's
 * own forward (not a child's), through at most a few single-input leaves after it (the
 * Bottleneck's `relu(out + identity)`). An add op J owned by c is a residual add when
 *   - one operand (the shortcut) reaches the stream, walking back, through ops of c itself
 *     only (`x`, `x[:, :k]`: an identity shortcut, or through one child without weights, an
 *     `nn.Identity()`), or through exactly one child with weights whose subtree is smaller
 *     than the other branch's (`downsample(x)`: a projected shortcut);
 *   - another operand (the branch) reaches the same stream op through at least one child of
 *     c (other children than the shortcut's): `f(x)`;
 * where the stream is c's input ops and c's earlier residual adds (a pre-norm block's second
 * add reads the first: `h = x + attn(ln_1(x)); out = h + mlp(ln_2(h))`). An add of two
 * different inputs (`dense(h) + input_tensor`, `scores + mask`) is no residual: the branch
 * must come from what the shortcut carries. A concatenation (DenseNet), a plain chain (a
 * Sequential, a U-Net's double conv) has no add of its own.
 *
 * A post-norm block adds in a child given both: BERT's attention is `output(self(x), x)`,
 * BertSelfOutput's forward `LayerNorm(dropout(dense(h)) + input_tensor)`, the paper's "Add &
 * Norm". Such a child (its add joins two of its inputs, one taken as it is: it is no residual
 * block itself) does its parent's add: the add counts as c's own, the child's own ops as c's,
 * and c's output may come from it through the child's single-input leaves (the LayerNorm).
 * So BertAttention (`LN(f(x) + x)`) and BertLayer (`LN(ff(a) + a)`, a its attention's output)
 * are residual blocks; BertSelfOutput, BertOutput are not.
 */
import type { CallTree } from "./tree";
import { at } from "../wire_check";

export type Shortcut = "identity" | "projected";

export interface Residual {
  call: number;
  op: number; // the residual add the output is made by
  shortcut: Shortcut; // of that add
  adds: number; // residual adds in the call's own forward (2 in a pre-norm transformer block)
}

/** A module that looks its input up in a table, not one that transforms its values. */
const LOOKUP = /embedding/i;
/** Most ops one operand's walk visits (a block's branch is a few hundred at most). */
const MAX_WALK = 4096;
/** Most single-input steps from an output back to its residual add (`relu(out)`, a dropout). */
const MAX_AFTER = 6;

interface Found {
  blocks: Map<number, Residual>;
  adds: Map<number, Map<number, Shortcut>>; // call -> its residual add ops (a child's doing its add too)
}
const cache = new WeakMap<CallTree, Found>();

function residuals(tree: CallTree): Found {
  let out = cache.get(tree);
  if (!out) {
    out = findResidualBlocks(tree);
    cache.set(tree, out);
  }
  return out;
}

/** The residual blocks of a graph by call index (computed once per tree). */
export function residualBlocks(tree: CallTree): Map<number, Residual> {
  return residuals(tree).blocks;
}

/** The residual adds of a call's forward, in op order (empty: none; a post-norm child's add
 * it does for the call counts as the call's). */
export function residualAdds(tree: CallTree, call: number): number[] {
  return [...(residuals(tree).adds.get(call)?.keys() ?? [])].sort((a, b) => a - b);
}

function findResidualBlocks(tree: CallTree): Found {
  const { calls, ops, joins } = tree.graph;
  const n = calls.length;
  const found = new Map<number, Residual>();
  const none: Found = { blocks: found, adds: new Map() };
  if (tree.graph.topology === "sequential" || n === 0) return none;
  // the last call of each subtree: calls are in start order, a subtree is contiguous
  const end = Int32Array.from(calls, (_, i) => i);
  for (let i = n - 1; i >= 0; i--)
    if (at(calls, i).parent >= 0) end[at(calls, i).parent] = Math.max(end[at(calls, i).parent]!, end[i]!);
  const inside = (c: number, w: number) => w > c && w <= end[c]!; // w in c's subtree, not c
  // the call under c (or under k, a child doing c's add) that holds w
  const childOf = (c: number, w: number, k = -1) => {
    while (at(calls, w).parent !== c && at(calls, w).parent !== k) w = at(calls, w).parent;
    return w;
  };
  const size = (k: number) => end[k]! - k + 1;

  // the add joins of each call's own forward, in op order
  const adds = new Map<number, number[]>();
  for (const [op, what] of joins) {
    const c = at(ops, op)[0];
    if (what === "add" && c >= 0 && at(ops, op)[1].length >= 2) (adds.get(c) ?? adds.set(c, []).get(c)!).push(op);
  }
  if (adds.size === 0) return none;

  // Walk back from `start` to the stream (`hits`), through c's own ops (and k's, a child doing
  // c's add) and, for an op of a child, on from that child's inputs (`kids`: the children passed).
  const walk = (c: number, start: number, stream: Set<number>, k = -1) => {
    const hits = new Set<number>();
    const kids = new Set<number>();
    const seen = new Set<number>([start]);
    const todo = [start];
    while (todo.length && seen.size < MAX_WALK) {
      const o = todo.pop()!;
      if (stream.has(o)) {
        hits.add(o);
        continue;
      }
      const w = at(ops, o)[0];
      let next: readonly number[] = [];
      if (w === c || w === k) next = at(ops, o)[1];
      else if (w >= 0 && inside(c, w)) {
        const kid = childOf(c, w, k);
        if (!kids.has(kid)) {
          kids.add(kid);
          next = at(calls, kid).in;
        }
      }
      for (const p of next) {
        if (seen.has(p)) continue;
        seen.add(p);
        todo.push(p);
      }
    }
    return { hits, kids };
  };

  // Whether a path back from `start` reaches `target` through at least one child of c (as
  // `walk` passes them): `f(y)` made from y itself, not from a sibling of y (AdaLN's
  // `norm(x) * (1 + scale) + shift`: scale and shift are one op's outputs, chunk's; the child,
  // the norm, lies on the path from x, not from shift)
  const madeFrom = (c: number, start: number, target: number, k = -1) => {
    const seen = new Set<number>([start * 2]);
    const todo: [number, boolean][] = [[start, false]];
    while (todo.length && seen.size < MAX_WALK) {
      const [o, passed] = todo.pop()!;
      if (o === target) {
        if (passed) return true;
        continue;
      }
      const w = at(ops, o)[0];
      let next: readonly number[] = [];
      let child = passed;
      if (w === c || w === k) next = at(ops, o)[1];
      else if (w >= 0 && inside(c, w)) {
        next = at(calls, childOf(c, w, k)).in;
        child = true;
      }
      for (const p of next) {
        const key = p * 2 + (child ? 1 : 0);
        if (seen.has(key)) continue;
        seen.add(key);
        todo.push([p, child]);
      }
    }
    return false;
  };

  const residualAdds = new Map<number, Map<number, Shortcut>>(); // call -> add op -> shortcut
  const residualOps = (c: number, list: number[], doer: Map<number, number>) => {
    const stream = new Set(at(calls, c).in);
    const mine = new Map<number, Shortcut>();
    for (const op of list.sort((a, b) => a - b)) {
      const k = doer.get(op) ?? -1;
      const operands = [...new Set(at(ops, op)[1])].map((p) => ({ op: p, ...walk(c, p, stream, k) }));
      let kind: Shortcut | null = null;
      for (const s of operands) {
        for (const f of operands) {
          if (f === s || kind !== null) continue;
          // `f(y) + y`, y any value (y = x too): the branch is made from the shortcut itself
          if (madeFrom(c, f.op, s.op, k)) {
            kind = "identity";
            continue;
          }
          // `f(x) + g(x)`: both from the stream; g is x through c's own ops (`x[:, :k]`) or
          // one child, smaller than f's (`downsample(x)`), and f passes other children
          if (s.hits.size === 0 || s.kids.size > 1 || f.kids.size === 0 || ![...s.hits].some((h) => f.hits.has(h)))
            continue;
          if ([...s.kids].some((k) => f.kids.has(k))) continue;
          const branch = [...f.kids].reduce((t, k) => t + size(k), 0);
          // its one child: a projection where it has weights (`downsample(x)`), else the
          // identity as a module (Hugging Face's ResNet: `shortcut = nn.Identity()`)
          const one = s.kids.size ? [...s.kids][0]! : -1;
          // (a lookup is no projection: RoBERTa's position embeddings, of positions counted
          // from the input ids, added to the word embeddings, are no shortcut)
          if (one >= 0 && LOOKUP.test(at(calls, one).type)) continue;
          if (one < 0 || at(calls, one).params === 0) kind = "identity";
          else if (size(one) < branch) kind = "projected";
        }
      }
      if (kind !== null) {
        mine.set(op, kind);
        stream.add(op); // the next add may read this one as its shortcut
      }
    }
    return mine;
  };
  for (const [c, list] of [...adds].sort((a, b) => a[0] - b[0])) {
    const mine = residualOps(c, list, new Map());
    if (mine.size) residualAdds.set(c, mine);
  }
  // children doing their parent's add ("Add & Norm": an add of two of their inputs, one taken
  // as it is, and no residual of their own), and what their parents make of those adds
  const doers = new Map<number, Map<number, number>>(); // parent -> its children's add ops -> child
  for (const [k, list] of adds) {
    const c = at(calls, k).parent;
    if (c < 0 || residualAdds.has(k)) continue;
    const own = new Set(at(calls, k).in);
    for (const op of list) {
      const taken = at(ops, op)[1].filter((p) => walk(k, p, own).kids.size === 0 && walk(k, p, own).hits.size > 0);
      if (taken.length === 1) (doers.get(c) ?? doers.set(c, new Map()).get(c)!).set(op, k);
    }
  }
  const doing = new Set<number>(); // the children that do an add of their parent's
  for (const [c, doer] of doers) {
    const mine = residualOps(c, [...(adds.get(c) ?? []), ...doer.keys()], doer);
    for (const [op] of mine) if (doer.has(op)) doing.add(doer.get(op)!);
    if (mine.size) residualAdds.set(c, mine);
  }
  if (residualAdds.size === 0) return none;

  // The outputs of the candidate calls: their subtree's ops read outside it.
  const outputs = new Map<number, Set<number>>();
  for (const c of residualAdds.keys()) outputs.set(c, new Set());
  const readBy = (p: number, reader: number) => {
    for (let a = at(ops, p)[0]; a >= 0; a = at(calls, a).parent) {
      if (reader >= a && reader <= end[a]!) break; // read inside a's subtree (a = reader's ancestor)
      outputs.get(a)?.add(p);
    }
  };
  for (const [owner, parents] of ops) for (const p of parents) readBy(p, owner);
  for (const [i, k] of calls.entries()) for (const p of k.in) readBy(p, i);
  for (const [, list] of tree.graph.output_ops) for (const p of list) readBy(p, -1);

  for (const [c, mine] of residualAdds) {
    for (const o of outputs.get(c)!) {
      let x = o;
      for (let step = 0; step <= MAX_AFTER; step++) {
        const kind = mine.get(x);
        if (kind !== undefined) {
          found.set(c, { call: c, op: x, shortcut: kind, adds: mine.size });
          break;
        }
        const [w, parents] = at(ops, x);
        if ((w === c || doing.has(w)) && parents.length === 1) x = parents[0]!;
        else if (w >= 0 && inside(c, w)) {
          // a single-input leaf: c's child, or a child's doing c's add (its LayerNorm)
          const up = at(calls, w).parent;
          const k = up === c || doing.has(up) ? w : childOf(c, w);
          if (at(tree.children, k).length > 0 || at(calls, k).in.length !== 1) break;
          x = at(calls, k).in[0]!; // its one input, checked above
        } else break;
      }
      if (found.has(c)) break;
    }
  }
  return { blocks: found, adds: residualAdds };
}

/** What a drawn node (a collapsed stage, or a fold of blocks) says of its residual: null
 * when it is none (for a fold: unless every member is a residual block); "mixed": a fold whose
 * members have both identity and projected shortcuts (a ResNet stage's first block projects). */
export function residualOf(tree: CallTree, calls: readonly number[]): Shortcut | "mixed" | null {
  const blocks = residualBlocks(tree);
  let kind: Shortcut | "mixed" | null = null;
  for (const c of calls) {
    const r = blocks.get(c);
    if (!r) return null;
    kind = kind === null || kind === r.shortcut ? r.shortcut : "mixed";
  }
  return kind;
}

/** What a stage drawn folded says of the residuals inside it: its own shortcut; the shortcut
 * of the one residual block a Sequential in it holds (RegNet's stage of depth 1: `layers`
 * round one RegNetYLayer); else "mixed" where it only chains residual blocks: a Sequential of
 * two or more (torchvision ResNet's layer1, "residual in each block"), or a wrapper round one;
 * each alone but for leaves without weights (Hugging Face's ResNetStage and its `layers`;
 * ConvNeXt's first stage, whose `downsampling_layer` is an nn.Identity()). Not a U-Net's down
 * block, whose forward does more than chain them, round one resnet or several. */
export function residualInside(tree: CallTree, call: number): Shortcut | "mixed" | null {
  const own = residualOf(tree, [call]);
  if (own) return own;
  const { calls } = tree.graph;
  const held = (c: number) =>
    at(tree.children, c).filter((k) => at(calls, k).params > 0 || at(tree.children, k).length > 0);
  let c = call;
  while (held(c).length === 1) {
    const k = at(held(c), 0); // (a Sequential of one block: RegNet's stage of depth 1)
    const one = at(calls, c).type === "Sequential" ? residualOf(tree, [k]) : null;
    if (one) return one;
    c = k;
  }
  const kids = at(tree.children, c);
  const chain = at(calls, c).type === "Sequential" && kids.length >= 2;
  return chain && residualOf(tree, kids) !== null ? "mixed" : null;
}
