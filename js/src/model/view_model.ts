/**
 * The view model for an expansion state: what each container shows (stages, folds, clusters,
 * unfolded runs), the visible nodes, and the edges between them (the topology walk over the
 * drawn stages, fold members mapped to their fold). Also the states themselves: the starting
 * one, toggles, revealing a call. Pure and DOM-free.
 */
import type { EdgeKind } from "../wire";
import { stageEdges } from "./topology";
import type { CallTree, Run } from "./tree";

/** Which calls are expanded (drawn as clusters) and which runs are unfolded. */
export interface ViewState {
  expanded: ReadonlySet<number>;
  unfolded: ReadonlySet<string>;
  auto?: boolean; // the starting depth the view picked (app/framing.ts may open it less deep to fit)
}

// ---------------------------------------------------------------------------------------
// Items: what a container (the model, an expanded call, an unfolded run) shows.

export type Item =
  | { kind: "stage"; key: string; call: number }
  | { kind: "fold"; key: string; run: Run }
  | { kind: "cluster"; key: string; call: number; items: Item[] }
  | { kind: "run"; key: string; run: Run; items: Item[] };

export interface VisibleNode {
  key: string; // unique view key: "s:"/"f:"/"i:"/"o:" + id
  id: string; // stage id (a fold uses its first member's), or the input / output name
  kind: "stage" | "fold" | "input" | "output";
  call: number; // call index; -1 for inputs and outputs; a fold's first member
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
}

export const stageKey = (id: string) => `s:${id}`;
export const foldKey = (runKey: string) => `f:${runKey}`;
export const clusterKey = (id: string) => `c:${id}`;
export const runKey = (key: string) => `r:${key}`;
export const inputKey = (name: string) => `i:${name}`;
export const outputKey = (name: string) => `o:${name}`;

