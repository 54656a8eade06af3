/** The inspector's Statistics section of one output (or of its gradient: with its exact L2
 * norm): its shape, statistics in words (inspector_stats.ts), a note on NaN / Inf, its error,
 * its histogram. */
import { formatNumber, formatShape } from "../model/format";
import type { Summary } from "../wire";
import { h, heading } from "./dom";
import { emptyNote, nonfiniteNote, statRows } from "./inspector_stats";
import { drawHistogram } from "./plots";

/** The section; its histogram is drawn by a function pushed on `draws` (once it is in the page). */
export function summarySection(
  s: Summary,
  index: number,
  compared: boolean,
  width: () => number,
  draws: (() => void)[],
  of: "output" | "grad" = "output",
): HTMLElement {
  const what = of === "grad" ? "Gradient statistics" : "Statistics";
  const title = `${what}${compared ? " · run A" : ""}${index >= 0 ? ` · ${of === "grad" ? "of output" : "output"} ${s.leaf ?? index}` : ""}`;
  const sec = h("section", { class: "nfw-section" }, heading(title));
  const table = h("div", { class: "nfw-stats", role: "list", "aria-label": "statistics" });
  const row = (k: string, v: string) =>
    table.append(h("div", { class: "nfw-stat-k", role: "listitem" }, k), h("div", { class: "nfw-stat-v" }, v));
  row("shape", `${formatShape(s.shape)}  ${s.dtype}${s.device ? ` · ${s.device}` : ""}`);
  if (s.shard) row("sharded", s.shard); // a DTensor: the whole tensor, or this rank's shard
  if (s.norm !== null) row("L2 norm", formatNumber(s.norm));
  for (const [k, v] of statRows(s)) row(k, v);
  if (s.numel !== null) row("elements", s.numel.toLocaleString("en-US"));
  if (s.sampled !== null) row("sampled", `${s.sampled.toLocaleString("en-US")} elements`);
  if (s.values)
    row(
      "values",
      s.values
        .slice(0, 8)
        .map(([v, n]) => `${String(v)}: ${n}`)
        .join(", ") + (s.values.length > 8 ? ", …" : ""),
    );
  const bad = nonfiniteNote(s);
  if (bad) sec.append(h("div", { class: "nfw-errorbox nfw-nonfinite-note", "data-nonfinite-note": "" }, bad));
  sec.append(table);
  if (s.error) sec.append(h("div", { class: "nfw-errorbox" }, s.error));
  const empty = emptyNote(s);
  if (empty) {
    sec.append(h("div", { class: "nfw-note" }, empty));
  } else if (s.hist) {
    const canvas = h("canvas", { class: "nfw-hist", "aria-label": "histogram" });
    sec.append(canvas);
    const hist = s.hist;
    draws.push(() => drawHistogram(canvas, hist, width()));
  }
  return sec;
}
