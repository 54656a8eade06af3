/**
 * The side panel for one stage, or for a model input or output: what went wrong there (the
 * failure's message, NaN / Inf), its facts, how it differs in run B (inspector_facts.ts), its
 * views and attention (inspector_output.ts), statistics (inspector_summary.ts); after a
 * backward pass, the same of its gradient (inspector_modes.ts), with activation patching the
 * heat map of a patched stage (patching_section.ts). This module fetches (through a cache)
 * and keeps the panel's state; its left edge drags to resize it.
 */
import { diffOf, onlyInA } from "../model/ends";
import { runBCaption } from "../model/experiments";
import { patchGrid } from "../model/patches";
import { runFailureHeadline, type Problems } from "../model/problems";
import type { AttentionData, RunName, StageReply, StageRequest, ViewData, WireCall, WireGraph } from "../wire";
import { h, Listeners } from "./dom";
import type { AttentionChoice } from "./attention_section";
import { leadSections, NO_MARKS, type RunMarks, runMarks, type Target } from "./inspector_facts";
import { ATTENTION, OutputSection, READOUT } from "./inspector_output";
import { type Of, ofSwitch } from "./inspector_modes";
import { patchingSection } from "./patching_section";
import type { OkReply, PanelState } from "./panels";
import { summarySection } from "./inspector_summary";
import { describeError, hasGrad, patchedRow, plain, reads } from "./inspector_requests";
import { Resizer } from "./resize";
import { at } from "../wire_check";

/** Where stage data comes from: the kernel (live) or baked replies (static export). */
export type FetchStage = (req: StageRequest, signal: AbortSignal) => Promise<StageReply>;

export interface InspectorOptions {
  /** Whether a request can be answered (an offline page: only what it baked); default: all. */
  available?: (req: StageRequest) => boolean;
}

export class Inspector {
  readonly el: HTMLElement;
  private readonly head: HTMLElement;
  private readonly body: HTMLElement;
  private readonly resizer: Resizer;
  private listeners = new Listeners();
  private target: Target | null = null;
  private request: StageRequest | null = null;
  private reply: StageReply | null = null;
  private others: { b: PanelState | null; diff: PanelState | null } = { b: null, diff: null };
  private tab: string | null = null; // a view kind, "attention" or "readout"
  private of: Of = "output"; // the output, or (after a backward pass) its gradient
  private perTile = false;
  private attention: AttentionChoice = { mode: "map", scale: "auto" };
  private controller: AbortController | null = null;
  private cache = new Map<string, StageReply>();
  private graph: WireGraph | null = null;
  private run: RunMarks = NO_MARKS;

  /** The inspector moved to another stage by itself (a map of the model view clicked). */
  onOpen: ((id: string) => void) | null = null;

  constructor(
    private readonly fetchStage: FetchStage,
    private readonly onClose: () => void,
    private readonly opts: InspectorOptions = {},
  ) {
    this.head = h("div", { class: "nfw-ins-head" });
    this.body = h("div", { class: "nfw-ins-body" });
    this.el = h(
      "aside",
      { class: "nfw-inspector", "aria-label": "stage inspector", hidden: true },
      this.head,
      this.body,
    );
    this.resizer = new Resizer(this.el, () => this.redraw());
  }

  /** The run the next stages come from: what went wrong in it, its comparison with run B. */
  setRun(graph: WireGraph, p: Problems) {
    this.graph = graph;
    this.cache.clear();
    this.run = runMarks(graph, p);
  }

  get stage(): string | null {
    return this.el.hidden ? null : (this.target?.id ?? null);
  }

  /** Open on a call, or on a model input / output (`id` of graph.ends). */
  open(target: WireCall | Target) {
    const t: Target = "kind" in target ? target : { kind: "stage", id: target.id, call: target };
    if (!this.el.hidden && this.target?.id === t.id) return;
    this.target = t;
    this.el.hidden = false;
    this.tab = this.tab === ATTENTION || this.tab === READOUT ? this.tab : null; // going through the layers: theirs
    this.renderHead();
    void this.load({ stage: t.id, view: null, channel: null, head: null, sample: null, ...this.asked(t.id) });
  }

