/**
 * The view model for an expansion state: what each container shows (stages, folds, stacks,
 * clusters, unfolded runs), the visible nodes, and the edges between them (the topology walk
 * over the drawn stages, fold members mapped to their fold, a stack's spliced). Also the
 * states themselves: the starting one, toggles, revealing a call. Pure and DOM-free.
 */
import type { EdgeKind } from "../wire";
import { stageEdges } from "./topology";
import { counterpart, located, showMember, stackable, stackedAt, stackedMember, stackedRuns, wrappers } from "./stack";
import type { CallTree, Run } from "./tree";
export { searchCalls } from "./tree";
export { followStepper, nextMemberKey, prevMemberKey, shownCounterpart, showMember, stackedMember, stackedRuns, unfoldStackKey } from "./stack";

/** Which calls are expanded (drawn as clusters) and which runs are unfolded. */
export interface ViewState {
  expanded: ReadonlySet<number>;
  unfolded: ReadonlySet<string>;
  /** Runs drawn as a stack (model/stack.ts: pure chains only; others fold) and the member
   * each shows. An unfolded run is drawn unfolded; member 0's calls key what is expanded inside. */
  stacked?: ReadonlyMap<string, number>;
  /** Expanded calls drawn without a box, their items in the container around them: the
   * wrappers around a first view's stack (GPT2Model), so that the model's body can wrap. */
  inlined?: ReadonlySet<number>;
  auto?: boolean; // the starting depth the view picked (app/framing.ts may open it less deep to fit)
}

// ---------------------------------------------------------------------------------------
// Items: what a container (the model, an expanded call, an unfolded run) shows.

export type Item =
  | { kind: "stage"; key: string; call: number }
  | { kind: "fold"; key: string; run: Run }
  | { kind: "cluster"; key: string; call: number; items: Item[] }
  | { kind: "run"; key: string; run: Run; items: Item[] }
  // a run drawn as one block: member 0's children, showing member `shown`'s data
  | { kind: "stack"; key: string; run: Run; call: number; shown: number; items: Item[] };

export interface VisibleNode {
  key: string; // unique view key: "s:"/"f:"/"i:"/"o:" + id
  id: string; // stage id (a fold uses its first member's), or the input / output name
  kind: "stage" | "fold" | "input" | "output";
  call: number; // call index; -1 for inputs and outputs; a fold's first member; in a stack, the shown member's
  base?: number; // in a stack: member 0's call it stands for (the edges and junctions are member 0's)
  run: Run | null;
  path: string[]; // keys of the containers that hold it, outermost first ("" = root)
}

export interface ViewEdge {
  src: string; // node keys
  dst: string;
  kind: EdgeKind;
}

export interface ViewGraph {
  tree: CallTree; // what it is a view of
  items: Item[]; // root container items (inputs and outputs are separate)
  nodes: VisibleNode[]; // canonical order: inputs, stages and folds by call index, outputs
  byKey: Map<string, VisibleNode>;
  edges: ViewEdge[];
  selection: number[]; // the call indices S the edges were computed for
  stacks: Stack[]; // the runs drawn as stacks
}

/** A run drawn as a stack, and what its drawing shows. */
export interface Stack {
  key: string; // the stack's item key, "k:" + run key
  run: Run;
  shown: number; // the member whose data the drawn calls carry
  steppable: boolean; // the members' trees match: any member can be shown
}

export const stageKey = (id: string) => `s:${id}`;
export const foldKey = (runKey: string) => `f:${runKey}`;
export const clusterKey = (id: string) => `c:${id}`;
export const runKey = (key: string) => `r:${key}`;
export const stackKey = (key: string) => `k:${key}`;

export const inputKey = (name: string) => `i:${name}`;
export const outputKey = (name: string) => `o:${name}`;

