/**
 * SVG and PNG files of the laid-out graph (toolbar buttons, the kernel's export request):
 * a figure for a paper or a slide. graph_view.ts draws the graph with its live builders;
 * here that drawing loses what only the live view needs (expand badges, the focus ring, the
 * marks of selection, hover, search and playback), gains a legend in SVG, and a graph far
 * longer along its flow than across it is wrapped into strips, like a line of text.
 */
import { signsDrawn } from "../model/junctions";
import type { Scene } from "../scene/types";
import type { EdgeKind } from "../wire";
import { EDGE_NAMES } from "./chrome";
import { s, SVG_NS, svgText, textWidth } from "./dom";
import type { GraphView } from "./graph_view";
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
  const graph = wrapped(p);
  const legend = legendEl(drawnKinds(p.scene), signsDrawn(p.scene.junctions), p.id, p.vars);
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
const UI_SELECTOR = new RegExp(["data-action", "data-current", "nfw-ring", "nfw-badge", ":hover", "nfw-hovering", "nfw-stepping", "nfw-lod", ...UI_CLASSES].join("|"));

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
function legendEl(kinds: EdgeKind[], signs: [string, string][], id: string, vars: Record<string, string>): { el: SVGGElement; width: number; height: number } {
  const el = s("g", { class: "nfw-export-legend", "font-size": LEGEND_FONT });
  const font = `${LEGEND_FONT}px ${vars["--nfw-font"] || "sans-serif"}`;
  let x = 0;
  for (const kind of kinds) {
    const { width, dash, cap } = STROKES[kind];
    const line = s("line", {
      x1: 0, y1: 0, x2: SWATCH, y2: 0, stroke: vars[`--nfw-${kind}`] || "#6b7280", "stroke-width": width,
      "stroke-dasharray": dash, "stroke-linecap": cap, "marker-end": `url(#${id}-arrow-${kind})`,
    });
    const name = EDGE_NAMES[kind];
    const text = svgText(name, { x: SWATCH + 6, y: 4, fill: vars["--nfw-fg1"] || "#374151" });
    el.append(s("g", { "data-legend": kind, transform: `translate(${x},${LEGEND_FONT / 2})` }, line, text));
    x += SWATCH + 6 + textWidth(name, font) + 22;
  }
  for (const [sign, words] of signs) {
    const ink = vars["--nfw-fg1"] || "#374151";
    const ring = s("circle", { cx: 7, cy: 0, r: 7, fill: vars["--nfw-bg1"] || "#ffffff", stroke: vars["--nfw-flow"] || "#6b7280", "stroke-width": 1.5 });
    const mark = svgText(sign, { x: 7, y: 4, fill: ink, "text-anchor": "middle", "font-size": LEGEND_FONT - 1 });
    const text = svgText(words, { x: 20, y: 4, fill: ink });
    el.append(s("g", { "data-legend": "junction", transform: `translate(${x},${LEGEND_FONT / 2})` }, ring, mark, text));
    x += 20 + textWidth(words, font) + 22;
  }
  return { el, width: Math.max(0, x - 22), height: kinds.length || signs.length ? LEGEND_FONT + 4 : 0 };
}

// ---------------------------------------------------------------------------------------
// Wrapping: a graph can be 50 times longer than wide (the layout folds a long flow into at
// most 8 bands, and only where a single edge crosses); on a page its labels shrink to nothing
// and a PNG of it degenerates (8192 × 9 px). Such a graph is cut between nodes into strips
// laid one after the other like lines of text, each strip a clipped <use> of the one drawing.
// Cuts go across the direction the data flows (x in LR, y in TB) and each band the layout
// made is wrapped on its own, band after band, so that every strip reads on from the one
// before (cut across all bands at once, strips would interleave pieces of different bands).

/** Longer along its flow than this many times its width, a graph is wrapped. */
const MAX_ASPECT = 4;
/** Wrapped, a graph aims at this ratio of its length along the flow to its width (a slide's shape, near enough). */
const TARGET_ASPECT = 1.5;
const STRIP_GAP = 40; // between the strips of one band (bands keep the layout's gap)
const CLIP_MARGIN = 12; // what a box draws outside itself (flags over the top edge)
const XLINK_NS = "http://www.w3.org/1999/xlink";

/** Extents along the flow (lo..hi) and across it (a0..a1). */
interface Span {
  lo: number;
  hi: number;
  a0: number;
  a1: number;
}

/** A piece of a band: its span, and which band (strips of one band are cuts of one line of flow). */
interface Strip extends Span {
  band: number;
}

interface Wrapped {
  width: number; // of the graph, strips laid out, without PAD
  height: number;
  parts: SVGElement[]; // placed at PAD
  defs: SVGElement[]; // the drawing and the strips' clips, when wrapped
}

