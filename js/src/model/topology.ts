/**
 * Stage edges for a selection of calls: the twin of `neural_flow_widget/graph/edges.py`.
 * Both sides must produce identical edges (a golden file written by Python checks it).
 *
 *   1. owner[c] = nearest ancestor-or-self of call c in the selection S, else -1;
 *      own(op) = owner[op's owner call] (or -1 for ops of the model's own body).
 *   2. For each stage s in S (increasing call index) walk backwards from at(calls, s).in through
 *      op parents: a model input op records that input and stops; an op owned by another
 *      selected stage (not s, not an ancestor of s) records that stage and stops; else the
 *      walk goes on to the op's parents.
 *   3. Each model output walks from its output ops: input op -> input, owned op -> owner.
 *   4. Canonical order: inputs, stages by call index, outputs. ancestors(n) is the union over
 *      its sources m of ancestors(m) + {m}, over these real edges only.
 *   5. primary ("flow"): the trunk is an argument of the call (its start ops grouped by
 *      at(calls, s).args; an output's ops: one argument each): the state it continues
 *      (at(calls, s).state), else the first argument that has a source (a model input counts;
 *      one argument: all sources); where the walk went through a leading product (a join of
 *      a kind in LEADING: its output continues its first operand, an attention its queries;
 *      or one of graph.leads, an elementwise join broadcasting to its first operand's shape),
 *      only the trunk's sources behind the first operands (a relay counts whole), when any;
 *      of those the one with most ancestors, then the earliest canonical. path(n) =
 *      {n} + path(primary(n)) (the chain of flow edges behind n). Another source inside
 *      path(primary) -> "skip", unless found directly only through a broadcast join's
 *      operands after its first (walked after the rest of the direct part: what modulates
 *      the data); else -> "merge".
 *   5b. A relay is an op the walk goes through that another selected stage (not s, not an
 *      ancestor of s; any stage for an output) takes as input and that carries data of two
 *      or more sources (an op carrying one source's data is walked through as direct). The
 *      walk crosses relays only after its direct part; a non-primary source found only
 *      beyond a relay that is an ancestor of another non-primary source gets no edge (it was
 *      shown entering the stage that read the relay). Ancestry (4) still counts every
 *      source.
 *   6. A stage without sources is attached ("order": runs after, no data) to the previous
 *      selected stage by call index, or to inputs[0]; attachments do not count for 4-5.
 *   7. topology "sequential" ignores ops: inputs[0] -> stages in order -> every output.
 *   8. Edges sorted by destination, then source, in canonical order.
 */
import type { EdgeKind, WireEdge, WireGraph } from "../wire";
import { at } from "../wire_check";

/** Joins whose output continues their first operand (graph/edges.py LEADING). */
const LEADING = new Set([
  "matmul",
  "attention",
  "scaled_dot_product_attention",
  "multi_head_attention_forward",
  "flex_attention",
]);

/** Precomputed lookups that do not depend on the selection. */
export interface TopologyIndex {
  graph: WireGraph;
  inputOfOp: Map<number, string>; // op id -> model input id
  leadOf: Map<number, number>; // a leading product's (or broadcast join's) op -> its first parent
  broadcast: Set<number>; // the broadcast joins (graph.leads) among them
}

export function topologyIndex(graph: WireGraph): TopologyIndex {
  const inputOfOp = new Map<number, string>();
  for (const [name, op] of graph.input_ops) inputOfOp.set(op, name);
  const leadOf = new Map<number, number>();
  for (const [op, kind] of graph.joins) {
    const first = graph.ops[op]?.[1][0]; // (checked on the wire; a test's graph may drop ops)
    if (LEADING.has(kind) && first !== undefined) leadOf.set(op, first);
  }
  const broadcast = new Set<number>();
  for (const op of graph.leads) {
    const first = graph.ops[op]?.[1][0]; // an elementwise join's full-shaped operand
    if (first === undefined) continue;
    leadOf.set(op, first);
    broadcast.add(op);
  }
  return { graph, inputOfOp, leadOf, broadcast };
}

function isCallAncestor(graph: WireGraph, a: number, s: number): boolean {
  for (let p = at(graph.calls, s).parent; p >= 0; p = at(graph.calls, p).parent) if (p === a) return true;
  return false;
}

