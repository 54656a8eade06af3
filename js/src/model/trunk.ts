/**
 * The trunk of a drawing: the one path the layout keeps straight, and what hangs off it.
 * Pure and DOM-free; scene.ts hands the result to the layout (which item is on the trunk).
 *
 *   - Order: every drawn node and junction, sources before what reads them (canonical order
 *     where the edges leave a choice; a junction just before the first node it feeds).
 *   - A residual: a junction J whose non-flow input s is also where J's flow input comes from
 *     (s -> ... -> b -> J along flow edges, and s -> J): the branch b leaves the stream at s
 *     and joins it again at J. Such pairs nest in a U-Net (enc1 -> dec1 around enc2 -> dec2):
 *     those are skips across a U, not residuals; only pairs that neither hold nor sit inside
 *     another are residuals (a transformer's blocks follow one another).
 *   - The trunk starts at the first input (else the first node) and goes on, from a node
 *     that is a residual's stream input, to its junction (the stream stays straight, the
 *     sublayers branch off); else to the flow successor with the longest way still to go.
 *     Another input whose way so found ends in a model output without meeting the trunk (a
 *     decoder, which reads its encoder only through a bus) has a trunk of its own, its
 *     column's (scene/request.ts); not one that the drawn edges, buses aside, hold to the
 *     first (CLIP's towers meet in the similarity: the other tower stands beside the trunk).
 *   - Buses: a source that feeds three or more nodes by skip or merge edges (an attention mask
 *     read by every layer, a timestep embedding, an encoder's output) is drawn as one line
 *     with a tap into each; those edges stay out of the layout. An edge into a fold or into a
 *     stack's node counts the members it stands for (view_model.ts ViewEdge.readers): the
 *     encoder's output into "DecoderLayer × 6" is read by six layers, one tap.
 *   - A bus is labelled "cross-attention" where its source comes after one run of blocks (its
 *     chain of flow edges passes a fold or a stack) and it taps the blocks of another, by no
 *     residual's skip: an encoder's output into the decoder's layers.
 */
import { isAttentionJoin } from "../wire";
import type { Drawing, DrawnEdge } from "./junctions";
import type { ViewGraph } from "./view_model";

export interface Trunk {
  order: string[]; // every drawn key, sources first
  pos: Map<string, number>;
  spine: Set<string>; // keys on the trunk
  spineOrder: string[];
  residual: Set<string>; // "s>J" of the residual pairs
  buses: Map<string, DrawnEdge[]>; // source key -> its tapped edges
  labels: Map<string, string>; // source key of a bus -> what it carries ("cross-attention")
}

export const BUS_MIN = 3;

function topoOrder(keys: string[], priority: Map<string, number>, edges: DrawnEdge[]): string[] {
  const ins = new Map<string, string[]>();
  for (const e of edges) (ins.get(e.dst) ?? ins.set(e.dst, []).get(e.dst)!).push(e.src);
  for (const list of ins.values()) list.sort((a, b) => (priority.get(a) ?? 0) - (priority.get(b) ?? 0));
  const sorted = [...keys].sort((a, b) => priority.get(a)! - priority.get(b)!);
  const state = new Map<string, number>(); // 1 visiting, 2 done
  const order: string[] = [];
  for (const root of sorted) {
    if (state.get(root)) continue;
    const stack: [string, number][] = [[root, 0]];
    state.set(root, 1);
    while (stack.length) {
      const top = stack[stack.length - 1]!;
      const list = ins.get(top[0]) ?? [];
      if (top[1] < list.length) {
        const u = list[top[1]++]!;
        if (!state.get(u) && priority.has(u)) {
          state.set(u, 1);
          stack.push([u, 0]);
        }
        continue;
      }
      stack.pop();
      state.set(top[0], 2);
      order.push(top[0]);
    }
  }
  return order;
}

