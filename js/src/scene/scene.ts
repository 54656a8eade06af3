/**
 * Between the view model and the drawing: turns a ViewGraph into a layout request (items
 * per container, edges projected onto the container that holds both ends) and a laid-out
 * graph into a scene (boxes, labels, edge paths; the routing of edge ends is routing.ts's).
 * Pure and DOM-free.
 */
import type { Box, Direction, LayoutEdge, LayoutGroup, LayoutLeaf, LayoutRequest, LayoutResult } from "../layout/layout";
import { formatParams, formatShape } from "../model/format";
import { problemsOf, viewMarks } from "../model/problems";
import type { CallTree } from "../model/tree";
import type { Item, ViewGraph, VisibleNode } from "../model/view_model";
import type { EdgeKind } from "../wire";
import { axes, detour, KIND_ORDER, LANE_GAP, spreadPorts, type Margins } from "./routing";
import type { Scene, SceneCluster, SceneEdge, SceneNode } from "./types";

export const ROOT = "root";
export const NODE_W = 196;
export const NODE_H = 50;
export const PORT_W = 116;
export const PORT_H = 32;
const WEIGHT: Record<EdgeKind, number> = { flow: 4, merge: 2, skip: 1, order: 1 };

function itemPathOf(node: VisibleNode): string[] {
  // node.path holds container keys with "" for the model; the layout calls the model ROOT.
  return [ROOT, ...node.path.slice(1), node.key];
}

export function layoutRequest(view: ViewGraph, dir: Direction): LayoutRequest {
  const groups = new Map<string, LayoutGroup>();
  const index = new Map<string, Map<string, number>>(); // group key -> item key -> index
  const leaf = (key: string, w: number, h: number): LayoutLeaf => ({ key, w, h });
  const build = (key: string, items: Item[], ports: LayoutLeaf[] = [], tail: LayoutLeaf[] = []): LayoutGroup => {
    const g: LayoutGroup = { key, items: [], edges: [] };
    groups.set(key, g);
    g.items.push(...ports);
    for (const it of items) {
      if (it.kind === "stage" || it.kind === "fold") g.items.push(leaf(it.key, NODE_W, it.kind === "fold" ? NODE_H + 6 : NODE_H));
      else g.items.push(build(it.key, it.items));
    }
    g.items.push(...tail);
    index.set(key, new Map(g.items.map((x, i) => [x.key, i])));
    return g;
  };
  const ins = view.nodes.filter((n) => n.kind === "input").map((n) => leaf(n.key, PORT_W, PORT_H));
  const outs = view.nodes.filter((n) => n.kind === "output").map((n) => leaf(n.key, PORT_W, PORT_H));
  const root = build(ROOT, view.items, ins, outs);
  const seen = new Set<string>();
  for (const e of view.edges) {
    const proj = projectEdge(view, e.src, e.dst);
    if (!proj) continue;
    const [group, a, b] = proj;
    const k = `${a}>${b}`;
    const idx = index.get(group)!;
    const w = WEIGHT[e.kind];
    if (seen.has(k)) {
      const existing = groups.get(group)!.edges.find((x) => x.src === idx.get(a) && x.dst === idx.get(b));
      if (existing) existing.weight = Math.max(existing.weight, w);
      continue;
    }
    seen.add(k);
    const le: LayoutEdge = { src: idx.get(a)!, dst: idx.get(b)!, weight: w };
    groups.get(group)!.edges.push(le);
  }
  return { dir, root };
}

/** The container holding both ends of an edge, and the items of that container that hold each end. */
export function projectEdge(view: ViewGraph, src: string, dst: string): [string, string, string] | null {
  const a = view.byKey.get(src);
  const b = view.byKey.get(dst);
  if (!a || !b) return null;
  const pa = itemPathOf(a);
  const pb = itemPathOf(b);
  let l = 0;
  while (l < pa.length && l < pb.length && pa[l] === pb[l]) l++;
  if (l === 0 || l >= pa.length || l >= pb.length) return null;
  return [pa[l - 1], pa[l], pb[l]];
}