function popcount(words: Uint32Array, from: number, n: number): number {
  let total = 0;
  for (let i = from; i < from + n; i++) {
    let v = words[i]!;
    v = v - ((v >>> 1) & 0x55555555);
    v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
    total += (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
  }
  return total;
}

/**
 * Edges between the selected calls (plus model inputs and outputs), by the walk above.
 * `selection` holds call indices; node ids are at(calls, s).id and the input / output names.
 */
export function stageEdges(index: TopologyIndex, selection: Iterable<number>): WireEdge[] {
  const { graph, inputOfOp, leadOf, broadcast } = index;
  const { calls, ops } = graph;
  const stages = [...new Set(selection)].sort((a, b) => a - b);
  const inS = new Uint8Array(calls.length);
  for (const s of stages) inS[s] = 1;

  // Canonical order: inputs, stages, outputs.
  const nIn = graph.inputs.length;
  const nodeIds: string[] = [...graph.inputs, ...stages.map((s) => at(calls, s).id), ...graph.outputs];
  const inputPos = new Map<string, number>();
  for (const [i, name] of graph.inputs.entries()) inputPos.set(name, i);
  const stagePos = new Map<number, number>();
  for (const [i, s] of stages.entries()) stagePos.set(s, nIn + i);
  const outBase = nIn + stages.length;

  const edges: WireEdge[] = [];
  const edge = (src: number, dst: number, kind: EdgeKind) =>
    edges.push({ src: at(nodeIds, src), dst: at(nodeIds, dst), kind });

  if (graph.topology === "sequential") {
    let prev = nIn > 0 ? 0 : -1;
    for (const s of stages) {
      const pos = stagePos.get(s)!;
      if (prev >= 0) edge(prev, pos, "flow");
      prev = pos;
    }
    if (prev >= 0) for (let o = 0; o < graph.outputs.length; o++) edge(prev, outBase + o, "flow");
    return edges;
  }

  // 1. owner of every call (parents precede children in start order).
  const owner = new Int32Array(calls.length);
  for (let c = 0; c < calls.length; c++) {
    const p = at(calls, c).parent;
    owner[c] = inS[c] ? c : p >= 0 ? owner[p]! : -1;
  }
  const own = (o: number) => {
    const w = at(ops, o)[0];
    return w >= 0 ? owner[w]! : -1;
  };

  // 2.-3. Backward walks; a stamp per op replaces a visited set per walk. A relay (an op
  // walked through that another selected stage also reads) is crossed only after the direct
  // part of the walk; sources first found beyond it are "relayed" (step 5b).
  const readers = new Map<number, number[]>();
  for (const s of stages) for (const o of at(calls, s).in) (readers.get(o) ?? readers.set(o, []).get(o)!).push(s);
  const isRelay = (o: number, stage: number): boolean =>
    (readers.get(o) ?? []).some((r) => stage < 0 || (r !== stage && !isCallAncestor(graph, r, stage)));
  // What an op reaches, walking through everything (relays too), by the walking stage's
  // selected ancestors (the nearest one stands for them all): an op the walk reaches
  // precedes the stage, so what lies behind it depends on nothing else.
  const reached = new Map<number, Map<number, Set<number>>>();
  const reachStamp = new Int32Array(ops.length);
  let reachWalk = 0;
  const owns = (w: number, stage: number) =>
    w !== -1 && (stage < 0 || (w !== stage && !isCallAncestor(graph, w, stage)));
  // where a walk stops: a model input, or an op of another selected stage (its source, found)
  const source = (o: number, stage: number, found: Set<number>): boolean => {
    const input = inputOfOp.get(o);
    if (input !== undefined) {
      const pos = inputPos.get(input);
      if (pos !== undefined) found.add(pos);
      return true;
    }
    const w = own(o);
    if (!owns(w, stage)) return false;
    found.add(stagePos.get(w)!);
    return true;
  };
  const reach = (first: number, stage: number): Set<number> => {
    const parent = stage < 0 ? -1 : at(calls, stage).parent;
    const key = stage < 0 ? -2 : parent >= 0 ? owner[parent]! : -1;
    const memo = reached.get(key) ?? reached.set(key, new Map()).get(key)!;
    const hit = memo.get(first);
    if (hit) return hit;
    const found = new Set<number>();
    const todo = [first];
    reachStamp[first] = ++reachWalk;
    while (todo.length) {
      const o = todo.pop()!;
      const known = o !== first ? memo.get(o) : undefined;
      if (known) {
        for (const m of known) found.add(m);
        continue;
      }
      if (source(o, stage, found)) continue;
      for (const p of at(ops, o)[1]) {
        if (reachStamp[p] === reachWalk) continue;
        reachStamp[p] = reachWalk;
        todo.push(p);
      }
    }
    memo.set(first, found);
    return found;
  };
  const stamp = new Int32Array(ops.length);
  let walk = 0;
  const relayed: Set<number>[] = [];
  const byArgument: Set<number>[][] = []; // per node: what each argument reaches (step 5)
  const leads: Set<number>[] = []; // per node: the trunk's sources behind leading products (5)
  const modulating: Set<number>[] = []; // per node: sources reached directly only as modulation (5)
  // the sources behind `trunk`, through the first operand only of each leading product
  const leading = (trunk: number[], starts: Set<number>, stage: number): Set<number> => {
    walk++;
    const found = new Set<number>();
    const todo = [...trunk];
    while (todo.length) {
      const o = todo.pop()!;
      if (stamp[o] === walk || source(o, stage, found)) continue;
      stamp[o] = walk;
      if (!starts.has(o) && isRelay(o, stage)) for (const m of reach(o, stage)) found.add(m);
      else if (leadOf.has(o)) todo.push(leadOf.get(o)!);
      else todo.push(...at(ops, o)[1]);
    }
    return found;
  };
  const sourcesOf = (start: number[], groups: number[][], stage: number, node: number): number[] => {
    let stack: number[] = [];
    const held: number[] = [];
    let led = false; // whether the direct part went through a leading product
    // from the ops on the stack, into `found`; relays held back unless `crossRelays`; with
    // `later`, a broadcast join's operands after its first wait there
    const visit = (found: Set<number>, crossRelays: boolean, starts: Set<number>, later?: number[]) => {
      while (stack.length) {
        const o = stack.pop()!;
        if (source(o, stage, found)) continue;
        if (!crossRelays && !starts.has(o) && isRelay(o, stage)) {
          const behind = reach(o, stage);
          if (behind.size > 1)
            held.push(o); // a stream: crossed after the direct part
          else for (const m of behind) found.add(m); // one source's data: direct
          continue;
        }
        if (!crossRelays && leadOf.has(o)) led = true;
        const parents = at(ops, o)[1];
        const now = later && broadcast.has(o) ? parents.slice(0, 1) : parents;
        if (now !== parents) later!.push(...parents.slice(1));
        for (const p of now) {
          if (stamp[p] === walk) continue;
          stamp[p] = walk;
          stack.push(p);
        }
      }
    };
    // one start after the other (their walks share the stamps), then beyond the relays
    walk++;
    const found = new Set<number>();
    const starts = new Set(start);
    const later: number[] = [];
    for (const o of start) {
      if (stamp[o] === walk) continue;
      stamp[o] = walk;
      stack = [o];
      visit(found, false, starts, later);
    }
    // then what broadcast joins modulate the data with: sources found only there merge
    const mod = new Set<number>();
    for (const o of later) {
      if (stamp[o] === walk) continue;
      stamp[o] = walk;
      stack.push(o);
    }
    visit(mod, false, starts);
    for (const m of found) mod.delete(m);
    for (const m of mod) found.add(m);
    modulating[node] = mod;
    const direct = new Set(found);
    if (held.length) {
      stack = held;
      visit(found, true, starts);
    }
    relayed[node] = new Set([...found].filter((m) => !direct.has(m)));
    byArgument[node] = [];
    if (groups.length > 1 && found.size > 1) {
      for (const group of groups) {
        walk++;
        for (const o of group) {
          stamp[o] = walk;
          stack.push(o);
        }
        const reachedHere = new Set<number>();
        visit(reachedHere, true, starts);
        byArgument[node].push(reachedHere);
      }
    }
    leads[node] = new Set();
    if (led && found.size > 1) {
      const trunk = groups.find((_, i) => (byArgument[node]![i]?.size ?? 0) > 0) ?? start;
      leads[node] = leading(trunk, starts, stage);
    }
    return [...found].sort((a, b) => a - b);
  };
  // a call's start ops by argument: the state it continues first, then in argument order
  const groupsOf = (s: number): number[][] => {
    const { in: inOps, args, state } = at(calls, s);
    const by = new Map<number, number[]>();
    for (const [i, o] of inOps.entries()) (by.get(args[i]!) ?? by.set(args[i]!, []).get(args[i]!)!).push(o);
    const order = [...by.keys()].sort((a, b) => Number(a !== state) - Number(b !== state) || a - b);
    return order.map((a) => by.get(a)!);
  };

  const nNodes = nodeIds.length;
  const sources: number[][] = new Array(nNodes);
  for (const [i, s] of stages.entries()) sources[nIn + i] = sourcesOf(at(calls, s).in, groupsOf(s), s, nIn + i);
  const outputOps = new Map(graph.output_ops);
  graph.outputs.forEach((name, i) => {
    const start = outputOps.get(name) ?? [];
    sources[outBase + i] = sourcesOf(
      start,
      start.map((o) => [o]),
      -1,
      outBase + i,
    );
  });

  // 4. Ancestor bitsets in canonical order (sources always precede their destination).
  const words = (nNodes + 31) >>> 5;
  const anc = new Uint32Array(nNodes * words);
  const path = new Uint32Array(nNodes * words); // a node and the flow chain behind it (5)
  const ancCount = new Int32Array(nNodes);
  for (let n = nIn; n < nNodes; n++) {
    const src = sources[n];
    if (!src || src.length === 0) continue;
    const row = n * words;
    for (const m of src) {
      const mrow = m * words;
      for (let w = 0; w < words; w++) anc[row + w]! |= anc[mrow + w]!;
      anc[row + (m >>> 5)]! |= 1 << (m & 31);
    }
    ancCount[n] = popcount(anc, row, words);
  }

  for (let n = 0; n < nIn; n++) path[n * words + (n >>> 5)]! |= 1 << (n & 31);
  // 5.-6. Kinds, attachments; destinations and sources are already in canonical order.
  let prevStage = -1;
  for (let n = nIn; n < nNodes; n++) {
    const src = sources[n];
    const isStage = n < outBase;
    path[n * words + (n >>> 5)]! |= 1 << (n & 31);
    if (!src || src.length === 0) {
      if (isStage) {
        const from = prevStage >= 0 ? prevStage : nIn > 0 ? 0 : -1;
        if (from >= 0) edge(from, n, "order");
      }
    } else {
      // the trunk: the first argument with a source (else all); of its sources the deepest,
      // then the earliest (src is in canonical order)
      let trunk = byArgument[n]!.find((g) => g.size > 0) ?? new Set(src);
      const led = [...leads[n]!].filter((m) => trunk.has(m)); // behind products' first operands
      if (led.length) trunk = new Set(led);
      let primary = -1;
      for (const m of src) if (trunk.has(m) && (primary < 0 || ancCount[m]! > ancCount[primary]!)) primary = m;
      const prow = primary * words;
      for (let w = 0; w < words; w++) path[n * words + w]! |= path[prow + w]!;
      // 5b. ancestors of the other sources (a source is never its own ancestor)
      const covered = new Uint32Array(words);
      for (const u of src) if (u !== primary) for (let w = 0; w < words; w++) covered[w]! |= anc[u * words + w]!;
      for (const m of src) {
        // an older contributor of a relayed stream: shown where the relay was read
        if (m !== primary && relayed[n]!.has(m) && covered[m >>> 5]! & (1 << (m & 31))) continue;
        const onPath = path[prow + (m >>> 5)]! & (1 << (m & 31)) && !modulating[n]!.has(m);
        const kind: EdgeKind = m === primary ? "flow" : onPath ? "skip" : "merge";
        edge(m, n, kind);
      }
    }
    if (isStage) prevStage = n;
  }
  return edges;
}