export function trunkOf(view: ViewGraph, drawing: Drawing): Trunk {
  const priority = new Map<string, number>();
  for (const [i, n] of view.nodes.entries()) priority.set(n.key, i);
  // a junction just before what it feeds (a junction of a parameter joined in feeds a junction)
  const feeds = new Map<string, string>();
  for (const e of drawing.edges) if (drawing.byKey.has(e.src)) feeds.set(e.src, e.dst);
  const rank = (key: string, depth = 0): number => {
    const outs = drawing.byKey.get(key)?.outs;
    if (!outs || depth > 64) return priority.get(key) ?? 0;
    return Math.min(...(outs.length ? outs : [feeds.get(key) ?? ""]).map((d) => rank(d, depth + 1))) - 0.5;
  };
  for (const j of drawing.junctions) priority.set(j.key, rank(j.key));
  const keys = [...priority.keys()];
  const buses = new Map<string, DrawnEdge[]>();
  const side = new Map<string, DrawnEdge[]>();
  const cross = crossKeysAndValues(drawing); // (a cross-attention's keys and values: the encoder's output)
  for (const e of drawing.edges) {
    if (e.kind === "skip" || e.kind === "merge" || cross.has(e.dst))
      (side.get(e.src) ?? side.set(e.src, []).get(e.src)!).push(e);
  }
  const few = new Map<string, DrawnEdge[]>(); // read by fewer: a bus where it is a cross-attention
  for (const [src, list] of side) {
    const readers = new Map<string, number>();
    for (const e of list) readers.set(e.dst, Math.max(readers.get(e.dst) ?? 0, e.edge?.readers ?? 1));
    let n = 0;
    for (const r of readers.values()) n += r;
    // (a sum of conditioning alone is one too: SDXL's time embedding plus its text-time one)
    if (drawing.byKey.has(src) && !list.every((e) => e.kind === "merge")) continue;
    (n >= BUS_MIN ? buses : few).set(src, list);
  }
  const labels = crossing(view, drawing, buses);
  // the encoder's output into a decoder of one or two layers: the one labelled bus all the same
  for (const [src, label] of crossing(view, drawing, few)) {
    buses.set(src, few.get(src)!);
    labels.set(src, label);
  }
  const bused = new Set([...buses.values()].flat());
  const edges = drawing.edges.filter((e) => !bused.has(e));
  const order = topoOrder(keys, priority, edges);
  const pos = new Map(order.map((k, i) => [k, i]));

  const flowIn = new Map<string, string>();
  const flowOut = new Map<string, string[]>();
  for (const e of edges) {
    if (e.kind !== "flow") continue;
    if (!flowIn.has(e.dst)) flowIn.set(e.dst, e.src);
    (flowOut.get(e.src) ?? flowOut.set(e.src, []).get(e.src)!).push(e.dst);
  }
  // residual candidates: s -> J (not flow) where s leads to J's flow input along flow edges
  const pairs: [string, string][] = [];
  for (const e of edges) {
    if (e.kind === "flow" || e.kind === "order" || !drawing.byKey.has(e.dst)) continue;
    let b = flowIn.get(e.dst);
    for (let steps = 0; b !== undefined && b !== e.src && steps < 4096; steps++) b = flowIn.get(b);
    if (b === e.src) pairs.push([e.src, e.dst]);
  }
  const span = (p: [string, string]): [number, number] => [pos.get(p[0])!, pos.get(p[1])!];
  const nested = new Set<number>();
  // (pairs are few: one per junction)
  for (let i = 0; i < pairs.length; i++) {
    const [a0, a1] = span(pairs[i]!);
    for (let j = 0; j < pairs.length; j++) {
      if (i === j) continue;
      const [b0, b1] = span(pairs[j]!);
      if (a0 < b0 && b1 < a1) nested.add(i).add(j);
    }
  }
  const residual = new Set<string>();
  const streamTo = new Map<string, string>();
  pairs.forEach((p, i) => {
    if (nested.has(i)) return;
    residual.add(`${p[0]}>${p[1]}`);
    const prev = streamTo.get(p[0]);
    if (prev === undefined || pos.get(p[1])! < pos.get(prev)!) streamTo.set(p[0], p[1]);
  });
  const succ = (u: string): string[] => {
    const s = streamTo.get(u);
    return s !== undefined ? [s] : (flowOut.get(u) ?? []);
  };
  // the longest way on from each key (reverse order)
  const rest = new Map<string, number>();
  for (let i = order.length - 1; i >= 0; i--) {
    let best = 0;
    for (const v of succ(order[i]!)) best = Math.max(best, rest.get(v) ?? 0);
    rest.set(order[i]!, best + 1);
  }
  const walk = (from: string | undefined): string[] => {
    const path: string[] = [];
    const on = new Set<string>();
    for (let u = from; u !== undefined && !on.has(u); ) {
      on.add(u);
      path.push(u);
      let next: string | undefined;
      for (const v of succ(u)) if (next === undefined || rest.get(v)! > rest.get(next)!) next = v;
      u = next;
    }
    return path;
  };
  const inputs = view.nodes.filter((n) => n.kind === "input").map((n) => n.key);
  const spineOrder = walk(inputs[0] ?? order[0]);
  const spine = new Set(spineOrder);
  // another input's own trunk, where it runs to an output apart from the first (a decoder
  // beside its encoder, which it reads only through the cross-attention bus): its column's
  // (not one the edges drawn, buses aside, hold to the first: CLIP's two towers meet in the
  // similarity (x): one trunk, the other tower beside it)
  const outputs = new Set(view.nodes.filter((n) => n.kind === "output").map((n) => n.key));
  const part = new Map<string, string>();
  const find = (k: string): string => {
    let r = k;
    while (part.has(r) && part.get(r) !== r) r = part.get(r)!;
    part.set(k, r);
    return r;
  };
  for (const e of edges) if (e.kind !== "order") part.set(find(e.src), find(e.dst));
  const first = spineOrder[0];
  for (const input of inputs.slice(1)) {
    if (spine.has(input) || (first !== undefined && find(input) === find(first))) continue;
    const path = walk(input);
    if (outputs.has(path[path.length - 1]!) && !path.some((k) => spine.has(k)))
      for (const k of path) {
        spine.add(k);
        spineOrder.push(k);
      }
  }
  return { order, pos, spine, spineOrder, residual, buses, labels };
}

