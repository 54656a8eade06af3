/**
 * Buses: a source that many nodes read beside their trunk (an attention mask, a timestep
 * embedding, an encoder's output; model/trunk.ts picks them) is drawn as one line, run down
 * beside everything between the source and its last reader on the side nearer its readers,
 * with a tap across into each reader (a dot where it leaves the line). Pure and DOM-free.
 */
import type { Box, Direction } from "../layout/layout";
import { rounded } from "../layout/flow";
import type { DrawnEdge } from "../model/junctions";
import type { ViewGraph } from "../model/view_model";
import type { SceneBus, SceneEdge } from "./types";

const OFF = 16; // the line's distance from what it passes
const STEP = 10; // between two buses on one side

export function drawBuses(
  buses: Map<string, DrawnEdge[]>, view: ViewGraph, boxOf: (key: string) => Box | undefined, obstacles: Box[], dir: Direction,
): { buses: SceneBus[]; taps: SceneEdge[] } {
  const tb = dir === "TB";
  const al = (b: Box): [number, number] => (tb ? [b[1], b[3]] : [b[0], b[2]]);
  const ac = (b: Box): [number, number] => (tb ? [b[0], b[2]] : [b[1], b[3]]);
  const xy = (pts: number[]) => {
    const out: number[] = [];
    for (let i = 0; i < pts.length; i += 2) tb ? out.push(pts[i + 1], pts[i]) : out.push(pts[i], pts[i + 1]);
    return out;
  };
  const used: { side: number; at: number; a0: number; a1: number }[] = [];
  const result: SceneBus[] = [];
  const taps: SceneEdge[] = [];
  for (const [src, edges] of buses) {
    const sb = boxOf(src);
    const ends = edges.map((e) => ({ e, box: boxOf(e.dst) })).filter((t): t is { e: DrawnEdge; box: Box } => t.box !== undefined);
    if (!sb || ends.length === 0) continue;
    const [sa, sl] = al(sb);
    const [sc, sw] = ac(sb);
    const out = [sa + sl, sc + sw / 2];
    const a0 = out[0] + 12;
    const tapAt = ends.map(({ box }) => al(box)[0] + al(box)[1] / 2);
    const aEnd = Math.max(...tapAt);
    let lo = sc;
    let hi = sc + sw;
    for (const b of obstacles) {
      const [ba, bl] = al(b);
      if (ba > aEnd || ba + bl < out[0]) continue;
      const [bc, bw] = ac(b);
      lo = Math.min(lo, bc);
      hi = Math.max(hi, bc + bw);
    }
    const lane = (sgn: number) => {
      let at = sgn > 0 ? hi + OFF : lo - OFF;
      for (const u of used) if (u.side === sgn && u.a0 < aEnd && out[0] < u.a1 && Math.abs(u.at - at) < STEP) at = u.at + sgn * STEP;
      return at;
    };
    const near = (box: Box, at: number) => {
      const [bc, bw] = ac(box);
      return at > bc + bw / 2 ? bc + bw : bc;
    };
    const cost = (at: number) => ends.reduce((s, { box }) => s + Math.abs(at - near(box, at)), Math.abs(at - out[1]));
    const sgn = cost(lane(1)) <= cost(lane(-1)) ? 1 : -1;
    const at = lane(sgn);
    used.push({ side: sgn, at, a0: out[0], a1: aEnd });
    const kind = edges[0].kind;
    const node = view.byKey.get(src);
    const dots: number[] = [];
    ends.forEach(({ e, box }, i) => {
      const a = tapAt[i];
      if (a < aEnd - 0.5) dots.push(...xy([a, at]));
      const ve = e.edge!;
      taps.push({
        key: `${ve.src}>${ve.dst}`, src: ve.src, dst: ve.dst,
        srcId: node?.id ?? src, dstId: view.byKey.get(ve.dst)?.id ?? ve.dst,
        kind: e.kind, points: xy([a, at, a, near(box, at)]), from: `b:${src}`, to: e.dst,
      });
    });
    result.push({
      key: `b:${src}`, src, srcId: node?.id ?? src, kind,
      points: xy(rounded([out[0], out[1], a0, out[1], a0, at, aEnd, at], 10)), taps: dots,
    });
  }
  return { buses: result, taps };
}
