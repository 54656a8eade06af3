/**
 * Flow coordinates for the layouts that keep a trunk straight (spine.ts, ushape.ts,
 * bands.ts, routes.ts): "along" the flow (y in TB, x in LR) and "across" it (x in TB, y in
 * LR); the items of one group, the group's placement in these coordinates, and the turn into
 * x / y. Pure, no DOM.
 */
import type { EdgeKind } from "../wire";
import { at } from "../wire_check";

export type Direction = "TB" | "LR";

/** One item of a group: its size and where an edge enters and leaves it, across. */
export interface FlowItem {
  al: number; // size along the flow
  ac: number; // size across it
  ain: number; // across offset (from the item's across start) where edges enter
  aout: number; // ... and leave
  spine: boolean; // on the trunk
  junction: boolean; // a junction glyph (edges meet it from the side)
  group: boolean; // a laid-out group (never split, never turned)
}

export interface FlowEdge {
  src: number; // item indices; -1 stands for the group's entry, -2 for its exit
  dst: number;
  kind: EdgeKind;
  hidden?: boolean; // places its ends, never routed (a bus' tap)
}

export interface FlowGroup {
  items: FlowItem[];
  edges: FlowEdge[];
  entries: number[]; // items that an edge from outside enters
  exits: number[]; // items that an edge to outside leaves
  mirror?: boolean; // branches of the trunk to its left, sources to its right (a decoder's column)
  /** Sources a bus feeds from outside (a cross-attention's keys and values): one above the other
   * before their reader, on the branches' side (facing the other column), as `sourcesStacked`. */
  tapped?: number[];
  /** Sources on the side of the branches (spine.ts arrangeNarrow: where that is narrower). */
  sourcesBeside?: boolean;
  /** Sources that feed the trunk on the trunk, each just above what it feeds (layout.ts: at
   * the root, where the group does not fit with them beside it). */
  sourcesInline?: boolean;
  /** Sources that feed one reader first one above the other, in its column (layout.ts: at the
   * root, where side by side they do not fit: Flux's timestep over its pooled text). */
  sourcesStacked?: boolean;
  /** Outputs that one item feeds one under the other, in a column beside the trunk (layout.ts:
   * at the root, where side by side they do not fit: BART's seven outputs with its hidden
   * states and attentions). */
  sinksStacked?: boolean;
  /** A group on the trunk under a wider node flush with the node's near side, the edge between
   * them an S (layout.ts: at the root, where centred on the node's middle it does not fit:
   * Gemma's wide embedding over its layers' residual stream, their attention opened). */
  flush?: boolean;
  lead: number; // along distance from the group's in side to its content (header, padding)
  trail: number; // ... from the content to its out side
}

/** A group's placement, in flow coordinates relative to its content's origin. */
export interface FlowPlacement {
  al: number;
  ac: number;
  pos: number[]; // per item: along, across of its top-left
  routes: number[][]; // per edge: flat along, across points
  inRoutes: number[][]; // per entry: from the group's in side to the item
  outRoutes: number[][]; // per exit: from the item to the group's out side
  ain: number; // across position of the group's entry (its trunk at the in side)
  aout: number; // ... and of its exit
  flip?: boolean[]; // per item: a group drawn upside down along the flow (a U's rising side)
}

/** Where the fit wants the root to go: the canvas (px), the scale labels read at, and a strip
 * to leave free (the minimap) when even the best arrangement does not fit. */
export interface FitTarget {
  w: number;
  h: number;
  k: number;
  reserve: number;
}

export const RANKSEP = 34;
/** The margin a whole view keeps on each side of the canvas (px): the fit of a first view
 * (app/framing.ts), the bands it wraps into (bands.ts), the camera's whole views. */
export const FIT_MARGIN = 16;

/** Points along a polyline with each inner corner rounded (the B-spline of edgePath follows
 * the extra points closely): a corner C between A and B gets points r before and after it. */
