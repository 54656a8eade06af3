/**
 * The parts of a scene that make it read like a textbook figure: junction glyphs where data
 * meets (+ for add, ⧺ for a concatenation, × for mul, the function's name otherwise), the stub
 * from a junction into the node that reads the joined data, and buses (one line, a dot where
 * each tap leaves it). Glyphs are drawn as strokes, not text, so no font can miss them.
 * Also the small marks every node and group may carry (badges, test hooks of a mark).
 * graph_view.ts puts them in their layers.
 */
import { edgePath } from "../scene/scene";
import type { Scene, SceneBus, SceneEdge, SceneJunction, SceneNode } from "../scene/types";
import { fitText, s, svgText, textWidth } from "./dom";

/** Strokes of a glyph in a circle of radius r around 0, 0 (null: write the name instead). */
function glyphPath(glyph: string, r: number): string | null {
  const a = r * 0.5;
  const f = (v: number) => (Math.round(v * 10) / 10).toString();
  switch (glyph) {
    case "+":
      return `M${f(-a)},0H${f(a)}M0,${f(-a)}V${f(a)}`;
    case "−":
      return `M${f(-a)},0H${f(a)}`;
    case "×":
      return `M${f(-a * 0.75)},${f(-a * 0.75)}L${f(a * 0.75)},${f(a * 0.75)}M${f(-a * 0.75)},${f(a * 0.75)}L${f(a * 0.75)},${f(-a * 0.75)}`;
    case "÷":
      return `M${f(-a)},0H${f(a)}M0,${f(-a * 0.7)}v0.1M0,${f(a * 0.7)}v0.1`;
    case "⧺": // two bars crossed by one: a concatenation
      return `M${f(-a)},0H${f(a)}M${f(-a * 0.35)},${f(-a)}V${f(a)}M${f(a * 0.35)},${f(-a)}V${f(a)}`;
    default:
      return null;
  }
}

export function junctionEl(j: SceneJunction): SVGGElement {
  const [x, y, w, h] = j.box;
  const g = s("g", {
    class: "nfw-junction",
    "data-junction": j.what,
    "data-glyph": j.glyph,
    "data-key": j.key,
    transform: `translate(${x + w / 2},${y + h / 2})`,
    ...(j.stage ? { "data-stage": j.stage, style: "cursor:pointer" } : {}),
  });
  const title = s("title");
  title.textContent =
    j.glyph === "attention"
      ? `${j.what}: softmax(q kᵀ / √d) v, where q, k and v meet (click: its maps)`
      : j.operand
        ? `${j.what}: ${j.operand}, a parameter or buffer of the model, joins the data here`
        : `${j.what}: the data of its inputs meets here`;
  g.append(title);
  const d = glyphPath(j.glyph, h / 2);
  if (j.operand) {
    // the glyph, then the parameter's name (ViT's "+ position_embeddings")
    g.append(
      s("rect", { class: "nfw-junction-disc", x: -w / 2, y: -h / 2, width: w, height: h, rx: h / 2 }),
      s("path", { class: "nfw-junction-glyph", d: d ?? "", transform: `translate(${-w / 2 + h / 2},0)` }),
      svgText(j.operand, { class: "nfw-junction-operand", x: -w / 2 + h + 2, y: 4.5 }),
    );
  } else if (d !== null) {
    g.append(s("circle", { class: "nfw-junction-disc", r: w / 2 }), s("path", { class: "nfw-junction-glyph", d }));
  } else {
    g.append(
      s("rect", { class: "nfw-junction-disc", x: -w / 2, y: -h / 2, width: w, height: h, rx: h / 2 }),
      svgText(j.glyph, { class: "nfw-junction-name", x: 0, y: 4.5, "text-anchor": "middle" }),
    );
  }
  return g;
}

export function stubEl(e: SceneEdge, marker: string): SVGPathElement {
  return s("path", {
    class: "nfw-edge nfw-stub",
    d: edgePath(e.points),
    "data-stub": e.to,
    "data-src-junction": e.from,
    "marker-end": marker,
  });
}

export function busEl(b: SceneBus): SVGGElement {
  const g = s("g", {
    class: "nfw-bus",
    "data-bus": b.srcId,
    "data-bus-kind": b.kind,
    "data-taps": String(b.taps.length / 2 + 1),
  });
  g.append(s("path", { class: "nfw-bus-line", d: edgePath(b.points) }));
  for (let i = 0; i < b.taps.length; i += 2)
    g.append(s("circle", { class: "nfw-bus-dot", cx: b.taps[i], cy: b.taps[i + 1], r: 2.6 }));
  const l = b.label;
  if (l) {
    const attrs = { class: "nfw-bus-label", x: l.x, y: l.y, "text-anchor": "middle" };
    const turned = l.vertical ? { transform: `rotate(-90 ${l.x} ${l.y})` } : {};
    const text = svgText(l.lines ? "" : l.text, { ...attrs, ...turned });
    // two lines: the first a line above the second, whose baseline is the label's
    for (const [i, line] of (l.lines ?? []).entries()) {
      const span = s("tspan", { x: l.x, dy: i === 0 ? "-1.15em" : "1.15em" });
      span.textContent = line;
      text.append(span);
    }
    g.append(text);
  }
  return g;
}

