/**
 * Junctions: where the data of two or more drawn sources meets before a node reads it (a
 * residual's `x + f(x)`, a U-Net's `torch.cat([up, skip])`), found from `graph.ops` and
 * `graph.joins`, and the view's edges redrawn through them. Pure and DOM-free.
 *
 *   1. owner(op): the drawn node that owns the op's call (the stage itself, the fold that holds
 *      it, a collapsed ancestor), else none (the model's body, an open group's own forward).
 *   2. For a node d with two or more incoming edges (not "order"), walk back from its input
 *      ops breadth first, stopping at model inputs and at ops a drawn node owns; the first join
 *      op met (`graph.joins`) from which two of d's sources are reached is d's junction J(d).
 *      For a node of one incoming edge, the first attention met from which its source is
 *      reached (GPT-2's c_attn -> attention -> c_proj: q, k and v from one projection).
 *      One op can be the junction of several nodes (one glyph, a stub into each).
 *   3. A junction's own inputs: the walk back from its parents stops, besides, at the ops that
 *      are other nodes' junctions. So the second add of a pre-norm block reads the first add
 *      (the residual stream: junction -> junction) and the MLP, not the attention again.
 *   4. An edge s -> d of a node with a junction is drawn s -> J(d) when J reads s directly,
 *      J' -> J(d) when s reaches J only through the junction J', and s -> d when the data of s
 *      does not pass J (a mask beside the stream); each junction draws one stub J -> d.
 *   5. A junction sits in the container of the call whose forward ran the op (an open group,
 *      a stack for its member 0, or the model's body).
 *   6. A stack (view_model.ts) draws member 0 for all its members: a walk that meets an op of
 *      members 1..n-1 goes on from what member 1 reads (member 0's output), so the node after
 *      the stack reads member 0's last junction; such ops are never junctions themselves.
 *   7. An add or a concatenation of a parameter of the model (`graph.operands`: ViT's
 *      `+ position_embeddings`, its `⧺ cls_token`) where an open group's forward runs is a
 *      junction too, named by it: a node of one source reads it as it reads an attention, and
 *      an edge whose data passed it is drawn through it (s -> J' -> J(d)).
 */
import { type EdgeKind, isAttentionJoin } from "../wire";
import { glyphOf } from "./glyphs";
import { counterpart } from "./stack";
import type { CallTree } from "./tree";
import { clusterKey, foldKey, inputKey, type Item, type ViewEdge, type ViewGraph } from "./view_model";
import { at } from "../wire_check";

export interface Junction {
  key: string; // "j:<op>"
  op: number;
  what: string; // what the op does: add, sub, mul, div, cat, stack, matmul, attention, or a function name
  glyph: string; // "+", "−", "×", "÷", "⧺", "@", or a short name
  path: string[]; // container keys, like VisibleNode.path ("" = the model)
  outs: string[]; // the nodes that read it (stubs J -> d)
  stage?: string; // an attention's: the stage whose forward ran it (a click shows its maps)
  operand?: string; // 7.: the parameter it joins in, named within the module that ran it
}

export interface DrawnEdge {
  src: string; // node or junction keys
  dst: string;
  kind: EdgeKind;
  edge: ViewEdge | null; // the view edge drawn; null for a junction's stub into its node
}

export interface Drawing {
  junctions: Junction[];
  byKey: Map<string, Junction>;
  edges: DrawnEdge[];
}

export const junctionKey = (op: number) => `j:${op}`;

const MAX_CANDIDATES = 8;
/** The joins whose parameter operands are drawn (7.; graph/records.py NAMED_JOINS). */
const NAMED = new Set(["add", "sub", "cat"]);
/** Whether a join is an attention (the paper's own box between q, k, v and the output
 * projection): drawn between them and what reads them even where those come from one node (a
 * fused qkv projection). */
const isAttention = isAttentionJoin;
const RANK: Record<EdgeKind, number> = { flow: 0, skip: 1, merge: 2, order: 3 };

/** Container paths of the open groups (cluster and run keys, a stack also as its member 0's
 * cluster key), like VisibleNode.path. */
