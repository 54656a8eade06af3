/**
 * Columns side by side: a group whose items fall apart into chains that meet by no drawn
 * edge (an encoder and a decoder, whose only link is the cross-attention bus, scene/bus.ts)
 * is drawn as the paper draws it, each chain in its own column, the first (the one the model's
 * input enters) on the left, all starting at the top. Each column is arranged as a trunk with
 * its strands (spine.ts); together they read as bands of one arrangement (routes.ts routes
 * each column's edges among its own items). Flow coordinates; pure, no DOM.
 */
import { at } from "../wire_check";
import type { Arranged, FlowGroup } from "./flow";
import { arrangeNarrow } from "./spine";

export const COLUMN_GAP = 72; // between two columns: room for a bus between them

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
