/**
 * Positions for the visible view: one small layered layout per container (the model, each
 * expanded call, each unfolded run), bottom-up, cached by the container's signature so that
 * expanding a group only lays out that group and the containers around it. No DOM; runs in
 * the layout worker and in Node tests alike.
 */
import { graphlib, layout as dagreLayout } from "@dagrejs/dagre";

export type Direction = "TB" | "LR";

export interface LayoutLeaf {
  key: string;
  w: number;
  h: number;
}

export interface LayoutGroup {
  key: string;
  items: (LayoutLeaf | LayoutGroup)[];
  edges: LayoutEdge[]; // between items of this group, by item index
}

export interface LayoutEdge {
  src: number;
  dst: number;
  weight: number; // higher keeps the edge short and straight (the trunk)
}

export interface LayoutRequest {
  dir: Direction;
  root: LayoutGroup;
}

/** x, y (top-left, absolute), w, h */
export type Box = [number, number, number, number];

export interface LayoutResult {
  boxes: Record<string, Box>; // every item and group by key, the root included
  routes: Record<string, number[]>; // "srcItem>dstItem" -> flat absolute points x0,y0,x1,y1..
  width: number;
  height: number;
  laidOut: number; // containers actually laid out (cache misses)
}

export const GROUP_PAD = 14;
export const GROUP_HEADER = 26;
const NODESEP = 22;
export const RANKSEP = 34;

interface GroupPlacement {
  w: number;
  h: number;
  pos: number[]; // per item: x, y relative to the group's top-left
  routes: number[][]; // per edge: flat relative points
}

function isGroup(x: LayoutLeaf | LayoutGroup): x is LayoutGroup {
  return (x as LayoutGroup).items !== undefined;
}

/** A cache of group placements by signature; keep one per worker (or per widget). */
export class LayoutCache {
  private map = new Map<string, GroupPlacement>();
  constructor(private readonly capacity = 2000) {}
  get(sig: string): GroupPlacement | undefined {
    const hit = this.map.get(sig);
    if (hit) {
      this.map.delete(sig);
      this.map.set(sig, hit);
    }
    return hit;
  }
  set(sig: string, p: GroupPlacement) {
    this.map.set(sig, p);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as string);
  }
  get size() {
    return this.map.size;
  }
}

/** The items in order when the edges form one simple path through all of them, else null. */
function chainOrder(n: number, edges: LayoutEdge[]): number[] | null {
  if (n < 2 || edges.length !== n - 1) return null;
  const next = new Int32Array(n).fill(-1);
  const hasPrev = new Uint8Array(n);
  for (const e of edges) {
    if (e.src === e.dst || next[e.src] !== -1 || hasPrev[e.dst]) return null;
    next[e.src] = e.dst;
    hasPrev[e.dst] = 1;
  }
  const start = hasPrev.indexOf(0);
  const order: number[] = [];
  for (let i = start; i !== -1 && order.length <= n; i = next[i]) order.push(i);
  return order.length === n ? order : null;
}

/** A chain needs no layered layout: stack it along the flow, centred across it. O(n). */
function placeChain(dir: Direction, sizes: [number, number][], edges: LayoutEdge[], order: number[], pad: number, header: number): GroupPlacement {
  const tb = dir === "TB";
  const across = Math.max(...sizes.map(([w, h]) => (tb ? w : h)));
  const pos = new Array<number>(2 * sizes.length);
  let along = 0;
  for (const i of order) {
    const [w, h] = sizes[i];
    const a = tb ? h : w;
    const c = ((across - (tb ? w : h)) / 2);
    pos[2 * i] = pad + (tb ? c : along);
    pos[2 * i + 1] = pad + header + (tb ? along : c);
    along += a + RANKSEP;
  }
  along -= RANKSEP;
  const mid = across / 2;
  const routes = edges.map((e) => {
    const [sw, sh] = sizes[e.src];
    return tb
      ? [pad + mid, pos[2 * e.src + 1] + sh, pad + mid, pos[2 * e.dst + 1]]
      : [pos[2 * e.src] + sw, pad + header + mid, pos[2 * e.dst], pad + header + mid];
  });
  const w = (tb ? across : along) + 2 * pad;
  const h = (tb ? along : across) + 2 * pad + header;
  return { w, h, pos, routes };
}

