/**
 * The inspector's Output section: the view tabs, their controls (channel, page of the
 * channel grid, the colour scale), and the view drawn in its form (a channel grid, a token
 * map with its rows labelled, a strip, an image, a class map with its legend, bars of class
 * probabilities, token chips), once for this run, or, comparing two runs, as A | B | A − B
 * (A and B on one colour range, A − B on a diverging one); of the gradient after a backward
 * pass; the readout tab (the logit lens, readout_section.ts). The inspector (inspector.ts)
 * fetches; this module only builds and draws.
 */
import type { StageRequest, Summary, ViewData } from "../wire";
import { type AttentionContext, attentionOutput } from "./attention_output";
import { type ColorRange, gradientStops, markCounts, unionRange } from "./colormap";
import { h, heading } from "./dom";
import { note, panel, stateInto } from "./panels";
import { colorBar, drawView, tileAt, type TileGeometry } from "./plots";
import { barChart, classLegend, idChips } from "./plots_ends";
import { drawStrip, drawTokenMap } from "./plots_tokens";
import { readoutTable } from "./readout_section";

export const ATTENTION = "attention";
/** The logit lens's tab (a stage with a readout). */
export const READOUT = "readout";

export interface OutputContext extends AttentionContext {
  tab: string | null;
  tabs: string[];
  request: StageRequest;
  perTile: boolean;
  pickTab: (tab: string) => void;
  setPerTile: (on: boolean) => void;
  runB?: string; // run B's panels' caption ("B · h.1 switched off (zero)"; model/experiments.ts)
}

/** How a view is drawn. */
type Form = "bars" | "ids" | "tokens" | "strip" | "map" | "grid";

function formOf(v: ViewData): Form {
  if (v.kind === "probabilities" || v.kind === "next token") return "bars";
  if (v.kind === "ids") return "ids";
  if (v.shape.length === 2 && v.axes[0] === "token") return "tokens";
  if (v.shape.length === 1 || (v.shape.length === 2 && v.shape[0] === 1)) return "strip";
  return v.shape.length === 3 && v.palette !== "rgb" && v.shape[0]! > 1 ? "grid" : "map";
}

/** The axes in words, never an empty name: "rows: token · columns: feature". */
export function axesText(v: ViewData): string {
  const [rows, cols] = v.axes.length === 2 ? v.axes : ["", v.axes[0] ?? ""];
  if (formOf(v) === "strip" || formOf(v) === "bars" || formOf(v) === "ids") return cols ? `along ${cols}` : "";
  return [rows && `rows: ${rows}`, cols && `columns: ${cols}`].filter(Boolean).join(" · ");
}

/** The view's note: how it was made, its size and axes, its colours, what its range clips. */
export function viewNote(v: ViewData, diff: boolean): string {
  const clipped = v.clipped ? v.clipped[0] + v.clipped[1] : 0;
  const share = clipped ? (100 * clipped) / Math.max(1, v.pixels.length) : 0;
  return [
    v.note,
    formOf(v) === "bars" || formOf(v) === "ids"
      ? ""
      : `${v.shape.join(" × ")}${axesText(v) ? ` · ${axesText(v)}` : ""}`,
    v.palette === "rgb"
      ? "the colours themselves"
      : v.palette === "categorical"
        ? "a colour per class"
        : diff
          ? "red: A larger, blue: B larger"
          : v.signed
            ? "diverging around 0"
            : "",
    clipped
      ? `${share < 0.1 ? "<0.1" : share.toFixed(1)}% of values lie beyond the colour range (drawn in its end colours)`
      : "",
  ]
    .filter(Boolean)
    .join(" · ");
}

const rangeOf = (v: ViewData): ColorRange => ({ vmin: v.vmin, vmax: v.vmax, signed: v.signed });

export class OutputSection {
  readonly el: HTMLElement;
  private draws: (() => void)[] = [];

  constructor(private readonly ctx: OutputContext) {
    const bar = h("div", { class: "nfw-tabs", role: "tablist" });
    for (const t of ctx.tabs) {
      const b = h(
        "button",
        { class: "nfw-tab", role: "tab", "aria-selected": String(t === ctx.tab), "data-view": t },
        t,
      );
      b.addEventListener("click", () => ctx.pickTab(t));
      bar.append(b);
    }
    const controls = h("div", { class: "nfw-controls" });
    const grad = ctx.reply.of === "grad";
    this.el = h(
      "section",
      { class: "nfw-section", "data-of": ctx.reply.of },
      heading(grad ? "Gradient of the loss with respect to the output" : "Output"),
      bar,
      controls,
    );
    if (ctx.tab === ATTENTION) {
      attentionOutput(this.el, controls, ctx, this.draws);
      return;
    }
    if (ctx.tab === READOUT) {
      const r = ctx.reply.readout;
      this.el.append(
        r
          ? readoutTable(r, ctx.reply.tokens, ctx.reply.stage)
          : h("div", { class: "nfw-note" }, "Loading the readout …"),
      );
      return;
    }
    const view = ctx.reply.view;
    if (!view || view.kind !== ctx.tab) {
      this.el.append(h("div", { class: "nfw-note" }, "No data for this view."));
      return;
    }
    this.controls(controls, view);
    this.views(view);
  }

