/**
 * The module-call tree of a wire graph: each call's children, and the runs the view folds:
 * one module called again and again (ALBERT's shared layer), repeated blocks (`prefix.N`,
 * same type and signature, >= MIN_RUN) and repeated patterns of plain siblings
 * ("(Linear → ReLU) × 200"). Built once per graph; view_model.ts reads it for every
 * expansion state. Pure and DOM-free.
 */
import { isAttentionJoin, type WireCall, type WireGraph } from "../wire";
import { topologyIndex, type TopologyIndex } from "./topology";
import { at } from "../wire_check";

/**
 * A run that folds: >= MIN_RUN sibling calls `prefix.N` (consecutive N) of equal type and
 * signature ("Type × n"; the first may also hold the others' structure and more: see
 * holds), or, among the siblings no such run holds, a pattern of `period`
 * calls (by type and signature) repeated >= MIN_RUN times back to back, at least
 * MIN_PATTERN_CALLS calls in all ("(Linear → ReLU) × 200": a flat nn.Sequential).
 */
export interface Run {
  key: string; // the first member's stage id
  members: number[];
  type: string; // the repeated type, or the pattern's types joined by " → "
  prefix: string; // `prefix` of prefix.N; for a pattern, the parent's module name ("" at the root)
  period: number; // calls per repetition: 1 for prefix.N runs
  count: number; // repetitions: members.length / period
  /** One module called `count` times (ALBERT's shared layer): its calls, one set of weights. */
  shared?: true;
  /** A residual block's sublayer (model/parts.ts), not a repetition: its children between two
   * residual adds, folded only where the view's `parts` holds it. */
  part?: true;
  /** A layer with the norms and activations that only pass its output on (model/units.ts):
   * a part that only a block opened that does not fit folds. */
  unit?: true;
}
export interface CallTree {
  graph: WireGraph;
  topo: TopologyIndex;
  children: number[][]; // per call, child call indices in start order
  roots: number[]; // calls whose parent is the model (-1)
  byId: Map<string, number>;
  runs: Map<string, Run>; // by key
  runOf: Int32Array; // per call: index into runList of the run it belongs to, else -1
  runList: Run[];
}

export const MIN_RUN = 3;
/** ... or two where they are layers that attend (GPT-2's `h.0`, `h.1` built from a 2-layer
 * config: "GPT2Block × 2", the paper's figure; two ResNet blocks stay two). */
export const MIN_LAYERS = 2;
/** A pattern run holds at least this many calls (so q_proj, k_proj, v_proj never fold). */
export const MIN_PATTERN_CALLS = 6;
/** The longest repeated pattern looked for. */
export const MAX_PERIOD = 8;
const INDEXED = /^(?:(.*)\.)?(\d+)$/; // "layers.3", or "3" (a model that is an nn.Sequential)

/**
 * The calls of block b standing for those of block a (a's subtree onto b's, each call to the
 * one of the same type (or signature: BEiT's layer 0's Identity for the others' DropPath),
 * module path and call ordinal relative to the block's, children in order), when b is a's
 * structure: the same but for calls of a that b lacks, each a leaf
 * (T5's first block computes the relative position bias, with an Embedding of its own the
 * others lack, and hands the bias on). A pair of calls with nothing extra below them has
 * one signature (the same parameter shapes). Null when b is not; a and b equal: one to one.
 */
export function holds(graph: WireGraph, children: number[][], a: number, b: number): Map<number, number> | null {
  const { calls } = graph;
  const baseA = at(calls, a).module.length;
  const baseB = at(calls, b).module.length;
  // call ordinals relative to the blocks' own (one module called again: its pass k's calls are k-th)
  const ordA = at(calls, a).call;
  const ordB = at(calls, b).call;
  const out = new Map<number, number>();
  // whether b's subtree matches a's; returns whether a's had calls b lacks
  const match = (x: number, y: number): boolean | null => {
    const cx = at(calls, x);
    const cy = at(calls, y);
    // (of two types, one signature: both hand their input on, an Identity and a DropPath,
    // tracing/structure.py PASS_THROUGH)
    const alike = cx.type === cy.type || cx.sig === cy.sig;
    if (!alike || cx.call - ordA !== cy.call - ordB || cx.module.slice(baseA) !== cy.module.slice(baseB)) return null;
    const kx = at(children, x);
    const ky = at(children, y);
    let extra = false;
    let q = 0;
    for (const kid of kx) {
      const other = ky[q];
      const sub = other === undefined ? null : match(kid, other);
      if (sub !== null) {
        extra ||= sub;
        q++;
      } else if (at(children, kid).length === 0) {
        extra = true; // a leaf only a holds
      } else {
        return null;
      }
    }
    if (q < ky.length || !(extra || cx.sig === cy.sig)) return null; // b has calls a lacks, or other shapes
    out.set(x, y);
    return extra;
  };
  return match(a, b) === null ? null : out;
}

/** Whether call `c` is module `first`'s again, alike (its type and signature). */
function sameModule(graph: WireGraph, first: WireCall, c: number): boolean {
  const x = at(graph.calls, c);
  return x.module === first.module && x.type === first.type && x.sig === first.sig;
}

/** Per call, whether an attention runs in it (its own ops or those of a call within it). */
function attending(graph: WireGraph): Uint8Array {
  const attends = new Uint8Array(graph.calls.length);
  for (const [op, kind] of graph.joins)
    if (isAttentionJoin(kind))
      for (let c = at(graph.ops, op)[0]; c >= 0 && !attends[c]; c = at(graph.calls, c).parent) attends[c] = 1;
  return attends;
}