/** The run of blocks a drawn key belongs to: a fold's, or the stack's it is drawn in. */
function runAt(view: ViewGraph, drawing: Drawing, key: string): string | null {
  const node = view.byKey.get(key);
  if (node?.kind === "fold") return node.run?.key ?? null;
  if (node?.kind === "stage") {
    // a module drawn collapsed that holds a run of blocks (Whisper's encoder, folded to fit)
    const { calls } = view.tree.graph;
    const holds = (c: number) => {
      for (let p = calls[c]?.parent ?? -1; p >= 0; p = calls[p]?.parent ?? -1) if (p === node.call) return true;
      return false;
    };
    const run = view.tree.runList.find((r) => holds(r.members[0]!));
    if (run) return run.key;
  }
  const path = node?.path ?? drawing.byKey.get(key)?.path ?? [];
  // (a stack's, or a run's drawn unfolded, each block in turn)
  for (let i = path.length - 1; i >= 0; i--) if (/^[kr]:/.test(path[i]!)) return path[i]!.slice(2);
  return null;
}

/** The buses from after one run of blocks into the blocks of another: "cross-attention". Never
 * a residual's shortcut (a skip edge): ResNet-50's layer3.0 into "Bottleneck × 5" is not. */
function crossing(view: ViewGraph, drawing: Drawing, buses: Map<string, DrawnEdge[]>): Map<string, string> {
  const flowIn = new Map<string, string>();
  for (const e of drawing.edges) if (e.kind === "flow" && !flowIn.has(e.dst)) flowIn.set(e.dst, e.src);
  const labels = new Map<string, string>();
  for (const [src, list] of buses) {
    if (list.some((e) => e.kind === "skip")) continue;
    let from: string | null = null;
    for (let u: string | undefined = src, steps = 0; u !== undefined && !from && steps < 64; steps++) {
      from = runAt(view, drawing, u);
      u = flowIn.get(u);
    }
    if (from === null) continue;
    const into = list.map((e) => runAt(view, drawing, e.dst));
    if (into.every((r) => r !== null && r !== from)) labels.set(src, "cross-attention");
  }
  return labels;
}

/** The drawn nodes whose data goes on only as the keys or values of an attention whose
 * queries come another way (each edge out of them a merge into an attention junction whose
 * flow input's chain of flow edges does not pass their own source): a decoder's k_proj and
 * v_proj, reading the encoder. The edge into them is a cross-attention, as the merge into a
 * folded cross-attention is (a bus, a link between columns); a self-attention's are not. */
export function crossKeysAndValues(drawing: Drawing): Set<string> {
  const flowIn = new Map<string, string>();
  const out = new Map<string, DrawnEdge[]>();
  for (const e of drawing.edges) {
    if (e.kind === "flow" && !flowIn.has(e.dst)) flowIn.set(e.dst, e.src);
    (out.get(e.src) ?? out.set(e.src, []).get(e.src)!).push(e);
  }
  const passes = (from: string | undefined, s: string) => {
    for (let u = from, steps = 0; u !== undefined && steps < 4096; u = flowIn.get(u), steps++) if (u === s) return true;
    return false;
  };
  const found = new Set<string>();
  for (const [d, list] of out) {
    const s = flowIn.get(d);
    const cross = (e: DrawnEdge) => {
      const j = drawing.byKey.get(e.dst);
      return e.kind !== "flow" && !!j && isAttentionJoin(j.what) && !passes(flowIn.get(e.dst), s!);
    };
    if (s !== undefined && list.every(cross)) found.add(d);
  }
  return found;
}