function containerItems(tree: CallTree, state: ViewState, siblings: number[], inRun = false): Item[] {
  const items: Item[] = [];
  for (let i = 0; i < siblings.length; i++) {
    const c = siblings[i];
    const r = inRun ? -1 : tree.runOf[c];
    const run = r >= 0 ? tree.runList[r] : null;
    if (run && run.members[0] === c) {
      if (state.unfolded.has(run.key)) {
        items.push({ kind: "run", key: runKey(run.key), run, items: containerItems(tree, state, run.members, true) });
      } else {
        items.push({ kind: "fold", key: foldKey(run.key), run });
      }
      i += run.members.length - 1;
      continue;
    }
    const call = tree.graph.calls[c];
    if (state.expanded.has(c) && tree.children[c].length > 0) {
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

/** Visible nodes, the selection S and the view edges for an expansion state. */
export function buildView(tree: CallTree, state: ViewState): ViewGraph {
  const { graph } = tree;
  const items = viewItems(tree, state);
  const nodes: VisibleNode[] = [];
  const selection: number[] = [];
  const keyOfId = new Map<string, string>(); // wire node id -> view key
  const walk = (list: Item[], path: string[]) => {
    for (const it of list) {
      if (it.kind === "stage") {
        const id = graph.calls[it.call].id;
        nodes.push({ key: it.key, id, kind: "stage", call: it.call, run: null, path });
        selection.push(it.call);
        keyOfId.set(id, it.key);
      } else if (it.kind === "fold") {
        nodes.push({ key: it.key, id: it.run.key, kind: "fold", call: it.run.members[0], run: it.run, path });
        for (const m of it.run.members) {
          selection.push(m);
          keyOfId.set(graph.calls[m].id, it.key);
        }
      } else {
        walk(it.items, [...path, it.key]);
      }
    }
  };
  walk(items, [""]);
  nodes.sort((a, b) => a.call - b.call);
  const ins = graph.inputs.map((name): VisibleNode => ({ key: inputKey(name), id: name, kind: "input", call: -1, run: null, path: [""] }));
  const outs = graph.outputs.map((name): VisibleNode => ({ key: outputKey(name), id: name, kind: "output", call: -1, run: null, path: [""] }));
  for (const n of ins) keyOfId.set(n.id, n.key);
  for (const n of outs) keyOfId.set(n.id, n.key);
  const all = [...ins, ...nodes, ...outs];

  const best = new Map<string, ViewEdge>();
  for (const e of stageEdges(tree.topo, selection)) {
    const src = keyOfId.get(e.src);
    const dst = keyOfId.get(e.dst);
    if (!src || !dst || src === dst) continue; // both ends inside one fold: internal
    const k = `${src}\u0000${dst}`;
    const prev = best.get(k);
    if (!prev) best.set(k, { src, dst, kind: e.kind });
    else if (KIND_RANK[e.kind] < KIND_RANK[prev.kind]) prev.kind = e.kind;
  }
  return { tree, items, nodes: all, byKey: new Map(all.map((n) => [n.key, n])), edges: [...best.values()], selection };
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
 * maxLayers layers). Folded runs stay folded. The last is the deepest.
 */
export function levelStates(tree: CallTree, maxVisible = 40, maxLayers = Infinity): ViewState[] {
  let state: ViewState = { expanded: new Set(), unfolded: new Set() };
  const levels = [state];
  for (;;) {
    const candidates: number[] = [];
    visibleExpandable(tree, viewItems(tree, state), candidates);
    if (candidates.length === 0) return levels;
    const next: ViewState = { expanded: new Set([...state.expanded, ...candidates]), unfolded: state.unfolded };
    if (visibleCount(tree, next) > maxVisible || (maxLayers < Infinity && layerCount(buildView(tree, next)) > maxLayers)) return levels;
    levels.push((state = next));
  }
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

/** Whether a call is drawn as its own node in a state (no collapsed ancestor, no fold around it). */
export function isShown(tree: CallTree, state: ViewState, call: number): boolean {
  if (state.expanded.has(call) && tree.children[call].length > 0) return false; // drawn as a cluster
  for (let c = call; c >= 0; c = tree.graph.calls[c].parent) {
    if (c !== call && !state.expanded.has(c)) return false;
    const r = tree.runOf[c];
    if (r >= 0 && !state.unfolded.has(tree.runList[r].key)) return false;
  }
  return true;
}

export function toggleExpanded(tree: CallTree, state: ViewState, call: number): ViewState {
  if (tree.children[call].length === 0) return state;
  const expanded = new Set(state.expanded);
  if (expanded.has(call)) expanded.delete(call);
  else expanded.add(call);
  return { expanded, unfolded: state.unfolded };
}

export function toggleUnfolded(state: ViewState, run: string): ViewState {
  const unfolded = new Set(state.unfolded);
  if (unfolded.has(run)) unfolded.delete(run);
  else unfolded.add(run);
  return { expanded: state.expanded, unfolded };
}

/**
 * Expand or collapse (a stage "s:" / its cluster "c:"), unfold or fold again (a fold "f:" / its
 * run "r:") by view key: the next state, and the key that then draws the same thing (the
 * cluster of an expanded stage, the stage of a collapsed cluster, ...); null: nothing to do.
 */
export function toggleKey(tree: CallTree, state: ViewState, key: string): { state: ViewState; key: string } | null {
  const id = key.slice(2);
  let next = state;
  let other = key;
  if (key.startsWith("s:") || key.startsWith("c:")) {
    const call = tree.byId.get(id);
    if (call === undefined) return null;
    next = toggleExpanded(tree, state, call);
    other = key.startsWith("s:") ? clusterKey(id) : stageKey(id);
  } else if (key.startsWith("f:") || key.startsWith("r:")) {
    next = toggleUnfolded(state, id);
    other = key.startsWith("f:") ? runKey(id) : foldKey(id);
  }
  return next === state ? null : { state: next, key: other };
}

/** Expand every ancestor of a call and unfold the runs around it, so that it is drawn. */
export function revealCall(tree: CallTree, state: ViewState, call: number): ViewState {
  const expanded = new Set(state.expanded);
  const unfolded = new Set(state.unfolded);
  for (let c = call; c >= 0; c = tree.graph.calls[c].parent) {
    if (c !== call) expanded.add(c);
    const r = tree.runOf[c];
    if (r >= 0) unfolded.add(tree.runList[r].key);
  }
  expanded.delete(call);
  return { expanded, unfolded };
}

/** The visible node that currently shows a call (itself, its fold, or a collapsed ancestor). */
export function nodeKeyForCall(tree: CallTree, view: ViewGraph, call: number): string | null {
  for (let c = call; c >= 0; c = tree.graph.calls[c].parent) {
    const id = tree.graph.calls[c].id;
    if (view.byKey.has(stageKey(id))) return stageKey(id);
    const r = tree.runOf[c];
    if (r >= 0 && view.byKey.has(foldKey(tree.runList[r].key))) return foldKey(tree.runList[r].key);
  }
  return null;
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