function spanOf(box: readonly number[], along: 0 | 1): Span {
  const across = 1 - along;
  return { lo: box[along], hi: box[along] + box[along + 2], a0: box[across], a1: box[across] + box[across + 2] };
}

/** Whether a box belongs to a band: its middle lies in the band's slice. */
function inside(box: Span, band: { a0: number; a1: number }): boolean {
  const mid = (box.a0 + box.a1) / 2;
  return band.a0 < mid && mid < band.a1;
}

function wrapped(p: FigureParts): Wrapped {
  const { scene } = p;
  const along = scene.dir === "LR" ? 0 : 1; // the axis the data flows along
  const strips = stripsOf(scene, along);
  if (!strips) return { width: scene.width, height: scene.height, parts: [s("g", { transform: `translate(${PAD},${PAD})` }, p.drawing)], defs: [] };
  const drawingId = `${p.id}-figure`;
  p.drawing.setAttribute("id", drawingId);
  const defs: SVGElement[] = [p.drawing];
  const parts: SVGElement[] = [];
  let length = 0;
  let across = 0;
  strips.forEach((st, i) => {
    const cutBefore = i > 0 && strips[i - 1].band === st.band;
    const cutAfter = i + 1 < strips.length && strips[i + 1].band === st.band;
    if (cutBefore) across += STRIP_GAP; // between bands the layout's own gap is there already
    const clipId = `${p.id}-strip-${i}`;
    const [x, y, width, height] = along === 0 ? [st.lo, st.a0, st.hi - st.lo, st.a1 - st.a0] : [st.a0, st.lo, st.a1 - st.a0, st.hi - st.lo];
    defs.push(s("clipPath", { id: clipId }, s("rect", { x, y, width, height })));
    const use = s("use", { href: `#${drawingId}` });
    use.setAttributeNS(XLINK_NS, "xlink:href", `#${drawingId}`); // for SVG 1.1 readers (Inkscape 0.9x, librsvg)
    // each strip starts CLIP_MARGIN before the PAD line, as the drawing does unwrapped
    const [dl, da] = [PAD - CLIP_MARGIN - st.lo, PAD - CLIP_MARGIN + across - st.a0];
    const strip = s("g", { class: "nfw-strip", "data-strip": i, transform: `translate(${along === 0 ? dl : da},${along === 0 ? da : dl})` });
    strip.append(s("g", { "clip-path": `url(#${clipId})` }, use));
    if (cutBefore) strip.append(cutMark(st.lo, along, st, p.vars));
    if (cutAfter) strip.append(cutMark(st.hi, along, st, p.vars));
    parts.push(strip);
    length = Math.max(length, st.hi - st.lo);
    across += st.a1 - st.a0;
  });
  // the first strip's margin before its content is the PAD's; a cut strip's end (its cut mark) lies at the PAD line
  [length, across] = [length - CLIP_MARGIN, across - 2 * CLIP_MARGIN];
  return along === 0 ? { width: length, height: across, parts, defs } : { width: across, height: length, parts, defs };
}

/** The strips to draw, in reading order; null: draw the graph as it is (not too long, or no safe way to cut it). */
function stripsOf(scene: Scene, along: 0 | 1): Strip[] | null {
  const long = along === 0 ? scene.width : scene.height;
  const short = along === 0 ? scene.height : scene.width;
  if (long <= MAX_ASPECT * Math.max(short, 1)) return null;
  const bands = bandsOf(scene, along);
  if (!bands?.length) return null;
  const length = stripLength(bands, Math.max(...bands.map((b) => b.hi - b.lo)));
  if (length === null) return null;
  const boxes = [...scene.nodes, ...scene.junctions].map(({ box }) => spanOf(box, along));
  return bands.flatMap((band, index) => {
    const mine = boxes.filter((b) => inside(b, band));
    const ends = [Math.max(-CLIP_MARGIN, band.lo - 2 * CLIP_MARGIN), ...cutsAt(mine, band, stripsIn(band, length)), Math.min(long + CLIP_MARGIN, band.hi + 2 * CLIP_MARGIN)];
    return ends.slice(1).map((hi, i) => ({ lo: ends[i], hi, a0: band.a0, a1: band.a1, band: index }));
  });
}

/**
 * The bands the layout made (in LR rows one under the other, in TB columns side by side):
 * split across the flow at each connector, the edge that runs back along the flow from the
 * end of one band to the start of the next, in the gap between them. A band's span: what
 * its boxes cover along the flow, its slice of the graph across. null: such a backward edge
 * runs through a box (a U-shaped layout, not bands), so no cut is known to keep the order.
 */