  /** Show the output or, after a backward pass, its gradient (the switch; playback backwards). */
  setOf(of: Of) {
    if (of === this.of) return;
    this.of = of;
    if (!this.el.hidden && this.target && this.request)
      void this.load({ ...this.request, ...this.asked(this.target.id) });
  }

  /** What a request asks of a stage besides its view: its gradient, its readout (that tab). */
  private asked(stage: string): Pick<StageRequest, "of" | "readout" | "position"> {
    const grad = this.of === "grad" && this.offersGrad(stage);
    return {
      of: grad ? "grad" : null,
      readout: !grad && this.tab === READOUT && reads(this.graph, stage) ? 5 : null,
      position: null,
    };
  }

  /** The same stage, its data asked for again (a new run of the same model). */
  refresh(target: WireCall | Target | null) {
    if (this.el.hidden || !this.target || !this.request) return;
    if (target) this.target = "kind" in target ? target : { kind: "stage", id: target.id, call: target };
    this.renderHead();
    void this.load({ ...this.request });
  }

  close() {
    if (this.el.hidden) return;
    this.controller?.abort();
    this.el.hidden = true;
    this.target = null;
    this.onClose();
  }

  private renderHead() {
    const t = this.target!;
    const close = h("button", { class: "nfw-close", title: "Close (Esc)", "aria-label": "close inspector" }, "×");
    close.addEventListener("click", () => this.close());
    const [name, what] =
      t.kind === "stage"
        ? [t.call.module + (t.call.call > 0 ? ` #${t.call.call}` : ""), t.call.type]
        : [t.id, `model ${t.kind}${t.end.reading ? ` · read as ${t.end.reading}` : ""}`];
    this.head.replaceChildren(h("div", { class: "nfw-ins-title" }, h("b", {}, name), h("span", {}, what)), close);
  }

  /** Whether the stage's gradient can be shown: it has one, and it can be asked for (an offline page: baked). */
  private offersGrad(stage: string): boolean {
    const req: StageRequest = { stage, view: null, channel: null, head: null, sample: null, of: "grad" };
    return hasGrad(this.graph, stage) && this.available(req);
  }

  private available(req: StageRequest): boolean {
    return this.opts.available ? this.opts.available(req) : true;
  }

  private async fetchCached(req: StageRequest, signal: AbortSignal): Promise<StageReply> {
    const key = JSON.stringify(req);
    const hit = this.cache.get(key);
    if (hit) return hit;
    const reply = await this.fetchStage(req, signal);
    if (reply.ok) {
      this.cache.set(key, reply);
      if (this.cache.size > 60) this.cache.delete(this.cache.keys().next().value as string);
    }
    return reply;
  }

  private async load(asked: StageRequest) {
    const req = plain(asked);
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.request = req;
    if (!this.cache.has(JSON.stringify(req))) this.showState("loading");
    let reply: StageReply;
    try {
      reply = await this.fetchCached(req, controller.signal);
    } catch (err) {
      if (this.request !== req || (controller.signal.aborted && this.el.hidden)) return;
      this.showState("error", describeError(err));
      return;
    }
    if (controller.signal.aborted || this.request !== req) return;
    this.others = this.compared() ? { b: { state: "loading" }, diff: { state: "loading" } } : { b: null, diff: null };
    this.show(reply);
    if (reply.ok && this.others.b) void this.loadOthers(req, reply, controller);
  }

  /** Whether this target is compared with run B (a comparison, and it ran in both). */
  private compared(): boolean {
    const g = this.graph;
    return !!g?.comparison && !!this.target && !onlyInA(g, this.target.id) && this.request?.of !== "grad";
  }

