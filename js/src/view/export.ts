/**
 * SVG and PNG files of the laid-out graph (toolbar buttons, the kernel's export request):
 * a figure for a paper or a slide. graph_view.ts draws the graph with its live builders;
 * here that drawing loses what only the live view needs (expand badges, the focus ring, the
 * marks of selection, hover, search and playback), gains a legend in SVG, and a graph far
 * longer along its flow than across it is wrapped into strips, like a line of text
 * (export_wrap.ts).
 */
import { signsDrawn } from "../model/glyphs";
import type { Scene } from "../scene/types";
import type { EdgeKind } from "../wire";
import { EDGE_NAMES } from "./chrome";
import { s, SVG_NS, svgText, textWidth } from "./dom";
import { wrapped } from "./export_wrap";
import type { GraphView } from "./graph_view";
import { residualLegendWords, residualSwatch } from "./residual_mark";
import { GRAPH_CSS, splitSelectors, THEME_VARS } from "./styles";

/** The whole graph as an SVG document, colours resolved from the theme around `themed`. */
export function exportSvg(view: GraphView, themed: Element): string {
  const style = getComputedStyle(themed);
  const vars: Record<string, string> = {};
  for (const name of THEME_VARS) vars[name] = style.getPropertyValue(name).trim();
  const background = vars["--nfw-bg"] || "#ffffff";
  return view.exportSvg((scene, drawing, defs, id) => figureSvg({ scene, drawing, defs, id, vars, background }));
}

/** The graph as graph_view.ts draws it, for figureSvg. */
interface FigureParts {
  scene: Scene;
  drawing: SVGGElement; // every layer, nothing culled, in scene coordinates
  defs: SVGDefsElement; // the arrowheads, ids `${id}-arrow-${kind}`
  id: string; // the view's id prefix: ids made here are unique with it
  vars: Record<string, string>; // theme variables, resolved
  background: string;
}

const PAD = 24; // around the figure
const LEGEND_GAP = 20; // between the graph and the legend under it

/** A standalone SVG document of the drawing: no UI, a legend under it, wrapped when very long. */
function figureSvg(p: FigureParts): string {
  stripUi(p.drawing);
  const graph = wrapped(p.scene, p.drawing, p.id, p.vars, PAD);
  const legend = legendEl(
    drawnKinds(p.scene),
    signsDrawn(p.scene.junctions),
    residualLegendWords(p.scene.nodes),
    p.id,
    p.vars,
  );
  const w = Math.ceil(Math.max(graph.width, legend.width) + 2 * PAD);
  const h = Math.ceil(graph.height + LEGEND_GAP + legend.height + 2 * PAD);
  const svg = s("svg", { xmlns: SVG_NS, class: "nfw-graph", width: w, height: h, viewBox: `0 0 ${w} ${h}` });
  for (const [k, v] of Object.entries(p.vars)) svg.style.setProperty(k, v);
  const style = s("style");
  style.textContent = figureCss(GRAPH_CSS);
  legend.el.setAttribute("transform", `translate(${PAD},${PAD + graph.height + LEGEND_GAP})`);
  p.defs.append(...graph.defs);
  svg.append(style, s("rect", { width: w, height: h, fill: p.background }), p.defs, ...graph.parts, legend.el);
  return new XMLSerializer().serializeToString(svg);
}

// ---------------------------------------------------------------------------------------
// No UI: the live builders mark what the user is doing; a figure shows the model only.

/** Parts that only work in the live view: the +/− badges that expand and collapse, the focus ring. */
const UI_PARTS = "[data-action], .nfw-ring";
/** Selection, keyboard focus, search matches, playback's current stage and its live edges, hover. */
const UI_CLASSES = ["nfw-selected", "nfw-focus", "nfw-match", "nfw-current", "nfw-live", "nfw-hl"];

function stripUi(drawing: Element) {
  for (const el of drawing.querySelectorAll(UI_PARTS)) el.remove();
  for (const cls of UI_CLASSES) for (const el of drawing.querySelectorAll(`.${cls}`)) el.classList.remove(cls);
  for (const el of drawing.querySelectorAll("[data-current]")) el.removeAttribute("data-current");
}