function containerItems(tree: CallTree, state: ViewState, siblings: number[], inRun = false): Item[] {
  const items: Item[] = [];
  for (let i = 0; i < siblings.length; i++) {
    const c = siblings[i];
    const r = inRun ? -1 : tree.runOf[c];
    const run = r >= 0 ? tree.runList[r] : null;
    if (run && run.members[0] === c) {
      const shown = stackedMember(tree, state, run);
      if (state.unfolded.has(run.key)) {
        items.push({ kind: "run", key: runKey(run.key), run, items: containerItems(tree, state, run.members, true) });
      } else if (shown >= 0) {
        items.push({ kind: "stack", key: stackKey(run.key), run, call: c, shown, items: containerItems(tree, state, tree.children[c]) });
      } else {
        items.push({ kind: "fold", key: foldKey(run.key), run });
      }
      i += run.members.length - 1;
      continue;
    }
    const call = tree.graph.calls[c];
    if (state.expanded.has(c) && tree.children[c].length > 0 && state.inlined?.has(c)) {
      items.push(...containerItems(tree, state, tree.children[c]));
    } else if (state.expanded.has(c) && tree.children[c].length > 0) {
      items.push({ kind: "cluster", key: clusterKey(call.id), call: c, items: containerItems(tree, state, tree.children[c]) });
    } else {
      items.push({ kind: "stage", key: stageKey(call.id), call: c });
    }
  }
  return items;
}

/** Root items of the view for an expansion state. */
export function viewItems(tree: CallTree, state: ViewState): Item[] {
  return containerItems(tree, state, tree.roots);
}

const KIND_RANK: Record<EdgeKind, number> = { flow: 0, skip: 1, merge: 2, order: 3 };

/**
 * Visible nodes, the selection S and the view edges for an expansion state. A stack's
 * selection is member 0's drawn calls and members 1..n-1 whole; its edges are spliced
 * (model/stack.ts): edges between members and into members 1..n-1 are dropped (the
 * conditioning they read is shown entering member 0's calls), an edge c -> member 1 becomes
 * c -> Y for each edge member n-1 -> Y out of the run (c -> member 1's kind), other edges out
 * of members 1..n-2 are dropped.
 */
