/**
 * The layout request of a view: the items of each container (its stages, folds and groups,
 * the model's inputs and outputs at the root, the junctions where the container's forward
 * joined data), which of them the trunk passes, and the drawn edges projected onto the
 * container that holds both ends (with the kinds the layouts read); the edges of a bus are
 * hidden there (they place its source, above its first reader, and are not routed). Each group also learns which of its items an edge from outside enters or leaves (it
 * routes those pieces itself). The drawing and the trunk are computed once per view.
 * Pure and DOM-free.
 */
import {
  GROUP_PAD,
  type FitTarget,
  type LayoutEdge,
  type LayoutGroup,
  type LayoutLeaf,
  type LayoutRequest,
  type Direction,
} from "../layout/layout";
import { columnsOf } from "../layout/columns";
import { junctions, type Drawing, type Junction } from "../model/junctions";
import { partLines } from "../model/parts";
import { crossKeysAndValues, trunkOf, type Trunk } from "../model/trunk";
import type { Run } from "../model/tree";
import { type Item, portName, type ViewGraph, type VisibleNode } from "../model/view_model";
import { formatParams, formatShape } from "../model/format";
import { contextOf, lastPart, runHeader, stackLabel, stageContext, stageTitle } from "./names";
import type { EdgeKind, WireCall } from "../wire";

export const ROOT = "root";
export const NODE_W = 196;
export const NODE_H = 50;
/** The widest a stage grows: a type of some 40 characters beside its shape
 * ("SegformerOverlapPatchEmbeddings  1×64×16" whole). */
const STAGE_MAX = 380;
/** ... a fold: two types of some 30 characters ("(Mask2FormerSinePositionEmbedding →
 * Sequential) × 3"); a folded sublayer: two types of some 30 characters beside its shape. */
const [FOLD_MAX, PART_MAX] = [500, 600];
export const PORT_W = 116;
export const PORT_H = 32;
export const JUNCTION_D = 22;
/** With data on the graph: the picture's height on a node, at scale 1 (the node grows by it). */
export const THUMB_H = 72;
const THUMB_PAD = 8;
/** Data on the graph: no pictures, a picture under each node's words (the node THUMB_H
 * taller), or beside them (a model too tall for that: each node as tall as without pictures,
 * SIDE_W wider, a port as tall as a stage). */
export type Pictures = "none" | "under" | "beside";
export const SIDE_W = 64;

/** Whether a node `h` tall, its words' band `top` high, has its picture beside them. */
export function pictureBeside(h: number, top: number): boolean {
  return h < top + THUMB_H;
}

/** Where a node of size `w` x `h` draws its picture ([x, y, w, h] in the node): under its
 * words (`top`: their band's height) or beside them on its right. */
export function pictureBox(w: number, h: number, top: number): [number, number, number, number] {
  return pictureBeside(h, top) ? [w - SIDE_W, 6, SIDE_W - 8, h - 12] : [10, top - 2, w - 20, THUMB_H];
}
/** The size of a node's name at scale 1 (styles.ts .nfw-t1), the least it may be drawn at, and
 * so the least scale a first view uses. */
export const NAME_PX = 14;
export const MIN_NAME_PX = 12;
export const READ_K = MIN_NAME_PX / NAME_PX;
/** What the minimap takes beside the graph (its 148 px and margins), left free when nothing fits. */
export const MINIMAP_STRIP = 172;
const WEIGHT: Record<EdgeKind, number> = { flow: 4, merge: 2, skip: 1, order: 1 };

/** The kinds of text a node's size is measured for (view/cards.ts draws each in its font): a
 * card's name line ("t1", 14 px bold) and type line ("t2", 13 px), a number or shape ("num",
 * 13 px mono), a group's header ("ct", 14 px bold), a stack's header ("st", 14 px bold), a
 * port's name ("port", 13 px medium). */
