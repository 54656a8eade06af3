/**
 * Between the view model and the drawing: the layout request (request.ts) and, from a laid-out
 * view, the scene: boxes and labels of nodes, groups and junctions, and each edge's points,
 * made of the pieces the layouts routed (out of the groups around its source, between the two
 * items of the container holding both ends, into the groups around its target), or the tap
 * of a bus; ports spread where edges share a side (routing.ts). Pure and DOM-free.
 */
import type { Box, Direction, LayoutResult } from "../layout/layout";
import { drawnKinds } from "../model/branches";
import { formatParams, formatShape } from "../model/format";
import { problemsOf, viewMarks } from "../model/problems";
import { residualInside, residualOf } from "../model/residual";
import { counterpart } from "../model/stack";
import type { CallTree } from "../model/tree";
import { nextMemberKey, portName, prevMemberKey, unfoldStackKey, type Item, type ViewGraph } from "../model/view_model";
import { drawBuses } from "./bus";
import { partLines } from "../model/parts";
import { contextOf, runHeader, runType, stackLabel, stageContext, stageTitle } from "./names";
import { clusterLabel, drawnOf, foldLine, groupModule, itemPath, projectEdge } from "./request";
export type { Measure, TextKind } from "./request";
import { spreadPorts } from "./routing";
import { at } from "../wire_check";
import type { Scene, SceneCluster, SceneEdge, SceneJunction, SceneNode } from "./types";

export {
  drawnOf,
  estimate,
  itemPath,
  stageWidth,
  JUNCTION_D,
  layoutRequest,
  MIN_NAME_PX,
  MINIMAP_STRIP,
  NAME_PX,
  NODE_H,
  NODE_W,
  PORT_H,
  PORT_LINE,
  PORT_W,
  portHeight,
  portLines,
  projectEdge,
  READ_K,
  ROOT,
  type Pictures,
  pictureBeside,
  pictureBox,
  SIDE_W,
  THUMB_H,
} from "./request";