export function buildView(tree: CallTree, state: ViewState): ViewGraph {
  const { graph } = tree;
  const items = viewItems(tree, state);
  const nodes: VisibleNode[] = [];
  const selection: number[] = [];
  const stacks: Stack[] = [];
  const keyOfId = new Map<string, string>(); // wire node id -> view key
  const memberOf = new Map<string, [Stack, number]>(); // id of a stack's member 1..n-1 -> its stack, index
  const inStack = new Map<string, Stack>(); // view key of a node drawn in a stack -> the stack
  const walk = (list: Item[], path: string[], stack: Stack | null, map: Map<number, number> | null) => {
    const shown = (c: number) => map?.get(c) ?? c;
    for (const it of list) {
      if (it.kind === "stage") {
        const call = shown(it.call);
        nodes.push({ key: it.key, id: graph.calls[call].id, kind: "stage", call, run: null, path, ...(stack ? { base: it.call } : {}) });
        selection.push(it.call);
        keyOfId.set(graph.calls[it.call].id, it.key);
        if (stack) inStack.set(it.key, stack);
      } else if (it.kind === "fold") {
        const call = shown(it.run.members[0]);
        nodes.push({ key: it.key, id: it.run.key, kind: "fold", call, run: it.run, path, ...(stack ? { base: it.run.members[0] } : {}) });
        for (const m of it.run.members) (selection.push(m), keyOfId.set(graph.calls[m].id, it.key));
        if (stack) inStack.set(it.key, stack);
      } else if (it.kind === "stack") {
        const map = counterpart(tree, it.run, it.shown);
        const st: Stack = { key: it.key, run: it.run, shown: it.shown, steppable: it.run.members.every((_, k) => counterpart(tree, it.run, k) !== null) };
        stacks.push(st);
        it.run.members.slice(1).forEach((m, j) => (selection.push(m), memberOf.set(graph.calls[m].id, [st, j + 1])));
        walk(it.items, [...path, it.key], st, it.shown > 0 ? map : null);
      } else {
        walk(it.items, [...path, it.key], stack, map);
      }
    }
  };
  walk(items, [""], null, null);
  nodes.sort((a, b) => (a.base ?? a.call) - (b.base ?? b.call));
  const ins = graph.inputs.map((name): VisibleNode => ({ key: inputKey(name), id: name, kind: "input", call: -1, run: null, path: [""] }));
  const outs = graph.outputs.map((name): VisibleNode => ({ key: outputKey(name), id: name, kind: "output", call: -1, run: null, path: [""] }));
  for (const n of [...ins, ...outs]) keyOfId.set(n.id, n.key);
  const all = [...ins, ...nodes, ...outs];

  const best = new Map<string, ViewEdge>();
  const add = (src: string, dst: string, kind: EdgeKind) => {
    if (src === dst) return; // both ends inside one fold: internal
    const k = `${src}\u0000${dst}`;
    const prev = best.get(k);
    if (!prev) best.set(k, { src, dst, kind });
    else if (KIND_RANK[kind] < KIND_RANK[prev.kind]) prev.kind = kind;
  };
  const into = new Map<Stack, [string, EdgeKind][]>(); // c -> member 1, c drawn in the stack
  const outOf = new Map<Stack, string[]>(); // member n-1 -> Y
  for (const e of stageEdges(tree.topo, selection)) {
    const from = memberOf.get(e.src);
    const to = memberOf.get(e.dst);
    if (from || to) {
      const [st, j] = from ?? to!;
      const dst = keyOfId.get(e.dst);
      if (from && !to && j === st.run.members.length - 1 && dst) (outOf.get(st) ?? outOf.set(st, []).get(st)!).push(dst);
      const src = keyOfId.get(e.src);
      if (!from && to && to[1] === 1 && src && inStack.get(src) === to[0]) (into.get(to[0]) ?? into.set(to[0], []).get(to[0])!).push([src, e.kind]);
      continue;
    }
    const src = keyOfId.get(e.src);
    const dst = keyOfId.get(e.dst);
    if (src && dst) add(src, dst, e.kind);
  }
  for (const [st, list] of into) for (const [src, kind] of list) for (const dst of outOf.get(st) ?? []) add(src, dst, kind);
  return { tree, items, nodes: all, byKey: new Map(all.map((n) => [n.key, n])), edges: [...best.values()], selection, stacks };
}

/** Number of drawn stage and fold nodes. */
export function visibleCount(tree: CallTree, state: ViewState): number {
  let n = 0;
  const count = (list: Item[]) => {
    for (const it of list) {
      if (it.kind === "stage" || it.kind === "fold") n++;
      else count(it.items);
    }
  };
  count(viewItems(tree, state));
  return n;
}

function visibleExpandable(tree: CallTree, items: Item[], out: number[]) {
  for (const it of items) {
    if (it.kind === "stage" && tree.children[it.call].length > 0) out.push(it.call);
    else if (it.kind === "cluster" || it.kind === "run") visibleExpandable(tree, it.items, out);
  }
}

/** Number of layers a layered layout needs: the longest path of the view's edges, in nodes. */
export function layerCount(view: ViewGraph): number {
  const depth = new Map<string, number>();
  let most = view.nodes.length ? 1 : 0;
  for (const e of view.edges) {
    const d = (depth.get(e.src) ?? 1) + 1;
    if (d > (depth.get(e.dst) ?? 1)) depth.set(e.dst, d);
    most = Math.max(most, d);
  }
  return most;
}

/**
 * The states level by level: nothing open, then every visible stage with children opened at
 * once, and so on while at most maxVisible nodes are drawn (and, when given, at most
 * maxLayers layers), runs folded; then the same from the calls around the runs that stack
 * (model/stack.ts) opened, boxless, the runs drawn as stacks one level open (inside, only what
 * is asked). Later is preferred: a stack that fits before any fold.
 */