export type TextKind = "t1" | "t2" | "num" | "ct" | "st" | "port";
/** How wide a text is drawn, in px at scale 1. */
export type Measure = (text: string, kind: TextKind) => number;
const PER_CHAR: Record<TextKind, number> = { t1: 8.6, t2: 7.4, num: 8, ct: 9, st: 8.8, port: 7.6 };
/** A width by an average letter of each kind: where no page measures (a worker, the tests).
 * The page measures in its fonts (view/graph_view.ts measure), so that a name of wide letters
 * ("WwMm…") is whole too. */
export const estimate: Measure = (text, kind) => PER_CHAR[kind] * text.length;

export type Drawn = { drawing: Drawing; trunk: Trunk };

const memo = new WeakMap<ViewGraph, Drawn>();

/** The view's junctions, redrawn edges and trunk (computed once per view). */
export function drawnOf(view: ViewGraph): Drawn {
  let d = memo.get(view);
  if (!d) {
    const drawing = junctions(view.tree, view);
    d = { drawing, trunk: trunkOf(view, drawing) };
    memo.set(view, d);
  }
  return d;
}

/** A stage is as wide as its two lines need: the name and parameter count (14 px bold, 13 px
 * mono), the type and output shape (13 px, 13 px mono), so that both are whole on the node;
 * up to STAGE_MAX (a longer one is cut, whole in its tip). */
export function stageWidth(c: WireCall, m: Measure = estimate, again = c.call, context = ""): number {
  return twoLines(stageTitle(c, again, context), formatParams(c.params), c.type, formatShape(c.shapes[0]), m);
}

/** The most a module is called again in the run (ALBERT's shared layer: "attention #3"): a stack
 * stepping through its passes draws each pass's title on the one node, as wide as the longest. */
function mostCalls(calls: readonly WireCall[]): Map<string, number> {
  let most = mostMemo.get(calls);
  if (!most) {
    most = new Map();
    for (const c of calls) most.set(c.module, Math.max(most.get(c.module) ?? 0, c.call));
    mostMemo.set(calls, most);
  }
  return most;
}
const mostMemo = new WeakMap<readonly WireCall[], Map<string, number>>();

/** A card's width for its two lines (view/cards.ts nodeCard): the name and, right of it, the
 * parameters; the type and, right of it, the shape; at least NODE_W, up to STAGE_MAX. */
function twoLines(title: string, params: string, type: string, shape: string, m: Measure, most = STAGE_MAX): number {
  const first = 40 + m(title, "t1") + (params ? m(params, "num") + 10 : 0);
  const second = 40 + m(type, "t2") + m(shape, "num") + 8;
  return Math.round(Math.min(most, Math.max(NODE_W, first, second)));
}

/** A group's header label: the module's name below the drawn group around it (`outer`:
 * "attention" inside "encoder.layer.0"; the whole name in the header's tip), or its whole
 * name where no group around it names a module it is inside. */
export function clusterLabel(calls: readonly WireCall[], call: number, outer: string): string {
  const { module } = calls[call]!;
  return outer && module.startsWith(`${outer}.`) ? module.slice(outer.length + 1) : module;
}

/** The module a group's items are named within: a cluster's own, the member a stack draws
 * (`shown`), a run's members' parent's; "" for a stage. */
export function groupModule(calls: readonly WireCall[], it: Item, shown = 0): string {
  if (it.kind === "cluster") return calls[it.call]!.module;
  if (it.kind === "stack") return calls[it.run.members[shown]!]!.module;
  if (it.kind === "run") {
    const parent = calls[it.run.members[0]!]!.parent;
    return parent >= 0 ? calls[parent]!.module : "";
  }
  return "";
}

/** The widest a group's header makes its group (a longer label is cut, whole in its tip). */
const HEADER_MAX = 600;

/** What a group's header needs: its label (14 px bold), type (13 px) and collapse badge. */
export function clusterHeaderWidth(label: string, type: string, m: Measure = estimate): number {
  return Math.round(Math.min(HEADER_MAX, 12 + m(label, "ct") + 8 + m(type, "t2") + 44));
}
const headerWidth = (h: { label: string; type: string }, m: Measure) => clusterHeaderWidth(h.label, h.type, m);

