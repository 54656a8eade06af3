/**
 * The logit lens on the graph: a chip on each drawn block with a readout (model/readouts.ts)
 * that says the token it predicts next and how likely, straddling the bottom edge of its
 * node or group at the right (clear of the edges leaving its middle and of the flags on its
 * top edge). SVG, the token as text, never HTML; its colours inline, so that the exported
 * file draws it the same.
 */
import { type Top, percent, tokenText } from "../model/readouts";
import type { ViewGraph } from "../model/view_model";
import type { Scene } from "../scene/types";
import { at } from "../wire_check";
import { fitText, s, svgText, textWidth } from "./dom";

/** What a chip on the graph says: the block, the token, its probability, in words. */
export interface Chip {
  call: number;
  top: Top;
  text: string; // "‘the’" (or "h.1: ‘the’": a stack's last block passed)
  p: string; // "26%"
  title: string; // the whole sentence, for the tooltip
  fresh?: boolean; // playback has just passed it: the prediction formed here
}

export const CHIP_H = 20;
const PAD = 8;
const MAX_W = 170;

/**
 * The chips of a scene: per drawn node or group key, the readout of the block it shows (a
 * stage; a fold: its last member's, the run's output; an open group; a stack: the member it
 * shows), from `tops` (by call: the last position's, or a chosen one's); `passed` says whether
 * playback has passed a call (absent: all shown); `where` the position in words.
 */
export function chipsOf(
  view: ViewGraph,
  scene: Scene,
  blocks: ReadonlySet<number>,
  tops: ReadonlyMap<number, Top>,
  where: string,
  passed?: (call: number) => boolean,
): Map<string, Chip> {
  const out = new Map<string, Chip>();
  const add = (key: string, call: number) => {
    const top = tops.get(call);
    if (!blocks.has(call) || !top || (passed && !passed(call))) return;
    const id = at(view.tree.graph.calls, call).id;
    out.set(key, {
      call,
      top,
      text: tokenText(top.name),
      p: percent(top.p),
      title: `Logit lens: ${id}'s output, read through the model's final norm and unembedding, predicts ${tokenText(top.name)} next ${where} (probability ${(top.p * 100).toFixed(1)}%)`,
    });
  };
  for (const n of scene.nodes) {
    if (n.kind === "stage") add(n.key, n.call);
    else if (n.kind === "fold") {
      const members = view.byKey.get(n.key)?.run?.members ?? [];
      const last = members[members.length - 1];
      if (last !== undefined) add(n.key, last);
    }
  }
  for (const c of scene.clusters) if (c.kind !== "run") add(c.key, c.call);
  return out;
}

/** The chips drawn on their nodes' and groups' boxes. */
export function drawChips(scene: Scene, chips: ReadonlyMap<string, Chip>, font: string): SVGGElement[] {
  const boxes = new Map<string, readonly number[]>();
  for (const n of scene.nodes) boxes.set(n.key, n.box);
  for (const c of scene.clusters) boxes.set(c.key, c.box);
  const out: SVGGElement[] = [];
  for (const [key, chip] of chips) {
    const box = boxes.get(key);
    if (!box) continue;
    const [x = 0, y = 0, w = 0, h = 0] = box;
    const pw = textWidth(chip.p, font);
    const text = fitText(chip.text, MAX_W - 2 * PAD - 14 - 6 - pw, font);
    const tw = textWidth(text, font);
    const cw = 2 * PAD + 14 + tw + 6 + pw;
    const g = s("g", {
      class: `nfw-chip-lens${chip.fresh ? " nfw-chip-fresh" : ""}`,
      "data-chip": key,
      "data-token": String(chip.top.id),
      // at the right, its left end past the middle (where the edges leave), over the node's
      // right side when the node is narrow
      transform: `translate(${Math.max(x + w - cw - 10, x + w / 2 + 10)},${y + h - CHIP_H / 2})`,
    });
    const title = s("title");
    title.textContent = chip.title;
    g.append(
      title,
      s("rect", {
        width: cw,
        height: CHIP_H,
        rx: CHIP_H / 2,
        fill: chip.fresh ? "#fde68a" : "#fffbeb",
        stroke: "#b45309",
        "stroke-width": chip.fresh ? 2 : 1.25,
      }),
      svgText("→", { x: PAD, y: CHIP_H / 2 + 4.5, fill: "#b45309", "font-size": 12, "font-weight": 700 }),
      svgText(text, { x: PAD + 14, y: CHIP_H / 2 + 4.5, fill: "#1f2937", "font-size": 13, "font-weight": 600 }),
      svgText(chip.p, {
        x: cw - PAD,
        y: CHIP_H / 2 + 4.5,
        fill: "#92400e",
        "font-size": 13,
        "font-weight": 600,
        "text-anchor": "end",
      }),
    );
    out.push(g);
  }
  return out;
}
