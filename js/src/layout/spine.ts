/**
 * The trunk layout of a group: its trunk items (the global trunk through this group, else
 * the group's longest flow path) stacked on one straight line, everything else in strands
 * (chains of flow edges) in columns beside it. Rows come from the longest path (a source that
 * nothing in the group feeds sits just above its first reader); each strand keeps one column
 * for its rows, the branches of the trunk to the right first, sources (and what only they feed:
 * a second tower's outputs) to the left (to the right in the first of two columns: beside its
 * blocks' branches); a strand's
 * column clears what is beside it in its rows only, so a sublayer sits next to the residual
 * stream, not beyond the widest node; where the root is too wide so (layout.ts), the sources
 * that feed one reader stand one above the other in its column (`sourcesStacked`), outputs
 * that one item feeds one under the other in a column beside the trunk (`sinksStacked`), or a
 * group under a wider node stands flush with the node's near side (`flush`). Too many
 * columns (a tangle): null, and the layered solver takes the group. Routing is routes.ts's, wrapping the root into bands bands.ts's.
 * Flow coordinates (flow.ts); pure, no DOM.
 */
import { at } from "../wire_check";
import { type Arranged, type FlowGroup, RANKSEP, topoOrder } from "./flow";

export const BRANCH_GAP = 40; // between the trunk and a branch beside it
const STRAND_GAP = 28; // between two branches
const JUNCTION_SEP = 20; // rows of junctions only sit closer
const MAX_COL = 3;

interface Strand {
  items: number[];
  r0: number;
  r1: number;
  side: number;
  keep?: number; // a twin of a trunk item: how far from it in their run (placed nearer first),
  // farther out on its side before the other
}

/** The longest path over flow edges, in order (the trunk of a group the global one misses). */
function localSpine(g: FlowGroup, order: number[]): number[] {
  const n = g.items.length;
  const best = new Int32Array(n).fill(1);
  const prev = new Int32Array(n).fill(-1);
  const pos = new Int32Array(n);
  for (const [i, v] of order.entries()) pos[v] = i;
  const flows = g.edges.filter((e) => e.kind === "flow" && e.src >= 0 && e.dst >= 0 && pos[e.src]! < pos[e.dst]!);
  flows.sort((x, y) => pos[x.dst]! - pos[y.dst]!);
  for (const e of flows) {
    if (best[e.src]! + 1 > best[e.dst]!) {
      best[e.dst] = best[e.src]! + 1;
      prev[e.dst] = e.src;
    }
  }
  let end = order[0]!;
  for (const v of order) if (best[v]! > best[end]!) end = v;
  const path: number[] = [];
  for (let v = end; v >= 0; v = prev[v]!) path.push(v);
  return path.reverse();
}

