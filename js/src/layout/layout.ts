/**
 * Positions for the visible view: one small layout per container (the model, each expanded
 * call, each unfolded run), bottom-up, cached by the container's signature so that expanding
 * a group only lays out that group and the containers around it. A container whose chains
 * meet by no drawn edge (an encoder and a decoder, joined by the cross-attention bus only) is
 * laid out in columns side by side (columns.ts); else as a U when its skips nest (ushape.ts),
 * else with its trunk straight and the rest in strands beside it (spine.ts, routes.ts; the
 * root wrapped into bands to fit the canvas, bands.ts), else by the layered solver
 * (layered.ts). A bus' edges are hidden: they place its source but are never routed. Each group also routes, inside itself, the edges
 * that cross its border (from where it is entered to the item, and out), so a route between
 * two nested nodes is the pieces of the groups it passes. No DOM; runs in the layout worker
 * and in Node tests alike.
 */
import type { EdgeKind } from "../wire";
import { at } from "../wire_check";
import { wrapBands, wrapColumns, wrapInto } from "./bands";
import { arrangeColumns } from "./columns";
import {
  FIT_MARGIN,
  RANKSEP,
  type Direction,
  type FitTarget,
  type FlowGroup,
  type FlowItem,
  type FlowPlacement,
} from "./flow";
import { placeLayered, type GroupPlacement } from "./layered";
import { routeArranged } from "./routes";
import { arrange, arrangeNarrow, hasSources } from "./spine";
import { placeU } from "./ushape";
import { fittedU } from "./ushape_fit";

export { RANKSEP, type Direction, type FitTarget };

export interface LayoutLeaf {
  key: string;
  w: number;
  h: number;
  spine?: boolean; // on the trunk
  junction?: boolean; // a junction glyph
}

export interface LayoutGroup {
  key: string;
  items: (LayoutLeaf | LayoutGroup)[];
  edges: LayoutEdge[]; // between items of this group, by item index
  spine?: boolean;
  entries?: number[]; // items that an edge from outside the group enters
  exits?: number[]; // items that an edge to outside the group leaves
  /** Items a bus from outside the group feeds, which nothing inside it feeds (a cross-attention's
   * keys and values, reading the encoder's output): one above the other, facing the bus. */
  tapped?: number[];
  columns?: number[]; // per item, its column (0, 1, ...): chains drawn side by side (columns.ts)
  mirror?: boolean; // branches to the left of the trunk (in a column right of another: facing it)
  wrap?: number; // an open group's chain wrapped into this many bands (bands.ts wrapInto), for the fit of the whole
  minW?: number; // in TB, at least this wide (its header's width), its content centred in it
}

export interface LayoutEdge {
  src: number;
  dst: number;
  weight: number; // for the layered solver: higher keeps the edge short and straight (the trunk)
  kind?: EdgeKind; // default "flow"
  hidden?: boolean; // places its ends (rows) but is not routed: a bus' tap (scene/bus.ts draws it)
}

export interface LayoutRequest {
  dir: Direction;
  root: LayoutGroup;
  fit?: FitTarget; // the canvas the root should fit (wraps it into bands)
  // every group's sources on its trunk (spine.ts): a narrower view, for a tight canvas; "nested":
  // every group's but the root's (a taller one: BERT's mask stays beside the trunk)
  inline?: boolean | "nested";
}

/** x, y (top-left, absolute), w, h */
export type Box = [number, number, number, number];

export interface LayoutResult {
  boxes: Record<string, Box>; // every item and group by key, the root included
  routes: Record<string, number[]>; // "srcItem>dstItem" -> flat absolute points x0,y0,x1,y1..
  entries: Record<string, number[]>; // "group|item": from where the group is entered to its item
  exits: Record<string, number[]>; // "item|group": from the item to where the group is left
  width: number;
  height: number;
  laidOut: number; // containers actually laid out (cache misses)
  bands: number; // how many bands the root was wrapped into (1: none)
  columns: Record<string, number>; // the root's items by key, where it stands in columns: each one's
}

export const GROUP_PAD = 14;
export const GROUP_HEADER = 26;

interface Placement extends GroupPlacement {
  bands: number;
  single?: boolean; // the root's columns laid out as one (they did not fit)
}

function isGroup(x: LayoutLeaf | LayoutGroup): x is LayoutGroup {
  return (x as LayoutGroup).items !== undefined;
}

