/**
 * Runs drawn as a stack (the paper's "N×" figure): which runs may be, and how the calls of
 * one member stand for the others'. A run stacks when it is a pure chain: with every member
 * drawn whole, member j feeds member j + 1 and nothing else runs between members, and only
 * the last member feeds anything outside the run but the items of a tuple the model returns
 * (each layer's hidden state: output_hidden_states=True, one port: ports.ts). The stack draws
 * member 0's children; the member shown (k) only changes the data: counterpart() maps member
 * 0's calls to member k's (same module path relative to the member, same call ordinal),
 * located() the way back. Memoized per tree. Pure and DOM-free.
 */
import type { EdgeKind } from "../wire";
import { familyOf } from "./ports";
import { stageEdges } from "./topology";
import { type CallTree, holds, type Run } from "./tree";
import { at } from "../wire_check";

/** Header actions of a stack: unfold all its members, show the next / previous member. */
export const unfoldStackKey = (key: string) => `u:${key}`;
export const nextMemberKey = (key: string) => `n:${key}`;
export const prevMemberKey = (key: string) => `p:${key}`;

/** What of a view state says how runs are drawn (view_model.ts ViewState). */
export interface Stacking {
  expanded: ReadonlySet<number>;
  unfolded: ReadonlySet<string>;
  stacked?: ReadonlyMap<string, number>;
  inlined?: ReadonlySet<number>;
  parts?: ReadonlySet<string>;
}

const stackMemo = new WeakMap<CallTree, Map<string, boolean>>();
const partMemo = new WeakMap<CallTree, Map<string, Map<number, number> | null>>();
const whereMemo = new WeakMap<CallTree, Map<number, { run: Run; member: number; base: number }>>();
const lastMemo = new WeakMap<CallTree, Map<string, ShiftedEdges>>();

/** Whether a run may be drawn as a stack: indexed blocks (period 1) with children, a pure chain. */
export function stackable(tree: CallTree, run: Run): boolean {
  let memo = stackMemo.get(tree);
  if (!memo) {
    memo = new Map();
    stackMemo.set(tree, memo);
  }
  let ok = memo.get(run.key);
  if (ok === undefined) {
    ok = isChain(tree, run);
    memo.set(run.key, ok);
  }
  return ok;
}

function isChain(tree: CallTree, run: Run): boolean {
  const { calls } = tree.graph;
  if (run.period !== 1 || run.members.length < 2 || at(tree.children, at(run.members, 0)).length === 0) return false;
  if (tree.graph.topology === "sequential") return false;
  // the selection: the members whole and, around them, the siblings of the run and of each
  // of its ancestors (every call outside the members is in one of those, or an ancestor)
  const members = new Set(run.members);
  const selection = [...run.members];
  for (let c = at(run.members, 0); c >= 0; c = at(calls, c).parent) {
    const p = at(calls, c).parent;
    for (const sib of p >= 0 ? at(tree.children, p) : tree.roots)
      if (sib !== c && !members.has(sib)) selection.push(sib);
  }
  const index = new Map(run.members.map((m, j) => [at(calls, m).id, j]));
  const last = run.members.length - 1;
  const linked = new Uint8Array(run.members.length);
  const items = familyOf(tree.graph); // (a lone output read from a middle member: no chain)
  // what each member reads from outside the run, by module (another call of one module is
  // the same source: Gemma's rotary embedding, called once per kind of layer)
  const moduleOf = (id: string) => {
    const c = tree.byId.get(id);
    return c === undefined ? id : at(calls, c).module;
  };
  const outside = run.members.map(() => new Set<string>());
  for (const e of stageEdges(tree.topo, selection)) {
    if (e.kind === "order") continue;
    const a = index.get(e.src);
    const b = index.get(e.dst);
    if (a === undefined) {
      // from outside: conditioning (a mask, an encoder's output), read by every member alike
      if (b !== undefined) at(outside, b).add(moduleOf(e.src));
      continue;
    }
    if (b !== undefined) {
      if (b !== a + 1) return false; // a skip between members, or a member reading a later one
      linked[b] = 1;
    } else if (a !== last && !items.has(e.dst)) {
      return false; // an intermediate output read outside the run
    }
  }
  for (let j = 1; j <= last; j++) if (!linked[j]) return false;
  // a member that reads a source of its own (DPT's fusion layers, each one scale's features)
  // is no copy of the first: drawn as one, the others' sources would feed nothing
  const first = at(outside, 0);
  return outside.every((o) => [...o].every((m) => first.has(m)));
}

/** The calls of member k standing for member 0's (member 0's subtree, the member included;
 * tree.ts holds: a call only member 0 makes stands for itself), or null when their trees do
 * not match (then only member 0 can be shown). */
