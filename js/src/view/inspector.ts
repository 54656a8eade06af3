/** The side panel for one stage: what went wrong there (the failure's message, NaN / Inf), metadata, the kernel's views, attention, statistics. */
import { formatParams, formatShape } from "../model/format";
import type { Problems } from "../model/problems";
import type { AttentionData, StageReply, StageRequest, Summary, WireCall, WireGraph } from "../wire";
import { gradientStops, markCounts } from "./colormap";
import { h, Listeners } from "./dom";
import { emptyNote, nonfiniteNote, statRows } from "./inspector_stats";
import { colorBar, drawAttention, drawHeads, drawHistogram, drawView } from "./plots";

/** Where stage data comes from: the kernel (live) or baked replies (static export). */
export type FetchStage = (req: StageRequest, signal: AbortSignal) => Promise<StageReply>;

const ATTENTION = "attention";

export class Inspector {
  readonly el: HTMLElement;
  private readonly head: HTMLElement;
  private readonly body: HTMLElement;
  private listeners = new Listeners();
  private call: WireCall | null = null;
  private request: StageRequest | null = null;
  private reply: StageReply | null = null;
  private tab: string | null = null; // a view kind or "attention"
  private controller: AbortController | null = null;
  private cache = new Map<string, StageReply>();
  private run: { failure: string | null; failed: Set<string>; nonfinite: Set<string>; first: string | null } = { failure: null, failed: new Set(), nonfinite: new Set(), first: null };

  constructor(private readonly fetchStage: FetchStage, private readonly onClose: () => void) {
    this.head = h("div", { class: "nfw-ins-head" });
    this.body = h("div", { class: "nfw-ins-body" });
    this.el = h("aside", { class: "nfw-inspector", "aria-label": "stage inspector", hidden: true }, this.head, this.body);
  }

  /** What went wrong in the run the next stages come from (the failure's message, NaN / Inf). */
  setRun(graph: WireGraph, p: Problems) {
    const id = (c: number | null) => (c === null ? null : graph.calls[c].id);
    this.cache.clear();
    this.run = {
      failure: p.failure?.message ?? null,
      failed: new Set([id(p.failedStage), id(p.failedCall)].filter((x): x is string => x !== null)),
      nonfinite: new Set(p.nonfinite.map((c) => graph.calls[c].id)),
      first: id(p.first),
    };
  }

  get stage(): string | null {
    return this.el.hidden ? null : (this.call?.id ?? null);
  }

  open(call: WireCall) {
    if (!this.el.hidden && this.call?.id === call.id) return;
    this.call = call;
    this.el.hidden = false;
    this.tab = null;
    this.renderHead();
    void this.load({ stage: call.id, view: null, channel: null, head: null, sample: null });
  }

  close() {
    if (this.el.hidden) return;
    this.controller?.abort();
    this.el.hidden = true;
    this.call = null;
    this.onClose();
  }

  private renderHead() {
    const c = this.call!;
    const close = h("button", { class: "nfw-close", title: "Close (Esc)", "aria-label": "close inspector" }, "×");
    close.addEventListener("click", () => this.close());
    this.head.replaceChildren(
      h("div", { class: "nfw-ins-title" }, h("b", {}, c.module + (c.call > 0 ? ` #${c.call}` : "")), h("span", {}, c.type)),
      close,
    );
  }

  private async load(req: StageRequest) {
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.request = req;
    const key = JSON.stringify(req);
    const hit = this.cache.get(key);
    if (hit) return this.show(hit);
    this.showState("loading");
    try {
      const reply = await this.fetchStage(req, controller.signal);
      if (controller.signal.aborted || this.request !== req) return;
      if (reply.ok) {
        this.cache.set(key, reply);
        if (this.cache.size > 40) this.cache.delete(this.cache.keys().next().value as string);
      }
      this.show(reply);
    } catch (err) {
      if (this.request !== req || (controller.signal.aborted && this.el.hidden)) return;
      this.showState("error", describeError(err));
    }
  }

  private showState(state: "loading" | "error", message = "") {
    const meta = this.leadSections();
    if (state === "loading") {
      this.body.replaceChildren(...meta, h("div", { class: "nfw-state", role: "status" }, h("div", { class: "nfw-spinner" }), `Loading ${this.call?.id ?? ""} …`));
      return;
    }
    const retry = h("button", { class: "nfw-btn" }, "Retry");
    retry.addEventListener("click", () => this.request && void this.load({ ...this.request }));
    this.body.replaceChildren(...meta, h("div", { class: "nfw-errorbox", role: "alert" }, h("div", {}, message), retry));
  }

  /** The failure's full message when the forward raised here (selectable text), then the facts. */
  private leadSections(): HTMLElement[] {
    const c = this.call!;
    const out: HTMLElement[] = [];
    const failed = this.run.failure !== null && this.run.failed.has(c.id);
    if (failed) {
      out.push(h("section", { class: "nfw-section nfw-raised", "data-failure": "" },
        heading("The forward raised here"),
        h("pre", { class: "nfw-trace" }, this.run.failure)));
    }
    out.push(this.metaSection(failed));
    return out;
  }