export function buildScene(tree: CallTree, view: ViewGraph, lay: LayoutResult, dir: Direction): Scene {
  const { calls } = tree.graph;
  const nodes: SceneNode[] = [];
  const marks = viewMarks(tree, view, problemsOf(tree.graph));
  const mark = (key: string) => marks.get(key) ?? null;
  const columnOf = (key: string) => lay.columns[itemPath(view, key)?.[1] ?? ""] ?? 0;
  for (const n of view.nodes) {
    const box = lay.boxes[n.key];
    if (!box) continue;
    if (n.kind === "input" || n.kind === "output") {
      nodes.push({
        key: n.key,
        id: n.id,
        kind: n.kind,
        call: -1,
        box,
        title: portName(n),
        path: n.id,
        type: n.kind,
        shape: "",
        params: "",
        expandable: false,
        foldCount: 0,
        error: null,
        mark: null,
      });
      continue;
    }
    const c = at(calls, n.call);
    if (n.run?.part) {
      const members = n.run.members;
      const lines = partLines(tree, n.run);
      nodes.push({
        key: n.key,
        id: n.id,
        kind: "fold",
        call: n.call,
        box,
        title: lines.title,
        // the tip names every member and type, a leading norm's too
        path: members.map((m) => `${at(calls, m).module}  ${at(calls, m).type}`).join("\n"),
        type: lines.type,
        shape: lines.shape,
        params: lines.params,
        expandable: true,
        foldCount: 0,
        error: members.map((m) => at(calls, m).error).find((e) => e !== null) ?? null,
        mark: mark(n.key),
        part: true,
      });
    } else if (n.run) {
      const members = n.run.members;
      const last = at(calls, at(members, members.length - 1));
      const { path, range, params } = foldLine(calls, n.run, contextOf(view, at(calls, at(members, 0)).module));
      const err = members.map((m) => at(calls, m).error).find((e) => e !== null) ?? null;
      const node: SceneNode = {
        key: n.key,
        id: n.id,
        kind: "fold",
        call: n.call,
        box,
        title: `${runType(n.run)} × ${n.run.count}`,
        path,
        range,
        type: runType(n.run),
        shape: formatShape(last.shapes[0]),
        params,
        expandable: true,
        foldCount: n.run.count,
        error: err,
        mark: mark(n.key),
      };
      const residual = residualOf(tree, members);
      if (residual) node.residual = residual;
      if (columnOf(n.key) > 0) node.mirror = true;
      nodes.push(node);
    } else {
      const node: SceneNode = {
        key: n.key,
        id: n.id,
        kind: "stage",
        call: n.call,
        box,
        title: stageTitle(c, c.call, stageContext(view, c)),
        path: c.module,
        type: c.type,
        shape: formatShape(c.shapes[0]),
        params: formatParams(c.params),
        expandable: at(tree.children, n.call).length > 0,
        foldCount: 0,
        error: c.error,
        mark: mark(n.key),
      };
      const residual = residualInside(tree, n.base ?? n.call);
      if (residual) node.residual = residual;
      if (columnOf(n.key) > 0) node.mirror = true;
      nodes.push(node);
    }
  }
  const clusters: SceneCluster[] = [];
  // the layout boxes every item and group of the view: one missing is a bug upstream
  const groupBox = (key: string): Box => {
    const box = lay.boxes[key];
    if (!box) throw new Error(`buildScene: the layout has no box for ${key}`);
    return box;
  };
  // `map`: in a stack showing member k, member 0's calls -> member k's (the labels are k's)
  const walk = (items: Item[], map: Map<number, number> | null = null, outer = "") => {
    for (const it of items) {
      if (it.kind === "cluster") {
        const call = map?.get(it.call) ?? it.call;
        const c = at(calls, call);
        clusters.push({
          key: it.key,
          id: c.id,
          kind: "cluster",
          call,
          box: groupBox(it.key),
          label: clusterLabel(calls, call, outer),
          type: c.type,
          depth: c.depth,
          mark: mark(it.key),
        });
        walk(it.items, map, c.module);
      } else if (it.kind === "run") {
        const c = at(calls, at(it.run.members, 0));
        clusters.push({
          key: it.key,
          id: it.run.key,
          kind: "run",
          call: at(it.run.members, 0),
          box: groupBox(it.key),
          ...runHeader(calls, it.run),
          depth: c.depth,
          mark: null,
        });
        walk(it.items, map, groupModule(calls, it));
      } else if (it.kind === "stack") {
        const st = view.stacks.find((x) => x.key === it.key);
        const shown = st?.shown ?? 0;
        const c = at(calls, at(it.run.members, shown));
        clusters.push({
          key: it.key,
          id: c.id,
          kind: "stack",
          call: at(it.run.members, shown),
          box: groupBox(it.key),
          label: stackLabel(it.run, view),
          type: c.module,
          depth: c.depth,
          mark: mark(it.key),
          stack: {
            count: it.run.count,
            shown,
            steppable: st?.steppable ?? false,
            ...(it.run.shared ? { shared: true as const } : {}),
            prev: prevMemberKey(it.run.key),
            next: nextMemberKey(it.run.key),
            unfold: unfoldStackKey(it.run.key),
            fold: it.key,
          },
        });
        walk(it.items, shown > 0 ? counterpart(tree, it.run, shown) : null, groupModule(calls, it, shown));
      }
    }
  };
  walk(view.items);
  const { drawing, trunk } = drawnOf(view);
  const junctionList: SceneJunction[] = [];
  for (const { key, what, glyph, outs, stage, operand } of drawing.junctions) {
    const box = lay.boxes[key];
    if (box) junctionList.push({ key, box, what, glyph, outs, stage, operand });
  }
  const boxOf = (key: string): Box | undefined => lay.boxes[key];
  const anchor = (box: Box, out: boolean): number[] => {
    const [x, y, w, h] = box;
    return dir === "TB" ? [x + w / 2, out ? y + h : y] : [out ? x + w : x, y + h / 2];
  };
  // The points of a drawn edge: the pieces out of the groups around its source, the route in
  // the container that holds both ends, the pieces into the groups around its target.
  const compose = (src: string, dst: string): number[] | null => {
    const proj = projectEdge(view, src, dst);
    if (!proj || !boxOf(src) || !boxOf(dst)) return null;
    const [, a, b] = proj;
    const ps = itemPath(view, src)!;
    const pd = itemPath(view, dst)!;
    const pieces: (number[] | undefined)[] = [];
    const ia = ps.indexOf(a);
    for (let i = ps.length - 1; i > ia; i--) pieces.push(lay.exits[`${ps[i]}|${ps[i - 1]}`]);
    pieces.push(lay.routes[`${a}>${b}`]);
    const ib = pd.indexOf(b);
    for (let i = ib + 1; i < pd.length; i++) pieces.push(lay.entries[`${pd[i - 1]}|${pd[i]}`]);
    const pts: number[] = [];
    for (const piece of pieces) {
      if (!piece || piece.length < 4) continue;
      for (let i = 0; i < piece.length; i += 2) {
        const n = pts.length;
        if (n && Math.abs(pts[n - 2]! - piece[i]!) < 0.01 && Math.abs(pts[n - 1]! - piece[i + 1]!) < 0.01) continue;
        pts.push(piece[i]!, piece[i + 1]!);
      }
    }
    if (pts.length < 4) return [...anchor(boxOf(src)!, true), ...anchor(boxOf(dst)!, false)];
    return pts;
  };
  const bused = new Set([...trunk.buses.values()].flat());
  const drawn = drawnKinds(view); // (a stream's own branches as flow, token ids read again as merge)
  const edges: SceneEdge[] = [];
  const stubs: SceneEdge[] = [];
  const keys = new Set<string>();
  for (const e of drawing.edges) {
    if (bused.has(e)) continue;
    const points = compose(e.src, e.dst);
    if (!points) continue;
    if (!e.edge) {
      stubs.push({
        key: `${e.src}>${e.dst}`,
        src: e.src,
        dst: e.dst,
        srcId: "",
        dstId: view.byKey.get(e.dst)?.id ?? e.dst,
        kind: e.kind,
        points,
        from: e.src,
        to: e.dst,
      });
      continue;
    }
    const ve = e.edge;
    let key = `${ve.src}>${ve.dst}`;
    if (keys.has(key)) key += `@${e.src}`; // (one edge drawn through a junction no node reads: two)
    keys.add(key);
    edges.push({
      key,
      src: ve.src,
      dst: ve.dst,
      srcId: view.byKey.get(ve.src)!.id,
      dstId: view.byKey.get(ve.dst)!.id,
      kind: drawn.get(ve) ?? ve.kind,
      points,
      from: e.src,
      to: e.dst,
    });
  }
  const obstacles = [...nodes.map((n) => n.box), ...junctionList.map((j) => j.box), ...clusters.map((c) => c.box)];
  const bus = drawBuses(trunk.buses, trunk.labels, view, boxOf, obstacles, dir);
  edges.push(...bus.taps);
  spreadPorts([...edges, ...stubs], lay.boxes, dir, new Set(drawing.byKey.keys()));
  if (dir === "TB") arcsClearOfSides(nodes, edges);
  // Buses may run beside everything: the scene starts at 0, 0 again.
  let minX = 0,
    minY = 0,
    maxX = lay.width,
    maxY = lay.height;
  const grow = (pts: number[]) => {
    for (let i = 0; i < pts.length; i += 2) {
      minX = Math.min(minX, pts[i]!);
      maxX = Math.max(maxX, pts[i]!);
      minY = Math.min(minY, pts[i + 1]!);
      maxY = Math.max(maxY, pts[i + 1]!);
    }
  };
  for (const e of [...edges, ...stubs]) grow(e.points);
  for (const b of bus.buses) grow(b.points);
  if (minX < 0 || minY < 0) {
    const dx = -minX;
    const dy = -minY;
    const move = (pts: number[]) => {
      for (let i = 0; i < pts.length; i += 2) {
        pts[i]! += dx;
        pts[i + 1]! += dy;
      }
    };
    const moveBox = (b: Box): Box => [b[0] + dx, b[1] + dy, b[2], b[3]];
    for (const n of nodes) n.box = moveBox(n.box);
    for (const c of clusters) c.box = moveBox(c.box);
    for (const j of junctionList) j.box = moveBox(j.box);
    for (const e of [...edges, ...stubs]) move(e.points);
    for (const b of bus.buses) {
      move(b.points);
      move(b.taps);
    }
  }
  return {
    dir,
    nodes,
    clusters,
    edges,
    junctions: junctionList,
    stubs,
    buses: bus.buses,
    width: maxX - minX,
    height: maxY - minY,
    core: [-minX, -minY, lay.width, lay.height],
  };
}