export function counterpart(tree: CallTree, run: Run, k: number): Map<number, number> | null {
  let memo = partMemo.get(tree);
  if (!memo) {
    memo = new Map();
    partMemo.set(tree, memo);
  }
  const key = `${run.key}\u0000${k}`;
  if (memo.has(key)) return memo.get(key)!;
  const m0 = at(run.members, 0);
  const map = k >= 0 && k < run.members.length ? holds(tree.graph, tree.children, m0, at(run.members, k)) : null;
  memo.set(key, map);
  return map;
}

/** Where a call sits in a stackable run: the run, the member holding it (0..n-1) and member
 * 0's call that stands for it; null outside stackable runs (or where the trees differ). */
export function located(tree: CallTree, call: number): { run: Run; member: number; base: number } | null {
  let memo = whereMemo.get(tree);
  if (!memo) {
    memo = new Map();
    whereMemo.set(tree, memo);
    for (const run of tree.runList) {
      if (run.period !== 1 || at(tree.children, at(run.members, 0)).length === 0) continue;
      for (let k = 0; k < run.members.length; k++) {
        const map = counterpart(tree, run, k);
        if (map) for (const [b, c] of map) memo.set(c, { run, member: k, base: b });
      }
    }
  }
  const loc = memo.get(call);
  return loc && stackable(tree, loc.run) ? loc : null;
}

/** The member a stacked run shows in a state (0 when its trees differ), or -1: not a stack. */
export function stackedMember(tree: CallTree, state: Stacking, run: Run): number {
  const k = state.stacked?.get(run.key);
  if (k === undefined || state.unfolded.has(run.key) || !stackable(tree, run)) return -1;
  const shown = Math.min(Math.max(Math.round(k), 0), run.members.length - 1);
  return counterpart(tree, run, shown) ? shown : 0;
}

/** Every run drawn as a stack where it shows (model/stack.ts), each showing member 0. */
export function stackedRuns(tree: CallTree): Map<string, number> {
  return new Map(tree.runList.filter((r) => stackable(tree, r)).map((r) => [r.key, 0]));
}

/** The member a call's stacked run shows in a state, with the call's place in it; null when
 * the call is in no run drawn as a stack. */
export function stackedAt(tree: CallTree, state: Stacking, call: number) {
  const loc = located(tree, call);
  const shown = loc ? stackedMember(tree, state, loc.run) : -1;
  return loc && shown >= 0 ? { ...loc, shown } : null;
}

/** In a state, the call standing for `call` in the member its stack shows (the same call
 * when that member is shown, or when it is in no stack): the inspector follows the stepper. */
export function shownCounterpart(tree: CallTree, state: Stacking, call: number): number {
  const loc = stackedAt(tree, state, call);
  if (!loc || loc.member === loc.shown) return call;
  return counterpart(tree, loc.run, loc.shown)?.get(loc.base) ?? call;
}

/** A stacked run showing member k, or (k null) drawn folded. */
export function showMember(state: Stacking, run: string, k: number | null): Stacking {
  const stacked = new Map(state.stacked ?? []);
  if (k === null) stacked.delete(run);
  else stacked.set(run, k);
  return { expanded: state.expanded, unfolded: state.unfolded, stacked, inlined: state.inlined, parts: state.parts };
}

/** The stage to select once a stack shows another member: the selected stage's counterpart
 * in it (the inspector follows the stepper), or null when that is the stage selected. */
export function followStepper(tree: CallTree, state: Stacking, selected: string | null): string | null {
  const call = selected === null ? undefined : tree.byId.get(selected);
  if (call === undefined) return null;
  const shown = shownCounterpart(tree, state, call);
  return shown === call ? null : at(tree.graph.calls, shown).id;
}

/** The calls around the stacked runs (their ancestors), drawn without a box in a first view:
 * GPT2Model around `h`, BertEncoder around `layer`, so that the root wraps into columns; and
 * the lone child of a member 0 that holds nothing else (and its own, and so on), opened and
 * drawn without a box too: ALBERT's shared AlbertLayerGroup holds one AlbertLayer, whose
 * attention and FFN are what its stack shows one level open. */
export function wrappers(tree: CallTree, stacked: ReadonlyMap<string, number>): Set<number> {
  const out = new Set<number>();
  for (const key of stacked.keys()) {
    const m0 = tree.runs.get(key)?.members[0];
    if (m0 === undefined) continue;
    for (let c = at(tree.graph.calls, m0).parent; c >= 0; c = at(tree.graph.calls, c).parent) out.add(c);
    loneChildren(tree, m0, out);
  }
  return out;
}

/** Adds to `out` the lone child of `call` that holds something, its own, and so on. */
function loneChildren(tree: CallTree, call: number, out: Set<number>) {
  for (let kids = at(tree.children, call); kids.length === 1 && at(tree.children, at(kids, 0)).length > 0; ) {
    out.add(at(kids, 0));
    kids = at(tree.children, at(kids, 0));
  }
}