  private metaSection(failed: boolean): HTMLElement {
    const c = this.call!;
    // A two-column grid of divs: hosts restyle dl / dt / dd (JupyterLab floats them).
    const meta = h("div", { class: "nfw-meta", role: "list", "aria-label": "stage facts" });
    const row = (k: string, v: string) => v && meta.append(h("div", { class: "nfw-meta-k", role: "listitem" }, k), h("div", { class: "nfw-meta-v" }, v));
    row("stage", c.id);
    row("output", c.shapes.map((sh) => formatShape(sh)).join(", "));
    row("dtype", [...new Set(c.dtypes)].join(", "));
    row("params", c.params ? `${formatParams(c.params)} (${c.params.toLocaleString("en-US")})` : "0");
    if (this.run.nonfinite.has(c.id)) {
      row("NaN/Inf", this.run.first === c.id ? "in its output; the first of the run" : `in its output (first at ${this.run.first})`);
      for (const el of [meta.lastElementChild, meta.lastElementChild?.previousElementSibling]) el?.classList.add("nfw-meta-bad");
    }
    if (c.error && !failed) row("error", c.error);
    return h("section", { class: "nfw-section" }, meta);
  }

  private show(reply: StageReply) {
    this.reply = reply;
    if (!reply.ok) return this.showState("error", `The kernel could not summarise ${reply.stage || this.call?.id}: ${reply.error}`);
    const tabs = [...reply.views];
    if (reply.attention.length) tabs.push(ATTENTION);
    if (!this.tab || !tabs.includes(this.tab)) this.tab = reply.view?.kind ?? tabs[0] ?? null;
    const parts: HTMLElement[] = this.leadSections();
    // The stage that raised has its message above already; the reply's error repeats it.
    const raised = this.run.failure !== null && this.run.failed.has(reply.stage);
    if (reply.error && !(raised && this.run.failure!.includes(reply.error))) parts.push(h("div", { class: "nfw-errorbox", role: "alert" }, reply.error));
    if (raised && !tabs.length && !reply.summaries.length) parts.push(h("div", { class: "nfw-note" }, "No output: the forward raised before this stage returned."));
    if (tabs.length) parts.push(this.outputSection(reply, tabs));
    reply.summaries.forEach((s, i) => parts.push(this.summarySection(s, reply.summaries.length > 1 ? i : -1)));
    this.body.replaceChildren(...parts);
    this.drawPending.forEach((f) => f());
    this.drawPending = [];
  }

  private drawPending: (() => void)[] = [];

  private width(): number {
    return Math.max(200, (this.body.clientWidth || 380) - 26);
  }

  private outputSection(reply: Extract<StageReply, { ok: true }>, tabs: string[]): HTMLElement {
    const bar = h("div", { class: "nfw-tabs", role: "tablist" });
    for (const t of tabs) {
      const b = h("button", { class: "nfw-tab", role: "tab", "aria-selected": String(t === this.tab), "data-view": t }, t);
      b.addEventListener("click", () => this.pickTab(t));
      bar.append(b);
    }
    const sec = h("section", { class: "nfw-section" }, heading("Output"), bar);
    const controls = h("div", { class: "nfw-controls" });
    sec.append(controls);
    const first = reply.summaries[0];
    if (this.tab === ATTENTION) {
      reply.attention.forEach((a, i) => this.attentionInto(sec, controls, a, reply.tokens, i, reply.attention.length));
      return sec;
    }
    const view = reply.view;
    if (!view || view.kind !== this.tab) {
      sec.append(h("div", { class: "nfw-note" }, "No data for this view."));
      return sec;
    }
    if (view.kind === "channel") {
      const channels = first && first.shape.length > 1 ? first.shape[1] : view.shape[0];
      const current = this.request?.channel ?? view.channels?.[0] ?? 0;
      controls.append(this.numberPicker("channel", current, Math.max(0, channels - 1), (v) => this.reload({ view: "channel", channel: v })));
    }
    const canvas = h("canvas", { class: "nfw-plot", "data-view-kind": view.kind, "aria-label": `${view.kind} view` });
    const marks = markCounts(view.nonfinite, view.pixels.length);
    sec.append(canvas, colorBar(marks[0] ? gradientStops(view.signed, view.vmin, view.vmax) : null, view.vmin, view.vmax, marks));
    const note = [view.note, `${view.shape.join(" × ")}${view.axes.length ? ` · axes ${view.axes.join(", ")}` : ""}`, view.signed ? "diverging around 0" : ""].filter(Boolean).join(" · ");
    sec.append(h("div", { class: "nfw-note" }, note));
    this.drawPending.push(() => drawView(canvas, view, this.width()));
    return sec;
  }