function placeGroup(dir: Direction, sizes: [number, number][], edges: LayoutEdge[], isRoot: boolean): GroupPlacement {
  const pad = isRoot ? 0 : GROUP_PAD;
  const header = isRoot ? 0 : GROUP_HEADER;
  const order = chainOrder(sizes.length, edges);
  if (order) return placeChain(dir, sizes, edges, order, pad, header);
  const g = new graphlib.Graph({ multigraph: false, compound: false });
  const big = sizes.length > 250;
  g.setGraph({
    rankdir: dir,
    nodesep: NODESEP,
    ranksep: RANKSEP,
    edgesep: 10,
    marginx: 0,
    marginy: 0,
    // network-simplex is the best ranker but superlinear; large flat groups use a faster one.
    ranker: big ? "longest-path" : "network-simplex",
  });
  g.setDefaultEdgeLabel(() => ({}));
  sizes.forEach(([w, h], i) => g.setNode(String(i), { width: w, height: h }));
  for (const e of edges) {
    if (e.src === e.dst) continue;
    g.setEdge(String(e.src), String(e.dst), { weight: e.weight, minlen: 1 });
  }
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
  const routes: number[][] = edges.map((e) => {
    const lbl = e.src === e.dst ? undefined : (g.edge(String(e.src), String(e.dst)) as { points?: { x: number; y: number }[] } | undefined);
    const pts: number[] = [];
    for (const p of lbl?.points ?? []) {
      pts.push(p.x, p.y);
      minX = Math.min(minX, p.x);
      minY = Math.min(minY, p.y);
      maxX = Math.max(maxX, p.x);
      maxY = Math.max(maxY, p.y);
    }
    return pts;
  });
  if (sizes.length === 0) minX = minY = maxX = maxY = 0;
  const dx = pad - minX;
  const dy = pad + header - minY;
  for (let i = 0; i < pos.length; i += 2) {
    pos[i] += dx;
    pos[i + 1] += dy;
  }
  for (const r of routes) {
    for (let i = 0; i < r.length; i += 2) {
      r[i] += dx;
      r[i + 1] += dy;
    }
  }
  return { w: maxX - minX + 2 * pad, h: maxY - minY + 2 * pad + header, pos, routes };
}

/** Lay out a request; `cache` makes repeated calls incremental. */
export function computeLayout(req: LayoutRequest, cache: LayoutCache = new LayoutCache()): LayoutResult {
  let laidOut = 0;
  // Bottom-up: sizes of nested groups first, each placement cached by its signature.
  const placeRec = (group: LayoutGroup, isRoot: boolean): { sig: string; p: GroupPlacement; kids: (GroupDone | null)[] } => {
    const kids: (GroupDone | null)[] = [];
    const sizes: [number, number][] = [];
    const parts: string[] = [req.dir, isRoot ? "R" : "G"];
    for (const it of group.items) {
      if (isGroup(it)) {
        const done = placeRec(it, false);
        kids.push({ group: it, ...done });
        sizes.push([done.p.w, done.p.h]);
        parts.push(`${it.key}=${done.p.w.toFixed(1)}x${done.p.h.toFixed(1)}`);
      } else {
        kids.push(null);
        sizes.push([it.w, it.h]);
        parts.push(`${it.key}=${it.w}x${it.h}`);
      }
    }
    for (const e of group.edges) parts.push(`${e.src}>${e.dst}:${e.weight}`);
    const sig = parts.join("|");
    let p = cache.get(sig);
    if (!p) {
      p = placeGroup(req.dir, sizes, group.edges, isRoot);
      cache.set(sig, p);
      laidOut++;
    }
    return { sig, p, kids };
  };
  type GroupDone = { group: LayoutGroup; sig: string; p: GroupPlacement; kids: (GroupDone | null)[] };
  const root = placeRec(req.root, true);

  const boxes: Record<string, Box> = {};
  const routes: Record<string, number[]> = {};
  const emit = (group: LayoutGroup, done: { p: GroupPlacement; kids: (GroupDone | null)[] }, ox: number, oy: number) => {
    boxes[group.key] = [ox, oy, done.p.w, done.p.h];
    group.items.forEach((it, i) => {
      const x = ox + done.p.pos[2 * i];
      const y = oy + done.p.pos[2 * i + 1];
      const kid = done.kids[i];
      if (kid) emit(kid.group, kid, x, y);
      else boxes[it.key] = [x, y, (it as LayoutLeaf).w, (it as LayoutLeaf).h];
    });
    group.edges.forEach((e, i) => {
      const rel = done.p.routes[i];
      const abs = new Array<number>(rel.length);
      for (let j = 0; j < rel.length; j += 2) {
        abs[j] = rel[j] + ox;
        abs[j + 1] = rel[j + 1] + oy;
      }
      routes[`${group.items[e.src].key}>${group.items[e.dst].key}`] = abs;
    });
  };
  emit(req.root, root, 0, 0);
  return { boxes, routes, width: root.p.w, height: root.p.h, laidOut };
}
