/**
 * The inspector's Output section on its attention tab: for each attention call of the stage,
 * one map (the mean over heads or a head, with run B's and A − B's beside it when two runs
 * are compared, its colour bar, the weight under the pointer, zoom) and the heads under it;
 * or the head view, the model view (every attention stage of the run), or the weights over
 * the input image's patches. The choices and the pointer's parts are in attention_section.ts,
 * the head and model views in attention_views.ts, the image in attention_image.ts.
 */
import type { PatchGrid } from "../model/patches";
import type { AttentionData, ViewData } from "../wire";
import { imageAttention } from "./attention_image";
import {
  type AttentionHost,
  attentionControls,
  hoverReadout,
  SCALE_WORDS,
  scaleFor,
  zoomControls,
} from "./attention_section";
import { headMaps, headView, type ModelRow, modelView, topOf } from "./attention_views";
import { gradientStops } from "./colormap";
import { h, heading } from "./dom";
import { note, type OkReply, panel, type PanelState, stateInto } from "./panels";
import { drawAttention, drawHeads } from "./attention_plots";
import { colorBar } from "./plots";

/** What the attention tab reads of the Output section's context (inspector_output.ts). */
export interface AttentionContext extends AttentionHost {
  reply: OkReply; // run A
  b: PanelState | null; // null: no comparison here
  diff: PanelState | null;
  width: number; // css pixels the section may use
  attentionRows: () => Promise<ModelRow[]>; // every attention stage of the run (the model view)
  openAttention: (stage: string, head: number) => void; // a cell of the model view clicked
  patches: (keys: number) => PatchGrid | null; // the input image a sequence of `keys` tiles, if any
  inputImage: (input: string) => Promise<ViewData | null>; // that input's picture
}

/** Fill section `sec` (and its `controls`) with the reply's attention; canvases are drawn by
 * the functions pushed on `draws`, once the section is in the page. */
export function attentionOutput(sec: HTMLElement, controls: HTMLElement, ctx: AttentionContext, draws: (() => void)[]) {
  for (const [i, a] of ctx.reply.attention.entries()) attentionCall(sec, controls, ctx, draws, a, i);
}

function attentionModel(sec: HTMLElement, ctx: AttentionContext) {
  const box = h("div", { class: "nfw-note" }, "Loading every attention stage …");
  sec.append(box);
  void ctx.attentionRows().then((rows) => {
    const keys = Math.max(0, ...rows.map((r) => r.a?.k_len ?? 0));
    const scale = scaleFor(ctx.attention.scale, keys);
    const grid = modelView(rows, ctx.width, scale, ctx.openAttention) as HTMLElement & { draw?: () => void };
    const words = `${rows.length} attention stages × their heads · ${SCALE_WORDS[scale]} · click a map to open it`;
    box.replaceWith(grid, h("div", { class: "nfw-note" }, words));
    grid.draw?.();
  });
}

/** Attention over the input image's patches: this layer's and the rollout's. */
function attentionImage(sec: HTMLElement, ctx: AttentionContext, a: AttentionData, grid: PatchGrid) {
  const box = h("div", { class: "nfw-note" }, "Loading the image and every attention stage …");
  sec.append(box);
  void imageAttention(a, grid, {
    stage: ctx.reply.stage,
    width: ctx.width,
    image: ctx.inputImage,
    rows: ctx.attentionRows,
  }).then((el) => {
    box.replaceWith(el);
    (el as HTMLElement & { draw?: () => void }).draw?.();
  });
}