  private attentionInto(sec: HTMLElement, controls: HTMLElement, a: AttentionData, tokens: string[] | null, index: number, count: number) {
    if (index === 0) {
      // The kernel computes the map of one head, or the mean over heads (head = null).
      const select = h("select", { class: "nfw-select", "aria-label": "attention head" });
      select.append(h("option", { value: "" }, "mean over heads"));
      for (let i = 0; i < a.heads; i++) select.append(h("option", { value: String(i) }, `head ${i}`));
      select.value = a.head === null ? "" : String(a.head);
      select.addEventListener("change", () => this.reload({ head: select.value === "" ? null : Number(select.value) }));
      controls.append(h("label", { class: "nfw-label" }, "map ", select));
    }
    if (count > 1) sec.append(heading(`Attention ${index + 1} of ${count}`));
    const main = h("canvas", { class: "nfw-plot", "data-view-kind": "attention", "aria-label": "attention map" });
    const bar = h("div");
    sec.append(main, bar);
    const pooled = a.pool[0] > 1 || a.pool[1] > 1;
    const what = a.head === null ? "mean over heads" : `head ${a.head}`;
    sec.append(h("div", { class: "nfw-note" },
      `${what} · ${a.heads} heads · ${a.q_len} queries × ${a.k_len} keys${a.causal ? " · causal" : ""}${pooled ? ` · block means of ${a.pool[0]}×${a.pool[1]}` : ""}${a.source ? ` · ${a.source}` : ""} · rows: queries`));
    let grid: HTMLCanvasElement | null = null;
    if (a.grid && a.heads > 1) {
      grid = h("canvas", { class: "nfw-plot", "data-view-kind": "attention-heads", "aria-label": "attention heads" });
      sec.append(heading("Heads"), grid);
    }
    this.drawPending.push(() => {
      const vmax = drawAttention(main, a, tokens, this.width());
      bar.replaceWith(colorBar(gradientStops(false, 0, vmax), 0, vmax));
      if (grid) drawHeads(grid, a, this.width());
    });
  }

  private summarySection(s: Summary, index: number): HTMLElement {
    const sec = h("section", { class: "nfw-section" }, heading(index >= 0 ? `Statistics · output ${s.leaf ?? index}` : "Statistics"));
    const table = h("div", { class: "nfw-stats", role: "list", "aria-label": "statistics" });
    const row = (k: string, v: string) => table.append(h("div", { class: "nfw-stat-k", role: "listitem" }, k), h("div", { class: "nfw-stat-v" }, v));
    row("shape", `${formatShape(s.shape)}  ${s.dtype}${s.device ? ` · ${s.device}` : ""}`);
    for (const [k, v] of statRows(s)) row(k, v);
    if (s.numel !== null) row("elements", s.numel.toLocaleString("en-US"));
    if (s.sampled !== null) row("sampled", `${s.sampled.toLocaleString("en-US")} elements`);
    if (s.values) row("values", s.values.slice(0, 8).map(([v, n]) => `${String(v)}: ${n}`).join(", ") + (s.values.length > 8 ? ", …" : ""));
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
      this.drawPending.push(() => drawHistogram(canvas, hist, this.width()));
    }
    return sec;
  }

  private numberPicker(label: string, value: number, max: number, change: (v: number) => void): HTMLElement {
    const input = h("input", { type: "number", class: "nfw-select nfw-number", min: 0, max, step: 1, value, "aria-label": label });
    input.addEventListener("change", () => {
      const v = Math.max(0, Math.min(max, Math.round(Number(input.value) || 0)));
      change(v);
    });
    return h("label", { class: "nfw-label" }, `${label} `, input, ` / ${max}`);
  }

  private pickTab(tab: string) {
    if (tab === this.tab) return;
    this.tab = tab;
    const reply = this.reply;
    if (tab === ATTENTION || (reply?.ok && reply.view?.kind === tab)) return reply && this.show(reply);
    this.reload({ view: tab, channel: null });
  }

  private reload(change: Partial<StageRequest>) {
    if (!this.request) return;
    void this.load({ ...this.request, ...change });
  }

  /** Redraw canvases after a resize. */
  redraw() {
    if (this.reply && !this.el.hidden) this.show(this.reply);
  }

  dispose() {
    this.controller?.abort();
    this.listeners.dispose();
  }
}

/** A section heading: a div, since hosts restyle h1..h6 (sizes, margins, borders). */
function heading(text: string): HTMLElement {
  return h("div", { class: "nfw-h", role: "heading", "aria-level": 4 }, text);
}

function describeError(err: unknown): string {
  const e = err as { name?: string; message?: string } | null;
  if (e?.name === "TimeoutError") return "The kernel did not answer within 10 s. Is it busy, or was it restarted? Re-run the cell that shows the widget, then retry.";
  if (e?.name === "AbortError") return "The request was cancelled.";
  return `Could not load this stage: ${e?.message ?? String(err)}`;
}
