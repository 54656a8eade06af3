/**
 * The SVG of one node card (a stage, a fold, a model input or output) and of one group's
 * box, their words fitted to their width in the fonts of the page's CSS. graph_view.ts keeps
 * which are in the page and their state (selected, focused, current, matches). Names are SVG
 * text, never HTML.
 */
import type { Direction } from "../layout/layout";
import { NODE_H, PORT_LINE, pictureBeside, pictureBox, portHeight, portLines, SIDE_W } from "../scene/scene";
import type { SceneCluster, SceneNode } from "../scene/types";
import { fitText, s, svgText, textWidth } from "./dom";
import { badge, markData, type Thumb, thumbEl } from "./figure";
import { drawFlags, FLAG_H, flagsOf, flagsWidth } from "./flags";
import { typeColor } from "./palette";
import { residualEl, residualWords } from "./residual_mark";
import { stackEl } from "./stack_header";

/** A node's colour by a statistic (stat_colors.ts). */
export interface NodeFill {
  fill: string;
  ink: string; // text colour that reads on the fill
}

/** The text kinds whose canvas fonts measure labels: a card's two lines and its numbers, a
 * group's header, a port, a flag, a stack's header and its stepper, a logit-lens chip. */
export type FontKind = "t1" | "t2" | "num" | "ct" | "port" | "flag" | "st" | "sa" | "chip";

/** The canvas font of each text kind, as the page's CSS draws it (styles.ts) in `el`'s family
 * and the mono family of --nfw-mono. */
export function canvasFonts(el: Element): Record<FontKind, string> {
  const style = getComputedStyle(el);
  const fam = style.fontFamily || "sans-serif";
  const mono = style.getPropertyValue("--nfw-mono").trim() || "monospace";
  return {
    t1: `600 14px ${fam}`,
    t2: `13px ${fam}`,
    num: `13px ${mono}`,
    ct: `600 14px ${fam}`,
    port: `500 13px ${fam}`,
    flag: `700 11px ${fam}`,
    st: `600 14px ${fam}`, // a stack's header, its stepper
    sa: `13px ${fam}`,
    chip: `600 13px ${fam}`, // a logit-lens chip
  };
}

/** How a node is drawn now: its state in the view, its colour, data on the graph. */
export interface CardLook {
  selected: boolean;
  focused: boolean;
  current: boolean; // the stage playback shows
  part?: string; // ... where it is inside this node (a group folded to fit: its name in it)
  match: boolean; // a search hit
  fill: NodeFill | undefined;
  thumb: ((id: string) => Thumb | null | undefined) | null; // each stage's picture (undefined: coming); null: no data on the graph
  dir: Direction;
}

/** A group's box: its header (label, type, the flags of what went wrong inside, the collapse
 * badge); a run drawn as a stack is stack_header.ts's. */
export function clusterCard(c: SceneCluster, font: (kind: FontKind) => string): SVGGElement {
  if (c.stack) return stackEl(c, c.stack, font);
  const [x, y, w, h] = c.box;
  const g = s("g", {
    class: `nfw-cluster${c.kind === "run" ? " nfw-run" : ""}`,
    "data-cluster-id": c.id,
    "data-key": c.key,
    transform: `translate(${x},${y})`,
  });
  markData(g, c.mark);
  g.append(s("rect", { class: "nfw-box", width: w, height: h, rx: 10 }));
  // The header: label, type, then the flags (if any) left of the collapse badge.
  const flags = flagsOf(c.mark);
  const fw = flags.length ? flagsWidth(flags, font("flag")) + 8 : 0;
  const label = fitText(c.label, w - 48 - fw, font("ct"));
  const used = 12 + textWidth(label, font("ct")) + 8;
  const type = w - 36 - fw - used > 40 ? fitText(c.type, w - 36 - fw - used, font("t2")) : "";
  // a plate under the words: a line entering the group (a skip's lane, an input) passes under
  // them, not through them
  const plate = used + (type ? textWidth(type, font("t2")) + 4 : -4);
  const paper = "fill:var(--nfw-bg);fill-opacity:0.9";
  g.append(s("rect", { class: "nfw-ct-plate", x: 7, y: 5, width: plate - 7, height: 19, rx: 5, style: paper }));
  g.append(svgText(label, { class: "nfw-ct", x: 12, y: 18 }));
  if (type) g.append(svgText(type, { class: "nfw-ct2", x: used, y: 18 }));
  if (flags.length) g.append(drawFlags(flags, w - 30 - fw + 8, 4, font("flag")));
  g.append(badge(w - 18, 13, "−", c.kind === "run" ? "Fold again" : "Collapse", c.key));
  const title = s("title");
  title.textContent = `${c.id} (${c.type})`;
  g.append(title);
  return g;
}

