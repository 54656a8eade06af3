/**
 * The whole graph placed on the canvas (view/camera.ts asks): as large as it can be, its
 * nodes, junctions and group headers (view/marks.ts) clear of the overlays on the canvas (the
 * legend) where that costs little. Pure.
 */
import { FIT_MARGIN } from "../layout/flow";
import type { Box } from "../layout/layout";
import type { Transform } from "./zoom";

/** The gap kept between a node and an overlay. */
const CLEAR = 6;
/** A whole view clear of the overlays is taken over a larger one that is not, down to this
 * fraction of its scale (below it the overlay gives way: the legend hides while it covers). */
export const CLEAR_WORTH = 0.92;
/** The canvas a whole view is placed on: its size (px) and the overlays over it (the
 * legend), boxes in canvas px. */
export interface Room {
  w: number;
  h: number;
  overlays: readonly Box[];
  margin?: number; // kept round the core (FIT_MARGIN where not given)
}

type Side = "left" | "right" | "up" | "down";
const SIDES: Side[] = ["right", "left", "up", "down"];

function hits(marks: readonly Box[], t: Transform, [ox, oy, ow, oh]: Box): Box[] {
  const [x0, y0, x1, y1] = [ox - CLEAR, oy - CLEAR, ox + ow + CLEAR, oy + oh + CLEAR];
  return marks.filter((m) => {
    const [sx, sy] = [t.x + m[0] * t.k, t.y + m[1] * t.k];
    return sx < x1 && sx + m[2] * t.k > x0 && sy < y1 && sy + m[3] * t.k > y0;
  });
}

/**
 * The transform that shows all of a sw × sh graph on the room's canvas as large as it can,
 * up to maxK and no smaller than `least`, with none of `marks` (its nodes, junctions and
 * group headers, graph coordinates) under an overlay where that costs little (a scale of
 * `worth` times the largest, or more): the graph slid aside within the canvas, else fitted
 * beside the overlay. `core` (the layout's extent, scene.core; else the marks') keeps the
 * margin, as app/framing.ts fitted it; what lies beyond it (a bus' lane round the outside, a
 * node's badge) may run into the margin, never off the canvas. `clear` says whether it managed;
 * `open`, whether no segment of `wires` (its lines) lies under an overlay either, taken where
 * that costs no more than OPEN_WORTH; null when even the whole at `least` does not fit. Pure.
 */
export function placeWhole(
  marks: readonly Box[],
  sw: number,
  sh: number,
  room: Room,
  maxK: number,
  least: number,
  worth = CLEAR_WORTH,
  core?: Box,
  wires: readonly Box[] = [],
): Placed | null {
  const { w: W, h: H, overlays } = room;
  const [w, h] = [Math.max(sw, 1), Math.max(sh, 1)];
  const [ux, uy, uw, uh] = core ?? (marks.length ? union(marks) : [0, 0, w, h]);
  // all of it, the scene and its marks, stays on the canvas
  const [ex, ey, ew, eh] = union([[0, 0, w, h], ...marks]);
  // where to fit the marks: the canvas, or the part of it beside an overlay (no margin on that
  // side: the gap to the overlay is CLEAR); [x0, y0, x1, y1] inside the margins
  const M = room.margin ?? FIT_MARGIN;
  const areas: [number, number, number, number][] = [[M, M, W - M, H - M]];
  for (const [ox, oy, ow, oh] of overlays) {
    areas.push(
      [M, M, W - M, oy - CLEAR],
      [M, oy + oh + CLEAR, W - M, H - M],
      [M, M, ox - CLEAR, H - M],
      [ox + ow + CLEAR, M, W - M, H - M],
    );
  }
  // at scale k, the least and most x (or y) of a placement: the core in the margins, all of
  // it on the canvas (the latter where both cannot be)
  const range = (k: number, along: "x" | "y"): [number, number] => {
    const [u0, ul, e0, el, room] = along === "x" ? [ux, uw, ex, ew, W] : [uy, uh, ey, eh, H];
    const lo = Math.max(M - u0 * k, -e0 * k);
    const hi = Math.min(room - M - (u0 + ul) * k, room - (e0 + el) * k);
    return lo <= hi ? [lo, hi] : [-e0 * k, room - (e0 + el) * k];
  };
  const clamp = (v: number, [lo, hi]: [number, number]) => Math.min(hi, Math.max(lo, v));
  const covered = (t: Transform) => overlays.some((o) => hits(marks, t, o).length > 0);
  const wired = (t: Transform) => overlays.some((o) => hits(wires, t, o).length > 0);
  let best: Transform | null = null;
  let bestClear: Transform | null = null;
  let bestOpen: Transform | null = null; // clear of the lines too
  let centre: [number, number] = [0, 0]; // the whole canvas' centred position at a scale
  const off = (t: Transform) => Math.abs(t.x - centre[0]) + Math.abs(t.y - centre[1]);
  const better = (t: Transform, than: Transform | null) =>
    !than || t.k > than.k + 1e-6 || (t.k > than.k - 1e-6 && off(t) < off(than) - 0.5);
  const consider = (t: Transform) => {
    centre = [(W - uw * t.k) / 2 - ux * t.k, (H - uh * t.k) / 2 - uy * t.k];
    if (better(t, best)) best = t;
    if (better(t, bestClear) && !covered(t)) bestClear = t;
    if (better(t, bestOpen) && !covered(t) && !wired(t)) bestOpen = t;
  };
  // Slide a placement within the canvas until no mark lies under overlay `o`, moving one way.
  const slide = (t: Transform, o: Box, side: Side): Transform | null => {
    const along = side === "left" || side === "right" ? "x" : "y";
    const [lo, hi] = range(t.k, along);
    let at = { ...t };
    for (let i = 0; i < 6; i++) {
      const under = hits(marks, at, o);
      if (!under.length) return at;
      let need = 0;
      for (const m of under) {
        const s0 = along === "x" ? at.x + m[0] * at.k : at.y + m[1] * at.k;
        const s1 = s0 + (along === "x" ? m[2] : m[3]) * at.k;
        const d =
          side === "right"
            ? o[0] + o[2] + CLEAR - s0
            : side === "down"
              ? o[1] + o[3] + CLEAR - s0
              : side === "left"
                ? o[0] - CLEAR - s1
                : o[1] - CLEAR - s1;
        need = side === "right" || side === "down" ? Math.max(need, d) : Math.min(need, d);
      }
      const next = at[along] + need + Math.sign(need) * 0.5;
      if (next < lo - 0.5 || next > hi + 0.5) return null;
      at = { ...at, [along]: next };
    }
    return null;
  };
  for (const [x0, y0, x1, y1] of areas) {
    if (x1 - x0 < 1 || y1 - y0 < 1) continue;
    const k = Math.min(maxK, (x1 - x0) / uw, (y1 - y0) / uh, W / ew, H / eh);
    if (!(k >= least - 1e-6)) continue;
    const t = {
      x: clamp((x0 + x1 - uw * k) / 2 - ux * k, range(k, "x")),
      y: clamp((y0 + y1 - uh * k) / 2 - uy * k, range(k, "y")),
      k,
    };
    consider(t);
    if (!covered(t)) continue;
    for (const o of overlays)
      for (const side of SIDES) {
        const s = slide(t, o, side);
        if (s) consider(s);
      }
  }
  if (!best) return null;
  const b = best as Transform;
  const c = bestClear as Transform | null;
  const o = bestOpen as Transform | null;
  if (c && c.k >= b.k * worth)
    return o && o.k >= c.k * OPEN_WORTH ? { t: o, clear: true, open: true } : { t: c, clear: true, open: !wired(c) };
  return { t: b, clear: !covered(b), open: !covered(b) && !wired(b) };
}