/** Rows, columns and positions of a group's items; null when its branches tangle. */
export function arrange(g: FlowGroup): Arranged | null {
  const { items, edges } = g;
  const n = items.length;
  let order = topoOrder(n, edges, true);
  const spine = new Uint8Array(n);
  let trunk = order.filter((v) => at(items, v).spine);
  if (trunk.length === 0) trunk = localSpine(g, order);
  for (const v of trunk) spine[v] = 1;
  const ins: number[][] = Array.from({ length: n }, () => []);
  const outs: number[][] = Array.from({ length: n }, () => []);
  const flowIn = new Int32Array(n).fill(-1);
  for (const e of edges) {
    // "runs after (no data)" places nothing: such a stage sits where its data goes
    if (e.src < 0 || e.dst < 0 || e.src === e.dst || e.kind === "order") continue;
    at(ins, e.dst).push(e.src);
    at(outs, e.src).push(e.dst);
    if (e.kind === "flow" && flowIn[e.dst]! < 0) flowIn[e.dst] = e.src;
  }
  const entered = new Uint8Array(n);
  for (const v of g.entries) entered[v] = 1;
  const tapped = new Uint8Array(n); // (fed by a bus from outside: stacked, facing it)
  for (const v of g.tapped ?? []) tapped[v] = 1;
  const stacked = g.sourcesStacked || tapped.includes(1);
  // twins of a trunk item (fed by the same items, read by the same: an attention's query, key
  // and value) stand in their run's order, the middle one on the trunk: "query | key | value"
  // as the paper draws them, never "value | query | key"
  const twinOf = twinsOnTrunk(items, order, trunk, spine, entered, ins, outs);
  if (g.sourcesInline) [trunk, order] = inline(trunk, order, ins, outs, spine, entered);

  // rows: the longest path, the trunk strictly in order
  const row = new Int32Array(n);
  const pos = new Int32Array(n);
  for (const [i, v] of order.entries()) pos[v] = i;
  const prevOnTrunk = new Int32Array(n).fill(-1);
  for (let i = 1; i < trunk.length; i++) prevOnTrunk[trunk[i]!] = trunk[i - 1]!;
  for (const v of order) {
    let r = 0;
    for (const u of at(ins, v)) if (pos[u]! < pos[v]!) r = Math.max(r, row[u]! + 1);
    if (prevOnTrunk[v]! >= 0) r = Math.max(r, row[prevOnTrunk[v]!]! + 1);
    row[v] = r;
  }
  for (let i = order.length - 1; i >= 0; i--) {
    const v = order[i]!;
    if (spine[v] || entered[v] || at(ins, v).length > 0 || at(outs, v).length === 0) continue;
    let r = Infinity;
    for (const w of at(outs, v)) r = Math.min(r, row[w]! - 1);
    if (Number.isFinite(r)) row[v] = Math.max(row[v]!, r);
  }
  // sources that feed one reader first, one above the other, the one it continues lowest
  const stackedOn = new Int32Array(n).fill(-1); // the source above each such source
  if (stacked) {
    const byReader = new Map<number, number[]>();
    for (const v of order) {
      if (spine[v] || entered[v] || at(ins, v).length > 0 || at(outs, v).length === 0) continue;
      if (!g.sourcesStacked && !tapped[v]) continue;
      const w = at(outs, v).reduce((x, y) => (row[y]! < row[x]! ? y : x));
      if (row[v] === row[w]! - 1) (byReader.get(w) ?? byReader.set(w, []).get(w)!).push(v);
    }
    for (const [w, vs] of byReader) {
      if (vs.length < 2) continue;
      const last = (x: number) => (x === flowIn[w] ? 1 : 0);
      vs.sort((x, y) => last(x) - last(y) || pos[x]! - pos[y]!);
      vs.forEach((v, k) => {
        row[v] = row[w]! - (vs.length - k);
        if (k > 0) stackedOn[v] = at(vs, k - 1);
      });
    }
  }
  // outputs that one item feeds first, one under the other, in its order
  if (g.sinksStacked) {
    const byFeeder = new Map<number, number[]>();
    for (const v of order) {
      if (spine[v] || entered[v] || at(outs, v).length > 0 || at(ins, v).length !== 1) continue;
      const w = at(at(ins, v), 0);
      if (row[v] === row[w]! + 1) (byFeeder.get(w) ?? byFeeder.set(w, []).get(w)!).push(v);
    }
    for (const [w, vs] of byFeeder)
      if (vs.length > 2)
        vs.forEach((v, k) => {
          row[v] = row[w]! + 1 + k;
          if (k > 0) stackedOn[v] = at(vs, k - 1);
        });
  }
  // no empty rows
  const used = [...new Set(row)].sort((x, y) => x - y);
  const remap = new Map(used.map((r, i) => [r, i]));
  for (let v = 0; v < n; v++) row[v] = remap.get(row[v]!)!;
  const rows = used.length;

  // strands and their columns
  const strandOf = new Int32Array(n).fill(-1);
  const strands: Strand[] = [];
  // (stacked sources: the upper first, so the lower one continues its strand)
  const seq = stacked || g.sinksStacked ? [...order].sort((x, y) => row[x]! - row[y]! || pos[x]! - pos[y]!) : order;
  for (const v of seq) {
    if (spine[v]) continue;
    const u = stackedOn[v]! >= 0 ? stackedOn[v]! : flowIn[v]!;
    const s = u >= 0 && !spine[u] ? strandOf[u]! : -1;
    const strand = s >= 0 ? at(strands, s) : null;
    if (strand && strand.items[strand.items.length - 1] === u && row[v]! > row[u]!) {
      strand.items.push(v);
      strand.r1 = row[v]!;
      strandOf[v] = s;
      continue;
    }
    // a branch of something (right), or a source (left), or what only strands on the left
    // feed (CLIP's image tower's outputs, beside it)
    const m = g.mirror ? -1 : 1;
    const sources = g.sourcesBeside ? m : -m;
    const feeds = at(ins, v);
    const fed = entered[v] || feeds.length > 0;
    const beside =
      feeds.length > 0 &&
      feeds.every((u) => !spine[u] && strandOf[u]! >= 0 && at(strands, strandOf[u]!).side === sources); // (placed)
    strandOf[v] = strands.length;
    // a twin on the side its place in the run puts it, farther out after another
    const twin = twinOf[v]!;
    if (twin >= 0 && row[v] === row[twin])
      strands.push({
        items: [v],
        r0: row[v]!,
        r1: row[v]!,
        side: pos[v]! < pos[twin]! ? -1 : 1, // (in a mirrored column too: read left to right)
        keep: Math.abs(pos[v]! - pos[twin]!),
      });
    else if (tapped[v]) strands.push({ items: [v], r0: row[v]!, r1: row[v]!, side: m, keep: 0 });
    else strands.push({ items: [v], r0: row[v]!, r1: row[v]!, side: fed && !beside ? m : sources });
  }
  const col = new Int32Array(n);
  const taken = new Map<number, [number, number][]>();
  // the strands starting in a row: a twin nearer its trunk item first, then the one fed from
  // nearer above (a longer edge passes outside a shorter one), then in the model's order (its
  // outputs': CLIP's image embeds beside the similarity, its projected pooled output beyond)
  const from = strands.map((st) => Math.max(-1, ...at(ins, at(st.items, 0)).map((u) => row[u]!)));
  const byStart = strands
    .map((_, i) => i)
    .sort(
      (x, y) =>
        at(strands, x).r0 - at(strands, y).r0 ||
        (at(strands, x).keep ?? 0) - (at(strands, y).keep ?? 0) ||
        at(from, y) - at(from, x) ||
        at(at(strands, x).items, 0) - at(at(strands, y).items, 0),
    );
  const outward = (side: number) => Array.from({ length: MAX_COL }, (_, k) => (k + 1) * side);
  for (const s of byStart) {
    const st = at(strands, s);
    // a twin stays on its side, as does a branch of strands on one side (CLIP's image embeds
    // beside its vision tower, never across the text tower's trunk); the others alternate
    const sides = new Set(at(ins, at(st.items, 0)).map((u) => (spine[u] ? 0 : Math.sign(col[u]!))));
    const stay = st.keep !== undefined ? st.side : sides.size === 1 && !sides.has(0) ? [...sides][0]! : 0;
    const cands = stay ? [...outward(stay), ...outward(-stay)] : outward(st.side).flatMap((c) => [c, -c]);
    const chosen = cands.find((c) => (taken.get(c) ?? []).every(([a, b]) => b < st.r0 || st.r1 < a)) ?? 0;
    if (!chosen) return null;
    (taken.get(chosen) ?? taken.set(chosen, []).get(chosen)!).push([st.r0, st.r1]);
    for (const v of st.items) col[v] = chosen;
  }

  // along: rows stacked, each item centred in its row
  const size = new Float64Array(rows);
  const onlyJunctions = new Uint8Array(rows).fill(1);
  for (let v = 0; v < n; v++) {
    size[row[v]!] = Math.max(size[row[v]!]!, at(items, v).al);
    if (!at(items, v).junction) onlyJunctions[row[v]!] = 0;
  }
  const gapAfter = new Float64Array(rows);
  const start = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    gapAfter[r] = r + 1 < rows && (onlyJunctions[r] || onlyJunctions[r + 1]) ? JUNCTION_SEP : RANKSEP;
    if (r + 1 < rows) start[r + 1] = start[r]! + size[r]! + gapAfter[r]!;
  }
  const a = new Float64Array(n);
  for (let v = 0; v < n; v++) a[v] = start[row[v]!]! + (size[row[v]!]! - at(items, v).al) / 2;

  // across: the trunk on one line (anchors aligned), strands beside what shares their rows
  const c = new Float64Array(n);
  const hi = new Float64Array(rows); // per row: the far side of what is placed so far, + side
  const lo = new Float64Array(rows);
  const trunkAt = new Int32Array(rows).fill(-1);
  for (const v of trunk) trunkAt[row[v]!] = v;
  let line = 0;
  for (let r = 0; r < rows; r++) {
    const v = trunkAt[r]!;
    if (v >= 0) {
      c[v] = line - at(items, v).ain;
      const u = r > 0 ? trunkAt[r - 1]! : -1;
      if (g.flush && u >= 0 && at(items, v).group && !at(items, u).group) c[v] = Math.min(c[v], c[u]!);
      line = c[v] + at(items, v).aout;
      hi[r] = c[v] + at(items, v).ac;
      lo[r] = c[v];
    } else {
      hi[r] = lo[r] = line;
    }
  }
  for (const sign of [1, -1]) {
    for (let k = 1; k <= MAX_COL; k++) {
      for (const st of strands) {
        if (col[st.items[0]!] !== sign * k) continue;
        const gap = k === 1 ? BRANCH_GAP : STRAND_GAP;
        // each item about the strand's line: a group at its entry, which need not be its middle
        const left = (v: number) => (at(items, v).group ? at(items, v).ain : at(items, v).ac / 2);
        const toLeft = Math.max(...st.items.map(left));
        const toRight = Math.max(...st.items.map((v) => at(items, v).ac - left(v)));
        let edge = sign > 0 ? -Infinity : Infinity;
        for (let r = st.r0; r <= st.r1; r++) edge = sign > 0 ? Math.max(edge, hi[r]!) : Math.min(edge, lo[r]!);
        const mid = sign > 0 ? edge + gap + toLeft : edge - gap - toRight;
        for (const v of st.items) c[v] = mid - left(v);
        for (let r = st.r0; r <= st.r1; r++) {
          if (sign > 0) hi[r] = Math.max(hi[r]!, mid + toRight);
          else lo[r] = Math.min(lo[r]!, mid - toLeft);
        }
      }
    }
  }
  return { items, edges, row, col, band: new Int32Array(n), a, c, rows, gapAfter, lineIn: 0, lineOut: line };
}