/** A fold's range ("model.encoder.layers.0 … 2", in its tip), as its second line draws it
 * (its first member's short name after `context`, names.ts: "stages.2.layers.0 … 8"), and,
 * right of it, its members' parameters; one module called again: "… · shared", its own. */
export function foldLine(
  calls: readonly WireCall[],
  run: Run,
  context = "",
): { path: string; range: string; params: string } {
  const first = calls[run.members[0]!]!.module;
  const last = calls[run.members[run.members.length - 1]!]!.module;
  const end = last.slice(last.lastIndexOf(".") + 1);
  const params = run.members.reduce((s, m) => s + calls[m]!.params, 0);
  const short = context + lastPart(first);
  // one module called again: its name, its weights once
  if (run.shared)
    return {
      path: `${first}, called ${run.count} times`,
      range: `${short} · shared`,
      params: formatParams(calls[run.members[0]!]!.params),
    };
  return { path: `${first} … ${end}`, range: `${short} … ${end}`, params: formatParams(params) };
}

/** A fold is as wide as its two lines need: its title ("(Linear → ReLU)  × 200" in 14 px
 * bold) and its range and parameters (13 px, 13 px mono), so that both are whole, within
 * reason (FOLD_MAX: an up block of diffusers' U opened); a longer one is cut, whole in its
 * tip. */
export function foldWidth(run: Run, calls: readonly WireCall[], m: Measure = estimate, context = ""): number {
  const title = `${run.period > 1 ? `(${run.type})` : run.type} × ${run.count}`;
  const { range, params } = foldLine(calls, run, context);
  const second = 40 + m(range, "t2") + (params ? m(params, "num") + 10 : 0);
  return Math.round(Math.min(FOLD_MAX, Math.max(NODE_W, 64 + m(title, "t1"), second)));
}

/** A folded sublayer (model/parts.ts) is as wide as its two lines need, as a stage: its members'
 * names (not its norms') and all their parameters, the same members' types and its output's
 * shape; up to PART_MAX (a longer type line is cut, whole in its tip). */
export function partWidth({ title, type, params, shape }: ReturnType<typeof partLines>, m: Measure = estimate): number {
  return twoLines(title, params, type, shape, m, PART_MAX);
}

/** What a stack's header needs: its label in 14 px bold, "◀ 3 / 12 ▶" in 13 px, unfold, fold. */
export function stackHeaderWidth(run: Run, label: string, m: Measure = estimate): number {
  return Math.round(Math.min(HEADER_MAX, 130 + m(label, "st") + 14 * String(run.count).length));
}

/** The widest a port grows: a name of some 65 characters; a longer one is cut, whole in its tip. */
const PORT_MAX = 520;
/** A port's name longer than this many characters that names a field of an output
 * ("output:vision_model_output.last_hidden_state", CLIP's) is drawn on two lines, split
 * before its last field, and the port is as tall as they need. */
const PORT_ONE_LINE = 34;
export const PORT_LINE = 16; // the second line's height (view/cards.ts draws it so)

/** The lines of a port's name: one, or two where it is long and has a field to split at. */
export function portLines(id: string): string[] {
  const dot = id.lastIndexOf(".");
  if (id.length <= PORT_ONE_LINE || dot <= id.indexOf(":") + 1 || dot === id.length - 1) return [id];
  return [id.slice(0, dot), id.slice(dot)];
}

/** A port's height: one line of name, or two. */
export function portHeight(id: string): number {
  return PORT_H + (portLines(id).length - 1) * PORT_LINE;
}

/** A port (a model input or output) is as wide as its name's longer line needs
 * ("input:input_ids" in 13 px), up to PORT_MAX; with a picture on it, at least as wide as a stage. */
export function portWidth(id: string, pictures: Pictures = "none", m: Measure = estimate): number {
  const line = Math.max(...portLines(id).map((l) => m(l, "port")));
  const width = Math.round(Math.min(PORT_MAX, Math.max(pictures === "under" ? NODE_W : PORT_W, 28 + line)));
  return pictures === "beside" ? width + SIDE_W : width;
}

