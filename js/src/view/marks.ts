/**
 * What an overlay on the canvas (the legend, the minimap) must not cover, in graph
 * coordinates: every node with its expand badge and residual arc and the chip that may hang
 * from its bottom edge (the logit lens's next token, view/chips.ts), every junction (a
 * residual's ⊕), and each group's header strip (its name, stepper and collapse button) and
 * bottom edge (a stack's chip, the stream's way out). The camera places whole views clear of
 * them; the minimap parks and the legend fades by them. And the drawn lines (wiresOf), which
 * the legend keeps off where one of its shapes can at no cost in scale. Pure.
 */
import { GROUP_HEADER, type Box } from "../layout/layout";
import type { Scene } from "../scene/types";
import { CHIP_H } from "./chips";

/** How far a node's expand badge and residual arc stand out of its box, each side and above. */
const OVERHANG = 8;

export function marksOf(scene: Scene): Box[] {
  const hang = CHIP_H / 2;
  const o = OVERHANG;
  const marks: Box[] = scene.nodes.map((n) => [n.box[0] - o, n.box[1] - o, n.box[2] + 2 * o, n.box[3] + o + hang]);
  for (const j of scene.junctions) marks.push(j.box);
  for (const c of scene.clusters) {
    const [x, y, w, h] = c.box;
    marks.push([x, y, w, GROUP_HEADER], [x, y + h - hang, w, 2 * hang]);
  }
  return marks;
}

/** The marks on screen, under the transform `t` (canvas px). */
export function marksOn(scene: Scene, t: { x: number; y: number; k: number }): Box[] {
  return marksOf(scene).map((b): Box => [t.x + b[0] * t.k, t.y + b[1] * t.k, b[2] * t.k, b[3] * t.k]);
}

/** Each segment of the drawn lines (edges, junctions' stubs, buses) as a box a pixel thick at
 * least, graph coordinates: a wire the legend stood on seemed to end there (GPT-2's way from
 * its blocks up to ln_f at 1024 x 768). */
export function wiresOf(scene: Scene): Box[] {
  const out: Box[] = [];
  const add = (p: readonly number[]) => {
    for (let i = 2; i + 1 < p.length; i += 2) {
      const [x0, y0, x1, y1] = [p[i - 2]!, p[i - 1]!, p[i]!, p[i + 1]!];
      out.push([Math.min(x0, x1), Math.min(y0, y1), Math.max(Math.abs(x1 - x0), 1), Math.max(Math.abs(y1 - y0), 1)]);
    }
  };
  for (const e of [...scene.edges, ...scene.stubs, ...scene.buses]) add(e.points);
  return out;
}