/** The trunk with each source (nothing in the group feeds it) that feeds a trunk item put on
 * it, just before the first trunk item it feeds: a row of its own on the trunk's line, the
 * trunk's edge passing beside it (BART's position embeddings at 1024 px, one column each);
 * and the order with each such source just before that item. */
function inline(
  trunk: number[],
  order: number[],
  ins: number[][],
  outs: number[][],
  spine: Uint8Array,
  entered: Uint8Array,
): [number[], number[]] {
  const on = new Map(trunk.map((v, i) => [v, i]));
  const before = new Map<number, number[]>(); // trunk position -> sources put before it
  for (const v of order) {
    if (spine[v] || entered[v] || at(ins, v).length > 0) continue;
    const first = Math.min(...at(outs, v).map((w) => on.get(w) ?? Infinity));
    if (!Number.isFinite(first)) continue;
    (before.get(first) ?? before.set(first, []).get(first)!).push(v);
    spine[v] = 1;
  }
  if (!before.size) return [trunk, order];
  const moved = new Set([...before.values()].flat());
  const into = new Map([...before].map(([i, vs]) => [at(trunk, i), vs]));
  const around = (v: number) => [...(into.get(v) ?? []), v];
  return [trunk.flatMap(around), order.filter((v) => !moved.has(v)).flatMap(around)];
}

