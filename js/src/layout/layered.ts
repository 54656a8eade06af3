/**
 * The layered solver (dagre) for the groups the trunk layout leaves (branches that tangle):
 * one group's items and edges, plus two points standing for where edges enter and leave the
 * group, so that the routes inside it continue the ones outside. Group coordinates (x / y
 * from the group's top-left); pure, no DOM.
 */
import { graphlib, layout as dagreLayout } from "@dagrejs/dagre";
import { at } from "../wire_check";
import { type Direction, RANKSEP } from "./flow";

const NODESEP = 22;

export interface GroupPlacement {
  w: number;
  h: number;
  pos: number[]; // per item: x, y relative to the group's top-left
  routes: number[][]; // per edge: flat relative points
  inRoutes: number[][]; // per entry: from the group's in side to the item
  outRoutes: number[][]; // per exit: from the item to the group's out side
  ain: number; // across (x in TB, y in LR) of the entry, relative to the group
  aout: number;
  flip?: boolean[]; // per item: a group drawn upside down along the flow (layout.ts mirrors it)
}

export function placeLayered(
  dir: Direction,
  sizes: [number, number][],
  edges: { src: number; dst: number; weight: number }[],
  entries: number[],
  exits: number[],
  pad: number,
  header: number,
): GroupPlacement {
  const g = new graphlib.Graph({ multigraph: false, compound: false });
  const big = sizes.length > 250;
  // network-simplex is the best ranker but superlinear; large flat groups use a faster one.
  g.setGraph({
    rankdir: dir,
    nodesep: NODESEP,
    ranksep: RANKSEP,
    edgesep: 10,
    marginx: 0,
    marginy: 0,
    ranker: big ? "longest-path" : "network-simplex",
  });
  g.setDefaultEdgeLabel(() => ({}));
  for (const [i, [w, h]] of sizes.entries()) g.setNode(String(i), { width: w, height: h });
  const IN = "in";
  const OUT = "out";
  if (entries.length) g.setNode(IN, { width: 1, height: 1 });
  if (exits.length) g.setNode(OUT, { width: 1, height: 1 });
  for (const e of edges) if (e.src !== e.dst) g.setEdge(String(e.src), String(e.dst), { weight: e.weight, minlen: 1 });
  for (const v of new Set(entries)) g.setEdge(IN, String(v), { weight: 1, minlen: 1 });
  for (const v of new Set(exits)) g.setEdge(String(v), OUT, { weight: 1, minlen: 1 });
  dagreLayout(g);
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  const pos: number[] = [];
  sizes.forEach(([w, h], i) => {
    const n = g.node(String(i)) as { x: number; y: number };
    const x = n.x - w / 2;
    const y = n.y - h / 2;
    pos.push(x, y);
    minX = Math.min(minX, x);
    minY = Math.min(minY, y);
    maxX = Math.max(maxX, x + w);
    maxY = Math.max(maxY, y + h);
  });
  const pointsOf = (a: string, b: string): number[] => {
    const lbl = g.edge(a, b) as { points?: { x: number; y: number }[] } | undefined;
    return (lbl?.points ?? []).flatMap((p) => [p.x, p.y]);
  };
  const routes = edges.map((e) => (e.src === e.dst ? [] : pointsOf(String(e.src), String(e.dst))));
  for (const r of routes) {
    for (let i = 0; i < r.length; i += 2) {
      minX = Math.min(minX, r[i]!);
      minY = Math.min(minY, r[i + 1]!);
      maxX = Math.max(maxX, r[i]!);
      maxY = Math.max(maxY, r[i + 1]!);
    }
  }
  if (sizes.length === 0) minX = minY = maxX = maxY = 0;
  const dx = pad - minX;
  const dy = pad + header - minY;
  for (let i = 0; i < pos.length; i += 2) {
    pos[i]! += dx;
    pos[i + 1]! += dy;
  }
  for (const r of routes) {
    for (let i = 0; i < r.length; i += 2) {
      r[i]! += dx;
      r[i + 1]! += dy;
    }
  }
  const w = maxX - minX + 2 * pad;
  const h = maxY - minY + 2 * pad + header;
  const tb = dir === "TB";
  // Routes start and end on the items' flow sides, across at their middle (where the
  // routes of the groups around and inside continue them).
  const side = (i: number, out: boolean): [number, number] => {
    const [sw, sh] = at(sizes, i);
    const [x, y] = [pos[2 * i]!, pos[2 * i + 1]!];
    return tb ? [x + sw / 2, out ? y + sh : y] : [out ? x + sw : x, y + sh / 2];
  };
  edges.forEach((e, k) => {
    const r = at(routes, k);
    if (r.length < 4) return;
    const [sx, sy] = side(e.src, true);
    const [tx, ty] = side(e.dst, false);
    r.splice(0, 2, sx, sy);
    r.splice(r.length - 2, 2, tx, ty);
  });
  const across = (name: string, fallback: number) => {
    if (!g.hasNode(name)) return fallback;
    const p = g.node(name) as { x: number; y: number };
    return tb ? p.x + dx : p.y + dy;
  };
  const ain = across(IN, tb ? w / 2 : h / 2);
  const aout = across(OUT, tb ? w / 2 : h / 2);
  const inRoutes = entries.map((v) => {
    const [tx, ty] = side(v, false);
    return tb
      ? [ain, 0, ain, Math.max(2, ty - RANKSEP / 2), tx, ty]
      : [0, ain, Math.max(2, tx - RANKSEP / 2), ain, tx, ty];
  });
  const outRoutes = exits.map((v) => {
    const [sx, sy] = side(v, true);
    return tb
      ? [sx, sy, aout, Math.min(h - 2, sy + RANKSEP / 2), aout, h]
      : [sx, sy, Math.min(w - 2, sx + RANKSEP / 2), aout, w, aout];
  });
  return { w, h, pos, routes, inRoutes, outRoutes, ain, aout };
}
