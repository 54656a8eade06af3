/**
 * Buses: a source that many nodes read beside their trunk (an attention mask, a timestep
 * embedding, an encoder's output; model/trunk.ts picks them) is drawn as one line, run down
 * beside everything between the source and its last reader on the side nearer its readers,
 * with a tap across into each reader (a dot where it leaves the line). Where a straight tap
 * would pass behind another node (a U-Net's conditioning: the encoder stands between the line
 * and the decoder), the line goes round: on under everything it passes and up the other
 * side, tapping those readers from there. Pure and DOM-free.
 */
import type { Box, Direction } from "../layout/layout";
import { rounded, segmentHitsBox } from "../layout/flow";
import type { DrawnEdge } from "../model/junctions";
import type { ViewGraph } from "../model/view_model";
import { labelOn } from "./bus_label";
import type { SceneBus, SceneEdge } from "./types";

const OFF = 16; // the line's distance from what it passes
const STEP = 10; // between two buses on one side
const TAP_SEP = 8; // between the taps of two buses into one reader
const TAP_CLEAR = 24; // a tap passes a node no closer than this along the flow
const GAP_CLEAR = 10; // a lane in a gap keeps this far from what is on either side

export function drawBuses(
  buses: Map<string, DrawnEdge[]>,
  labels: Map<string, string>,
  view: ViewGraph,
  boxOf: (key: string) => Box | undefined,
  obstacles: Box[],
  dir: Direction,
): { buses: SceneBus[]; taps: SceneEdge[] } {
  const tb = dir === "TB";
  const al = (b: Box): [number, number] => (tb ? [b[1], b[3]] : [b[0], b[2]]);
  const ac = (b: Box): [number, number] => (tb ? [b[0], b[2]] : [b[1], b[3]]);
  const xy = (pts: number[]) => {
    const out: number[] = [];
    for (let i = 0; i < pts.length; i += 2) tb ? out.push(pts[i + 1]!, pts[i]!) : out.push(pts[i]!, pts[i + 1]!);
    return out;
  };
  const used: { side: number; at: number; a0: number; a1: number }[] = [];
  const result: SceneBus[] = [];
  const taps: SceneEdge[] = [];
  // a tap straight across from `at` into `box` that passes behind another node, or close
  // along it (where a skip leaves an open group), not the groups around the reader: the
  // reader lies beyond something, seen from that side
  const inside = (a: Box, b: Box) =>
    a[0] >= b[0] - 0.5 && a[1] >= b[1] - 0.5 && a[0] + a[2] <= b[0] + b[2] + 0.5 && a[1] + a[3] <= b[1] + b[3] + 0.5;
  const blocked = (a: number, at: number, box: Box, to: number, from: Box | null, clear = TAP_CLEAR) => {
    const [x0, y0, x1, y1] = tb ? [at, a, to, a] : [a, at, a, to];
    return obstacles.some((b) => {
      if (b === from || inside(box, b)) return false;
      const wide: Box = tb
        ? [b[0], b[1] - clear, b[2], b[3] + 2 * clear]
        : [b[0] - clear, b[1], b[2] + 2 * clear, b[3]];
      return segmentHitsBox(x0, y0, x1, y1, wide, 2);
    });
  };
  interface Round {
    sgn: number;
    at: number;
    bottom: number;
    far: number;
    a0: number;
    out: [number, number];
    ends: { e: DrawnEdge; box: Box }[];
    tapAt: number[];
    isFar: boolean[];
    src: string;
  }
  const rounds: Round[] = [];
  const tappers = new Map<string, string[]>(); // reader -> the buses tapping it
  for (const [src, edges] of buses) {
    for (const e of edges) {
      const list = tappers.get(e.dst) ?? tappers.set(e.dst, []).get(e.dst)!;
      if (!list.includes(src)) list.push(src);
    }
  }
  for (const [src, edges] of buses) {
    const sb = boxOf(src);
    const ends = edges
      .map((e) => ({ e, box: boxOf(e.dst) }))
      .filter((t): t is { e: DrawnEdge; box: Box } => t.box !== undefined);
    if (!sb || ends.length === 0) continue;
    const [sa, sl] = al(sb);
    const [sc, sw] = ac(sb);
    const out: [number, number] = [sa + sl, sc + sw / 2];
    const a0 = out[0] + 12;
    // a reader tapped by several buses takes their taps side by side, not on one line
    const tapAt = ends.map(({ e, box }) => {
      const list = tappers.get(e.dst)!;
      const sep = Math.min(TAP_SEP, al(box)[1] / (2 * list.length));
      return al(box)[0] + al(box)[1] / 2 + (list.indexOf(src) - (list.length - 1) / 2) * sep;
    });
    const aEnd = Math.max(...tapAt);
    // the lane's span: down from the source to its readers, or up (a reader earlier in the
    // flow: the decoder's cross-attention beside the encoder whose output it reads), or both
    // (up: the line leaves the source from its side, level with its middle)
    const down = Math.min(...tapAt) >= a0;
    const a1 = down ? a0 : sa + sl / 2; // where the line turns onto its lane
    const aMin = Math.min(a1, ...tapAt);
    const aMax = Math.max(a1, aEnd);
    const leave = (at: number) => (down ? out[1] : at > sc + sw / 2 ? sc + sw : sc); // across
    // what lies beside the bus between its source and `until`, across
    const extent = (from: number, until: number, c0: number, c1: number): [number, number] => {
      let lo = c0;
      let hi = c1;
      for (const b of obstacles) {
        const [ba, bl] = al(b);
        if (ba > until || ba + bl < from) continue;
        const [bc, bw] = ac(b);
        lo = Math.min(lo, bc);
        hi = Math.max(hi, bc + bw);
      }
      return [lo, hi];
    };
    const [lo, hi] = extent(Math.min(out[0], aMin), aMax, sc, sc + sw);
    const apart = (at: number, sgn: number) => {
      for (const u of used)
        if (u.side === sgn && u.a0 < aMax && aMin < u.a1 && Math.abs(u.at - at) < STEP) at = u.at + sgn * STEP;
      return at;
    };
    const lane = (sgn: number) => apart(sgn > 0 ? hi + OFF : lo - OFF, sgn);
    // lanes in a gap between what lies beside the span, on one side of the source, with every
    // reader on one side of it, reached from the source without crossing a node: a bus between
    // two columns (the encoder's, the decoder's)
    const gaps = (sgn: number): number[] => {
      const spans: [number, number][] = [[sc, sc + sw]]; // the source, and what is beside the span but its groups
      for (const b of obstacles) {
        const [ba, bl] = al(b);
        if (ba > aMax || ba + bl < Math.min(out[0], aMin) || inside(sb, b)) continue;
        const [bc, bw] = ac(b);
        spans.push([bc, bc + bw]);
      }
      spans.sort((x, y) => x[0] - y[0]);
      const found: number[] = [];
      let reach = -Infinity;
      for (const [c0, c1] of spans) {
        if (reach > -Infinity && c0 - reach >= 2 * GAP_CLEAR) {
          // beside the readers, as far from them as from what it passes outside a gap; in the
          // middle of a gap between two columns (nothing in it from top to bottom), where it
          // may tap readers on both sides
          const right = ends.every(({ box }) => ac(box)[0] >= c0 - 0.5);
          const left = ends.every(({ box }) => ac(box)[0] + ac(box)[1] <= reach + 0.5);
          const off = Math.min(OFF, (c0 - reach) / 2);
          const at = apart(right ? c0 - off : left ? reach + off : (reach + c0) / 2, sgn);
          const column = obstacles.every((b) => {
            const [bc, bw] = ac(b);
            return inside(sb, b) || at <= bc - GAP_CLEAR / 2 || at >= bc + bw + GAP_CLEAR / 2;
          });
          const source = sgn > 0 ? reach >= sc + sw : c0 <= sc;
          // from the source across to the lane (a1), then along the gap
          const across = (tb ? [leave(at), a1, at, a1] : [a1, leave(at), a1, at]) as [number, number, number, number];
          const clear =
            at >= reach + GAP_CLEAR / 2 &&
            at <= c0 - GAP_CLEAR / 2 &&
            (right || left || column) &&
            (!obstacles.some((b) => b !== sb && !inside(sb, b) && segmentHitsBox(...across, b, 2)) ||
              exit(at).hits === 0); // (or under what is beside the source)
          if (source && clear) found.push(at);
        }
        reach = Math.max(reach, c1);
      }
      return found;
    };
    const near = (box: Box, at: number) => {
      const [bc, bw] = ac(box);
      return at > bc + bw / 2 ? bc + bw : bc;
    };
    // how far a tap from `at` runs inside the groups around its reader (across a stack's
    // residual stream, say): counted double, so a reader is tapped from its open side
    const within = (box: Box, at: number) => {
      const n = near(box, at);
      let most = 0;
      for (const b of obstacles) {
        if (b === box || !inside(box, b)) continue;
        const [bc, bw] = ac(b);
        most = Math.max(most, Math.abs((at > n ? bc + bw : bc) - n));
      }
      return 2 * most;
    };
    // each side: its lane, and the readers a straight tap from it would reach only behind
    // another node; those the bus reaches round the end of what is between (a U: down the
    // outside of one side, under the bottom, up the outside of the other)
    // taps of a plan that pass behind a node, and that pass close along one; up to readers
    // earlier in the flow, the source too (VisionEncoderDecoder's encoder output into the
    // decoder's cross-attention above it: not along the source's top from a lane on its far
    // side, but from the gap between the columns)
    const behind = (at: number, far: number, isFar: boolean[], clear: number) =>
      ends.filter(({ box }, i) =>
        blocked(tapAt[i]!, isFar[i] ? far : at, box, near(box, isFar[i] ? far : at), down ? sb : null, clear),
      ).length;
    // A line that leaves its source from the side (a reader earlier in the flow) and would
    // cross a node on its way to the lane leaves from below instead, under what is beside the
    // source (BERT's mask, level with the embeddings when data is on the graph): where it
    // then turns onto the lane, and what the way still crosses.
    const around = (b: Box) => b === sb || inside(sb, b) || ends.some(({ box }) => inside(box, b));
    const hitsOn = (pts: number[]) =>
      obstacles.filter(
        (b) => !around(b) && b !== sb && segmentHitsBox(...(xy(pts) as [number, number, number, number]), b, 2),
      ).length;
    // A line down to its readers turns onto its lane below what its way across would cross
    // (diffusers' U with its head one node: the text's bus under it), above its first tap.
    const exit = (at: number): { under: number | null; hits: number } => {
      const side = hitsOn([a1, leave(at), a1, at]);
      if (side === 0) return { under: null, hits: 0 };
      let under = out[0] + 12;
      for (let moved = true, n = 0; moved && n < 20; n++) {
        moved = false;
        for (const b of obstacles) {
          const [ba, bl] = al(b);
          const [bc, bw] = ac(b);
          if (around(b) || bc > Math.max(out[1], at) || bc + bw < Math.min(out[1], at)) continue;
          if (ba <= under + GAP_CLEAR && ba + bl + OFF > under) {
            under = ba + bl + OFF;
            moved = true;
          }
        }
      }
      const hits =
        hitsOn([out[0], out[1], under, out[1]]) + hitsOn([under, out[1], under, at]) + hitsOn([under, at, aMin, at]);
      if (down && under > Math.min(...tapAt) - GAP_CLEAR) return { under: null, hits: side };
      return hits < side ? { under, hits } : { under: null, hits: side };
    };
    const plan = (sgn: number, straight: boolean, at = lane(sgn)) => {
      const { under, hits } = exit(at);
      const isFar = ends.map(({ box }, i) => !straight && down && blocked(tapAt[i]!, at, box, near(box, at), sb));
      // (the way from the source to its lane counts double: it crosses what is beside it)
      if (!isFar.some(Boolean)) {
        const cost = ends.reduce(
          (s, { box }) => s + Math.abs(at - near(box, at)) + within(box, at),
          2 * Math.abs(at - out[1]),
        );
        return {
          sgn,
          at,
          isFar,
          bottom: 0,
          far: 0,
          cost,
          under,
          hard: behind(at, 0, isFar, 0) + hits,
          soft: behind(at, 0, isFar, TAP_CLEAR),
        };
      }
      let bottom = -Infinity;
      for (const b of obstacles) {
        const [ba, bl] = al(b);
        if (ba <= aEnd && ba + bl >= out[0]) bottom = Math.max(bottom, ba + bl);
      }
      bottom += OFF;
      const top = Math.min(...tapAt.filter((_, i) => isFar[i]));
      const [flo, fhi] = extent(top, bottom, Infinity, -Infinity);
      const far = sgn > 0 ? flo - OFF : fhi + OFF;
      let cost = Math.abs(at - out[1]) + Math.abs(far - at) + 2 * (bottom - top);
      for (const [i, { box }] of ends.entries())
        cost += Math.abs((isFar[i] ? far : at) - near(box, isFar[i] ? far : at)) + within(box, isFar[i] ? far : at);
      return {
        sgn,
        at,
        isFar,
        bottom,
        far,
        cost,
        under,
        hard: behind(at, far, isFar, 0) + hits,
        soft: behind(at, far, isFar, TAP_CLEAR),
      };
    };
    // the plan whose taps pass behind fewest nodes, then close along fewest; then straight
    // taps before a line round; where both go round, the side of the source (its line does
    // not cross the figure to reach its lane)
    const nFar = (p: ReturnType<typeof plan>) => p.isFar.filter(Boolean).length;
    const better = (p: ReturnType<typeof plan>, q: ReturnType<typeof plan>) => {
      if (p.hard !== q.hard) return p.hard < q.hard;
      if (p.soft !== q.soft) return p.soft < q.soft;
      const [fp, fq] = [nFar(p) > 0, nFar(q) > 0];
      if (fp !== fq) return !fp;
      return fp ? Math.abs(p.at - out[1]) <= Math.abs(q.at - out[1]) : p.cost <= q.cost;
    };
    const best = [
      plan(1, true),
      plan(-1, true),
      plan(1, false),
      plan(-1, false),
      ...gaps(1).map((at) => plan(1, true, at)),
      ...gaps(-1).map((at) => plan(-1, true, at)),
    ].reduce((p, q) => (better(q, p) ? q : p));
    const { sgn, at } = best;
    const round = nFar(best) > 0;
    used.push({ side: sgn, at, a0: aMin, a1: round ? best.bottom : aMax });
    if (round) {
      const turn = best.under ?? a0;
      rounds.push({ sgn, at, bottom: best.bottom, far: best.far, a0: turn, out, ends, tapAt, isFar: best.isFar, src });
      continue;
    }
    const kind = edges[0]!.kind; // a bus has two or more edges
    const node = view.byKey.get(src);
    const dots: number[] = [];
    ends.forEach(({ e, box }, i) => {
      const a = tapAt[i]!;
      if (a > aMin + 0.5 && a < aMax - 0.5) dots.push(...xy([a, at]));
      taps.push(tapOf(e, src, xy([a, at, a, near(box, at)])));
    });
    const turn = best.under ?? a1; // where the line turns onto its lane
    const line =
      down || best.under !== null
        ? [out[0], out[1], best.under ?? a0, out[1], best.under ?? a0, at]
        : [a1, leave(at), a1, at];
    if (aMin < turn) line.push(aMin, at);
    if (aMax > turn) line.push(aMax, at);
    const text = labels.get(src);
    result.push({
      key: `b:${src}`,
      src,
      srcId: node?.id ?? src,
      kind,
      points: xy(rounded(line, 10)),
      taps: dots,
      ...(text ? { label: labelOn(xy(line), text, tb, obstacles) } : {}),
    });
  }
  // buses round a U nest: the one further out on its side passes further under and outside
  rounds.sort((x, y) => x.sgn - y.sgn || y.sgn * (x.at - y.at));
  for (const [q, r] of rounds.entries()) {
    const prev = q > 0 ? rounds[q - 1]! : null;
    if (prev && prev.sgn === r.sgn) {
      r.bottom = Math.max(r.bottom, prev.bottom + STEP);
      r.far = r.sgn > 0 ? Math.min(r.far, prev.far - STEP) : Math.max(r.far, prev.far + STEP);
    }
    const nearOf = (box: Box, at: number) => {
      const [bc, bw] = ac(box);
      return at > bc + bw / 2 ? bc + bw : bc;
    };
    const top = Math.min(...r.tapAt.filter((_, i) => r.isFar[i]));
    const dots: number[] = [];
    r.ends.forEach(({ e, box }, i) => {
      const a = r.tapAt[i]!;
      const at = r.isFar[i] ? r.far : r.at;
      if (!r.isFar[i] || a > top + 0.5) dots.push(...xy([a, at]));
      taps.push(tapOf(e, r.src, xy([a, at, a, nearOf(box, at)])));
    });
    const node = view.byKey.get(r.src);
    result.push({
      key: `b:${r.src}`,
      src: r.src,
      srcId: node?.id ?? r.src,
      kind: r.ends[0]!.e.kind, // a bus has an end (none: skipped above)
      points: xy(
        rounded([r.out[0], r.out[1], r.a0, r.out[1], r.a0, r.at, r.bottom, r.at, r.bottom, r.far, top, r.far], 10),
      ),
      taps: dots,
    });
  }
  return { buses: result, taps };

  function tapOf(e: DrawnEdge, src: string, points: number[]): SceneEdge {
    const ve = e.edge ?? { src, dst: e.dst }; // (a sum of conditioning alone: the junction's own)
    const node = view.byKey.get(src);
    return {
      key: `${ve.src}>${ve.dst}`,
      src: ve.src,
      dst: ve.dst,
      srcId: node?.id ?? src,
      dstId: view.byKey.get(ve.dst)?.id ?? ve.dst,
      kind: e.kind,
      points,
      from: `b:${src}`,
      to: e.dst,
    };
  }
}