/** A residual mark's arc runs round the side of its card no edge comes in by (a bus' tap into
 * BERT's attention from the left, the attention mask: the arc round the right side then), so
 * that no line crosses it (TB; view/residual_mark.ts). */
function arcsClearOfSides(nodes: SceneNode[], edges: readonly SceneEdge[]) {
  const marked = new Map(nodes.filter((n) => n.residual).map((n) => [n.key, n]));
  for (const e of edges) {
    const n = marked.get(e.to);
    const [x, y] = [e.points[e.points.length - 2]!, e.points[e.points.length - 1]!];
    if (!n || y <= n.box[1] + 1 || y >= n.box[1] + n.box[3] - 1) continue; // in by the top or bottom
    // in from the left: the arc round the right
    if (x <= n.box[0] + 1) n.mirror = true;
    else if (x >= n.box[0] + n.box[2] - 1) n.mirror = false;
  }
}

/** An SVG path through the points: straight ends, a smooth B-spline in between. */
export function edgePath(p: number[]): string {
  const n = p.length / 2;
  if (n < 2) return "";
  const f = (v: number) => (Math.round(v * 10) / 10).toString();
  if (n === 2) return `M${f(p[0]!)},${f(p[1]!)}L${f(p[2]!)},${f(p[3]!)}`;
  let d = `M${f(p[0]!)},${f(p[1]!)}`;
  // Uniform cubic B-spline (like d3.curveBasis), clamped at both ends.
  let x0 = p[0]!,
    y0 = p[1]!,
    x1 = p[0]!,
    y1 = p[1]!;
  const point = (x: number, y: number) => {
    d += `C${f((2 * x0 + x1) / 3)},${f((2 * y0 + y1) / 3)} ${f((x0 + 2 * x1) / 3)},${f((y0 + 2 * y1) / 3)} ${f((x0 + 4 * x1 + x) / 6)},${f((y0 + 4 * y1 + y) / 6)}`;
  };
  for (let i = 1; i < n; i++) {
    const x = p[2 * i]!,
      y = p[2 * i + 1]!;
    if (i >= 2) point(x, y);
    else d += `L${f((5 * x0 + x) / 6)},${f((5 * y0 + y) / 6)}`;
    x0 = x1;
    y0 = y1;
    x1 = x;
    y1 = y;
  }
  point(x1, y1);
  d += `L${f(x1)},${f(y1)}`;
  return d;
}