/** A whole view placed: `clear`, no mark under an overlay; `open`, no line either. */
export type Placed = { t: Transform; clear: boolean; open?: boolean };
/** A placement clear of the lines too is taken over one that is not at this fraction of its
 * scale or more (slid along; a legend's other shape, chooseShape): a line behind the legend is
 * a small flaw, not worth a smaller graph. */
const OPEN_WORTH = 0.98;

/** What must stay visible of a scene: its nodes, junctions and group headers. */
export function union(boxes: readonly Box[]): Box {
  const x0 = Math.min(...boxes.map((b) => b[0]));
  const y0 = Math.min(...boxes.map((b) => b[1]));
  const x1 = Math.max(...boxes.map((b) => b[0] + b[2]));
  const y1 = Math.max(...boxes.map((b) => b[1] + b[3]));
  return [x0, y0, x1 - x0, y1 - y0];
}

/** A legend shape whose whole view is this fraction of the largest one's scale, or more, is
 * weighed by how near the middle it leaves the graph (a tall view beside a long legend slides
 * aside to clear it; the legend wrapped into rows lets it stand in the middle). */
export const SHAPE_WORTH = 0.92;
/** Placements nearer the middle than this (px), and as large (KEEP_WORTH), are as good as each
 * other: the shape the legend is in wins (it does not hop between corners for nothing). */
const SHAPE_TIE = 16;
const KEEP_WORTH = 0.99;

/**
 * Which of the whole views placed beside each of the legend's shapes (placeWhole's results,
 * in the order of preference: the legend in one row first) to take: one clear of the legend
 * where that costs little (CLEAR_WORTH of the largest scale), and of those one with no line
 * behind the legend where that costs next to nothing (OPEN_WORTH), then of those within
 * SHAPE_WORTH of the largest scale, the one that leaves the graph's core (graph coordinates)
 * nearest the middle of a W × H canvas (`current`, the shape the legend is in, where it is as
 * near); -1 when none fits. Pure.
 */
export function chooseShape(
  placed: readonly (Placed | null)[],
  core: Box,
  W: number,
  H: number,
  worth = CLEAR_WORTH,
  current = 0,
): number {
  const ok = placed.flatMap((p, i) => (p ? [{ ...p, i }] : []));
  if (!ok.length) return -1;
  const top = (ps: typeof ok) => Math.max(...ps.map((p) => p.t.k));
  const clear = ok.filter((p) => p.clear);
  const some = clear.length && top(clear) >= top(ok) * worth ? clear : ok;
  const open = some.filter((p) => p.open);
  const pool = open.length && top(open) >= top(some) * OPEN_WORTH ? open : some;
  const k = top(pool);
  const [cx, cy, cw, ch] = core;
  const off = ({ t }: { t: Transform }) => {
    const [l, u] = [t.x + cx * t.k, t.y + cy * t.k];
    return Math.abs(l - (W - l - cw * t.k)) / 2 + Math.abs(u - (H - u - ch * t.k)) / 2;
  };
  let best = pool.find((p) => p.t.k >= k - 1e-6)!;
  for (const p of pool) if (p.t.k >= k * SHAPE_WORTH && off(p) < off(best) - SHAPE_TIE) best = p;
  const kept = pool.find((p) => p.i === current);
  return kept && kept.t.k >= best.t.k * KEEP_WORTH && off(kept) <= off(best) + SHAPE_TIE ? current : best.i;
}