function attentionCall(
  sec: HTMLElement,
  controls: HTMLElement,
  ctx: AttentionContext,
  draws: (() => void)[],
  a: AttentionData,
  index: number,
) {
  const count = ctx.reply.attention.length;
  const patches = ctx.patches(a.k_len);
  // "on the image" where this stage's keys are the image's patches, else the map
  const mode = ctx.attention.mode === "image" && !patches ? "map" : ctx.attention.mode;
  if (index === 0) controls.append(...attentionControls(ctx, mode, patches !== null));
  if (mode === "model") {
    if (index === 0) attentionModel(sec, ctx);
    return;
  }
  if (mode === "image") {
    if (index === 0) attentionImage(sec, ctx, a, patches!);
    return;
  }
  if (count > 1) sec.append(heading(`Attention ${index + 1} of ${count}`));
  if (mode === "heads") {
    const view = headView(a, ctx.reply.tokens, ctx.width, scaleFor(ctx.attention.scale, a.k_len)) as HTMLElement & {
      draw?: () => void;
    };
    sec.append(view);
    draws.push(() => view.draw?.());
    return;
  }
  if (index === 0 && ctx.available({ head: 0 })) {
    // The kernel computes the map of one head, or the mean over heads (head = null).
    const select = h("select", { class: "nfw-select", "aria-label": "attention head" });
    select.append(h("option", { value: "" }, "mean over heads"));
    for (let i = 0; i < a.heads; i++) select.append(h("option", { value: String(i) }, `head ${i}`));
    select.value = a.head === null ? "" : String(a.head);
    select.addEventListener("change", () => ctx.reload({ head: select.value === "" ? null : Number(select.value) }));
    controls.append(h("label", { class: "nfw-label" }, "map ", select));
  }
  const compared = ctx.b !== null || ctx.diff !== null;
  const side = compared && (ctx.width - 16) / 3 >= 150;
  const width = compared ? (side ? Math.floor((ctx.width - 16) / 3) : ctx.width) : ctx.width;
  const panels = h("div", { class: `nfw-panels${side ? " nfw-panels-row" : ""}` });
  const bar = h("div");
  sec.append(panels, bar);
  const canvas = (run: string) =>
    h("canvas", {
      class: "nfw-plot",
      "data-view-kind": "attention",
      "data-run": run,
      "aria-label": `attention map${run ? ` (${run})` : ""}`,
    });
  const main = canvas("");
  panels.append(compared ? panel("a", main) : main);
  const readout = h("div", { class: "nfw-readout", "aria-live": "polite" }, "Point at the map to read a weight.");
  sec.append(readout);
  const pooled = a.pool[0] > 1 || a.pool[1] > 1;
  const what = a.head === null ? "mean over heads" : `head ${a.head}`;
  const zoomed = a.window[1] - a.window[0] < a.q_len || a.window[3] - a.window[2] < a.k_len;
  const grain = pooled
    ? ` · block means of ${a.pool[0]}×${a.pool[1]} positions`
    : zoomed
      ? " · every position exact"
      : "";
  sec.append(
    note(
      `${what} · ${a.heads} heads · ${a.q_len} queries × ${a.k_len} keys${a.causal ? " · causal" : ""}${grain}${a.source ? ` · ${a.source}` : ""} · rows: queries, columns: keys`,
    ),
  );
  const other = (s: PanelState | null) => (s?.state === "ok" ? (s.reply.attention[index] ?? null) : null);
  const ab = other(ctx.b);
  const ad = other(ctx.diff);
  const bCanvas = canvas("b");
  const dCanvas = canvas("diff");
  const dBar = h("div");
  if (compared) {
    panels.append(
      panel(
        "b",
        ctx.b?.state === "ok"
          ? ab
            ? bCanvas
            : note("No attention here in run B.")
          : stateInto(ctx.b ?? { state: "error", message: "Run B has no such stage." }, () => note("")),
      ),
    );
    panels.append(
      panel(
        "diff",
        ctx.diff?.state === "ok"
          ? ad
            ? dCanvas
            : note("No A − B here.")
          : stateInto(ctx.diff ?? { state: "error", message: "No A − B here." }, () => note("")),
      ),
    );
    sec.append(dBar);
  }
  let grid: HTMLCanvasElement | null = null;
  if (a.grid && a.heads > 1) {
    grid = h("canvas", { class: "nfw-plot", "data-view-kind": "attention-heads", "aria-label": "attention heads" });
    sec.append(heading(compared ? "Heads · run A" : "Heads"), grid);
  }
  const scale = scaleFor(ctx.attention.scale, a.k_len);
  // the top of the colours: 1, the map's own, or the top of every head of this call
  const hm = headMaps(a);
  const all = hm ? Array.from({ length: hm.heads }, (_, i) => i) : [];
  const sharedTop = hm ? topOf(hm.maps, hm.q * hm.k, 0, all, "shared") : undefined;
  draws.push(() => {
    const own =
      scale === "absolute"
        ? 1
        : scale === "shared" && sharedTop !== undefined && a.head !== null
          ? sharedTop
          : undefined;
    const top = ab ? Math.max(own ?? maxOf(a.map), maxOf(ab.map)) : own;
    const vmax = drawAttention(main, a, ctx.reply.tokens, width, { vmax: top });
    hoverReadout(main, a, ctx.reply.tokens, readout);
    const zoom = zoomControls(main, a, ctx);
    if (zoom) readout.before(zoom);
    const cb = colorBar(gradientStops(false, 0, vmax), 0, vmax);
    cb.prepend(
      h(
        "span",
        { class: "nfw-colorbar-what", "data-scale": scale },
        scale === "absolute" ? "0–1" : scale === "shared" && a.head !== null ? "all heads" : "this map",
      ),
    );
    bar.replaceWith(cb);
    if (ab) drawAttention(bCanvas, ab, ctx.reply.tokens, width, { vmax });
    if (ad) {
      const dmax = drawAttention(dCanvas, ad, ctx.reply.tokens, width, { signed: true });
      const d = colorBar(gradientStops(true, -dmax, dmax), -dmax, dmax);
      d.prepend(h("span", { class: "nfw-colorbar-what" }, "A − B"));
      dBar.replaceWith(d);
    }
    if (grid) drawHeads(grid, a, ctx.width, scale === "per map" ? undefined : scale === "absolute" ? 1 : sharedTop);
  });
}

function maxOf(values: Float32Array): number {
  let m = 0;
  for (const v of values) if (v > m) m = v;
  return m || 1;
}