/** A junction's size: a round glyph, a pill of a short function name, or of the parameter joined in. */
export function junctionSize(j: Junction): [number, number] {
  if (j.operand) return [Math.round(JUNCTION_D + 8 + estimate(j.operand, "t2")), JUNCTION_D];
  return j.glyph.length <= 1 ? [JUNCTION_D, JUNCTION_D] : [Math.round(12 + 7.6 * j.glyph.length), 20];
}

/** The items (container keys, then the key) that hold a drawn key, the root first. */
export function itemPath(view: ViewGraph, key: string): string[] | null {
  const j = drawnOf(view).drawing.byKey.get(key);
  const path = j ? j.path : view.byKey.get(key)?.path;
  return path ? [ROOT, ...path.slice(1), key] : null;
}

/** The container holding both ends of an edge, and the items of that container that hold each end. */
export function projectEdge(view: ViewGraph, src: string, dst: string): [string, string, string] | null {
  const pa = itemPath(view, src);
  const pb = itemPath(view, dst);
  if (!pa || !pb) return null;
  let l = 0;
  while (l < pa.length && l < pb.length && pa[l] === pb[l]) l++;
  if (l === 0 || l >= pa.length || l >= pb.length) return null;
  return [pa[l - 1]!, pa[l]!, pb[l]!];
}

/** `pictures`: data on the graph, each stage and port taller or wider by a picture; `m`: how
 * wide the page draws a text (each node as wide as its words need). */