function containerPaths(tree: CallTree, items: Item[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (list: Item[], path: string[]) => {
    for (const it of list) {
      if (it.kind === "cluster" || it.kind === "run" || it.kind === "stack") {
        const inner = [...path, it.key];
        out.set(it.key, inner);
        if (it.kind === "stack") out.set(clusterKey(at(tree.graph.calls, it.call).id), inner);
        walk(it.items, inner);
      }
    }
  };
  walk(items, [""]);
  return out;
}

export function junctions(tree: CallTree, view: ViewGraph): Drawing {
  const { graph } = tree;
  const { calls, ops } = graph;
  const joinOf = new Map<number, string>(graph.joins);
  const operandOf = new Map<number, string>(graph.operands);
  const empty: Drawing = {
    junctions: [],
    byKey: new Map(),
    edges: view.edges.map((e) => ({ src: e.src, dst: e.dst, kind: e.kind, edge: e })),
  };
  if (joinOf.size === 0 || graph.topology === "sequential") return empty;

  // 1. the drawn node owning each call
  const drawnKey = new Map<number, string>();
  for (const n of view.nodes) {
    if (n.kind === "stage") drawnKey.set(n.base ?? n.call, n.key);
    else if (n.kind === "fold" && n.run) for (const m of n.run.members) drawnKey.set(m, foldKey(n.run.key));
  }
  const ownerKey: (string | null)[] = new Array(calls.length).fill(null);
  for (let c = 0; c < calls.length; c++) ownerKey[c] = drawnKey.get(c) ?? ownerKey[at(calls, c).parent] ?? null; // parents come first
  // 6. the ops of a stack's members 1..n-1 lead back to what member 1 reads
  const reentry: (number[] | null)[] = new Array(calls.length).fill(null);
  for (const st of view.stacks) {
    const back = at(calls, at(st.run.members, 1)).in;
    for (const m of st.run.members.slice(1)) reentry[m] = back;
  }
  if (view.stacks.length)
    for (let c = 0; c < calls.length; c++) if (!reentry[c]) reentry[c] = reentry[at(calls, c).parent] ?? null; // parents come first
  const hidden = (o: number) => at(ops, o)[0] >= 0 && reentry[at(ops, o)[0]] !== null;
  const parentsOf = (o: number): readonly number[] => (hidden(o) ? reentry[at(ops, o)[0]]! : at(ops, o)[1]);
  // 7. the parameters an add or a concatenation joins in
  const operands = (o: number): string[] =>
    NAMED.has(joinOf.get(o) ?? "") ? at(ops, o)[1].flatMap((p) => operandOf.get(p) ?? []) : [];
  const inputOf = tree.topo.inputOfOp;
  const outputOps = new Map(graph.output_ops);
  // What an op is for the walks: a model input or an op a drawn node owns (a source), else null.
  const sourceAt = (o: number, self: string): string | null | undefined => {
    const input = inputOf.get(o);
    if (input !== undefined) return inputKey(input);
    const w = at(ops, o)[0];
    const k = w >= 0 ? ownerKey[w] : null;
    if (k === self) return undefined; // the node's own op: not a source, not walked through
    return k;
  };
  // Sources reached walking back from `start` (exclusive of `start` itself when `skipStart`),
  // stopping at junction ops in `stops` (recorded as such).
  const reach = (
    start: number[],
    self: string,
    stops: Set<number> | null,
  ): { nodes: Set<string>; via: Set<number> } => {
    const nodes = new Set<string>();
    const via = new Set<number>();
    const seen = new Set<number>(start);
    const stack = [...start];
    while (stack.length) {
      const o = stack.pop()!;
      const src = sourceAt(o, self);
      if (src === undefined) continue;
      if (src !== null) {
        nodes.add(src);
        continue;
      }
      if (stops?.has(o)) {
        via.add(o);
        continue;
      }
      for (const p of parentsOf(o)) {
        if (seen.has(p)) continue;
        seen.add(p);
        stack.push(p);
      }
    }
    return { nodes, via };
  };

  // 2. the junction of each node with two or more incoming edges
  const incoming = new Map<string, ViewEdge[]>();
  for (const e of view.edges)
    if (e.kind !== "order") (incoming.get(e.dst) ?? incoming.set(e.dst, []).get(e.dst)!).push(e);
  const startsOf = (key: string): number[] => {
    const n = view.byKey.get(key)!;
    if (n.kind === "output") return (n.family?.members ?? [n.id]).flatMap((o) => outputOps.get(o) ?? []);
    if (n.kind === "stage") return at(calls, n.base ?? n.call).in;
    if (n.kind === "fold" && n.run) return at(calls, n.run.members[0]!).in;
    return [];
  };
  const junctionOf = new Map<string, number>(); // node key -> join op
  for (const [d, edges] of incoming) {
    // a node of one source: only an attention between them (GPT-2's fused c_attn -> c_proj)
    const one = edges.length < 2;
    const wanted = new Set(edges.map((e) => e.src));
    const seen = new Set<number>(startsOf(d));
    let queue = [...seen];
    let tried = 0;
    search: while (queue.length && tried < MAX_CANDIDATES) {
      const next: number[] = [];
      for (const o of queue) {
        const src = sourceAt(o, d);
        if (src !== null) continue; // a source, or the node's own op
        if (joinOf.has(o) && !hidden(o) && (!one || isAttention(joinOf.get(o)!) || operands(o).length)) {
          tried++;
          const { nodes } = reach(at(ops, o)[1], d, null);
          let hits = 0;
          for (const s of nodes) if (wanted.has(s)) hits++;
          if (hits >= (one ? 1 : 2)) {
            junctionOf.set(d, o);
            break search;
          }
        }
        for (const p of parentsOf(o)) {
          if (seen.has(p)) continue;
          seen.add(p);
          next.push(p);
        }
      }
      queue = next;
    }
  }
  // 2b. a stack's blocks that add their own residual once (MambaBlock: x + mixer(norm(x)), a
  // ResNet's block): the sum member 0 hands on is read by member 1, not drawn, and the node
  // after the stack reads it from one source, so no node found it: it is the junction of the
  // node after the stack, reading what member 0 adds (the stream from before the stack too)
  const fed = new Map<number, { d: string; nodes: Set<string> }>(); // such a junction op -> its node, the sources it reads
  for (const st of view.stacks) {
    if (st.run.members.length < 2) continue;
    const inside = (key: string) => view.byKey.get(key)?.path.includes(st.key) === true;
    for (const o of at(calls, at(st.run.members, 1)).in) {
      if (!joinOf.has(o) || hidden(o) || sourceAt(o, "") !== null) continue;
      const { nodes } = reach(at(ops, o)[1], junctionKey(o), null);
      if (nodes.size < 2) continue;
      for (const [d, edges] of incoming) {
        // (a tuple's port: its other items come from the other members, not through this sum)
        if (junctionOf.has(d) || inside(d) || view.byKey.get(d)?.family || !edges.some((e) => inside(e.src))) continue;
        if (!readsOp(startsOf(d), o, (q) => sourceAt(q, d) !== null, parentsOf)) continue;
        junctionOf.set(d, o);
        if (!fed.has(o)) fed.set(o, { d, nodes });
      }
    }
  }
  if (junctionOf.size === 0) return empty;

  // 3. each junction's inputs: drawn sources, and other junctions (7.'s among them)
  const joinOps = new Set(junctionOf.values());
  if (operandOf.size)
    for (const [o] of joinOf) if (!hidden(o) && sourceAt(o, "") === null && operands(o).length) joinOps.add(o);
  const direct = new Map<number, { nodes: Set<string>; via: Set<number> }>();
  for (const op of joinOps) direct.set(op, reach(at(ops, op)[1], junctionKey(op), joinOps));
  const closure = new Map<number, Set<string>>();
  const closed = (op: number, depth = 0): Set<string> => {
    let out = closure.get(op);
    if (out) return out;
    out = new Set(direct.get(op)!.nodes);
    if (depth < 64) for (const j of direct.get(op)!.via) for (const s of closed(j, depth + 1)) out.add(s);
    closure.set(op, out);
    return out;
  };

  // 4. the edges, redrawn
  const paths = containerPaths(tree, view.items);
  const list: Junction[] = [];
  const byKey = new Map<string, Junction>();
  const junctionFor = (op: number): Junction => {
    const key = junctionKey(op);
    let j = byKey.get(key);
    if (!j) {
      // 5. the container of the call that ran the op
      let path = [""];
      for (let c = at(ops, op)[0]; c >= 0; c = at(calls, c).parent) {
        const p = paths.get(clusterKey(at(calls, c).id));
        if (p) {
          path = p;
          break;
        }
      }
      const what = joinOf.get(op)!;
      j = { key, op, what, glyph: glyphOf(what), path, outs: [] };
      const named = operands(op);
      if (named.length) {
        const owner = at(ops, op)[0];
        const within = owner >= 0 ? `${at(calls, owner).module}.` : "";
        // (each qualified name, a word: "embeddings.cls_token + embeddings.position_embeddings")
        const own = (n: string) => n.split(" ").map((w) => (w.startsWith(within) ? w.slice(within.length) : w));
        j.operand = named.map((n) => own(n).join(" ")).join(", ");
      }
      if (isAttention(what)) {
        // the stage whose forward ran it (in a stack, the member's shown): a click shows its maps
        const owner = at(ops, op)[0];
        const st = view.stacks.find((x) => x.shown > 0 && path.includes(x.key));
        const shown = st ? (counterpart(tree, st.run, st.shown)?.get(owner) ?? owner) : owner;
        if (shown >= 0) j.stage = at(calls, shown).id;
      }
      byKey.set(key, j);
      list.push(j);
    }
    return j;
  };
  const edges: DrawnEdge[] = [];
  const relayed = new Map<string, DrawnEdge>(); // J' -> J: one line, whichever sources it carries
  // drawn once, of the strongest kind: the stream between two junctions (a residual's), a
  // source of a sum that two nodes read (GPT-2's last block: ln_f and the hidden states)
  const relay = (src: string, dst: string, e: ViewEdge) => {
    const k = `${src}>${dst}`;
    const prev = relayed.get(k);
    if (prev && RANK[prev.kind] <= RANK[e.kind]) return;
    if (prev) Object.assign(prev, { kind: e.kind, edge: e });
    else {
      const drawn: DrawnEdge = { src, dst, kind: e.kind, edge: e };
      relayed.set(k, drawn);
      edges.push(drawn);
    }
  };
  const ofNodes = new Set(junctionOf.values());
  // What the data of `s` comes into junction `op` from: s itself, the junction it passed, or
  // null (it does not pass `op`). Through 7.'s junctions, which no node reads, it is drawn on.
  const feed = (s: string, op: number, e: ViewEdge, straight: boolean): string | null => {
    const d = direct.get(op)!;
    if (d.nodes.has(s)) return s;
    if (straight) return null;
    let via: number | null = null;
    for (const v of d.via) if (closed(v).has(s)) via = v;
    if (via === null) return null;
    const key = junctionFor(via).key;
    if (!ofNodes.has(via)) {
      const from = feed(s, via, e, false);
      if (from !== null) relay(from, key, e);
    }
    return key;
  };
  const data = new Set<string>(); // nodes that a sum brings data, not conditioning alone
  for (const e of view.edges) {
    const op = junctionOf.get(e.dst);
    if (op === undefined || e.kind === "order") {
      edges.push({ src: e.src, dst: e.dst, kind: e.kind, edge: e });
      continue;
    }
    // (a tuple's items, model/ports.ts: another item's source comes straight, not through the sum)
    const src = feed(e.src, op, e, !!view.byKey.get(e.dst)?.family);
    if (src === null) edges.push({ src: e.src, dst: e.dst, kind: e.kind, edge: e });
    else {
      if (e.kind !== "merge") data.add(e.dst);
      relay(src, junctionFor(op).key, e);
    }
  }
  for (const [d, op] of junctionOf) {
    const j = junctionFor(op);
    j.outs.push(d);
    // a sum of conditioning alone (SDXL's time embedding plus its added text-time one) conditions
    edges.push({ src: j.key, dst: d, kind: data.has(d) ? "flow" : "merge", edge: null });
  }
  // 2b's junctions: the sources they add that no edge of their node brought (the stream: a
  // skip from before the stack into the node after it, as member k + 1 reads member k's input)
  for (const [op, { d, nodes }] of fed) {
    const j = junctionFor(op);
    for (const src of nodes)
      if (!edges.some((e) => e.src === src && e.dst === j.key)) {
        const edge: ViewEdge = { src, dst: d, kind: "skip", readers: 1 };
        edges.push({ src, dst: j.key, kind: "skip", edge });
      }
  }
  return { junctions: list, byKey, edges };
}

/** Whether a walk back from `start` (through ops that are not sources) meets `op`. */
function readsOp(
  start: readonly number[],
  op: number,
  isSource: (o: number) => boolean,
  parentsOf: (o: number) => readonly number[],
): boolean {
  const seen = new Set<number>(start);
  const stack = [...start];
  while (stack.length) {
    const o = stack.pop()!;
    if (o === op) return true;
    if (isSource(o)) continue;
    for (const p of parentsOf(o))
      if (!seen.has(p)) {
        seen.add(p);
        stack.push(p);
      }
  }
  return false;
}

/** The drawing's ends: a junction's key, else the view node's (for containers and paths). */
export function pathOf(view: ViewGraph, drawing: Drawing, key: string): string[] | null {
  const j = drawing.byKey.get(key);
  if (j) return j.path;
  return view.byKey.get(key)?.path ?? null;
}