/**
 * `arrange`, with the group's sources (an encoder's or a decoder's positional embedding;
 * LLaMA's rotary embedding, which reads no data) on the side of its branches where that makes it narrower across: in
 * the rows beside the blocks' sublayers, not a column of their own (LLaMA's attention opened
 * at 1024 px fits so). The first where equal or the other tangles.
 */
export function arrangeNarrow(g: FlowGroup): Arranged | null {
  const a = arrange(g);
  if (!hasSources(g)) return a;
  const b = arrange({ ...g, sourcesBeside: true });
  if (!a || !b) return a ?? b;
  return width(b) < width(a) - 1 ? b : a;
}

/** Whether anything off the trunk of `g` has nothing in the group feeding it (data edges:
 * "runs after" places nothing) and no edge from outside: a source. */
export function hasSources(g: FlowGroup): boolean {
  const fed = new Uint8Array(g.items.length);
  for (const v of g.entries) fed[v] = 1;
  for (const e of g.edges) if (e.dst >= 0 && e.kind !== "order") fed[e.dst] = 1;
  return g.items.some((it, v) => !fed[v] && !it.spine);
}

function width(arr: Arranged): number {
  let lo = Infinity;
  let hi = -Infinity;
  for (let v = 0; v < arr.items.length; v++) {
    lo = Math.min(lo, arr.c[v]!);
    hi = Math.max(hi, arr.c[v]! + at(arr.items, v).ac);
  }
  return hi - lo;
}

/** The twins of the trunk's items (items fed by the same items as one, read by the same, an
 * attention's query, key and value): the middle of each run of them put on the trunk in its
 * place; per item, the trunk item of its run (-1: none). */
function twinsOnTrunk(
  items: FlowGroup["items"],
  order: number[],
  trunk: number[],
  spine: Uint8Array,
  entered: Uint8Array,
  ins: number[][],
  outs: number[][],
): Int32Array {
  const twinOf = new Int32Array(items.length).fill(-1);
  const ends = (list: number[]) => [...new Set(list)].sort((x, y) => x - y).join(",");
  const key = (v: number) => `${entered[v]}|${ends(at(ins, v))}|${ends(at(outs, v))}`;
  for (const [i, t] of trunk.entries()) {
    if (at(items, t).junction || (!entered[t] && !at(ins, t).length)) continue;
    const k = key(t);
    const run = order.filter((v) => v === t || (!spine[v] && !at(items, v).junction && key(v) === k));
    if (run.length < 2) continue;
    const mid = run[(run.length - 1) >> 1]!;
    spine[t] = 0;
    spine[mid] = 1;
    trunk[i] = mid;
    for (const v of run) if (v !== mid) twinOf[v] = mid;
  }
  return twinOf;
}
