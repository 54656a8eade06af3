/**
 * Edge ends on top of the layout, pure and DOM-free: ports (the ends of edges that share a
 * node's side spread along it, ordered by where they head). Ends on a node's other sides (a
 * U-Net's skip entering across, a decoder that flows upwards) and ends at junctions stay
 * where the layout put them. scene.ts calls this while it builds a scene.
 */
import type { Box, Direction } from "../layout/layout";
import type { SceneEdge } from "./types";

// ---------------------------------------------------------------------------------------
// Ports: where edges meet a node.

const PORT_GAP = 16; // preferred distance between neighbouring ports
const PORT_MARGIN = 22; // ports keep this far from the ends of a side (rounded corners, badges)
const STUB = 10; // an edge leaves and enters its side square to it for this long

/**
 * Spread the ends of the edges that leave a node along its outgoing side (bottom in TB,
 * right in LR) and the ends that enter it along its incoming side (top / left), so that a
 * flow and a skip edge leaving one node do not start on the same point. Ends are ordered by
 * where each edge heads across the flow, so neighbouring edges do not cross at the node.
 */
export function spreadPorts(
  edges: SceneEdge[],
  boxes: Record<string, Box>,
  dir: Direction,
  fixed: ReadonlySet<string> = new Set(),
) {
  const { across, along } = axes(dir);
  const onSide = (e: SceneEdge, key: string, out: boolean) => {
    const b = boxes[key];
    if (!b || fixed.has(key)) return false;
    const p = e.points;
    const i = out ? 0 : p.length - 2;
    const line = b[along]! + (out ? b[along + 2]! : 0);
    const c = p[i + across]!;
    return Math.abs(p[i + along]! - line) < 0.5 && c > b[across]! && c < b[across]! + b[across + 2]!;
  };
  const outs = new Map<string, SceneEdge[]>();
  const ins = new Map<string, SceneEdge[]>();
  const add = (m: Map<string, SceneEdge[]>, k: string, e: SceneEdge) => {
    const list = m.get(k);
    if (list) list.push(e);
    else m.set(k, [e]);
  };
  for (const e of edges) {
    if (e.points.length < 4) continue;
    if (onSide(e, e.from, true)) add(outs, e.from, e);
    if (onSide(e, e.to, false)) add(ins, e.to, e);
  }
  for (const [key, list] of outs) {
    const box = boxes[key];
    if (box) placePorts(list, box, dir, true);
  }
  for (const [key, list] of ins) {
    const box = boxes[key];
    if (box) placePorts(list, box, dir, false);
  }
}

/** Across / along the flow: x / y in TB, y / x in LR. */
export function axes(dir: Direction) {
  return dir === "TB" ? { across: 0, along: 1 } : { across: 1, along: 0 };
}

function placePorts(list: SceneEdge[], box: Box, dir: Direction, out: boolean) {
  const { across, along } = axes(dir);
  const side = across === 0 ? box[2] : box[3];
  const start = box[across]!;
  const line = box[along]! + (out ? box[along + 2]! : 0); // the side's coordinate along the flow
  // Where an edge goes across the flow once it is clear of the node; then where it ends.
  const heading = (e: SceneEdge): [number, number] => {
    const p = e.points;
    const n = p.length / 2;
    const at = (i: number) => p[2 * (out ? i : n - 1 - i) + across]!;
    const far = (i: number) => Math.abs(p[2 * (out ? i : n - 1 - i) + along]! - line);
    let i = 1;
    while (i < n - 1 && far(i) < 2 * STUB) i++;
    return [at(i), at(n - 1)];
  };
  const order = list.map((e) => ({ e, h: heading(e) }));
  order.sort(
    (a, b) => a.h[0] - b.h[0] || a.h[1] - b.h[1] || (a.e.kind === "flow" ? -1 : 0) - (b.e.kind === "flow" ? -1 : 0),
  );
  const k = order.length;
  const room = Math.max(0, side - 2 * Math.min(PORT_MARGIN, side / 4));
  const gap = k > 1 ? Math.min(PORT_GAP, room / (k - 1)) : 0;
  // A straight edge (the trunk) keeps its end; the others spread beside it, where there is room.
  const straight = order.findIndex(({ e }) => {
    const p = e.points;
    for (let i = across; i < p.length; i += 2) if (Math.abs(p[i]! - p[across]!) > 0.5) return false;
    return true;
  });
  let first = start + side / 2 - ((k - 1) / 2) * gap;
  const trunk = order[straight]?.e.points;
  if (trunk) {
    const at = trunk[out ? across : trunk.length - 2 + across]!;
    const from = at - straight * gap;
    const lo = start + (side - room) / 2;
    if (from >= lo - 0.5 && from + (k - 1) * gap <= lo + room + 0.5) first = from;
  }
  for (const [i, { e }] of order.entries()) setEnd(e, first + i * gap, line, across, along, out);
}

/** Move one end of an edge to a port, with a short square stub when the edge must bend. */
function setEnd(e: SceneEdge, pos: number, line: number, across: number, along: number, out: boolean) {
  const pts: [number, number][] = [];
  for (let i = 0; i + 1 < e.points.length; i += 2) pts.push([e.points[i]!, e.points[i + 1]!]);
  if (!out) pts.reverse();
  const sign = out ? 1 : -1; // the direction of travel along the flow, seen from this end
  const port: [number, number] = [0, 0];
  port[across] = pos;
  port[along] = line;
  // Drop the points that sit inside the stub (or behind the side): the end is rebuilt here.
  let first = 1;
  while (first < pts.length - 1 && (pts[first]![along]! - line) * sign <= STUB) first++;
  const rest = pts.slice(first);
  const next = rest[0]!;
  const bent = Math.abs(next[across]! - pos) > 0.5;
  const room = (next[along]! - line) * sign;
  const stub: [number, number][] = [];
  if (bent && room > STUB) {
    const p: [number, number] = [0, 0];
    p[across] = pos;
    p[along] = line + sign * Math.min(STUB, room / 2);
    stub.push(p);
    // a long run along the flow to the end steps across to the port at the stub, square (a
    // straight line from the stub to its far end would slant the whole run)
    if (room > 2 * STUB) {
      const q: [number, number] = [0, 0];
      q[across] = next[across]!;
      q[along] = p[along]!;
      stub.push(q);
    }
  }
  const result = [port, ...stub, ...rest];
  if (!out) result.reverse();
  e.points = result.flat();
}