  /** Run B's reply and A − B, at run A's view, channels and page. */
  private async loadOthers(req: StageRequest, a: OkReply, controller: AbortController) {
    if (this.graph && this.target && ["b", "both"].includes(diffOf(this.graph, this.target.id)?.raised ?? "")) {
      // run B raised here: no output to ask for
      const why = runFailureHeadline(this.graph)?.what;
      this.others = {
        b: { state: "error", message: `Run B raised here${why ? `: ${why}` : ""}` },
        diff: { state: "error", message: "No A − B: run B has no output here." },
      };
      return this.show(a);
    }
    const view = a.view;
    const tiles = view && (view.kind === "grid" || view.kind === "first") ? view.channels : null;
    const at: StageRequest = {
      ...req,
      view: view?.kind ?? req.view,
      channel: view?.kind === "channel" ? (view.channels?.[0] ?? req.channel) : req.channel,
    };
    const ask = async (run: RunName): Promise<PanelState> => {
      const r = plain(run === "b" ? { ...at, page: null, channels: tiles, run } : { ...at, run });
      try {
        const reply = await this.fetchCached(r, controller.signal);
        return reply.ok ? { state: "ok", reply } : { state: "error", message: reply.error };
      } catch (err) {
        return { state: "error", message: describeError(err) };
      }
    };
    const [b, diff] = await Promise.all([ask("b"), ask("diff")]);
    if (controller.signal.aborted || this.request !== req) return;
    this.others = { b, diff };
    this.show(a);
  }

  private showState(state: "loading" | "error", message = "", retry = true) {
    const meta = this.leadSections();
    if (state === "loading") {
      const spinner = h("div", { class: "nfw-spinner" });
      const wait = h("div", { class: "nfw-state", role: "status" }, spinner, `Loading ${this.target?.id ?? ""} …`);
      return this.body.replaceChildren(...meta, wait);
    }
    const box = h(
      "div",
      {
        class: retry ? "nfw-errorbox" : "nfw-note nfw-missing",
        role: retry ? "alert" : "note",
        "data-missing": retry ? null : "",
      },
      h("div", {}, message),
    );
    if (retry) {
      const again = h("button", { class: "nfw-btn" }, "Retry");
      again.addEventListener("click", () => this.request && void this.load({ ...this.request }));
      box.append(again);
    }
    this.body.replaceChildren(...meta, box);
  }

  private leadSections(): HTMLElement[] {
    // an item of a tuple returned: its tabs open the others (the selection follows)
    return leadSections(this.target!, this.run, this.graph, (t) => {
      this.open(t);
      this.onOpen?.(t.id);
    });
  }

  private show(reply: StageReply) {
    const scroll = this.body.scrollTop;
    this.reply = reply;
    if (!reply.ok) {
      const name = reply.stage || this.target?.id;
      return this.showState(
        "error",
        reply.retry === false ? reply.error : `The kernel could not summarise ${name}: ${reply.error}`,
        reply.retry !== false,
      );
    }
    // The views it can show: all of them live; on an offline page those it carries.
    const here = this.request!;
    const tabs = reply.views.filter(
      (t) => t === reply.view?.kind || this.available(plain({ ...here, view: t, channel: null, page: null })),
    );
    if (reply.attention.length) tabs.push(ATTENTION);
    const lens = { ...plain(here), view: null, readout: 5, position: null };
    if (reply.of === "output" && reads(this.graph, reply.stage) && this.available(lens)) tabs.push(READOUT);
    if (!this.tab || !tabs.includes(this.tab)) this.tab = reply.view?.kind ?? tabs[0] ?? null;
    const parts: HTMLElement[] = this.leadSections();
    const patched = patchedRow(this.graph, reply.stage);
    const patchDraws: (() => void)[] = [];
    if (patched) parts.push(patchingSection(patched.map, patched.row, reply.tokens, this.width(), patchDraws));
    if (this.offersGrad(reply.stage)) parts.push(ofSwitch(reply.of, (of) => this.setOf(of)));
    // The stage that raised has its message above already; the reply's error repeats it.
    const raised = this.run.failure !== null && this.run.failed.has(reply.stage);
    if (reply.error && !(raised && this.run.failure!.includes(reply.error)))
      parts.push(h("div", { class: "nfw-errorbox", role: "alert" }, reply.error));
    if (raised && !tabs.length && !reply.summaries.length)
      parts.push(h("div", { class: "nfw-note" }, "No output: the forward raised before this stage returned."));
    else if (!tabs.length && !reply.summaries.length && !reply.error)
      parts.push(h("div", { class: "nfw-note" }, "It returned no tensor: there is nothing to show."));
    let output: OutputSection | null = null;
    if (tabs.length) {
      const req = this.request!;
      output = new OutputSection({
        reply,
        b: this.others.b,
        diff: this.others.diff,
        tab: this.tab,
        tabs,
        request: req,
        width: this.width(),
        perTile: this.perTile,
        available: (change) => this.available({ ...req, ...change }),
        pickTab: (t) => this.pickTab(t),
        reload: (change) => this.reload(change),
        setPerTile: (on) => {
          this.perTile = on;
          this.show(reply);
        },
        attention: this.attention,
        setAttention: (change) => {
          this.attention = { ...this.attention, ...change };
          this.show(reply);
        },
        attentionRows: () => this.attentionRows(),
        openAttention: (stage, head) => this.openAttention(stage, head),
        patches: (keys) => (this.graph ? patchGrid(this.graph, keys) : null),
        runB: runBCaption(this.graph),
        inputImage: (input) => this.inputImage(input),
      });
      parts.push(output.el);
    }
    const hists: (() => void)[] = [];
    for (const [i, s] of reply.summaries.entries()) {
      const index = reply.summaries.length > 1 ? i : -1;
      parts.push(summarySection(s, index, this.others.b !== null, () => this.width(), hists, reply.of));
    }
    this.body.replaceChildren(...parts);
    output?.draw();
    for (const f of patchDraws) f();
    for (const f of hists) f();
    this.body.scrollTop = scroll;
  }

