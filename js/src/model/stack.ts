/**
 * Runs drawn as a stack (the paper's "N×" figure): which runs may be, and how the calls of
 * one member stand for the others'. A run stacks when it is a pure chain: with every member
 * drawn whole, member j feeds member j + 1 and nothing else runs between members, and only
 * the last member feeds anything outside the run. The stack draws member 0's children; the
 * member shown (k) only changes the data: counterpart() maps member 0's calls to member k's
 * (same module path relative to the member, same call ordinal), located() the way back.
 * Memoized per tree. Pure and DOM-free.
 */
import { stageEdges } from "./topology";
import type { CallTree, Run } from "./tree";
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
}

const stackMemo = new WeakMap<CallTree, Map<string, boolean>>();
const partMemo = new WeakMap<CallTree, Map<string, Map<number, number> | null>>();
const whereMemo = new WeakMap<CallTree, Map<number, { run: Run; member: number; base: number }>>();

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
  for (const e of stageEdges(tree.topo, selection)) {
    if (e.kind === "order") continue;
    const a = index.get(e.src);
    const b = index.get(e.dst);
    if (a === undefined) continue; // from outside: conditioning (a mask, an encoder's output)
    if (b !== undefined) {
      if (b !== a + 1) return false; // a skip between members, or a member reading a later one
      linked[b] = 1;
    } else if (a !== last) {
      return false; // an intermediate output read outside the run
    }
  }
  for (let j = 1; j <= last; j++) if (!linked[j]) return false;
  return true;
}

/** The calls of member k standing for member 0's (member 0's subtree, the member included),
 * or null when their trees do not match (then only member 0 can be shown). */
export function counterpart(tree: CallTree, run: Run, k: number): Map<number, number> | null {
  let memo = partMemo.get(tree);
  if (!memo) {
    memo = new Map();
    partMemo.set(tree, memo);
  }
  const key = `${run.key}\u0000${k}`;
  if (memo.has(key)) return memo.get(key)!;
  const { calls } = tree.graph;
  const m0 = at(run.members, 0);
  const mk = at(run.members, k);
  const out = new Map<number, number>();
  const base0 = at(calls, m0).module.length;
  const basek = at(calls, mk).module.length;
  const match = (a: number, b: number): boolean => {
    const ca = at(calls, a);
    const cb = at(calls, b);
    if (ca.type !== cb.type || ca.call !== cb.call || ca.module.slice(base0) !== cb.module.slice(basek)) return false;
    const ka = at(tree.children, a);
    const kb = at(tree.children, b);
    if (ka.length !== kb.length) return false;
    out.set(a, b);
    return ka.every((x, i) => match(x, kb[i]!)); // as many children as ka, checked above
  };
  const map = k >= 0 && k < run.members.length && at(calls, m0).sig === at(calls, mk).sig && match(m0, mk) ? out : null;
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
  return { expanded: state.expanded, unfolded: state.unfolded, stacked, inlined: state.inlined };
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
 * GPT2Model around `h`, BertEncoder around `layer`, so that the root wraps into columns. */
export function wrappers(tree: CallTree, stacked: ReadonlyMap<string, number>): Set<number> {
  const out = new Set<number>();
  for (const key of stacked.keys()) {
    const m0 = tree.runs.get(key)?.members[0];
    if (m0 !== undefined)
      for (let c = at(tree.graph.calls, m0).parent; c >= 0; c = at(tree.graph.calls, c).parent) out.add(c);
  }
  return out;
}
