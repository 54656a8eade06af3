/**
 * The inspector's lead sections, above a stage's data: the failure's full message where the
 * forward raised (selectable text), the facts of the stage or model input / output (shape,
 * dtype, parameters, NaN / Inf), for an item of a tuple returned the tuple's items (a tab
 * each), and, comparing two runs, how its output differs in run B.
 */
import { diffOf, endTarget, onlyInA } from "../model/ends";
import { familyOf } from "../model/ports";
import { formatNumber, formatParams, formatShape } from "../model/format";
import { originPhrases, type Problems } from "../model/problems";
import type { WireCall, WireEnd, WireGraph } from "../wire";
import { h, heading } from "./dom";
import { at } from "../wire_check";

/** What the inspector shows: a module call, or a model input / output with captured data. */
export type Target =
  | { kind: "stage"; id: string; call: WireCall }
  | { kind: "input" | "output"; id: string; end: WireEnd };

/** What went wrong in the run, by stage id: the failure's message and the stages it marks,
 * the stages with NaN / Inf, the first of them, and where its NaN / Inf came from. */
export interface RunMarks {
  failure: string | null;
  failed: Set<string>;
  nonfinite: Set<string>;
  first: string | null;
  origin: string | null;
}

export const NO_MARKS: RunMarks = {
  failure: null,
  failed: new Set<string>(),
  nonfinite: new Set<string>(),
  first: null,
  origin: null,
};

export function runMarks(graph: WireGraph, p: Problems): RunMarks {
  const id = (c: number | null) => (c === null ? null : at(graph.calls, c).id);
  return {
    failure: p.failure?.message ?? null,
    failed: new Set([id(p.failedStage), id(p.failedCall)].filter((x): x is string => x !== null)),
    nonfinite: new Set(p.nonfinite.map((c) => at(graph.calls, c).id)),
    first: id(p.first),
    origin: p.origin
      ? originPhrases(graph, p.origin)
          .map((x) => x.text)
          .join("")
      : null,
  };
}

/** The failure's full message when the forward raised here, then the facts, then run A vs B. */
export function leadSections(
  t: Target,
  run: RunMarks,
  graph: WireGraph | null,
  go: (t: Target) => void = () => {},
): HTMLElement[] {
  const out: HTMLElement[] = [];
  const failed = run.failure !== null && run.failed.has(t.id);
  if (failed) {
    out.push(
      h(
        "section",
        { class: "nfw-section nfw-raised", "data-failure": "" },
        heading("The forward raised here"),
        h("pre", { class: "nfw-trace" }, run.failure),
      ),
    );
  }
  out.push(metaSection(t, run, failed));
  const items = graph && t.kind === "output" ? itemTabs(graph, t.id, go) : null;
  if (items) out.push(items);
  const versus = graph ? versusSection(t, graph) : null;
  if (versus) out.push(versus);
  return out;
}

function metaSection(t: Target, run: RunMarks, failed: boolean): HTMLElement {
  // A two-column grid of divs: hosts restyle dl / dt / dd (JupyterLab floats them).
  const meta = h("div", { class: "nfw-meta", role: "list", "aria-label": "stage facts" });
  const row = (k: string, v: string) =>
    v && meta.append(h("div", { class: "nfw-meta-k", role: "listitem" }, k), h("div", { class: "nfw-meta-v" }, v));
  if (t.kind !== "stage") {
    row(t.kind, t.id);
    row("shape", formatShape(t.end.shape));
    row("dtype", t.end.dtype);
    row("reading", t.end.reading ?? "none (the plain views)");
    return h("section", { class: "nfw-section" }, meta);
  }
  const c = t.call;
  row("stage", c.id);
  row("output", c.shapes.map((sh) => formatShape(sh)).join(", "));
  row("dtype", [...new Set(c.dtypes)].join(", "));
  row("params", c.params ? `${formatParams(c.params)} (${c.params.toLocaleString("en-US")})` : "0");
  if (run.nonfinite.has(c.id)) {
    const first = run.first === c.id;
    row(
      "NaN/Inf",
      first && run.origin
        ? `already in its input: ${run.origin}`
        : first
          ? "in its output; the first of the run"
          : `in its output (first at ${run.first})`,
    );
    for (const el of [meta.lastElementChild, meta.lastElementChild?.previousElementSibling])
      el?.classList.add("nfw-meta-bad");
  }
  if (c.error && !failed) row("error", c.error);
  return h("section", { class: "nfw-section" }, meta);
}

/** An output that is an item of a tuple returned (model/ports.ts, drawn as one port): the
 * tuple's items, a tab each, that open in the inspector. */
function itemTabs(graph: WireGraph, id: string, go: (t: Target) => void): HTMLElement | null {
  const family = familyOf(graph).get(id);
  if (!family) return null;
  const bar = h("div", { class: "nfw-tabs nfw-subtabs", role: "tablist", "aria-label": "items of the tuple" });
  for (const name of family.members) {
    const attrs = { class: "nfw-tab", role: "tab", "aria-selected": String(name === id), title: name };
    const tab = h("button", { ...attrs, "data-item": name }, name.slice(name.lastIndexOf(".") + 1));
    const end = endTarget(graph, name);
    if (end) tab.addEventListener("click", () => go(end));
    else tab.disabled = true; // (no data captured for it)
    bar.append(tab);
  }
  const label = family.label.slice(family.label.indexOf(":") + 1, family.label.lastIndexOf("."));
  return h(
    "section",
    { class: "nfw-section", "data-items": "" },
    heading(`${label}: ${family.members.length} items`),
    bar,
  );
}

/** How this stage's output differs in run B (the comparison's figures). */
function versusSection(t: Target, g: WireGraph): HTMLElement | null {
  if (!g.comparison) return null;
  const sec = h("section", { class: "nfw-section nfw-versus", "data-versus": "" }, heading("Run A vs run B"));
  if (onlyInA(g, t.id)) {
    sec.append(h("div", { class: "nfw-note" }, "This stage ran in run A only: there is no B to compare."));
    return sec;
  }
  const d = diffOf(g, t.id);
  if (!d) return null;
  const table = h("div", { class: "nfw-stats", role: "list", "aria-label": "comparison" });
  const row = (k: string, v: string) =>
    table.append(h("div", { class: "nfw-stat-k", role: "listitem" }, k), h("div", { class: "nfw-stat-v" }, v));
  const num = (x: number | null) => (x === null ? "—" : formatNumber(x));
  row("relative L2", num(d.relL2));
  row("cosine", num(d.cosine));
  row("max |A − B|", num(d.maxAbs));
  row("compared", d.exact ? "every element" : "the fixed sample of elements");
  const first = g.comparison.first !== null && at(g.calls, g.comparison.first).id === t.id;
  const verdict = h(
    "div",
    { class: `nfw-verdict${d.diverges ? " nfw-verdict-diverges" : ""}` },
    d.raised
      ? `${d.raised === "both" ? "Both runs" : `Run ${d.raised.toUpperCase()}`} raised here: there is no output to compare`
      : d.diverges
        ? `Differs (relative L2 > ${g.comparison.rtol})${first ? ": the first stage where the runs part" : ""}`
        : `Agrees (relative L2 ≤ ${g.comparison.rtol})`,
  );
  sec.append(verdict, ...(d.raised ? [] : [table])); // (a run that raised has no figures)
  return sec;
}
