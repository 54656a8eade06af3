/**
 * The view model for an expansion state: what each container shows (stages, folds, stacks,
 * clusters, unfolded runs), the visible nodes, and the edges between them (the topology walk
 * over the drawn stages, fold members mapped to their fold, a stack's spliced, the items of a
 * tuple returned to their one port: ports.ts). The states themselves (the starting one,
 * toggles, revealing a call) are in view_state.ts. Pure and DOM-free.
 */
import type { EdgeKind } from "../wire";
import { stageEdges } from "./topology";
import { counterpart, lastMemberEdges, located, stackedMember } from "./stack";
import { partsOf } from "./parts";
import { type Family, familyOf, portOf } from "./ports";
import type { CallTree, Run } from "./tree";
import { at } from "../wire_check";
export { searchCalls } from "./tree";
export {
  followStepper,
  nextMemberKey,
  prevMemberKey,
  shownCounterpart,
  showMember,
  stackedMember,
  stackedRuns,
  unfoldStackKey,
} from "./stack";

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
  /** The residual blocks' sublayers drawn folded, each as one node (model/parts.ts): a first
   * view that fits only so. */
  parts?: ReadonlySet<string>;
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
  family?: Family; // an output drawn for the items of one tuple (model/ports.ts)
}

export interface ViewEdge {
  src: string; // node keys
  dst: string;
  kind: EdgeKind;
  /** How many stages' reads it stands for: 1, or a fold's members that read the source, or
   * for a node drawn in a stack, member 0's and the other members' that read it alike (a
   * mask, a rotary embedding, an encoder's output read by every layer). */
  readers: number;
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

/** A port's name: a model input's or output's, or the items' of a tuple returned
 * ("output:hidden_states.0 … 12"). */
export const portName = (n: Pick<VisibleNode, "id" | "family">) => n.family?.label ?? n.id;

export const inputKey = (name: string) => `i:${name}`;
export const outputKey = (name: string) => `o:${name}`;

function containerItems(tree: CallTree, state: ViewState, siblings: number[], inRun = false): Item[] {
  const items: Item[] = [];
  const parts = state.parts?.size ? partsOf(tree) : null;
  for (let i = 0; i < siblings.length; i++) {
    const c = at(siblings, i);
    const p = parts ? parts.of[c]! : -1;
    const part = p >= 0 ? at(parts!.list, p) : null;
    if (part && at(part.members, 0) === c && state.parts!.has(part.key)) {
      items.push({ kind: "fold", key: foldKey(part.key), run: part });
      i += part.members.length - 1;
      continue;
    }
    const r = inRun ? -1 : tree.runOf[c]!;
    const run = r >= 0 ? at(tree.runList, r) : null;
    if (run && at(run.members, 0) === c) {
      const shown = stackedMember(tree, state, run);
      if (state.unfolded.has(run.key)) {
        items.push({ kind: "run", key: runKey(run.key), run, items: containerItems(tree, state, run.members, true) });
      } else if (shown >= 0) {
        items.push({
          kind: "stack",
          key: stackKey(run.key),
          run,
          call: c,
          shown,
          items: containerItems(tree, state, at(tree.children, c)),
        });
      } else {
        items.push({ kind: "fold", key: foldKey(run.key), run });
      }
      i += run.members.length - 1;
      continue;
    }
    const call = at(tree.graph.calls, c);
    if (state.expanded.has(c) && at(tree.children, c).length > 0 && state.inlined?.has(c)) {
      items.push(...containerItems(tree, state, at(tree.children, c)));
    } else if (state.expanded.has(c) && at(tree.children, c).length > 0) {
      items.push({
        kind: "cluster",
        key: clusterKey(call.id),
        call: c,
        items: containerItems(tree, state, at(tree.children, c)),
      });
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
 * of members 1..n-2 are dropped; the last member's input skipping round it comes from what
 * flows into member 0 (Phi's residual round a layer whose attention and MLP add in one sum).
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
  const drawnIn = new Map<Stack, number[]>(); // a stack -> member 0's calls in the selection
  const walk = (list: Item[], path: string[], stack: Stack | null, map: Map<number, number> | null) => {
    const shown = (c: number) => map?.get(c) ?? c;
    for (const it of list) {
      if (it.kind === "stage") {
        const call = shown(it.call);
        nodes.push({
          key: it.key,
          id: at(graph.calls, call).id,
          kind: "stage",
          call,
          run: null,
          path,
          ...(stack ? { base: it.call } : {}),
        });
        selection.push(it.call);
        keyOfId.set(at(graph.calls, it.call).id, it.key);
        if (stack) {
          inStack.set(it.key, stack);
          (drawnIn.get(stack) ?? drawnIn.set(stack, []).get(stack)!).push(it.call);
        }
      } else if (it.kind === "fold") {
        const call = shown(at(it.run.members, 0));
        // a sublayer is its last stage (in a stack, the member shown's); a run, its first member
        const last = at(it.run.members, it.run.members.length - 1);
        nodes.push({
          key: it.key,
          id: it.run.part ? at(graph.calls, shown(last)).id : it.run.key,
          kind: "fold",
          call,
          run: it.run,
          path,
          ...(stack ? { base: at(it.run.members, 0) } : {}),
        });
        for (const m of it.run.members) {
          selection.push(m);
          keyOfId.set(at(graph.calls, m).id, it.key);
        }
        if (stack) {
          inStack.set(it.key, stack);
          (drawnIn.get(stack) ?? drawnIn.set(stack, []).get(stack)!).push(...it.run.members);
        }
      } else if (it.kind === "stack") {
        const map = counterpart(tree, it.run, it.shown);
        const st: Stack = {
          key: it.key,
          run: it.run,
          shown: it.shown,
          steppable: it.run.members.every((_, k) => counterpart(tree, it.run, k) !== null),
        };
        stacks.push(st);
        for (const [j, m] of it.run.members.entries()) {
          if (j === 0) continue;
          selection.push(m);
          memberOf.set(at(graph.calls, m).id, [st, j]);
        }
        walk(it.items, [...path, it.key], st, it.shown > 0 ? map : null);
      } else {
        walk(it.items, [...path, it.key], stack, map);
      }
    }
  };
  walk(items, [""], null, null);
  nodes.sort((a, b) => (a.base ?? a.call) - (b.base ?? b.call));
  const ins = graph.inputs.map(
    (name): VisibleNode => ({ key: inputKey(name), id: name, kind: "input", call: -1, run: null, path: [""] }),
  );
  const families = familyOf(graph);
  const outs = graph.outputs
    .filter((name) => portOf(graph, name) === name) // a family's other items: its port
    .map((name): VisibleNode => {
      const family = families.get(name);
      return {
        key: outputKey(name),
        id: name,
        kind: "output",
        call: -1,
        run: null,
        path: [""],
        ...(family ? { family } : {}),
      };
    });
  for (const n of [...ins, ...outs]) keyOfId.set(n.id, n.key);
  for (const [name, family] of families) keyOfId.set(name, outputKey(family.head));
  const all = [...ins, ...nodes, ...outs];

  const best = new Map<string, ViewEdge>();
  const read = new Map<string, Set<string>>(); // view edge -> the stages it stands for reading
  const ports = new Set(outs.filter((n) => n.family).map((n) => n.key));
  const add = (src: string, dst: string, kind: EdgeKind, reader = dst) => {
    if (src === dst) return; // both ends inside one fold: internal
    if (kind !== "flow" && ports.has(dst)) return; // a tuple's items: each from the stage that made it
    const k = `${src}\u0000${dst}`;
    const prev = best.get(k);
    if (!prev) best.set(k, { src, dst, kind, readers: 1 });
    else if (KIND_RANK[kind] < KIND_RANK[prev.kind]) prev.kind = kind;
    (read.get(k) ?? read.set(k, new Set()).get(k)!).add(reader);
  };
  const alike = new Map<string, number>(); // source key + stack key -> members 1..n-1 reading it
  const into = new Map<Stack, [string, EdgeKind][]>(); // c -> member 1, c drawn in the stack
  const outOf = new Map<Stack, string[]>(); // member n-1 -> Y
  const entering = new Map<Stack, Set<string>>(); // what feeds member 0's drawn calls (flow)
  const { out, round, shifted } = lastMemberEdges(
    tree,
    selection,
    stacks.map((st) => ({ run: st.run, drawn: drawnIn.get(st) ?? [] })),
  );
  for (const e of stageEdges(tree.topo, selection)) {
    const from = memberOf.get(e.src);
    const to = memberOf.get(e.dst);
    if (from || to) {
      const [st, j] = from ?? to!;
      const src0 = keyOfId.get(e.src);
      if (!from && to && src0 && inStack.get(src0) !== st) {
        const k = `${src0}\u0000${st.key}`; // conditioning that the other members read alike
        alike.set(k, (alike.get(k) ?? 0) + 1);
      }
      if (shifted.has(st.run)) continue; // its edges out are its last member's
      const dst = keyOfId.get(e.dst);
      if (from && !to && j === st.run.members.length - 1 && dst)
        (outOf.get(st) ?? outOf.set(st, []).get(st)!).push(dst);
      const src = keyOfId.get(e.src);
      if (!from && to && to[1] === 1 && src && inStack.get(src) === to[0])
        (into.get(to[0]) ?? into.set(to[0], []).get(to[0])!).push([src, e.kind]);
      continue;
    }
    const src = keyOfId.get(e.src);
    const dst = keyOfId.get(e.dst);
    if (src && dst) add(src, dst, e.kind, e.dst);
    const st = dst && src && e.kind === "flow" ? inStack.get(dst) : undefined;
    if (st && src && inStack.get(src) !== st) (entering.get(st) ?? entering.set(st, new Set()).get(st)!).add(src);
  }
  // what a stack's last member hands on; into a tuple's port (its attention weights, its hidden
  // state) only where no node drawn for member 0 feeds that port already (GPT-2's attn does)
  const later: [string, string, EdgeKind][] = [];
  const spliced = (src: string, dst: string, kind: EdgeKind) =>
    ports.has(dst) ? later.push([src, dst, kind]) : add(src, dst, kind);
  for (const [st, list] of into)
    for (const [src, kind] of list) for (const dst of outOf.get(st) ?? []) spliced(src, dst, kind);
  for (const [run, id, kind] of round) {
    const st = stacks.find((s) => s.run === run);
    const dst = keyOfId.get(id);
    for (const src of (st && entering.get(st)) ?? []) if (dst) spliced(src, dst, kind);
  }
  for (const [c, id, kind] of out) {
    const src = keyOfId.get(at(graph.calls, c).id);
    const dst = keyOfId.get(id);
    if (src && dst) spliced(src, dst, kind);
  }
  const fed = new Set([...best.values()].map((e) => e.dst));
  for (const [src, dst, kind] of later) if (!fed.has(dst)) add(src, dst, kind);
  for (const [k, e] of best) {
    const st = inStack.get(e.dst);
    e.readers =
      (read.get(k)?.size ?? 1) + (st && inStack.get(e.src) !== st ? (alike.get(`${e.src}\u0000${st.key}`) ?? 0) : 0);
  }
  return {
    tree,
    items,
    nodes: all,
    byKey: new Map(all.map((n) => [n.key, n])),
    edges: [...best.values()],
    selection,
    stacks,
  };
}

/** The visible node that currently shows a call (itself, its fold, or a collapsed ancestor). */
export function nodeKeyForCall(tree: CallTree, view: ViewGraph, call: number): string | null {
  const loc = located(tree, call);
  const stack = loc && view.stacks.find((s) => s.run === loc.run);
  if (loc && stack) {
    if (stack.shown !== loc.member) return null;
    call = loc.base;
  }
  const parts = partsOf(tree);
  for (let c = call; c >= 0; c = at(tree.graph.calls, c).parent) {
    const id = at(tree.graph.calls, c).id;
    if (view.byKey.has(stageKey(id))) return stageKey(id);
    const r = tree.runOf[c]!;
    if (r >= 0 && view.byKey.has(foldKey(at(tree.runList, r).key))) return foldKey(at(tree.runList, r).key);
    const p = parts.of[c]!;
    if (p >= 0 && view.byKey.has(foldKey(at(parts.list, p).key))) return foldKey(at(parts.list, p).key);
  }
  return null;
}