function indexedRuns(graph: WireGraph, children: number[][], siblings: number[], attends: Uint8Array): Run[] {
  const runs: Run[] = [];
  let i = 0;
  while (i < siblings.length) {
    const first = at(graph.calls, at(siblings, i));
    // one module called again and again (ALBERT's shared layer, a weight-tied loop): its calls
    let again = i + 1;
    while (again < siblings.length && sameModule(graph, first, at(siblings, again))) again++;
    if (again - i >= MIN_RUN) {
      const members = siblings.slice(i, again);
      runs.push({
        key: first.id,
        members,
        type: first.type,
        prefix: first.module,
        period: 1,
        count: members.length,
        shared: true,
      });
      i = again;
      continue;
    }
    const m = INDEXED.exec(first.module);
    let j = i + 1;
    if (m) {
      let n = Number(m[2]);
      // the signature of the run: the first's, or the second's where the first holds more
      const second = i + 1 < siblings.length ? at(graph.calls, at(siblings, i + 1)) : null;
      const sig =
        second && second.sig !== first.sig && holds(graph, children, at(siblings, i), at(siblings, i + 1))
          ? second.sig
          : first.sig;
      while (j < siblings.length) {
        const c = at(graph.calls, at(siblings, j));
        const mj = INDEXED.exec(c.module);
        if (!mj || mj[1] !== m[1] || Number(mj[2]) !== n + 1 || c.type !== first.type || c.sig !== sig) break;
        n++;
        j++;
      }
    }
    if (m && j - i >= (attends[at(siblings, i)] ? MIN_LAYERS : MIN_RUN)) {
      const members = siblings.slice(i, j);
      runs.push({ key: first.id, members, type: first.type, prefix: m[1] ?? "", period: 1, count: members.length });
      i = j;
    } else {
      i++;
    }
  }
  return runs;
}

/**
 * Repeated patterns in a stretch of siblings: at each position the shortest period whose
 * repetition covers the most calls (>= MIN_RUN repetitions, >= MIN_PATTERN_CALLS calls),
 * left to right. Calls compare by type and signature.
 */
function patternRuns(graph: WireGraph, stretch: number[], parent: string): Run[] {
  const runs: Run[] = [];
  const key = stretch.map((c) => `${at(graph.calls, c).type}\u0000${at(graph.calls, c).sig}`);
  let i = 0;
  while (i < stretch.length) {
    let best = 0;
    let bestPeriod = 0;
    for (let p = 1; p <= MAX_PERIOD && i + p * MIN_RUN <= stretch.length; p++) {
      let j = i + p;
      while (j < stretch.length && key[j] === key[j - p]) j++;
      const reps = Math.floor((j - i) / p);
      if (reps >= MIN_RUN && reps * p >= MIN_PATTERN_CALLS && reps * p > best) {
        best = reps * p;
        bestPeriod = p;
      }
    }
    if (bestPeriod === 0) {
      i++;
      continue;
    }
    const members = stretch.slice(i, i + best);
    const type = members
      .slice(0, bestPeriod)
      .map((c) => at(graph.calls, c).type)
      .join(" → ");
    runs.push({
      key: at(graph.calls, at(members, 0)).id,
      members,
      type,
      prefix: parent,
      period: bestPeriod,
      count: best / bestPeriod,
    });
    i += best;
  }
  return runs;
}

/** The runs among one call's children (or the roots), in sibling order. */
function findRuns(
  graph: WireGraph,
  children: number[][],
  siblings: number[],
  parent: string,
  attends: Uint8Array,
): Run[] {
  const indexed = indexedRuns(graph, children, siblings, attends);
  const taken = new Set(indexed.flatMap((r) => r.members));
  const runs = [...indexed];
  let stretch: number[] = [];
  const flush = () => {
    if (stretch.length >= MIN_PATTERN_CALLS) runs.push(...patternRuns(graph, stretch, parent));
    stretch = [];
  };
  for (const c of siblings) {
    if (taken.has(c)) flush();
    else stretch.push(c);
  }
  flush();
  const pos = new Map(siblings.map((c, i) => [c, i]));
  return runs.sort((a, b) => pos.get(at(a.members, 0))! - pos.get(at(b.members, 0))!);
}

export function buildTree(graph: WireGraph): CallTree {
  const children: number[][] = graph.calls.map(() => []);
  const roots: number[] = [];
  const byId = new Map<string, number>();
  graph.calls.forEach((c, i) => {
    byId.set(c.id, i);
    if (c.parent >= 0) at(children, c.parent).push(i);
    else roots.push(i);
  });
  const runList: Run[] = [];
  const lists: [number[], string][] = [
    [roots, ""],
    ...children.map((kids, c): [number[], string] => [kids, at(graph.calls, c).module]),
  ];
  const attends = attending(graph);
  for (const [sibs, parent] of lists)
    if (sibs.length >= MIN_LAYERS) runList.push(...findRuns(graph, children, sibs, parent, attends));
  const runOf = new Int32Array(graph.calls.length).fill(-1);
  for (const [k, r] of runList.entries()) for (const c of r.members) runOf[c] = k;
  const runs = new Map(runList.map((r) => [r.key, r]));
  return { graph, topo: topologyIndex(graph), children, roots, byId, runs, runOf, runList };
}

/** Calls whose module name or type contains the query (case-insensitive). */
export function searchCalls(tree: CallTree, query: string, limit = 200): number[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const out: number[] = [];
  tree.graph.calls.forEach((c, i) => {
    if (out.length < limit && (c.id.toLowerCase().includes(q) || c.type.toLowerCase().includes(q))) out.push(i);
  });
  return out;
}