  /** Draw the canvases (once the section is in the page: fonts and colours come from its CSS). */
  draw() {
    for (const cap of this.el.querySelectorAll<HTMLElement>('.nfw-panel[data-run="b"] > .nfw-panel-cap'))
      cap.textContent = cap.title = this.ctx.runB ?? cap.textContent ?? "";
    for (const f of this.draws.splice(0)) f();
  }

  private controls(controls: HTMLElement, view: ViewData) {
    const { ctx } = this;
    const first: Summary | undefined = ctx.reply.summaries[0];
    if (view.kind === "channel") {
      const channels = first?.shape[1] ?? 1;
      const current = ctx.request.channel ?? view.channels?.[0] ?? 0;
      if (channels > 1 && ctx.available({ view: "channel", channel: (current + 1) % channels }))
        controls.append(
          numberPicker("channel", current, channels - 1, (v) => ctx.reload({ view: "channel", channel: v })),
        );
    }
    if (formOf(view) === "grid" && view.page !== null && view.pages !== null && view.pages > 1) {
      const page = view.page;
      const go = (p: number) => ctx.reload({ view: view.kind, page: p, channel: null });
      if (ctx.available({ view: view.kind, page: (page + 1) % view.pages })) {
        const prev = h(
          "button",
          { class: "nfw-btn nfw-page", type: "button", "aria-label": "previous page", disabled: page === 0 },
          "‹",
        );
        const next = h(
          "button",
          { class: "nfw-btn nfw-page", type: "button", "aria-label": "next page", disabled: page + 1 >= view.pages },
          "›",
        );
        prev.addEventListener("click", () => go(page - 1));
        next.addEventListener("click", () => go(page + 1));
        controls.append(
          h(
            "span",
            { class: "nfw-pager", "data-page": page, "data-pages": view.pages },
            prev,
            h("span", {}, `page ${page + 1} / ${view.pages}`),
            next,
          ),
        );
      } else {
        controls.append(
          h(
            "span",
            { class: "nfw-pager", "data-page": page, "data-pages": view.pages },
            `page ${page + 1} of ${view.pages} (the others are not in this page)`,
          ),
        );
      }
    }
    if (formOf(view) === "grid") {
      const scale = h(
        "select",
        { class: "nfw-select", "aria-label": "colour scale" },
        h("option", { value: "shared" }, "one colour scale"),
        h("option", { value: "tile" }, "a scale per channel"),
      );
      scale.value = ctx.perTile ? "tile" : "shared";
      scale.addEventListener("change", () => ctx.setPerTile(scale.value === "tile"));
      controls.append(h("label", { class: "nfw-label" }, "colours ", scale));
    }
  }