/** An open block's box in a colouring's colour (by gradient norm, by patching): tinted, its
 * border in the colour. */
export function tintGroup(g: SVGGElement, fill: NodeFill | undefined) {
  const box = g.querySelector<SVGRectElement>("rect.nfw-box");
  if (!box || !fill) return;
  box.style.fill = fill.fill;
  box.style.fillOpacity = "0.14";
  box.style.stroke = fill.fill;
  box.style.strokeWidth = "3";
}

/** A node's card: a stage (name, parameters, type, shape), a fold (the type × n, its range), or
 * a model input / output (a pill); its picture under the words with data on the graph, its
 * residual mark, expand badge, focus ring and flags. */
export function nodeCard(n: SceneNode, look: CardLook, font: (kind: FontKind) => string): SVGGElement {
  const [x, y, w, h] = n.box;
  const port = n.kind === "input" || n.kind === "output";
  const cls = ["nfw-node"];
  if (port) cls.push("nfw-port");
  if (n.error) cls.push("nfw-error");
  if (n.mark?.failed) cls.push("nfw-failed");
  if (n.mark?.nonfinite) cls.push("nfw-nonfinite");
  if (look.selected) cls.push("nfw-selected");
  if (look.focused) cls.push("nfw-focus");
  if (look.current) cls.push("nfw-current");
  if (look.match) cls.push("nfw-match");
  const fill = look.fill;
  if (fill) cls.push("nfw-stat-fill");
  const g = s("g", {
    class: cls.join(" "),
    "data-stage-id": n.id,
    "data-key": n.key,
    "data-kind": n.kind,
    transform: `translate(${x},${y})`,
  });
  if (n.kind === "fold") g.dataset.fold = n.id;
  if (look.current) g.dataset.current = "";
  markData(g, n.mark);
  if (fill) g.style.setProperty("--nfw-ink", fill.ink);
  if (!port) g.style.setProperty("--nfw-type", typeColor(n.type));
  const title = s("title");
  title.textContent = port
    ? n.title // (a tuple's port: its items' range, not its first item's name)
    : `${n.path}\n${n.type}${n.shape ? `  ${n.shape}` : ""}${n.params ? `  ${n.params} params` : ""}${n.error ? `\nerror: ${n.error}` : ""}${n.residual ? `\n${residualWords(n.residual)}` : ""}`;
  g.append(title);
  // with data on the graph, the words take the top band and the picture the rest, or the
  // picture the right end where the node is no taller (scene/request.ts pictureBox)
  const thumb = look.thumb;
  const pic = thumb !== null && n.kind !== "fold";
  const top = port ? portHeight(n.title) : NODE_H;
  const side = pic && pictureBeside(h, top) ? SIDE_W : 0;
  const picture = () => (pic ? [thumbEl(...pictureBox(w, h, top), thumb!(n.id), font("t2"))] : []);
  if (port) {
    const band = pic && !side ? top : h;
    g.append(s("rect", { class: "nfw-card", width: w, height: h, rx: pic ? 12 : Math.min(h / 2, 20) }), ...picture());
    // its name, on two lines where it is long (an output's field on the second: scene/request.ts)
    const lines = portLines(n.title);
    for (const [i, line] of lines.entries())
      g.append(
        svgText(fitText(line, w - 20 - side, font("port")), {
          class: "nfw-t1",
          x: (w - side) / 2,
          y: band / 2 + 4 + (i - (lines.length - 1) / 2) * PORT_LINE,
          "text-anchor": "middle",
        }),
      );
    g.append(
      s("rect", {
        class: "nfw-ring",
        x: -4,
        y: -4,
        width: w + 8,
        height: h + 8,
        rx: pic ? 14 : Math.min(h / 2, 20) + 4,
      }),
    );
    return g;
  }
  const fold = n.kind === "fold" && !n.part; // a run's fold: its cards stacked (a part repeats nothing)
  const cw = fold ? w - 6 : w;
  const ch = pic ? NODE_H : fold ? h - 6 : h;
  if (fold) {
    g.append(s("rect", { class: "nfw-stack", x: 6, y: 6, width: cw, height: ch, rx: 8 }));
    g.append(s("rect", { class: "nfw-stack", x: 3, y: 3, width: cw, height: ch, rx: 8 }));
  }
  const card = s("rect", { class: "nfw-card", width: cw, height: pic ? h : ch, rx: 8 });
  if (fill) card.style.fill = fill.fill;
  g.append(card, ...picture());
  g.append(s("rect", { x: 7, y: 11, width: 3.5, height: ch - 22, rx: 1.75, fill: typeColor(n.type) }));
  // Line 1: name (or the folded type) and, right-aligned, parameters (or the fold count).
  // Line 2: type (or the folded range) and the output shape.
  const left1 = fold ? n.type : n.title;
  const right1 = fold ? `× ${n.foldCount}` : n.params;
  // (playback's step inside it, where the group is folded to fit: "▸ resnets.1", no shape)
  const right2 = look.part !== undefined ? "" : fold ? n.params : n.shape;
  const avail = cw - 18 - 10 - side;
  const left2 = look.part !== undefined ? partLine(look.part, avail, font("t2")) : fold ? (n.range ?? n.path) : n.type;
  const y1 = Math.round(ch / 2 - 3);
  const y2 = Math.round(ch / 2 + 13);
  const r1w = right1 ? textWidth(right1, fold ? font("t1") : font("num")) + 8 : 0;
  const r2w = right2 ? textWidth(right2, font("num")) + 8 : 0;
  g.append(svgText(fitText(left1, avail - r1w, font("t1")), { class: "nfw-t1", x: 18, y: y1 }));
  if (right1)
    g.append(svgText(right1, { class: fold ? "nfw-t1" : "nfw-num", x: cw - 10 - side, y: y1, "text-anchor": "end" }));
  const shapeFits = r2w < avail * 0.62;
  const t2 = svgText(fitText(left2, avail - (shapeFits ? r2w : 0), font("t2")), { class: "nfw-t2", x: 18, y: y2 });
  if (look.part !== undefined) t2.classList.add("nfw-part");
  g.append(t2);
  if (right2 && shapeFits)
    g.append(svgText(right2, { class: "nfw-num", x: cw - 10 - side, y: y2, "text-anchor": "end" }));
  if (n.residual) g.append(residualEl(n.residual, cw, pic ? h : ch, look.dir, fold ? 6 : 0, n.mirror === true));
  // the expand badge top right, top left where a residual arc runs round the right (mirrored)
  const badgeLeft = n.residual !== undefined && n.mirror === true && look.dir === "TB";
  if (n.expandable) {
    const title = fold ? `Unfold ${n.foldCount} blocks` : n.part ? "Open this sublayer" : "Expand";
    g.append(badge(badgeLeft ? 1 : cw - 1, 1, "+", title, n.key));
  }
  g.append(s("rect", { class: "nfw-ring", x: -4, y: -4, width: w + 8, height: h + 8, rx: 11 }));
  // What went wrong here: pills across the top edge (over the focus ring), clear of the expand badge.
  const flags = flagsOf(n.mark);
  if (flags.length) g.append(drawFlags(flags, badgeLeft && n.expandable ? 12 : -4, -FLAG_H / 2, font("flag")));
  return g;
}

/** Playback's step on the node that holds it: its name there, or as much of its end as fits
 * in bold ("▸ albert_layers.0.attention", else "▸ attention"), never cut. */
function partLine(part: string, room: number, font: string): string {
  const names = part.split(".");
  for (let k = 0; k < names.length; k++) {
    const line = `▸ ${names.slice(k).join(".")}`;
    if (!/^\d/.test(names[k]!) && textWidth(line, font) * 1.1 <= room) return line;
  }
  return `▸ ${names[names.length - 1]}`;
}