export function levelStates(tree: CallTree, maxVisible = 40, maxLayers = Infinity): ViewState[] {
  const chain = (stacked: Map<string, number> | undefined): ViewState[] => {
    const around = stacked ? wrappers(tree, stacked) : new Set<number>(); // stacks: opened from the first
    let state: ViewState = { expanded: around, unfolded: new Set(), stacked, inlined: stacked && around };
    const levels = [state];
    for (;;) {
      const candidates: number[] = [];
      visibleExpandable(tree, viewItems(tree, state), candidates);
      if (candidates.length === 0) return levels;
      const next: ViewState = { expanded: new Set([...state.expanded, ...candidates]), unfolded: state.unfolded, stacked, inlined: state.inlined };
      if (visibleCount(tree, next) > maxVisible || (maxLayers < Infinity && layerCount(buildView(tree, next)) > maxLayers)) return levels;
      levels.push((state = next));
    }
  };
  const stacks = stackedRuns(tree);
  const drawsStack = (items: Item[]): boolean => items.some((it) => it.kind === "stack" || ("items" in it && drawsStack(it.items)));
  const fits = (s: ViewState) => visibleCount(tree, s) <= maxVisible && (maxLayers === Infinity || layerCount(buildView(tree, s)) <= maxLayers);
  return [...chain(undefined), ...(stacks.size ? chain(stacks).filter((s) => drawsStack(viewItems(tree, s)) && fits(s)) : [])];
}

/**
 * The starting state. When the graph names its first stages (`graph.initial`, the user's
 * `stages=`), exactly those: see chosenState. Otherwise the deepest level (levelStates) that
 * stays readable: at most maxVisible nodes in at most maxLayers layers, marked `auto` (the
 * view may open a shallower level of levelStates(tree, maxVisible) that fits its canvas).
 */
export function initialState(tree: CallTree, maxVisible = 40, maxLayers = 14): ViewState {
  if (tree.graph.initial) return chosenState(tree, tree.graph.initial);
  const levels = levelStates(tree, maxVisible, maxLayers);
  return { ...levels[levels.length - 1], auto: true };
}

/**
 * A state that draws the chosen calls: their ancestors expanded, the calls themselves
 * collapsed. Runs fold as usual; only a run that holds an ancestor of a chosen call unfolds
 * (a fold cannot show what is inside its members).
 */
export function chosenState(tree: CallTree, chosen: Iterable<number>): ViewState {
  const expanded = new Set<number>();
  const unfolded = new Set<string>();
  for (const call of chosen) {
    for (let c = tree.graph.calls[call].parent; c >= 0; c = tree.graph.calls[c].parent) {
      expanded.add(c);
      const r = tree.runOf[c];
      if (r >= 0) unfolded.add(tree.runList[r].key);
    }
  }
  return { expanded, unfolded };
}

/** Whether a call is drawn as its own node in a state (no collapsed ancestor, no fold around
 * it; in a stack, in the member shown). */
export function isShown(tree: CallTree, state: ViewState, call: number): boolean {
  const at = stackedAt(tree, state, call);
  if (at) {
    if (at.member !== at.shown || at.base === at.run.members[0]) return false;
    call = at.base;
  }
  if (state.expanded.has(call) && tree.children[call].length > 0) return false; // drawn as a cluster
  for (let c = call; c >= 0; c = tree.graph.calls[c].parent) {
    const r = tree.runOf[c];
    const run = r >= 0 ? tree.runList[r] : null;
    const stacked = run !== null && run.members[0] === c && stackedMember(tree, state, run) >= 0;
    if (c !== call && !state.expanded.has(c) && !stacked) return false;
    if (run && !state.unfolded.has(run.key) && !stacked) return false;
  }
  return true;
}

export function toggleExpanded(tree: CallTree, state: ViewState, call: number): ViewState {
  if (tree.children[call].length === 0) return state;
  const expanded = new Set(state.expanded);
  if (expanded.has(call)) expanded.delete(call);
  else expanded.add(call);
  return { expanded, unfolded: state.unfolded, stacked: state.stacked, inlined: state.inlined };
}

export function toggleUnfolded(state: ViewState, run: string): ViewState {
  const unfolded = new Set(state.unfolded);
  if (unfolded.has(run)) unfolded.delete(run);
  else unfolded.add(run);
  return { expanded: state.expanded, unfolded, stacked: state.stacked, inlined: state.inlined };
}

