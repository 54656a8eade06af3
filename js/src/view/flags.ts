/**
 * The pills on a node or group that say what went wrong there: "raised" (the forward raised
 * in what it shows) and "NaN/Inf" ("1st NaN/Inf" where it appeared, "received NaN/Inf" where
 * the first stage holding it only received it); and, comparing two
 * runs, "runs part" on the first stage where they differ, "B raised" where run B's forward
 * raised (it says more than "runs part" there); after a backward pass, "grad vanishes" / "grad
 * explodes" where the gradient did so on the trunk and "NaN/Inf grad" where NaN / Inf entered
 * the backward pass ("1st"). SVG, text as text.
 * They straddle the top edge from its left corner, clear of the edges entering its middle.
 */
import type { Mark } from "../model/problems";
import { s, svgText, textWidth } from "./dom";

export interface Flag {
  text: string;
  cls: "nfw-flag-failed" | "nfw-flag-nonfinite" | "nfw-flag-diverges" | "nfw-flag-gradient";
  title: string;
}

export const FLAG_H = 18;
const PAD = 7;
const GAP = 4;

/** The flags of a mark, most severe first. */
export function flagsOf(mark: Mark | null): Flag[] {
  if (!mark) return [];
  const flags: Flag[] = [];
  if (mark.failed) flags.push({ text: "raised", cls: "nfw-flag-failed", title: "The forward raised here" });
  if (mark.nonfinite) {
    const where =
      mark.nonfinite > 1 ? `${mark.nonfinite} stages shown here hold NaN or ±Inf` : "Its output holds NaN or ±Inf";
    if (mark.received) {
      flags.push({
        text: "received NaN/Inf",
        cls: "nfw-flag-nonfinite",
        title: `${where}; it came in with its input, made before it (the banner says where)`,
      });
    } else {
      flags.push({
        text: mark.first ? "1st NaN/Inf" : "NaN/Inf",
        cls: "nfw-flag-nonfinite",
        title: mark.first ? `${where}; the first NaN/Inf of the run is here` : where,
      });
    }
  }
  if (mark.failedB)
    flags.push({
      text: "B raised",
      cls: "nfw-flag-failed",
      title: "Run B's forward raised here: it has no output to compare",
    });
  else if (mark.diverges)
    flags.push({
      text: "runs part",
      cls: "nfw-flag-diverges",
      title: "Runs A and B part here: the first stage whose output differs",
    });
  if (mark.nonfiniteGrad) {
    flags.push({
      text: mark.firstGrad ? "1st NaN/Inf grad" : "NaN/Inf grad",
      cls: "nfw-flag-nonfinite",
      title: mark.firstGrad
        ? "NaN or ±Inf entered the backward pass here: the gradient of its output holds it, the ones after it do not"
        : "The gradient of its output holds NaN or ±Inf (it came back from a stage after it)",
    });
  }
  if (mark.gradient)
    flags.push({
      text: mark.gradient === "vanishing" ? "grad vanishes" : "grad explodes",
      cls: "nfw-flag-gradient",
      title:
        mark.gradient === "vanishing"
          ? "Going back from the loss, the gradient's norm here has fallen below 1/1000 of its size at the loss"
          : "Going back from the loss, the gradient's norm here has grown beyond 1000 times its size at the loss",
    });
  return flags;
}

/** The width of a row of flags in a font. */
export function flagsWidth(flags: Flag[], font: string): number {
  return flags.reduce((w, f, i) => w + textWidth(f.text, font) + 2 * PAD + (i ? GAP : 0), 0);
}

/** A row of flags, its top left corner at (x, y). */
export function drawFlags(flags: Flag[], x: number, y: number, font: string): SVGGElement {
  const row = s("g", { class: "nfw-flags", transform: `translate(${x},${y})` });
  let at = 0;
  for (const f of flags) {
    const w = textWidth(f.text, font) + 2 * PAD;
    const g = s("g", { class: `nfw-flag ${f.cls}`, transform: `translate(${at},0)` });
    const title = s("title");
    title.textContent = f.title;
    g.append(
      title,
      s("rect", { width: w, height: FLAG_H, rx: FLAG_H / 2 }),
      svgText(f.text, { x: w / 2, y: FLAG_H / 2 + 4, "text-anchor": "middle" }),
    );
    row.append(g);
    at += w + GAP;
  }
  return row;
}
