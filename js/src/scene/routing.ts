/**
 * Edge routing on top of the layout, pure and DOM-free: ports (the ends of edges that share a
 * node's side spread along it), detours (an edge entering or leaving a group runs down the
 * group's margin instead of through the nodes inside), and the constants for lanes beside a
 * shared route. scene.ts calls these while it builds a scene.
 */
import { GROUP_HEADER, RANKSEP, type Box, type Direction } from "../layout/layout";
import type { EdgeKind } from "../wire";
import type { SceneEdge } from "./types";

/** Whether the segment a-b passes through the inside of a box (Liang-Barsky clipping). */
export function segmentHitsBox(ax: number, ay: number, bx: number, by: number, [x, y, w, h]: Box, inset = 1): boolean {
  const x0 = x + inset, y0 = y + inset, x1 = x + w - inset, y1 = y + h - inset;
  let t0 = 0;
  let t1 = 1;
  const dx = bx - ax;
  const dy = by - ay;
  for (const [p, q] of [[-dx, ax - x0], [dx, x1 - ax], [-dy, ay - y0], [dy, y1 - ay]] as const) {
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

/** Stretches of group margins already taken by detours: "group key|side" -> along ranges. */
export type Margins = Map<string, [number, number][]>;

/**
 * Re-route the piece of an edge inside a group (between the group's side and the node at
 * the end; `out`: at the start) when the straight piece would cross another node: it meets
 * the group's side level with a margin beside the items, runs down that margin, and turns
 * to the node. Two detours do not share a stretch of one margin (the second takes the other).
 */
export function detour(pts: number[], groupKey: string, group: Box | undefined, others: Box[], dir: Direction, out: boolean, margins: Margins): number[] {
  if (!group || pts.length < 4) return pts;
  const n = pts.length;
  // inner: the node's anchor; side: where the route meets the group's side.
  const [ix, iy, sx, sy] = out ? [pts[0], pts[1], pts[2], pts[3]] : [pts[n - 2], pts[n - 1], pts[n - 4], pts[n - 3]];
  if (!others.some((b) => segmentHitsBox(sx, sy, ix, iy, b))) return pts;
  const { across, along } = axes(dir);
  const start = group[along];
  const end = start + group[along + 2];
  const inner = along === 0 ? ix : iy;
  const wall = out ? end : start; // the group's side the route crosses
  const nearNode = inner + (out ? 1 : -1) * (RANKSEP / 2);
  if ((out && nearNode >= wall) || (!out && nearNode <= wall)) return pts;
  // The margins beside the items across the flow, GROUP_PAD wide (in LR the header is on top);
  // the lanes keep clear of the nodes' corner badges, which reach 7 px into them.
  const lo = group[across] + (across === 1 ? GROUP_HEADER : 0) + MARGIN_LANE;
  const hi = group[across] + group[across + 2] - MARGIN_LANE;
  const here = across === 0 ? sx : sy;
  const range: [number, number] = [Math.min(wall, nearNode), Math.max(wall, nearNode)];
  const free = (side: string) => !(margins.get(`${groupKey}|${side}`) ?? []).some(([a, b]) => a <= range[1] + STUB && range[0] - STUB <= b);
  let side = here - lo <= hi - here ? "lo" : "hi";
  if (!free(side) && free(side === "lo" ? "hi" : "lo")) side = side === "lo" ? "hi" : "lo";
  margins.set(`${groupKey}|${side}`, [...(margins.get(`${groupKey}|${side}`) ?? []), range]);
  const lane = side === "lo" ? lo : hi;
  const at = (a: number, c: number): [number, number] => (along === 1 ? [c, a] : [a, c]);
  // The route's bends just outside the wall were placed for the old crossing point: drop them.
  const near = (i: number) => Math.abs(pts[i + along] - wall) < RANKSEP;
  if (out) {
    let k = 4;
    while (k < n - 2 && near(k)) k += 2;
    return [pts[0], pts[1], ...at(nearNode, lane), ...at(wall, lane), ...pts.slice(k)];
  }
  let k = n - 4; // the index just past the kept route points
  while (k > 2 && near(k - 2)) k -= 2;
  return [...pts.slice(0, k), ...at(wall, lane), ...at(nearNode, lane), pts[n - 2], pts[n - 1]];
}

// ---------------------------------------------------------------------------------------
// Ports: where edges meet a node.

const PORT_GAP = 16; // preferred distance between neighbouring ports
export const LANE_GAP = 8; // between edges that share one laid-out route
const MARGIN_LANE = 4; // a detour's distance from its group's border
export const KIND_ORDER: Record<EdgeKind, number> = { flow: 0, merge: 1, skip: 2, order: 3 }; // lane order on ties
const PORT_MARGIN = 22; // ports keep this far from the ends of a side (rounded corners, badges)
const STUB = 10; // an edge leaves and enters its side square to it for this long

/**
 * Spread the ends of the edges that leave a node along its outgoing side (bottom in TB,
 * right in LR) and the ends that enter it along its incoming side (top / left), so that a
 * flow and a skip edge leaving one node do not start on the same point. Ends are ordered by
 * where each edge heads across the flow, so neighbouring edges do not cross at the node.
 */
export function spreadPorts(edges: SceneEdge[], boxes: Record<string, Box>, dir: Direction) {
  const outs = new Map<string, SceneEdge[]>();
  const ins = new Map<string, SceneEdge[]>();
  const add = (m: Map<string, SceneEdge[]>, k: string, e: SceneEdge) => {
    const list = m.get(k);
    if (list) list.push(e);
    else m.set(k, [e]);
  };
  for (const e of edges) {
    if (e.points.length < 4) continue;
    add(outs, e.src, e);
    add(ins, e.dst, e);
  }
  for (const [key, list] of outs) if (boxes[key]) placePorts(list, boxes[key], dir, true);
  for (const [key, list] of ins) if (boxes[key]) placePorts(list, boxes[key], dir, false);
}

/** Across / along the flow: x / y in TB, y / x in LR. */
export function axes(dir: Direction) {
  return dir === "TB" ? { across: 0, along: 1 } : { across: 1, along: 0 };
}

function placePorts(list: SceneEdge[], box: Box, dir: Direction, out: boolean) {
  const { across, along } = axes(dir);
  const side = across === 0 ? box[2] : box[3];
  const start = box[across];
  const line = box[along] + (out ? box[along + 2] : 0); // the side's coordinate along the flow
  // Where an edge goes across the flow once it is clear of the node; then where it ends.
  const heading = (e: SceneEdge): [number, number] => {
    const p = e.points;
    const n = p.length / 2;
    const at = (i: number) => p[2 * (out ? i : n - 1 - i) + across];
    const far = (i: number) => Math.abs(p[2 * (out ? i : n - 1 - i) + along] - line);
    let i = 1;
    while (i < n - 1 && far(i) < 2 * STUB) i++;
    return [at(i), at(n - 1)];
  };
  const order = list.map((e) => ({ e, h: heading(e) }));
  order.sort((a, b) => a.h[0] - b.h[0] || a.h[1] - b.h[1] || (a.e.kind === "flow" ? -1 : 0) - (b.e.kind === "flow" ? -1 : 0));
  const k = order.length;
  const room = Math.max(0, side - 2 * Math.min(PORT_MARGIN, side / 4));
  const gap = k > 1 ? Math.min(PORT_GAP, room / (k - 1)) : 0;
  order.forEach(({ e }, i) => {
    const pos = start + side / 2 + (i - (k - 1) / 2) * gap;
    setEnd(e, pos, line, across, along, out);
  });
}

/** Move one end of an edge to a port, with a short square stub when the edge must bend. */
function setEnd(e: SceneEdge, pos: number, line: number, across: number, along: number, out: boolean) {
  const pts: [number, number][] = [];
  for (let i = 0; i < e.points.length; i += 2) pts.push([e.points[i], e.points[i + 1]]);
  if (!out) pts.reverse();
  const sign = out ? 1 : -1; // the direction of travel along the flow, seen from this end
  const port: [number, number] = [0, 0];
  port[across] = pos;
  port[along] = line;
  // Drop the points that sit inside the stub (or behind the side): the end is rebuilt here.
  let first = 1;
  while (first < pts.length - 1 && (pts[first][along] - line) * sign <= STUB) first++;
  const rest = pts.slice(first);
  const next = rest[0];
  const bent = Math.abs(next[across] - pos) > 0.5;
  const room = (next[along] - line) * sign;
  const stub: [number, number][] = [];
  if (bent && room > STUB) {
    const p: [number, number] = [0, 0];
    p[across] = pos;
    p[along] = line + sign * Math.min(STUB, room / 2);
    stub.push(p);
  }
  const result = [port, ...stub, ...rest];
  if (!out) result.reverse();
  e.points = result.flat();
}