/** The buses (drawn under the edges), the junctions' stubs (over the edges, under the groups:
 * a stack's header band covers a stub as it does an edge) and the junctions (over the groups). */
export function figureLayers(
  scene: Scene,
  marker: string,
): { buses: SVGElement[]; stubs: SVGElement[]; joins: SVGElement[] } {
  return {
    buses: scene.buses.map(busEl),
    stubs: scene.stubs.map((e) => stubEl(e, marker)),
    joins: scene.junctions.map(junctionEl),
  };
}

/** Test hooks of a mark: data-failed, data-nonfinite (how many calls it shows; "first" where it began). */
export function markData(g: SVGGElement, mark: SceneNode["mark"]) {
  if (mark?.failed) g.dataset.failed = "";
  if (mark?.nonfinite) {
    g.dataset.nonfinite = String(mark.nonfinite);
    if (mark.first) g.dataset.nonfiniteFirst = "";
  }
}

export function badge(cx: number, cy: number, label: string, title: string, key: string): SVGGElement {
  const g = s("g", { "data-action": "toggle", "data-key": key, transform: `translate(${cx - 8},${cy - 8})` });
  const t = s("title");
  t.textContent = title;
  g.append(
    t,
    s("rect", { class: "nfw-badge", width: 16, height: 16, rx: 4 }),
    svgText(label, { class: "nfw-badge-text", x: 8, y: 12.5, "text-anchor": "middle" }),
  );
  return g;
}

/** A node's picture (data on the graph) in the box x, y, w, h: the image, scaled to fit with
 * its pixels sharp; a faint box while it is coming (undefined); nothing when there is none. */
/** What a node's picture slot shows: a picture (a data URL), or why the stage has none, in
 * the words of its reply (an offline page that left it out says so and why). */
export type Thumb = string | { missing: string };

export function thumbEl(
  x: number,
  y: number,
  w: number,
  h: number,
  thumb: Thumb | null | undefined,
  font = "11px sans-serif",
): SVGElement {
  if (thumb === undefined) return s("rect", { class: "nfw-thumb-wait", x, y, width: w, height: h, rx: 4 });
  if (thumb === null) return s("g", { class: "nfw-thumb-none" });
  if (typeof thumb === "string")
    return s("image", {
      class: "nfw-thumb",
      href: thumb,
      x,
      y,
      width: w,
      height: h,
      preserveAspectRatio: "xMidYMid meet",
    });
  // no picture, and why: the reply's first clause in the slot where it fits whole, else the
  // clause's words after its colon, or before it ("over its 8 MB budget", "Not in this
  // page"), else a dash; all of it on hover
  const most = Math.max(1, Math.floor((h - 8) / 14));
  const clause = thumb.missing.split(/\.\s|\s\(/)[0] ?? "";
  const [head = "", tail = ""] = clause.split(/:\s*/);
  const lines =
    [clause, tail, head].map((t) => wrapped(t, w - 12, font, most)).find((l) => l.length && !l.some(cut)) ??
    wrapped("—", w - 12, font, most);
  const g = s("g", { class: "nfw-thumb-missing", "data-missing": "" });
  const title = s("title");
  title.textContent = thumb.missing;
  g.append(
    title,
    s("rect", {
      x,
      y,
      width: w,
      height: h,
      rx: 4,
      style: "fill:none;stroke:var(--nfw-fg3,#9ca3af);stroke-dasharray:4 3",
    }),
  );
  for (const [i, line] of lines.entries()) {
    const ty = y + h / 2 + 14 * (i - (lines.length - 1) / 2) + 4;
    g.append(svgText(line, { class: "nfw-t2", x: x + w / 2, y: ty, "text-anchor": "middle" }));
  }
  return g;
}

const cut = (line: string) => line.endsWith("…");

/** `text` in at most `most` lines of `maxPx`, broken between words; the last cut with "…". */
function wrapped(text: string, maxPx: number, font: string, most: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const last = lines.length ? `${lines[lines.length - 1]} ${word}` : word;
    if (lines.length && textWidth(last, font) <= maxPx) lines[lines.length - 1] = last;
    else lines.push(word);
  }
  const kept = lines.slice(0, most);
  if (lines.length > most) kept[most - 1] = fitText(`${kept[most - 1]} ${lines.slice(most).join(" ")}`, maxPx, font);
  return kept.map((line) => fitText(line, maxPx, font));
}
