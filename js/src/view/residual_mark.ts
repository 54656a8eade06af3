/**
 * The "residual inside" mark of a collapsed residual block or a fold of them (SceneNode's
 * `residual`, from model/residual.ts): a small ⊕ on the edge the block's output leaves by
 * (bottom in TB, right in LR) and a short arc from its input side around the card into it,
 * the shortcut of `output = f(x) + x`; dashed where the shortcut is a projection. An open
 * block draws its real junction instead (it is a group then, not a node). graph_view.ts puts
 * it in the node's group; the legend says "residual inside" while one is drawn.
 */
import type { Direction } from "../layout/layout";
import type { SceneNode } from "../scene/types";
import { s } from "./dom";

/** Radius of the mark's ⊕ (it hangs in the gap below the card: a group's padding holds it). */
export const RESIDUAL_R = 6.5;
/** How far the arc runs outside the card. */
const OUT = 8;

const WORDS: Record<NonNullable<SceneNode["residual"]>, string> = {
  identity: "residual: output = f(x) + x (open the block to see its ⊕ junction)",
  projected: "residual: output = f(x) + proj(x), a projected shortcut (open the block to see its ⊕ junction)",
  mixed: "residual in each block: output = f(x) + x (a projected shortcut where the shape changes)",
};

/** The words of a mark (its tooltip; the node's own tooltip ends with them too). */
export function residualWords(kind: NonNullable<SceneNode["residual"]>): string {
  return WORDS[kind];
}

/** The mark on a card `cw` × `ch` (its origin at the card's top left); a fold's cards stacked
 * behind it reach `behind` further right and down, and the mark goes clear of them. */
export function residualEl(
  kind: NonNullable<SceneNode["residual"]>,
  cw: number,
  ch: number,
  dir: Direction,
  behind = 0,
  mirror = false,
): SVGGElement {
  const r = RESIDUAL_R;
  const f = (v: number) => (Math.round(v * 10) / 10).toString();
  let cx: number, cy: number, arc: string;
  if (dir === "TB") {
    // from the top edge's left, out round the left side, along under the card into the ⊕'s left
    cx = cw / 2;
    cy = ch + Math.max(r, behind + 3);
    const o = cw + OUT + behind; // mirrored: round the right side, clear of the cards behind
    arc = mirror
      ? `M${f(cw - 14)},0C${f(cw - 14)},${-OUT} ${f(o)},${-OUT} ${f(o)},10L${f(o)},${f(cy - 12)}Q${f(o)},${f(cy)} ${f(cw - 10)},${f(cy)}L${f(cx + r)},${f(cy)}`
      : `M14,0C14,${-OUT} ${-OUT},${-OUT} ${-OUT},10L${-OUT},${f(cy - 12)}Q${-OUT},${f(cy)} 10,${f(cy)}L${f(cx - r)},${f(cy)}`;
  } else {
    // from the left edge's lower part, out round the bottom, up into the ⊕'s bottom
    cx = cw + Math.max(r, behind + 3);
    cy = ch / 2;
    const by = ch + Math.max(OUT, behind + 3);
    arc = `M0,${f(ch - 12)}C${-OUT},${f(ch - 12)} ${-OUT},${f(by)} 10,${f(by)}L${f(cx - 12)},${f(by)}Q${f(cx)},${f(by)} ${f(cx)},${f(cy + r)}`;
  }
  const a = r * 0.5;
  const g = s("g", { class: "nfw-residual", "data-residual": kind });
  const title = s("title");
  title.textContent = WORDS[kind];
  g.append(
    title,
    // dotted where the shortcut projects, as the ResNet paper draws it (its Fig. 3)
    s("path", { class: "nfw-residual-arc", d: arc, "stroke-dasharray": kind === "projected" ? "2 3" : null }),
    s("circle", { class: "nfw-residual-disc", cx: f(cx), cy: f(cy), r }),
    s("path", {
      class: "nfw-residual-glyph",
      d: `M${f(cx - a)},${f(cy)}H${f(cx + a)}M${f(cx)},${f(cy - a)}V${f(cy + a)}`,
    }),
  );
  return g;
}

/** What a legend says of the marks a scene's nodes carry (culled or not): null when none. */
export function residualLegendWords(nodes: readonly SceneNode[]): string | null {
  const kinds = new Set(nodes.map((n) => n.residual).filter((k) => k));
  if (kinds.size === 0) return null;
  return kinds.has("projected") ? "residual inside (dotted: projected shortcut)" : "residual inside";
}

/** The colours a legend's swatch of the mark is drawn in: CSS variables in the widget, their
 * values in an exported file. */
export interface SwatchInk {
  card: string;
  border: string;
  arc: string;
  disc: string;
  glyph: string;
}

/** The mark in small, 28 × 18 from its top left: an arc round a card's corner into a ⊕. */
export function residualSwatch(ink: SwatchInk): SVGElement[] {
  return [
    s("rect", { x: 8, y: 1.5, width: 18, height: 9, rx: 2, fill: ink.card, stroke: ink.border }),
    s("path", {
      d: "M11,1.5C11,-0.5 3,-0.5 3,3L3,12Q3,14.5 6,14.5L12.5,14.5",
      fill: "none",
      stroke: ink.arc,
      "stroke-width": 1.5,
    }),
    s("circle", { cx: 17, cy: 14, r: 3.6, fill: ink.disc, stroke: ink.arc, "stroke-width": 1.3 }),
    s("path", { d: "M15,14H19M17,12V16", stroke: ink.glyph, "stroke-width": 1.3 }),
  ];
}
