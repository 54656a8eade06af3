/**
 * Columns side by side: which chains of the model's items stand in columns (columnsOf), and
 * their arrangement: a group whose items fall apart into chains that meet only by merges (an
 * encoder and a decoder, whose only link is the cross-attention: a bus, scene/bus.ts, or one
 * edge into a folded decoder) is drawn as the paper draws it, each chain in its own column,
 * the first (the one the model's input enters) on the left, all starting at the top. Each
 * column is arranged as a trunk with its strands (spine.ts); together they read as bands of
 * one arrangement (routes.ts routes each column's edges among its own items, and a merge
 * from one column into another along the gap between them). Flow coordinates; pure, no DOM.
 */
import type { EdgeKind } from "../wire";
import { at } from "../wire_check";
import type { Arranged, FlowGroup } from "./flow";
import { arrangeNarrow } from "./spine";

export const COLUMN_GAP = 84; // between two columns: room for a bus and its label ("cross-" over "attention")

/** `column[v]`: the column of item v (0, 1, ...); null when a column's strands tangle. */
export function arrangeColumns(g: FlowGroup, column: readonly number[]): Arranged | null {
  const n = g.items.length;
  const count = Math.max(...column) + 1;
  const local = new Int32Array(n);
  const members: number[][] = Array.from({ length: count }, () => []);
  for (let v = 0; v < n; v++) {
    const k = at(column, v);
    local[v] = at(members, k).length;
    at(members, k).push(v);
  }
  const row = new Int32Array(n);
  const col = new Int32Array(n);
  const band = new Int32Array(n);
  const a = new Float64Array(n);
  const c = new Float64Array(n);
  const gaps: number[] = [];
  let rows = 0;
  let cursor = 0;
  let lineIn = 0;
  let lineOut = 0;
  for (const [k, list] of members.entries()) {
    const mine = new Set(list);
    const sub: FlowGroup = {
      ...g,
      items: list.map((v) => at(g.items, v)),
      edges: g.edges
        .filter((e) => mine.has(e.src) && mine.has(e.dst))
        .map((e) => ({ ...e, src: local[e.src]!, dst: local[e.dst]! })),
      entries: g.entries.filter((v) => mine.has(v)).map((v) => local[v]!),
      exits: g.exits.filter((v) => mine.has(v)).map((v) => local[v]!),
      mirror: k > 0, // facing the column before it
    };
    const arr = arrangeNarrow(sub);
    if (!arr) return null;
    let lo = Infinity;
    let hi = -Infinity;
    for (const [i, v] of list.entries()) {
      lo = Math.min(lo, arr.c[i]!);
      hi = Math.max(hi, arr.c[i]! + at(g.items, v).ac);
    }
    const shift = cursor - lo;
    for (const [i, v] of list.entries()) {
      row[v] = rows + arr.row[i]!;
      col[v] = arr.col[i]!;
      band[v] = k;
      a[v] = arr.a[i]!;
      c[v] = arr.c[i]! + shift;
    }
    if (k === 0) [lineIn, lineOut] = [arr.lineIn + shift, arr.lineOut + shift];
    gaps.push(...arr.gapAfter);
    rows += arr.rows;
    cursor += hi - lo + COLUMN_GAP;
  }
  return {
    items: g.items,
    edges: g.edges,
    row,
    col,
    band,
    a,
    c,
    rows,
    gapAfter: Float64Array.from(gaps),
    lineIn,
    lineOut,
  };
}

/** What columnsOf reads of the root's layout group (layout.ts LayoutGroup). */
type Chains = {
  items: readonly { key: string }[];
  edges: readonly { src: number; dst: number; hidden?: boolean; kind?: EdgeKind }[];
};

/**
 * The model's columns: its root items fall apart, by the edges drawn between them (a bus'
 * hidden ones, a merge into a stage and a model input's aside), into chains of which two or
 * more hold a stage and end in a model output (an encoder whose output reaches the decoder
 * only as a merge: the cross-attention bus, or T5's folded decoder reading it; the decoder;
 * BART's, whose one input feeds both; nn.Transformer's encoder, whose output is the decoder's
 * bus alone, no model output): each such chain a column, the one the first input enters
 * first on the left. An input stands in the column
 * of the first chain it enters (in call order); what ends in no output (a mask read through
 * a bus) stands in the first. Null: one column.
 */
export function columnsOf(root: Chains, inputs: ReadonlySet<string>, outputs: ReadonlySet<string>): number[] | null {
  const n = root.items.length;
  const part = Array.from({ length: n }, (_, i) => i);
  const find = (v: number): number => {
    while (part[v] !== v) v = part[v] = part[part[v]!]!;
    return v;
  };
  const port = (i: number) => inputs.has(root.items[i]!.key) || outputs.has(root.items[i]!.key);
  const fromInput = (e: Chains["edges"][number]) => inputs.has(root.items[e.src]!.key);
  // a merge into a stage joins no chains: T5's encoder output into its decoder, whose trunk is
  // its own ids; one into a junction or an output does (CLIP's towers meet in the similarity)
  const into = (e: Chains["edges"][number]) => /^j:/.test(root.items[e.dst]!.key) || port(e.dst);
  const joins = (e: Chains["edges"][number]) => !e.hidden && (e.kind !== "merge" || into(e)) && !fromInput(e);
  for (const e of root.edges) if (joins(e)) part[find(e.src)] = find(e.dst);
  const staged = new Set<number>();
  for (let i = 0; i < n; i++) if (!port(i)) staged.add(find(i));
  const output = (r: number) => staged.has(r) && root.items.some((it, i) => outputs.has(it.key) && find(i) === r);
  // ... or a run of blocks that such a chain reads through a bus (nn.Transformer's encoder,
  // whose memory is no model output)
  const run = (r: number) => root.items.some((it, i) => /^[kf]:/.test(it.key) && find(i) === r);
  const bused = new Set<number>();
  for (const e of root.edges)
    if (e.hidden && find(e.src) !== find(e.dst) && output(find(e.dst)) && run(find(e.src))) bused.add(find(e.src));
  const ended = (r: number) => output(r) || bused.has(r);
  // each input joins the first chain it enters that ends in an output
  const entered = new Map<number, number>();
  for (const e of root.edges)
    if (!e.hidden && fromInput(e) && ended(find(e.dst))) entered.set(e.src, Math.min(entered.get(e.src) ?? n, e.dst));
  for (const [i, d] of entered) part[find(i)] = find(d);
  const ends = new Set<number>();
  for (let i = 0; i < n; i++) if (ended(find(i))) ends.add(find(i));
  if (ends.size < 2) return null;
  const lead = root.items.findIndex((it) => inputs.has(it.key));
  const order = [...ends].sort(
    (x, y) => Number(lead >= 0 && find(lead) === y) - Number(lead >= 0 && find(lead) === x) || x - y,
  );
  const column = new Map(order.map((r, k) => [r, k]));
  return root.items.map((_, i) => column.get(find(i)) ?? 0);
}
