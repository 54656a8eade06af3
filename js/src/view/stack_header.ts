/**
 * A run drawn as one block (model/stack.ts): the other members as cards stacked behind it,
 * and its header: the run ("GPT2Block × 12"), the stepper ("◀ layer 3 of 12 ▶": whose data
 * the block shows; "pass 3 of 12" for one module called again, ALBERT's), unfold all and fold. Its controls are badges whose keys view_model.ts
 * toggleKey reads. Names are SVG text, never HTML.
 */
import type { SceneCluster, SceneStack } from "../scene/types";
import { fitText, s, svgText, textWidth } from "./dom";
import { badge, markData } from "./figure";
import { drawFlags, FLAG_H, flagsOf } from "./flags";

/** `font`: the canvas font of a text kind ("st" the header's 14 px bold, "sa" the stepper's 13 px: 12 and 11 px at the first view's scale). */
export function stackEl(c: SceneCluster, st: SceneStack, font: (kind: "st" | "sa" | "flag") => string): SVGGElement {
  const [x, y, w, h] = c.box;
  const g = s("g", {
    class: "nfw-cluster nfw-stacked",
    "data-cluster-id": c.id,
    "data-key": c.key,
    "data-stack-shown": st.shown,
    transform: `translate(${x},${y})`,
  });
  markData(g, c.mark);
  const card = "fill:var(--nfw-bg3);fill-opacity:0.75;stroke:var(--nfw-border);stroke-width:1.25";
  for (const d of [8, 4])
    g.append(s("path", { class: "nfw-stack-back", d: `M${d},${h}V${h + d}H${w + d}V${d}H${w}V${h}Z`, style: card }));
  g.append(s("rect", { class: "nfw-box", width: w, height: h, rx: 10, style: "stroke-width:1.5" }));
  // a header band over the lines that enter under it (the stack's name reads whole)
  g.append(
    s("rect", {
      class: "nfw-stack-head",
      x: 1,
      y: 1,
      width: w - 2,
      height: 25,
      rx: 9,
      style: "fill:var(--nfw-bg);fill-opacity:0.92",
    }),
  );
  // from the right: fold, unfold all, then the stepper (▶, where it is, ◀); the label takes the rest
  g.append(badge(w - 14, 13, "−", `Fold the ${st.count} blocks into one box`, st.fold));
  g.append(badge(w - 32, 13, "⋯", `Unfold all ${st.count} blocks`, st.unfold));
  let right = w - 42; // left of the controls so far
  if (st.steppable) {
    const at = st.shown + 1;
    const labelW = textWidth(c.label, font("st"));
    const long = `${st.shared ? "pass" : "layer"} ${at} of ${st.count}`;
    const short = `${at} / ${st.count}`;
    // ▶ 18, the text, ◀ 18, 8 before the label
    const text = 12 + labelW + 8 + 18 + textWidth(long, font("sa")) + 24 <= right ? long : short;
    const tw = textWidth(text, font("sa"));
    g.append(badge(right - 8, 13, "▶", `Show the next block (${Math.min(at + 1, st.count)} of ${st.count})`, st.next));
    g.append(
      svgText(text, {
        class: "nfw-ct2 nfw-stack-at",
        x: right - 20,
        y: 18,
        "text-anchor": "end",
        style: "font-size:13px",
      }),
    );
    g.append(
      badge(right - 32 - tw, 13, "◀", `Show the previous block (${Math.max(at - 1, 1)} of ${st.count})`, st.prev),
    );
    right -= 42 + tw;
  }
  g.append(
    svgText(fitText(c.label, right - 16, font("st")), { class: "nfw-ct", x: 12, y: 18, style: "font-size:14px" }),
  );
  // what went wrong in any of its layers: pills across the top edge, as on a node
  const flags = flagsOf(c.mark);
  if (flags.length) g.append(drawFlags(flags, 8, -FLAG_H / 2 - 2, font("flag")));
  const title = s("title");
  const passes = st.shared ? ": one module called again, the same weights on each pass" : "";
  title.textContent = `${c.label}${passes}: showing ${c.type} (${st.shown + 1} of ${st.count})`;
  g.append(title);
  return g;
}