/** A cache of group placements by signature; keep one per worker (or per widget). */
export class LayoutCache {
  private map = new Map<string, Placement>();
  constructor(private readonly capacity = 2000) {}
  get(sig: string): Placement | undefined {
    const hit = this.map.get(sig);
    if (hit) {
      this.map.delete(sig);
      this.map.set(sig, hit);
    }
    return hit;
  }
  set(sig: string, p: Placement) {
    this.map.set(sig, p);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as string);
  }
  get size() {
    return this.map.size;
  }
}

/** A flow-coordinate placement in the group's own x / y. */
function toGroup(p: FlowPlacement, dir: Direction, pad: number, header: number, bands: number): Placement {
  const tb = dir === "TB";
  const lead = tb ? pad + header : pad; // along, before the content
  const side = tb ? pad : pad + header; // across, before the content
  const xy = (r: number[]) => {
    const out = new Array<number>(r.length);
    for (let i = 0; i < r.length; i += 2) {
      out[i] = tb ? side + r[i + 1]! : lead + r[i]!;
      out[i + 1] = tb ? lead + r[i]! : side + r[i + 1]!;
    }
    return out;
  };
  const along = p.al + lead + pad;
  const across = p.ac + side + pad;
  return {
    w: tb ? across : along,
    h: tb ? along : across,
    pos: xy(p.pos),
    routes: p.routes.map(xy),
    inRoutes: p.inRoutes.map(xy),
    outRoutes: p.outRoutes.map(xy),
    ain: side + p.ain,
    aout: side + p.aout,
    bands,
    flip: p.flip,
  };
}

function placeGroup(
  dir: Direction,
  group: LayoutGroup,
  kids: (Placement | null)[],
  isRoot: boolean,
  fit: FitTarget | undefined,
  inline = false,
): Placement {
  const pad = isRoot ? 0 : GROUP_PAD;
  const header = isRoot ? 0 : GROUP_HEADER;
  const tb = dir === "TB";
  const sizes: [number, number][] = group.items.map((it, i) => {
    const kid = kids[i];
    return kid ? [kid.w, kid.h] : [(it as LayoutLeaf).w, (it as LayoutLeaf).h];
  });
  const items: FlowItem[] = group.items.map((it, i) => {
    const [w, h] = at(sizes, i);
    const kid = kids[i];
    const ac = tb ? w : h;
    return {
      al: tb ? h : w,
      ac,
      ain: kid ? kid.ain : ac / 2,
      aout: kid ? kid.aout : ac / 2,
      spine: it.spine === true,
      junction: !isGroup(it) && it.junction === true,
      group: kid !== null,
    };
  });
  const flow: FlowGroup = {
    items,
    edges: group.edges.map((e) => ({ src: e.src, dst: e.dst, kind: e.kind ?? "flow", hidden: e.hidden === true })),
    entries: group.entries ?? [],
    exits: group.exits ?? [],
    ...(group.tapped?.length ? { tapped: group.tapped } : {}),
    mirror: group.mirror === true,
    sourcesInline: inline,
    lead: tb ? pad + header : pad,
    trail: pad,
  };
  // the U and the layered solver see only the edges they draw; the routes of hidden ones are empty
  const drawn = group.edges.flatMap((e, i) => (e.hidden ? [] : [i]));
  const widen = (p: Placement): Placement => {
    if (drawn.length === group.edges.length) return p;
    const routes: number[][] = group.edges.map(() => []);
    for (const [j, i] of drawn.entries()) routes[i] = at(p.routes, j);
    return { ...p, routes };
  };
  // the scale at which a placement shows on the canvas (isRoot && fit)
  const scale = (p: FlowPlacement) =>
    Math.min((fit!.w - 2 * FIT_MARGIN) / (tb ? p.ac : p.al), (fit!.h - 2 * FIT_MARGIN) / (tb ? p.al : p.ac));
  const small = (p: FlowPlacement) => isRoot && fit && scale(p) < fit.k - 1e-9;
  const columns = group.columns && Math.max(...group.columns) > 0 ? arrangeColumns(flow, group.columns) : null;
  if (columns) {
    let bands = isRoot && fit ? wrapColumns(columns, fit, dir) : 1;
    let placed = routeArranged(columns, flow);
    // too small on the canvas: its sources on the trunk where that shows it larger (BART's
    // position embeddings at 1024 px: one column each, under the token embeddings)
    const tight = small(placed) && !inline && hasSources(flow);
    const onTrunk = tight ? arrangeColumns({ ...flow, sourcesInline: true }, group.columns!) : null;
    if (onTrunk) {
      const wrapped = wrapColumns(onTrunk, fit!, dir);
      const lined = routeArranged(onTrunk, flow);
      if (scale(lined) > scale(placed) + 1e-9) [placed, bands] = [lined, wrapped];
    }
    // where the columns do not fit even wrapped, one column unwrapped that does (BART's
    // embeddings side by side in each column are too wide for 1024 px, its stacks folded)
    const one = small(placed) ? arrange(flow) : null;
    const single = one ? routeArranged(one, flow) : null;
    if (single && scale(single) >= fit!.k - 1e-9) return { ...toGroup(single, dir, pad, header, 1), single: true };
    return toGroup(placed, dir, pad, header, bands);
  }
  const uFlow = { ...flow, edges: drawn.map((i) => at(flow.edges, i)) };
  const u = placeU(uFlow);
  if (u) {
    const best = isRoot && fit ? fittedU(uFlow, u, fit, tb) : u; // (ushape_fit.ts)
    return widen(toGroup(best, dir, pad, header, 1));
  }
  const arranged = arrangeNarrow(flow);
  if (arranged && isRoot && fit) {
    let bands = wrapBands(arranged, fit, dir);
    let placed = routeArranged(arranged, flow);
    // too small on the canvas: its sources on the trunk where that shows it larger; or those
    // that feed one reader one above the other (Flux at 1024 px); or a group under a wider
    // node flush with it (Gemma's embedding over its layers, their attention opened at 1024 px);
    // or the outputs one item feeds one under the other (BART's seven at 1024 px)
    const sourced = hasSources(flow) && !inline;
    const tries: FlowGroup[] = sourced
      ? [
          { ...flow, sourcesInline: true },
          { ...flow, sourcesStacked: true },
        ]
      : [];
    for (const f of [...tries, { ...flow, flush: true }, { ...flow, sinksStacked: true }]) {
      const alt = small(placed) ? arrange(f) : null;
      if (!alt) continue;
      const wrapped = wrapBands(alt, fit, dir);
      const lined = routeArranged(alt, f);
      if (scale(lined) > scale(placed) + 1e-9) [placed, bands] = [lined, wrapped];
    }
    return toGroup(placed, dir, pad, header, bands);
  }
  if (arranged) {
    const bands = !isRoot && group.wrap ? wrapInto(arranged, flow, group.wrap) : 1;
    return toGroup(routeArranged(arranged, flow), dir, pad, header, bands);
  }
  const real = drawn.map((i) => at(group.edges, i));
  return widen({ ...placeLayered(dir, sizes, real, flow.entries, flow.exits, pad, header), bands: 1 });
}