// ---------------------------------------------------------------------------------------
// The scene: boxes, labels and edge points.

/** The short name of a module: its last part, or the last two when that is an index ("layers.3"). */
function lastPart(name: string): string {
  const parts = name.split(".");
  const last = parts[parts.length - 1];
  return /^\d+$/.test(last) && parts.length > 1 ? `${parts[parts.length - 2]}.${last}` : last || name;
}

function anchor(box: Box, dir: Direction, out: boolean): [number, number] {
  const [x, y, w, h] = box;
  if (dir === "TB") return [x + w / 2, out ? y + h : y];
  return [out ? x + w : x, y + h / 2];
}

export function buildScene(tree: CallTree, view: ViewGraph, lay: LayoutResult, dir: Direction): Scene {
  const { calls } = tree.graph;
  const nodes: SceneNode[] = [];
  const marks = viewMarks(tree, view, problemsOf(tree.graph));
  const mark = (key: string) => marks.get(key) ?? null;
  for (const n of view.nodes) {
    const box = lay.boxes[n.key];
    if (!box) continue;
    if (n.kind === "input" || n.kind === "output") {
      nodes.push({ key: n.key, id: n.id, kind: n.kind, call: -1, box, title: n.id, path: n.id, type: n.kind, shape: "", params: "", expandable: false, foldCount: 0, error: null, mark: null });
      continue;
    }
    const c = calls[n.call];
    if (n.run) {
      const members = n.run.members;
      const last = calls[members[members.length - 1]];
      const params = members.reduce((s, m) => s + calls[m].params, 0);
      const err = members.map((m) => calls[m].error).find((e) => e !== null) ?? null;
      nodes.push({
        key: n.key, id: n.id, kind: "fold", call: n.call, box,
        title: `${n.run.type} × ${members.length}`,
        path: `${c.module} … ${last.module.slice(last.module.lastIndexOf(".") + 1)}`,
        type: n.run.type, shape: formatShape(last.shapes[0]), params: formatParams(params),
        expandable: true, foldCount: members.length, error: err, mark: mark(n.key),
      });
    } else {
      nodes.push({
        key: n.key, id: n.id, kind: "stage", call: n.call, box,
        title: lastPart(c.module) + (c.call > 0 ? ` #${c.call}` : ""),
        path: c.module,
        type: c.type, shape: formatShape(c.shapes[0]), params: formatParams(c.params),
        expandable: tree.children[n.call].length > 0, foldCount: 0, error: c.error, mark: mark(n.key),
      });
    }
  }
  const clusters: SceneCluster[] = [];
  const walk = (items: Item[]) => {
    for (const it of items) {
      if (it.kind === "cluster") {
        const c = calls[it.call];
        clusters.push({ key: it.key, id: c.id, kind: "cluster", call: it.call, box: lay.boxes[it.key], label: c.module, type: c.type, depth: c.depth, mark: mark(it.key) });
        walk(it.items);
      } else if (it.kind === "run") {
        const c = calls[it.run.members[0]];
        clusters.push({
          key: it.key, id: it.run.key, kind: "run", call: it.run.members[0], box: lay.boxes[it.key],
          label: `${it.run.prefix}.* (${it.run.members.length})`, type: `${it.run.type} × ${it.run.members.length}`, depth: c.depth, mark: null,
        });
        walk(it.items);
      }
    }
  };
  walk(view.items);
  // Edges whose ends sit inside groups can share one laid-out route (the route between the
  // two items that hold them): each gets its own lane beside it.
  const shared = new Map<string, { e: (typeof view.edges)[number]; order: number[] }[]>();
  const laid: { e: (typeof view.edges)[number]; route: string }[] = [];
  for (const e of view.edges) {
    const proj = projectEdge(view, e.src, e.dst);
    if (!proj || !lay.boxes[e.src] || !lay.boxes[e.dst]) continue;
    const route = `${proj[1]}>${proj[2]}`;
    laid.push({ e, route });
    const { across } = axes(dir);
    const order = [lay.boxes[e.dst][across] + lay.boxes[e.dst][across + 2] / 2, lay.boxes[e.src][across] + lay.boxes[e.src][across + 2] / 2, KIND_ORDER[e.kind]];
    shared.set(route, [...(shared.get(route) ?? []), { e, order }]);
  }
  const lane = new Map<(typeof view.edges)[number], number>();
  for (const list of shared.values()) {
    if (list.length < 2) continue;
    list.sort((p, q) => p.order[0] - q.order[0] || p.order[1] - q.order[1] || p.order[2] - q.order[2]);
    list.forEach(({ e }, i) => lane.set(e, (i - (list.length - 1) / 2) * LANE_GAP));
  }
  const edges: SceneEdge[] = [];
  const margins: Margins = new Map();
  const inside = new Map<string, SceneNode[]>(); // group key -> the nodes drawn inside it
  for (const n of nodes) {
    for (const group of view.byKey.get(n.key)?.path ?? []) {
      if (!group) continue;
      const list = inside.get(group);
      if (list) list.push(n);
      else inside.set(group, [n]);
    }
  }
  for (const { e, route: routeKey } of laid) {
    const a = view.byKey.get(e.src)!;
    const b = view.byKey.get(e.dst)!;
    const [, from, to] = projectEdge(view, e.src, e.dst)!;
    const route = [...(lay.routes[routeKey] ?? [])];
    const shift = lane.get(e) ?? 0;
    if (shift) for (let i = axes(dir).across; i < route.length; i += 2) route[i] += shift;
    let pts: number[] = [];
    if (from !== e.src || route.length < 4) pts.push(...anchor(lay.boxes[e.src], dir, true));
    pts.push(...route);
    if (to !== e.dst || route.length < 4) pts.push(...anchor(lay.boxes[e.dst], dir, false));
    // Inside a group the piece between the group's side and the node is a straight line: when
    // it would cross other nodes, it runs down the group's margin instead.
    const others = (group: string) => (inside.get(group) ?? []).filter((n) => n.key !== e.src && n.key !== e.dst).map((n) => n.box);
    if (route.length >= 4 && to !== e.dst) pts = detour(pts, to, lay.boxes[to], others(to), dir, false, margins);
    if (route.length >= 4 && from !== e.src) pts = detour(pts, from, lay.boxes[from], others(from), dir, true, margins);
    edges.push({ key: `${e.src}>${e.dst}`, src: e.src, dst: e.dst, srcId: a.id, dstId: b.id, kind: e.kind, points: pts });
  }
  spreadPorts(edges, lay.boxes, dir);
  return { dir, nodes, clusters, edges, width: lay.width, height: lay.height };
}