export function rounded(points: number[], r = 12): number[] {
  const n = points.length / 2;
  if (n < 3) return points;
  const out = [points[0]!, points[1]!];
  for (let i = 1; i < n - 1; i++) {
    const [ax, ay, cx, cy, bx, by] = [
      points[2 * i - 2]!,
      points[2 * i - 1]!,
      points[2 * i]!,
      points[2 * i + 1]!,
      points[2 * i + 2]!,
      points[2 * i + 3]!,
    ];
    const la = Math.hypot(cx - ax, cy - ay);
    const lb = Math.hypot(bx - cx, by - cy);
    if (la < 0.5 || lb < 0.5) continue; // a repeated point
    const ra = Math.min(r, la / 2);
    const rb = Math.min(r, lb / 2);
    out.push(
      cx - ((cx - ax) / la) * ra,
      cy - ((cy - ay) / la) * ra,
      cx,
      cy,
      cx + ((bx - cx) / lb) * rb,
      cy + ((by - cy) / lb) * rb,
    );
  }
  out.push(points[2 * n - 2]!, points[2 * n - 1]!);
  return out;
}

/**
 * Whether the segment a-b passes through the inside of a box [x, y, w, h], shrunk by `inset`
 * on every side (Liang-Barsky clipping); a box that the inset leaves empty is never crossed.
 * Any axes, as long as the points and the box use the same: x / y, or along / across.
 */
export function segmentHitsBox(
  ax: number,
  ay: number,
  bx: number,
  by: number,
  box: readonly [number, number, number, number],
  inset = 2,
): boolean {
  const x0 = box[0] + inset,
    y0 = box[1] + inset,
    x1 = box[0] + box[2] - inset,
    y1 = box[1] + box[3] - inset;
  if (x1 <= x0 || y1 <= y0) return false;
  let t0 = 0;
  let t1 = 1;
  const dx = bx - ax;
  const dy = by - ay;
  for (const [p, q] of [
    [-dx, ax - x0],
    [dx, x1 - ax],
    [-dy, ay - y0],
    [dy, y1 - ay],
  ] as const) {
    if (p === 0) {
      if (q < 0) return false;
      continue;
    }
    const r = q / p;
    if (p < 0) t0 = Math.max(t0, r);
    else t1 = Math.min(t1, r);
    if (t0 > t1) return false;
  }
  return true;
}

/** Topological order of n items by DFS over in-edges, the lower index first where free; with
 * `late`, a source that something reads just before its first reader, not first of all (one
 * column of an encoder and a decoder: the decoder's target level with the decoder). */
export function topoOrder(n: number, edges: FlowEdge[], late = false): number[] {
  const ins: number[][] = Array.from({ length: n }, () => []);
  for (const e of edges) if (e.src >= 0 && e.dst >= 0 && e.src !== e.dst) at(ins, e.dst).push(e.src);
  for (const list of ins) list.sort((a, b) => a - b);
  const state = new Uint8Array(n);
  const order: number[] = [];
  const read = new Uint8Array(n);
  if (late) for (const list of ins) for (const u of list) read[u] = 1;
  const roots = [...Array(n).keys()].filter((v) => !read[v] || at(ins, v).length > 0);
  for (const root of [...roots, ...Array(n).keys()]) {
    if (state[root]) continue;
    const stack: [number, number][] = [[root, 0]];
    state[root] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1]!;
      const list = at(ins, top[0]);
      if (top[1] < list.length) {
        const u = list[top[1]++]!;
        if (!state[u]) {
          state[u] = 1;
          stack.push([u, 0]);
        }
        continue;
      }
      stack.pop();
      state[top[0]] = 2;
      order.push(top[0]);
    }
  }
  return order;
}

/** Items of a group placed in rows (along) and columns (across), before the edges are routed. */
export interface Arranged {
  items: FlowItem[];
  edges: FlowEdge[];
  row: Int32Array; // per item
  col: Int32Array; // 0: the trunk; +-1, +-2 ...: branches beside it
  band: Int32Array; // which band a wrapped root put it in (0 when not wrapped)
  a: Float64Array; // along of the top-left
  c: Float64Array; // across of the top-left
  rows: number;
  gapAfter: Float64Array; // per row: the gap to the next row
  lineIn: number; // across of the trunk where the group is entered ...
  lineOut: number; // ... and left
}