/** A TB group's placement at least `minW` wide, its content centred across it. */
function atLeast(p: Placement, minW: number): Placement {
  if (p.w >= minW) return p;
  const dx = (minW - p.w) / 2;
  const across = (r: number[]) => r.map((v, i) => (i % 2 === 0 ? v + dx : v));
  return {
    ...p,
    w: minW,
    pos: across(p.pos),
    routes: p.routes.map(across),
    inRoutes: p.inRoutes.map(across),
    outRoutes: p.outRoutes.map(across),
    ain: p.ain + dx,
    aout: p.aout + dx,
  };
}

type Done = { group: LayoutGroup; p: Placement; kids: (Done | null)[] };

/** Lay out a request; `cache` makes repeated calls incremental. */
export function computeLayout(req: LayoutRequest, cache: LayoutCache = new LayoutCache()): LayoutResult {
  let laidOut = 0;
  // Bottom-up: sizes of nested groups first, each placement cached by its signature.
  const placeRec = (group: LayoutGroup, isRoot: boolean): Done => {
    const kids: (Done | null)[] = [];
    const parts: string[] = [req.dir, isRoot ? "R" : "G"];
    if (isRoot && req.fit)
      parts.push(`fit=${Math.round(req.fit.w)}x${Math.round(req.fit.h)}@${req.fit.k.toFixed(3)}-${req.fit.reserve}`);
    for (const it of group.items) {
      const flags = `${it.spine ? "s" : ""}${!isGroup(it) && it.junction ? "j" : ""}`;
      if (isGroup(it)) {
        const done = placeRec(it, false);
        kids.push(done);
        parts.push(
          `${it.key}${flags}=${done.p.w.toFixed(1)}x${done.p.h.toFixed(1)}@${done.p.ain.toFixed(1)},${done.p.aout.toFixed(1)}`,
        );
      } else {
        kids.push(null);
        parts.push(`${it.key}${flags}=${it.w}x${it.h}`);
      }
    }
    for (const e of group.edges) parts.push(`${e.src}>${e.dst}:${e.weight}${e.kind ?? ""}${e.hidden ? "h" : ""}`);
    parts.push(`in:${(group.entries ?? []).join(",")}`, `out:${(group.exits ?? []).join(",")}`);
    if (group.columns) parts.push(`cols:${group.columns.join(",")}`);
    if (group.tapped?.length) parts.push(`tap:${group.tapped.join(",")}`);
    if (group.mirror) parts.push("mirror");
    if (group.wrap && !isRoot) parts.push(`wrap:${group.wrap}`);
    if (group.minW) parts.push(`min:${group.minW.toFixed(1)}`);
    const inline = isRoot ? req.inline === true : req.inline !== undefined && req.inline !== false;
    if (inline) parts.push("inline");
    const sig = parts.join("|");
    let p = cache.get(sig);
    if (!p) {
      p = placeGroup(
        req.dir,
        group,
        kids.map((k) => k?.p ?? null),
        isRoot,
        req.fit,
        inline,
      );
      if (group.minW && req.dir === "TB") p = atLeast(p, group.minW);
      cache.set(sig, p);
      laidOut++;
    }
    return { group, p, kids };
  };
  const root = placeRec(req.root, true);

  const boxes: Record<string, Box> = {};
  const routes: Record<string, number[]> = {};
  const entries: Record<string, number[]> = {};
  const exits: Record<string, number[]> = {};
  const shift = (rel: number[], ox: number, oy: number) => {
    const abs = new Array<number>(rel.length);
    for (let j = 0; j < rel.length; j += 2) {
      abs[j] = rel[j]! + ox;
      abs[j + 1] = rel[j + 1]! + oy;
    }
    return abs;
  };
  // `flipped`: the group is drawn upside down along the flow, within its content (the
  // header stays where it is); its entries start on its out side and its exits end on its
  // in side, and every group inside it is upside down too
  const tb = req.dir === "TB";
  const emit = (done: Done, ox: number, oy: number, flipped: boolean) => {
    const { group, p } = done;
    boxes[group.key] = [ox, oy, p.w, p.h];
    const length = tb ? p.h : p.w; // along
    const lead = tb ? GROUP_PAD + GROUP_HEADER : GROUP_PAD;
    const mirror = (a: number) => lead + length - GROUP_PAD - a;
    const turn = (pts: number[], first: number | null, last: number | null) => {
      if (!flipped) return pts;
      const out = pts.slice();
      for (let j = tb ? 1 : 0; j < out.length; j += 2) out[j] = mirror(out[j]!);
      if (first !== null && out.length) out[tb ? 1 : 0] = first;
      if (last !== null && out.length) out[out.length - (tb ? 1 : 2)] = last;
      return out;
    };
    group.items.forEach((it, i) => {
      const kid = done.kids[i];
      const [w, h] = kid ? [kid.p.w, kid.p.h] : [(it as LayoutLeaf).w, (it as LayoutLeaf).h];
      let [x, y] = [p.pos[2 * i]!, p.pos[2 * i + 1]!];
      if (flipped && tb) y = mirror(y) - h;
      else if (flipped) x = mirror(x) - w;
      if (kid) emit(kid, ox + x, oy + y, flipped || p.flip?.[i] === true);
      else boxes[it.key] = [ox + x, oy + y, w, h];
    });
    for (const [i, e] of group.edges.entries()) {
      if (e.hidden) continue;
      routes[`${at(group.items, e.src).key}>${at(group.items, e.dst).key}`] = shift(
        turn(at(p.routes, i), null, null),
        ox,
        oy,
      );
    }
    for (const [i, v] of (group.entries ?? []).entries()) {
      entries[`${group.key}|${at(group.items, v).key}`] = shift(turn(at(p.inRoutes, i), length, null), ox, oy);
    }
    for (const [i, v] of (group.exits ?? []).entries()) {
      exits[`${at(group.items, v).key}|${group.key}`] = shift(turn(at(p.outRoutes, i), null, 0), ox, oy);
    }
  };
  emit(root, 0, 0, false);
  const columns: Record<string, number> = {};
  if (req.root.columns && !root.p.single)
    for (const [i, it] of req.root.items.entries()) columns[it.key] = at(req.root.columns, i);
  return { boxes, routes, entries, exits, width: root.p.w, height: root.p.h, laidOut, bands: root.p.bands, columns };
}