  /** Every stage of the run that recorded attention, with its first attention call (the
   * model view), fetched through the same cache as the stages themselves. */
  private async attentionRows(): Promise<{ id: string; a: AttentionData | null }[]> {
    const g = this.graph;
    if (!g) return [];
    const controller = new AbortController();
    return Promise.all(
      g.attention.map(async (c) => {
        const id = at(g.calls, c).id;
        const req = { stage: id, view: null, channel: null, head: null, sample: null };
        if (!this.available(req)) return { id, a: null };
        const reply = await this.fetchCached(req, controller.signal).catch(() => null);
        return { id, a: reply?.ok ? (reply.attention[0] ?? null) : null };
      }),
    );
  }

  /** The picture of a model input (its "image" reading), through the same cache. */
  private async inputImage(input: string): Promise<ViewData | null> {
    const req = { stage: input, view: null, channel: null, head: null, sample: null };
    if (!this.available(req)) return null;
    const reply = await this.fetchCached(req, new AbortController().signal).catch(() => null);
    return reply?.ok && reply.view?.kind === "image" ? reply.view : null;
  }

  /** A map of the model view clicked: that stage's attention, at that head. */
  private openAttention(stage: string, head: number) {
    const c = this.graph?.calls.find((x) => x.id === stage);
    if (!c) return;
    this.attention = { ...this.attention, mode: "map" };
    this.target = { kind: "stage", id: c.id, call: c };
    this.tab = ATTENTION;
    this.renderHead();
    this.onOpen?.(c.id);
    void this.load({ stage: c.id, view: null, channel: null, head, sample: null });
  }

  private width(): number {
    return Math.max(200, (this.body.clientWidth || 380) - 26);
  }

  private pickTab(tab: string) {
    if (tab === this.tab) return;
    this.tab = tab;
    const reply = this.reply;
    if (tab === READOUT)
      return reply?.ok && reply.readout ? this.show(reply) : this.reload({ readout: 5, position: null });
    if (tab === ATTENTION || (reply?.ok && reply.view?.kind === tab)) return reply && this.show(reply);
    this.reload({ view: tab, channel: null, page: null, readout: null });
  }

  private reload(change: Partial<StageRequest>) {
    if (!this.request) return;
    if (change.view) this.tab = change.view;
    void this.load({ ...this.request, ...change });
  }

  /** Redraw canvases after a resize. */
  redraw() {
    if (this.reply && !this.el.hidden && !this.resizer.dragging) this.show(this.reply);
  }

  dispose() {
    this.controller?.abort();
    this.resizer.dispose();
    this.listeners.dispose();
  }
}
