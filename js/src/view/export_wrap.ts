/**
 * A figure far longer along its flow than across it (export.ts), wrapped like a line of
 * text: the bands the layout made (a long chain folded into rows or columns) are found from
 * the connectors that run back between them, and cut into strips of near equal length, at
 * gaps between boxes where there are some, so that the whole reads near a slide's shape.
 * Each strip is the one drawing, clipped; a faint dashed line marks a cut.
 */
import type { Scene } from "../scene/types";
import { s } from "./dom";

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

export interface Wrapped {
  width: number; // of the graph, strips laid out, without the pad
  height: number;
  parts: SVGElement[]; // placed at the pad
  defs: SVGElement[]; // the drawing and the strips' clips, when wrapped
}

function spanOf([x, y, w, h]: readonly [number, number, number, number], along: 0 | 1): Span {
  return along === 0 ? { lo: x, hi: x + w, a0: y, a1: y + h } : { lo: y, hi: y + h, a0: x, a1: x + w };
}

/** Whether a box belongs to a band: its middle lies in the band's slice. */
function inside(box: Span, band: { a0: number; a1: number }): boolean {
  const mid = (box.a0 + box.a1) / 2;
  return band.a0 < mid && mid < band.a1;
}

/** The drawing (`scene`'s, every layer, in scene coordinates), whole or as strips, placed
 * `pad` from the top left; `id`: the view's id prefix (ids made here are unique with it);
 * `vars`: the resolved theme colours. */
export function wrapped(
  scene: Scene,
  drawing: SVGGElement,
  id: string,
  vars: Record<string, string>,
  pad: number,
): Wrapped {
  const along = scene.dir === "LR" ? 0 : 1; // the axis the data flows along
  const strips = stripsOf(scene, along);
  if (!strips)
    return {
      width: scene.width,
      height: scene.height,
      parts: [s("g", { transform: `translate(${pad},${pad})` }, drawing)],
      defs: [],
    };
  const drawingId = `${id}-figure`;
  drawing.setAttribute("id", drawingId);
  const defs: SVGElement[] = [drawing];
  const parts: SVGElement[] = [];
  let length = 0;
  let across = 0;
  strips.forEach((st, i) => {
    const cutBefore = i > 0 && strips[i - 1]!.band === st.band;
    const cutAfter = i + 1 < strips.length && strips[i + 1]!.band === st.band;
    if (cutBefore) across += STRIP_GAP; // between bands the layout's own gap is there already
    const clipId = `${id}-strip-${i}`;
    const [x, y, width, height] =
      along === 0 ? [st.lo, st.a0, st.hi - st.lo, st.a1 - st.a0] : [st.a0, st.lo, st.a1 - st.a0, st.hi - st.lo];
    defs.push(s("clipPath", { id: clipId }, s("rect", { x, y, width, height })));
    const use = s("use", { href: `#${drawingId}` });
    use.setAttributeNS(XLINK_NS, "xlink:href", `#${drawingId}`); // for SVG 1.1 readers (Inkscape 0.9x, librsvg)
    // each strip starts CLIP_MARGIN before the pad line, as the drawing does unwrapped
    const [dl, da] = [pad - CLIP_MARGIN - st.lo, pad - CLIP_MARGIN + across - st.a0];
    const strip = s("g", {
      class: "nfw-strip",
      "data-strip": i,
      transform: `translate(${along === 0 ? dl : da},${along === 0 ? da : dl})`,
    });
    strip.append(s("g", { "clip-path": `url(#${clipId})` }, use));
    if (cutBefore) strip.append(cutMark(st.lo, along, st, vars));
    if (cutAfter) strip.append(cutMark(st.hi, along, st, vars));
    parts.push(strip);
    length = Math.max(length, st.hi - st.lo);
    across += st.a1 - st.a0;
  });
  // the first strip's margin before its content is the pad's; a cut strip's end (its cut mark) lies at the pad line
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
    const ends = [
      Math.max(-CLIP_MARGIN, band.lo - 2 * CLIP_MARGIN),
      ...cutsAt(mine, band, stripsIn(band, length)),
      Math.min(long + CLIP_MARGIN, band.hi + 2 * CLIP_MARGIN),
    ];
    return ends.slice(1).map((hi, i) => ({ lo: ends[i]!, hi, a0: band.a0, a1: band.a1, band: index })); // ends[i]: the strip before's end
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
      if (points[i - 2 + along]! - points[i + along]! > Math.min(300, long / 4))
        lines.push((points[i - 1 - along]! + points[i + 1 - along]!) / 2);
    }
  }
  if (lines.some((at) => boxes.some((b) => b.a0 < at && at < b.a1))) return null;
  const bounds = [
    -CLIP_MARGIN,
    ...lines.sort((a, b) => a - b).filter((at, i) => i === 0 || at - lines[i - 1]! > 8),
    short + CLIP_MARGIN,
  ];
  const bands: Span[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    // 3 px off the connector: its run back along the flow is the line break, not drawn
    const [lo, hi] = [bounds[i]!, bounds[i + 1]!];
    const [a0, a1] = [i > 0 ? lo + 3 : lo, i + 2 < bounds.length ? hi - 3 : hi];
    const mine = boxes.filter((b) => inside(b, { a0, a1 }));
    if (mine.length)
      bands.push({ lo: Math.min(...mine.map((b) => b.lo)), hi: Math.max(...mine.map((b) => b.hi)), a0, a1 });
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
    if (off < miss) {
      best = k === 1 ? null : length;
      miss = off;
    }
  }
  return best;
}

/**
 * Where to cut a band into n strips: near equal lengths, each cut in the middle of a gap
 * between its boxes (where only edges pass) when one lies within a third of a strip of the
 * even cut; otherwise at the even cut, through whatever is there.
 */
function cutsAt(boxes: Span[], band: Span, n: number): number[] {
  const spans = boxes.map((b): [number, number] => [b.lo, b.hi]).sort((a, b) => a[0] - b[0]);
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
  return s("line", {
    class: "nfw-cut",
    x1,
    y1,
    x2,
    y2,
    stroke: vars["--nfw-fg3"] || "#9ca3af",
    "stroke-width": 1,
    "stroke-dasharray": "2 4",
  });
}