/**
 * Expand or collapse (a stage "s:" / its cluster "c:"), open a fold "f:" (as a stack "k:" when
 * its run stacks, else unfolded "r:"), fold a stack or a run again, unfold a stack's members
 * ("u:"), show a stack's next or previous member ("n:" / "p:"), by view key: the next state, and
 * the key that then draws the same thing (the cluster of an expanded stage, the stage of a
 * collapsed cluster, ...); null: nothing to do.
 */
export function toggleKey(tree: CallTree, state: ViewState, key: string): { state: ViewState; key: string } | null {
  const id = key.slice(2);
  const run = tree.runs.get(id);
  const stacks = run !== undefined && stackable(tree, run);
  let next = state;
  let other = key;
  if (key.startsWith("s:") || key.startsWith("c:")) {
    const call = tree.byId.get(id);
    if (call === undefined) return null;
    next = toggleExpanded(tree, state, call);
    other = key.startsWith("s:") ? clusterKey(id) : stageKey(id);
  } else if (key.startsWith("f:") && stacks) {
    next = showMember(state, id, state.stacked?.get(id) ?? 0);
    other = stackKey(id);
  } else if (key.startsWith("f:") || key.startsWith("r:")) {
    next = toggleUnfolded(state, id);
    other = key.startsWith("f:") ? runKey(id) : stacks && state.stacked?.has(id) ? stackKey(id) : foldKey(id);
  } else if (key.startsWith("k:") && run) {
    next = showMember(state, id, null);
    other = foldKey(id);
  } else if (key.startsWith("u:") && run) {
    next = toggleUnfolded(state, id);
    other = runKey(id);
  } else if ((key.startsWith("n:") || key.startsWith("p:")) && run && stacks) {
    const k = stackedMember(tree, state, run);
    if (k < 0) return null;
    const to = Math.min(Math.max(k + (key.startsWith("n:") ? 1 : -1), 0), run.members.length - 1);
    if (to === k || !counterpart(tree, run, to)) return null;
    next = showMember(state, id, to);
    other = stackKey(id);
  }
  return next === state ? null : { state: next, key: other };
}

/** Expand every ancestor of a call and unfold the runs around it, so that it is drawn; in a
 * run drawn as a stack, the stack shows the call's member instead. */
export function revealCall(tree: CallTree, state: ViewState, call: number): ViewState {
  const expanded = new Set(state.expanded);
  const unfolded = new Set(state.unfolded);
  const stacked = new Map(state.stacked ?? []);
  const at = stackedAt(tree, state, call);
  const m0 = at && at.base !== at.run.members[0] ? at.run.members[0] : -1; // a block itself: its run unfolds
  if (at && m0 >= 0) (stacked.set(at.run.key, at.member), (call = at.base));
  for (let c = call; c >= 0; c = tree.graph.calls[c].parent) {
    if (c === m0) continue; // the stack opens member 0
    if (c !== call) expanded.add(c);
    const r = tree.runOf[c];
    if (r >= 0) unfolded.add(tree.runList[r].key);
  }
  expanded.delete(call);
  return { expanded, unfolded, stacked, inlined: state.inlined };
}

/** The visible node that currently shows a call (itself, its fold, or a collapsed ancestor). */
export function nodeKeyForCall(tree: CallTree, view: ViewGraph, call: number): string | null {
  const at = located(tree, call);
  const stack = at && view.stacks.find((s) => s.run === at.run);
  if (at && stack) {
    if (stack.shown !== at.member) return null;
    call = at.base;
  }
  for (let c = call; c >= 0; c = tree.graph.calls[c].parent) {
    const id = tree.graph.calls[c].id;
    if (view.byKey.has(stageKey(id))) return stageKey(id);
    const r = tree.runOf[c];
    if (r >= 0 && view.byKey.has(foldKey(tree.runList[r].key))) return foldKey(tree.runList[r].key);
  }
  return null;
}
