/**
 * Views of what a model's ends mean, as HTML (their labels are text a person reads, and the
 * model's own words: always textContent): class probabilities and the next token as a bar
 * chart, largest first (A − B: signed bars about a centre line); token ids as a row of
 * token chips; the legend of a segmentation's classes.
 */
import { visible } from "../model/format";
import type { ViewData } from "../wire";
import { categoricalColor, cssColor } from "./colormap";
import { h } from "./dom";
import { at } from "../wire_check";

/** Split "name: 41.2%" (or A − B's "name: 41.2% → 38.0%") at its last ": ". */
export function splitLabel(label: string): [string, string] {
  const at = label.lastIndexOf(": ");
  return at < 0 ? [label, ""] : [label.slice(0, at), label.slice(at + 2)];
}

export { visible }; // (model/format.ts: the one rule, which the logit lens shares)

const value = (v: ViewData, i: number) => v.vmin + ((v.vmax - v.vmin) * at(v.pixels, i)) / 255;

/** The bar chart of a probabilities / next token view (signed: A − B in percentage points). */
export function barChart(view: ViewData, signed: boolean): HTMLElement {
  const n = view.labels?.length ?? view.pixels.length;
  const list = h("div", {
    class: `nfw-bars${signed ? " nfw-bars-signed" : ""}`,
    role: "list",
    "data-view-kind": view.kind,
    "aria-label": `${view.kind} bars`,
  });
  const peak = Math.max(
    1e-12,
    ...Array.from({ length: n }, (_, i) => (view.nonfinite?.[i] ? 0 : Math.abs(value(view, i)))),
  );
  for (let i = 0; i < n; i++) {
    const [name, odds] = splitLabel(view.labels?.[i] ?? String(i));
    const v = value(view, i);
    const unknown = !!view.nonfinite?.[i];
    const bar = h("i", { class: v < 0 ? "nfw-bar-neg" : "nfw-bar-pos" });
    const track = h("span", { class: "nfw-bar-track" }, bar);
    let text: string;
    if (signed) {
      const w = unknown ? 0 : (Math.abs(v) / peak) * 50;
      bar.style.width = `${w}%`;
      bar.style.left = v < 0 ? `${50 - w}%` : "50%";
      text = unknown ? "—" : `${v >= 0 ? "+" : "−"}${(Math.abs(v) * 100).toFixed(1)} pt`;
    } else {
      bar.style.width = `${Math.max(0, Math.min(1, v)) * 100}%`;
      text = odds || `${(v * 100).toFixed(1)}%`;
    }
    const label = h("span", { class: "nfw-bar-label", title: name }, visible(name));
    if (signed && odds) label.append(h("span", { class: "nfw-bar-odds" }, odds));
    list.append(
      h(
        "div",
        { class: "nfw-bar-row", role: "listitem", "data-channel": view.channels?.[i] ?? i },
        label,
        track,
        h("span", { class: "nfw-bar-value" }, text),
      ),
    );
  }
  return list;
}

/** Token ids as chips, in order (A − B: the positions whose id differs stand out). */
export function idChips(view: ViewData, max = 512): HTMLElement {
  const labels = view.labels ?? Array.from(view.pixels, (_, i) => String(i));
  const row = h("div", { class: "nfw-chips", role: "list", "data-view-kind": view.kind, "aria-label": "token ids" });
  labels.slice(0, max).forEach((label, i) => {
    const changed = view.vmin === 0 && view.vmax === 1 && view.pixels[i] === 255 && label.includes(" → ");
    row.append(
      h(
        "span",
        { class: `nfw-tok${changed ? " nfw-tok-changed" : ""}`, role: "listitem", title: `position ${i}: ${label}` },
        h("span", { class: "nfw-tok-at" }, String(i)),
        visible(label),
      ),
    );
  });
  if (labels.length > max)
    row.append(h("span", { class: "nfw-note" }, `… and ${(labels.length - max).toLocaleString("en-US")} more`));
  return row;
}

/** The classes present in a segmentation view, largest share first, in their colours. */
export function classLegend(view: ViewData, max = 20): HTMLElement {
  const counts = new Map<number, number>();
  for (const c of view.pixels) counts.set(c, (counts.get(c) ?? 0) + 1);
  const total = view.pixels.length || 1;
  const order = [...counts.entries()].sort((a, b) => b[1] - a[1]);
  const out = h("div", {
    class: "nfw-classes",
    role: "list",
    "aria-label": "classes present",
    "data-legend": "classes",
  });
  for (const [code, n] of order.slice(0, max)) {
    const chip = h("b", { class: "nfw-swatch-chip" });
    chip.style.background = cssColor(categoricalColor(code));
    out.append(
      h(
        "span",
        { class: "nfw-class", role: "listitem", "data-class": code },
        chip,
        view.labels?.[code] ?? `class ${code}`,
        h("span", { class: "nfw-class-share" }, ` ${((100 * n) / total).toFixed(n / total < 0.01 ? 1 : 0)}%`),
      ),
    );
  }
  if (order.length > max) out.append(h("span", { class: "nfw-note" }, `and ${order.length - max} more classes`));
  return out;
}