/** The wrappers and their kin: each call beside a wrapper (a sibling) of its type whose
 * children are of the types the wrapper's are, with its lone children (wrappers), so that all
 * the stages of a network open alike: torchvision ResNet-50's layer1 and layer4 (two and
 * three Bottlenecks, no stack) as its layer2 and layer3 (a block and a stack), Hugging
 * Face's ResNetStage 0 and 3 as 1 and 2. `around` itself where none is added. */
export function withKin(tree: CallTree, around: ReadonlySet<number>): Set<number> {
  const { calls } = tree.graph;
  const types = (c: number) => [...new Set(at(tree.children, c).map((k) => at(calls, k).type))].sort().join("|");
  const out = new Set(around);
  for (const w of around) {
    const parent = at(calls, w).parent;
    for (const s of parent < 0 ? tree.roots : at(tree.children, parent)) {
      if (out.has(s) || at(calls, s).type !== at(calls, w).type || !at(tree.children, s).length) continue;
      if (types(s) !== types(w)) continue;
      out.add(s);
      loneChildren(tree, s, out);
    }
  }
  return out;
}

/** `lastMemberEdges`' answer. */
export interface ShiftedEdges {
  out: [number, string, EdgeKind][];
  /** [run, destination id, kind]: the last member's input round it (a skip from the member
   * before it, whole): drawn from what feeds member 0 (Phi's residual round its layer). */
  round: [Run, string, EdgeKind][];
  shifted: Set<Run>;
}

/**
 * The edges out of stacked runs, as their last members make them: each run shifted to its
 * last member (its calls drawn for member 0's, the members before it whole), one more walk,
 * and each edge from a call drawn that way to a call outside the run, read as from member
 * 0's call standing for it [member 0's call, destination id, kind]: the residual stream's
 * attention and MLP into the final norm (GPT-2), and not what member 0 alone hands on to the
 * other members (T5's position bias). Runs whose last member does not match member 0
 * (counterpart null) are left out: the caller splices their edges instead.
 */
export function lastMemberEdges(
  tree: CallTree,
  selection: number[],
  stacks: { run: Run; drawn: number[] }[],
): ShiftedEdges {
  // (a view's edges are walked more than once for a state: remembered per selection)
  let memo = lastMemo.get(tree);
  if (!memo) {
    memo = new Map();
    lastMemo.set(tree, memo);
  }
  const key = `${stacks.map((st) => st.run.key).join("\u0000")}|${selection.join(",")}`;
  const hit = memo.get(key);
  if (hit) return hit;
  if (memo.size > 64) memo.clear();
  const found = shiftedEdges(tree, selection, stacks);
  memo.set(key, found);
  return found;
}

function shiftedEdges(tree: CallTree, selection: number[], stacks: { run: Run; drawn: number[] }[]): ShiftedEdges {
  const { calls } = tree.graph;
  const back = new Map<number, number>(); // the last member's call -> member 0's
  const swap = new Map<number, number>(); // a drawn call -> the last member's
  const members = new Set<number>();
  const shifted = new Set<Run>();
  const runOfCall = new Map<number, Run>();
  for (const { run, drawn } of stacks) {
    const last = run.members.length - 1;
    const map = counterpart(tree, run, last);
    if (!map) continue;
    shifted.add(run);
    for (const c of drawn) {
      const k = map.get(c) ?? c; // a call only member 0 makes stands for itself
      swap.set(c, k);
      back.set(k, c);
    }
    for (const m of run.members) members.add(m);
    for (const m of run.members) runOfCall.set(m, run);
  }
  const out: [number, string, EdgeKind][] = [];
  const round: [Run, string, EdgeKind][] = [];
  if (shifted.size === 0) return { out, round, shifted };
  const sel = selection.filter((c) => !members.has(c)).map((c) => swap.get(c) ?? c);
  for (const run of shifted) sel.push(...run.members.slice(0, -1));
  // a destination inside a shifted run: the run's members or their calls
  const inRun = (id: string) => {
    for (let c = tree.byId.get(id) ?? -1; c >= 0; c = at(calls, c).parent) if (runOfCall.has(c)) return true;
    return false;
  };
  for (const e of stageEdges(tree.topo, sel)) {
    const from = tree.byId.get(e.src);
    const c = from === undefined ? undefined : back.get(from);
    if (e.kind === "order" || inRun(e.dst)) continue;
    const before = from === undefined ? undefined : runOfCall.get(from); // the member before the last, whole
    if (c === undefined && before && e.kind === "skip" && before.members.at(-2) === from)
      round.push([before, e.dst, e.kind]);
    if (c !== undefined) out.push([c, e.dst, e.kind]);
  }
  return { out, round, shifted };
}