/** Selectors only the live view's UI matches (its states above, hover, level of detail). */
const UI_SELECTOR = new RegExp(
  [
    "data-action",
    "data-current",
    "nfw-ring",
    "nfw-badge",
    ":hover",
    "nfw-hovering",
    "nfw-stepping",
    "nfw-lod",
    ...UI_CLASSES,
  ].join("|"),
);

/**
 * The graph's rules without those for the UI (selector by selector), the pointer cursor and
 * the @-blocks (the live edges' animation): a figure is still, and opened in a browser it
 * should not react to the pointer as if it were the widget.
 */
function figureCss(css: string): string {
  let out = "";
  let i = 0;
  for (let open = css.indexOf("{", i); open >= 0; open = css.indexOf("{", i)) {
    let close = open;
    for (let depth = 0; close < css.length; close++) {
      if (css[close] === "{") depth++;
      else if (css[close] === "}" && --depth === 0) break;
    }
    const selector = css.slice(i, open).trim();
    const body = css.slice(open, close + 1).replace(/\s*cursor:[^;}]*;?/g, "");
    i = close + 1;
    const parts = selector.startsWith("@") ? [] : splitSelectors(selector).filter((part) => !UI_SELECTOR.test(part));
    if (parts.length && /[^{}\s]/.test(body)) out += `${parts.join(", ")} ${body}\n`;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// The legend: the edge kinds the figure draws, each as a short line drawn like its edges.

/** How each kind is stroked: the same as GRAPH_CSS draws the edges (kept in step by hand). */
const STROKES: Record<EdgeKind, { width: number; dash: string | null; cap: string | null }> = {
  flow: { width: 1.4, dash: null, cap: null },
  skip: { width: 1.5, dash: "6 4", cap: null },
  merge: { width: 1.6, dash: null, cap: null },
  order: { width: 2, dash: "0.5 4", cap: "round" },
};
const SWATCH = 30; // length of a legend line
const LEGEND_FONT = 12;

/** The kinds of the edges and buses in the scene (a junction's stub into its node is data flow). */
function drawnKinds(scene: Scene): EdgeKind[] {
  const kinds = new Set<EdgeKind>([...scene.edges, ...scene.buses].map((e) => e.kind));
  if (scene.stubs.length) kinds.add("flow");
  return (["flow", "skip", "merge", "order"] as const).filter((k) => kinds.has(k));
}

/** One row of swatches and names; colours are the resolved theme values, so any SVG reader shows them. */
function legendEl(
  kinds: EdgeKind[],
  signs: [string, string][],
  residual: string | null,
  id: string,
  vars: Record<string, string>,
): { el: SVGGElement; width: number; height: number } {
  const el = s("g", { class: "nfw-export-legend", "font-size": LEGEND_FONT });
  const font = `${LEGEND_FONT}px ${vars["--nfw-font"] || "sans-serif"}`;
  let x = 0;
  for (const kind of kinds) {
    const { width, dash, cap } = STROKES[kind];
    const line = s("line", {
      x1: 0,
      y1: 0,
      x2: SWATCH,
      y2: 0,
      stroke: vars[`--nfw-${kind}`] || "#6b7280",
      "stroke-width": width,
      "stroke-dasharray": dash,
      "stroke-linecap": cap,
      "marker-end": `url(#${id}-arrow-${kind})`,
    });
    const name = EDGE_NAMES[kind];
    const text = svgText(name, { x: SWATCH + 6, y: 4, fill: vars["--nfw-fg1"] || "#374151" });
    el.append(s("g", { "data-legend": kind, transform: `translate(${x},${LEGEND_FONT / 2})` }, line, text));
    x += SWATCH + 6 + textWidth(name, font) + 22;
  }
  for (const [sign, words] of signs) {
    const ink = vars["--nfw-fg1"] || "#374151";
    const ring = s("circle", {
      cx: 7,
      cy: 0,
      r: 7,
      fill: vars["--nfw-bg1"] || "#ffffff",
      stroke: vars["--nfw-flow"] || "#6b7280",
      "stroke-width": 1.5,
    });
    const mark = svgText(sign, { x: 7, y: 4, fill: ink, "text-anchor": "middle", "font-size": LEGEND_FONT - 1 });
    const text = svgText(words, { x: 20, y: 4, fill: ink });
    el.append(s("g", { "data-legend": "junction", transform: `translate(${x},${LEGEND_FONT / 2})` }, ring, mark, text));
    x += 20 + textWidth(words, font) + 22;
  }
  if (residual) {
    const ink = {
      card: vars["--nfw-bg2"] || "#f3f4f6",
      border: vars["--nfw-border"] || "#d1d5db",
      arc: vars["--nfw-skip"] || "#d97706",
      disc: vars["--nfw-bg"] || "#ffffff",
      glyph: vars["--nfw-fg0"] || "#111827",
    };
    const swatch = s("g", { transform: "translate(0,-10)" }, ...residualSwatch(ink));
    const text = svgText(residual, { x: 34, y: 4, fill: vars["--nfw-fg1"] || "#374151" });
    el.append(s("g", { "data-legend": "residual", transform: `translate(${x},${LEGEND_FONT / 2})` }, swatch, text));
    x += 34 + textWidth(residual, font) + 22;
  }
  return {
    el,
    width: Math.max(0, x - 22),
    height: kinds.length || signs.length || residual ? LEGEND_FONT + 4 : 0,
  };
}

// ---------------------------------------------------------------------------------------
// Wrapping: a graph can be 50 times longer than wide (the layout folds a long flow into at
// most 8 bands, and only where a single edge crosses); on a page its labels shrink to nothing
// and a PNG of it degenerates (8192 × 9 px). Such a graph is cut between nodes into strips
// laid one after the other like lines of text, each strip a clipped <use> of the one drawing.
// Cuts go across the direction the data flows (x in LR, y in TB) and each band the layout
// made is wrapped on its own, band after band, so that every strip reads on from the one
// before (cut across all bands at once, strips would interleave pieces of different bands).

// ---------------------------------------------------------------------------------------
// PNG

/**
 * The bound on a PNG: neither side exceeds MAX_PNG_SIDE px (past it canvases fail or come
 * out blank in some browsers, and slides and viewers choke). The PNG is drawn at `scale`
 * (2: sharp on a high-density screen or a projector), lowered only as far as that bound
 * demands. Since a graph long along its flow is wrapped (MAX_ASPECT), the bound bites only
 * for a graph whose wrapped figure is over 4096 px a side, i.e. of a great many stages, or
 * one very long across its flow (hundreds of parallel branches, which is not wrapped). Below
 * LEGIBLE_SCALE the smallest labels (10.5 px) come out under 8 px: the PNG is still made,
 * and a console warning says so and points to the SVG, which keeps every label sharp.
 */
const MAX_PNG_SIDE = 8192;
const LEGIBLE_SCALE = 0.75;

/** Rasterise SVG text to a PNG at `scale` (each side capped at MAX_PNG_SIDE). */
export async function svgToPng(svg: string, scale = 2): Promise<Blob> {
  const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
  try {
    const img = new Image();
    await new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new Error("the SVG could not be drawn"));
      img.src = url;
    });
    const k = Math.min(scale, MAX_PNG_SIDE / Math.max(img.width, img.height, 1));
    if (k < LEGIBLE_SCALE) {
      console.warn(
        `neural_flow_widget: the graph is too large for a legible PNG (drawn at ${Math.round(k * 100)} %, labels under 8 px); the SVG export keeps them sharp`,
      );
    }
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.round(img.width * k));
    canvas.height = Math.max(1, Math.round(img.height * k));
    canvas.getContext("2d")!.drawImage(img, 0, 0, canvas.width, canvas.height);
    return await new Promise<Blob>((resolve, reject) =>
      canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("PNG encoding failed"))), "image/png"),
    );
  } finally {
    URL.revokeObjectURL(url);
  }
}