export function layoutRequest(
  view: ViewGraph,
  dir: Direction,
  fit?: FitTarget,
  pictures: Pictures = "none",
  m: Measure = estimate,
): LayoutRequest {
  const extra = pictures === "under" ? THUMB_H + THUMB_PAD : 0;
  const side = pictures === "beside" ? SIDE_W : 0;
  const { drawing, trunk } = drawnOf(view);
  const groups = new Map<string, LayoutGroup>();
  const index = new Map<string, Map<string, number>>(); // group key -> item key -> index
  const inner = new Map<string, Junction[]>(); // container key -> its junctions
  for (const j of drawing.junctions) {
    const at = j.path.length > 1 ? j.path[j.path.length - 1]! : ROOT;
    (inner.get(at) ?? inner.set(at, []).get(at)!).push(j);
  }
  const leaf = (key: string, w: number, h: number, junction = false): LayoutLeaf => ({
    key,
    w,
    h,
    spine: trunk.spine.has(key),
    junction,
  });
  // `minW`: a group as wide as its header at least: in TB the group (centred in it), in LR each node
  const build = (
    key: string,
    items: Item[],
    ports: LayoutLeaf[] = [],
    tail: LayoutLeaf[] = [],
    minW = 0,
    outer = "",
  ): LayoutGroup => {
    const g: LayoutGroup = { key, items: [], edges: [], entries: [], exits: [], minW: dir === "TB" ? minW : 0 };
    const least = dir === "TB" ? 0 : Math.max(0, minW - 2 * GROUP_PAD); // each node's
    groups.set(key, g);
    g.items.push(...ports);
    for (const it of items) {
      if (it.kind === "stage") {
        const c = view.tree.graph.calls[it.call]!;
        const again = mostCalls(view.tree.graph.calls).get(c.module) ?? c.call;
        const width = stageWidth(c, m, again, stageContext(view, c));
        g.items.push(leaf(it.key, Math.max(least, width + side), NODE_H + extra));
      } else if (it.kind === "fold" && it.run.part) {
        const width = partWidth(partLines(view.tree, it.run), m);
        g.items.push(leaf(it.key, Math.max(least, width), NODE_H));
      } else if (it.kind === "fold") {
        const { calls } = view.tree.graph;
        const context = contextOf(view, calls[it.run.members[0]!]!.module);
        g.items.push(leaf(it.key, Math.max(least, foldWidth(it.run, calls, m, context)), NODE_H + 6));
      } else {
        const calls = view.tree.graph.calls;
        const header =
          it.kind === "stack"
            ? stackHeaderWidth(it.run, stackLabel(it.run, view), m)
            : it.kind === "cluster"
              ? clusterHeaderWidth(clusterLabel(calls, it.call, outer), calls[it.call]!.type, m)
              : headerWidth(runHeader(calls, it.run), m); // (an unfolded run's)
        g.items.push(build(it.key, it.items, [], [], header, groupModule(calls, it)));
      }
    }
    g.items.push(...tail);
    for (const j of inner.get(key) ?? []) g.items.push(leaf(j.key, ...junctionSize(j), true));
    g.spine = g.items.some((x) => x.spine);
    index.set(key, new Map(g.items.map((x, i) => [x.key, i])));
    return g;
  };
  const port = (n: VisibleNode, name = portName(n)) =>
    leaf(n.key, portWidth(name, pictures, m), side ? Math.max(NODE_H, portHeight(name)) : portHeight(name) + extra);
  const ins = view.nodes.filter((n) => n.kind === "input").map((n) => port(n));
  const outs = view.nodes.filter((n) => n.kind === "output").map((n) => port(n));
  const root = build(ROOT, view.items, ins, outs);
  const bused = new Set([...trunk.buses.values()].flat());
  const kv = crossKeysAndValues(drawing); // (the flow into them: a cross-attention)
  const seen = new Map<string, LayoutEdge>();
  const mark = (list: "entries" | "exits" | "tapped", path: string[], from: number) => {
    // every group on the path below the projection: the item of it that holds the end
    for (let i = from; i + 1 < path.length; i++) {
      const g = groups.get(path[i]!);
      const at = index.get(path[i]!)?.get(path[i + 1]!);
      if (!g || at === undefined) continue;
      g[list] ??= [];
      if (!g[list].includes(at)) g[list].push(at);
    }
  };
  const hidden: [string, string, string][] = []; // a bus' edges: they place its source, drawn by scene/bus.ts
  for (const e of drawing.edges) {
    const proj = projectEdge(view, e.src, e.dst);
    if (!proj) continue;
    if (bused.has(e)) {
      hidden.push(proj); // (a cross-attention's keys and values: tapped in their own group)
      if (kv.has(e.dst)) mark("tapped", itemPath(view, e.dst)!, itemPath(view, e.dst)!.length - 2);
      continue;
    }
    const [group, a, b] = proj;
    const pa = itemPath(view, e.src)!;
    const pb = itemPath(view, e.dst)!;
    mark("exits", pa, pa.indexOf(a));
    mark("entries", pb, pb.indexOf(b));
    const k = `${group}|${a}>${b}`;
    const kind = e.kind === "flow" && kv.has(e.dst) ? "merge" : e.kind;
    const w = WEIGHT[kind];
    const existing = seen.get(k);
    if (existing) {
      if (w > existing.weight) [existing.weight, existing.kind] = [w, kind];
      continue;
    }
    const idx = index.get(group)!;
    const le: LayoutEdge = { src: idx.get(a)!, dst: idx.get(b)!, weight: w, kind };
    seen.set(k, le);
    groups.get(group)!.edges.push(le);
  }
  for (const [group, a, b] of hidden) {
    const k = `${group}|${a}>${b}`;
    if (seen.has(k)) continue;
    const idx = index.get(group)!;
    const le: LayoutEdge = { src: idx.get(a)!, dst: idx.get(b)!, weight: 0, kind: "merge", hidden: true };
    seen.set(k, le);
    groups.get(group)!.edges.push(le);
  }
  for (const g of groups.values()) for (const list of [g.entries, g.exits, g.tapped]) list?.sort((x, y) => x - y);
  const columns = columnsOf(root, new Set(ins.map((o) => o.key)), new Set(outs.map((o) => o.key)));
  if (columns) {
    root.columns = columns;
    // a column right of another faces it: its blocks' branches on their left (the paper's
    // decoder, its residuals round its right side)
    const face = (g: LayoutGroup) => {
      g.mirror = true;
      for (const it of g.items) if ("items" in it) face(it);
    };
    for (const [i, it] of root.items.entries()) if (columns[i]! > 0 && "items" in it) face(it);
  }
  return fit ? { dir, root, fit } : { dir, root };
}