function bandsOf(scene: Scene, along: 0 | 1): Span[] | null {
  const long = along === 0 ? scene.width : scene.height;
  const short = along === 0 ? scene.height : scene.width;
  const boxes = [...scene.nodes, ...scene.junctions, ...scene.clusters].map(({ box }) => spanOf(box, along));
  const lines: number[] = [];
  for (const { points } of [...scene.edges, ...scene.stubs, ...scene.buses]) {
    for (let i = 2; i < points.length; i += 2) {
      if (points[i - 2 + along] - points[i + along] > Math.min(300, long / 4)) lines.push((points[i - 1 - along] + points[i + 1 - along]) / 2);
    }
  }
  if (lines.some((at) => boxes.some((b) => b.a0 < at && at < b.a1))) return null;
  const bounds = [-CLIP_MARGIN, ...lines.sort((a, b) => a - b).filter((at, i) => i === 0 || at - lines[i - 1] > 8), short + CLIP_MARGIN];
  const bands: Span[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    // 3 px off the connector: its run back along the flow is the line break, not drawn
    const [a0, a1] = [i > 0 ? bounds[i] + 3 : bounds[i], i + 2 < bounds.length ? bounds[i + 1] - 3 : bounds[i + 1]];
    const mine = boxes.filter((b) => inside(b, { a0, a1 }));
    if (mine.length) bands.push({ lo: Math.min(...mine.map((b) => b.lo)), hi: Math.max(...mine.map((b) => b.hi)), a0, a1 });
  }
  return bands;
}

/** Strips a band is cut into when strips are `length` long (a band a little longer stays whole). */
function stripsIn(band: Span, length: number): number {
  return Math.max(1, Math.ceil((band.hi - band.lo) / length - 0.15));
}

/** The strip length (the longest band / k) that brings the figure nearest TARGET_ASPECT; null: uncut is best. */
function stripLength(bands: Span[], longest: number): number | null {
  let best: number | null = null;
  let miss = Infinity;
  for (let k = 1; k <= 64; k++) {
    const length = longest / k;
    let across = 0;
    for (const band of bands) {
      const n = stripsIn(band, length);
      across += n * (band.a1 - band.a0) + (n - 1) * STRIP_GAP;
    }
    const off = Math.abs(Math.log((length + 2 * CLIP_MARGIN) / across / TARGET_ASPECT));
    if (off < miss) (best = k === 1 ? null : length), (miss = off);
  }
  return best;
}

/**
 * Where to cut a band into n strips: near equal lengths, each cut in the middle of a gap
 * between its boxes (where only edges pass) when one lies within a third of a strip of the
 * even cut; otherwise at the even cut, through whatever is there.
 */
function cutsAt(boxes: Span[], band: Span, n: number): number[] {
  const spans = boxes.map((b) => [b.lo, b.hi]).sort((a, b) => a[0] - b[0]);
  const gaps: number[] = [];
  let end = -Infinity;
  for (const [lo, hi] of spans) {
    if (lo > end && end > -Infinity) gaps.push((end + lo) / 2);
    end = Math.max(end, hi);
  }
  const step = (band.hi - band.lo) / n;
  const cuts: number[] = [];
  for (let i = 1; i < n; i++) {
    const even = band.lo + step * i;
    const after = cuts[cuts.length - 1] ?? band.lo;
    const near = gaps.filter((g) => g > after && Math.abs(g - even) <= step / 3);
    const cut = near.length ? near.reduce((a, b) => (Math.abs(b - even) < Math.abs(a - even) ? b : a)) : even;
    if (cut > after) cuts.push(cut);
  }
  return cuts;
}

/** A faint dashed line where a band was cut: the edges that end there go on in the next strip. */
function cutMark(at: number, along: 0 | 1, strip: Span, vars: Record<string, string>): SVGLineElement {
  const [x1, y1, x2, y2] = along === 0 ? [at, strip.a0, at, strip.a1] : [strip.a0, at, strip.a1, at];
  return s("line", { class: "nfw-cut", x1, y1, x2, y2, stroke: vars["--nfw-fg3"] || "#9ca3af", "stroke-width": 1, "stroke-dasharray": "2 4" });
}

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
      console.warn(`neural_flow_widget: the graph is too large for a legible PNG (drawn at ${Math.round(k * 100)} %, labels under 8 px); the SVG export keeps them sharp`);
    }
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.round(img.width * k));
    canvas.height = Math.max(1, Math.round(img.height * k));
    canvas.getContext("2d")!.drawImage(img, 0, 0, canvas.width, canvas.height);
    return await new Promise<Blob>((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("PNG encoding failed"))), "image/png"));
  } finally {
    URL.revokeObjectURL(url);
  }
}