  /** Run A's view, and B's and A − B's beside (single maps, where they fit) or under it. */
  private views(view: ViewData) {
    const { ctx } = this;
    const form = formOf(view);
    const compared = ctx.b !== null || ctx.diff !== null;
    const bView = ctx.b?.state === "ok" ? ctx.b.reply.view : null;
    const dView = ctx.diff?.state === "ok" ? ctx.diff.reply.view : null;
    const sameKind = bView !== null && bView.kind === view.kind && bView.palette === view.palette;
    const shared =
      compared && sameKind && !ctx.perTile && view.palette === null && form !== "bars" && form !== "ids"
        ? unionRange(rangeOf(view), rangeOf(bView!))
        : undefined;
    const side = compared && form === "map" && (ctx.width - 16) / 3 >= 150;
    // bars (the next token, class probabilities): A | B side by side where both fit, A − B under
    const pair = compared && form === "bars" && (ctx.width - 8) / 2 >= 170;
    const width = side ? Math.floor((ctx.width - 16) / 3) : ctx.width;
    const panels = h("div", { class: `nfw-panels${side ? " nfw-panels-row" : pair ? " nfw-panels-pair" : ""}` });
    this.el.append(panels);
    const a = this.viewInto(view, width, shared, false, ctx.reply.tokens);
    panels.append(compared ? panel("a", a) : a);
    if (compared) {
      panels.append(
        panel(
          "b",
          ctx.b === null
            ? note("Run B has no such stage.")
            : stateInto(ctx.b, (v) =>
                v.kind === view.kind
                  ? this.viewInto(v, width, shared, false, ctx.reply.tokens)
                  : note(`Run B shows ${v.kind} here.`),
              ),
        ),
      );
      panels.append(
        panel(
          "diff",
          ctx.diff === null
            ? note("No A − B here.")
            : stateInto(ctx.diff, (v) => this.viewInto(v, width, undefined, true, ctx.reply.tokens)),
        ),
      );
    }
    const scaleOf = shared ?? rangeOf(view);
    if (view.palette === null && form !== "bars" && form !== "ids" && !(ctx.perTile && form === "grid")) {
      const marks = markCounts(view.nonfinite, view.pixels.length);
      const clipped: [number, number] | null =
        view.clipped && bView?.clipped
          ? [view.clipped[0] + bView.clipped[0], view.clipped[1] + bView.clipped[1]]
          : view.clipped;
      const bar = colorBar(
        marks[0] ? gradientStops(scaleOf.signed, scaleOf.vmin, scaleOf.vmax) : null,
        scaleOf.vmin,
        scaleOf.vmax,
        marks,
        shared ? clipped : view.clipped,
      );
      if (compared) bar.prepend(h("span", { class: "nfw-colorbar-what" }, shared ? "A, B" : "A"));
      panels.after(bar);
      if (dView && dView.palette === null && formOf(dView) !== "bars" && formOf(dView) !== "ids") {
        const dm = markCounts(dView.nonfinite, dView.pixels.length);
        const dbar = colorBar(
          dm[0] ? gradientStops(true, dView.vmin, dView.vmax) : null,
          dView.vmin,
          dView.vmax,
          dm,
          dView.clipped,
        );
        dbar.prepend(h("span", { class: "nfw-colorbar-what" }, "A − B"));
        bar.after(dbar);
      }
    } else if (ctx.perTile && form === "grid") {
      panels.after(
        note("Each channel on its own colour range (printed under it): colours are not comparable across channels."),
      );
    }
    const notes = [viewNote(view, false)];
    if (shared) notes.push("A and B on one colour range");
    this.el.append(note(notes.join(" · ")));
    if (dView) this.el.append(note(`A − B: ${viewNote(dView, true)}`));
  }

  /** One view in its form. */
  private viewInto(
    view: ViewData,
    width: number,
    range: ColorRange | undefined,
    diff: boolean,
    tokens: string[] | null,
  ): HTMLElement {
    const { ctx } = this;
    const form = formOf(view);
    if (form === "bars") return barChart(view, diff);
    if (form === "ids") return idChips(view);
    const canvas = h("canvas", {
      class: "nfw-plot",
      "data-view-kind": view.kind,
      "data-run": diff ? "diff" : "",
      "aria-label": `${view.kind} view`,
    });
    const shape = ctx.reply.summaries[0]?.shape ?? [];
    const box = h("div", { class: "nfw-view" }, canvas);
    if (form === "tokens") {
      const axis = {
        rows: shape[shape.length - 2] ?? view.shape[0] ?? 0,
        cols: shape[shape.length - 1] ?? view.shape[1] ?? 0,
      };
      this.draws.push(() => drawTokenMap(canvas, view, tokens, width, axis, range));
    } else if (form === "strip") {
      const n = view.pixels.length;
      const full = (view.axes[1] === "token" ? shape[shape.length - 2] : undefined) ?? n;
      const labels = view.kind === "norms" && tokens?.length === n ? tokens : view.kind === "topk" ? view.labels : null;
      this.draws.push(() => drawStrip(canvas, view, labels, width, { rows: 1, cols: full }, range));
    } else {
      let geometry: TileGeometry | null = null;
      // Compared, three grids one under the other: smaller tiles keep them in view together.
      const maxH = form === "grid" && (ctx.b !== null || ctx.diff !== null) ? 220 : undefined;
      this.draws.push(() => (geometry = drawView(canvas, view, width, { range, perTile: ctx.perTile, maxH })));
      const enlarge = form === "grid" && view.channels && ctx.available({ view: "channel", channel: view.channels[0] });
      if (enlarge) {
        canvas.classList.add("nfw-clickable");
        canvas.title = "Click a channel to open it alone, at its sharpest";
        canvas.addEventListener("click", (e) => {
          const r = canvas.getBoundingClientRect();
          const i = geometry ? tileAt(geometry, e.clientX - r.left, e.clientY - r.top) : -1;
          if (i >= 0 && view.channels) ctx.reload({ view: "channel", channel: view.channels[i], page: null });
        });
      }
    }
    if (view.palette === "categorical") box.append(classLegend(view));
    return box;
  }
}

function numberPicker(label: string, value: number, max: number, change: (v: number) => void): HTMLElement {
  const input = h("input", {
    type: "number",
    class: "nfw-select nfw-number",
    min: 0,
    max,
    step: 1,
    value,
    "aria-label": label,
  });
  input.addEventListener("change", () => change(Math.max(0, Math.min(max, Math.round(Number(input.value) || 0)))));
  return h("label", { class: "nfw-label" }, `${label} `, input, ` / ${max}`);
}