/** An SVG path through the points: straight ends, a smooth B-spline in between. */
export function edgePath(p: number[]): string {
  const n = p.length / 2;
  if (n < 2) return "";
  const f = (v: number) => (Math.round(v * 10) / 10).toString();
  if (n === 2) return `M${f(p[0])},${f(p[1])}L${f(p[2])},${f(p[3])}`;
  let d = `M${f(p[0])},${f(p[1])}`;
  // Uniform cubic B-spline (like d3.curveBasis), clamped at both ends.
  let x0 = p[0], y0 = p[1], x1 = p[0], y1 = p[1];
  const point = (x: number, y: number) => {
    d += `C${f((2 * x0 + x1) / 3)},${f((2 * y0 + y1) / 3)} ${f((x0 + 2 * x1) / 3)},${f((y0 + 2 * y1) / 3)} ${f((x0 + 4 * x1 + x) / 6)},${f((y0 + 4 * y1 + y) / 6)}`;
  };
  for (let i = 1; i < n; i++) {
    const x = p[2 * i], y = p[2 * i + 1];
    if (i >= 2) point(x, y);
    else d += `L${f((5 * x0 + x) / 6)},${f((5 * y0 + y) / 6)}`;
    x0 = x1; y0 = y1; x1 = x; y1 = y;
  }
  point(x1, y1);
  d += `L${f(x1)},${f(y1)}`;
  return d;
}
