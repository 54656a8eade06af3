/**
 * The attention section's parts beside the views themselves (attention_views.ts): the choice
 * of view and colour scale, the weight read under the pointer, and zooming into a long
 * sequence's map (the kernel answers the part asked for, as finely as the run kept it).
 */
import type { AttentionData, StageRequest } from "../wire";
import { windowLabel, zoomWindow, type AttentionScale } from "./attention_views";
import { h } from "./dom";

/** How attention is shown: one map (the mean or a head), the head view, the model view; on
 * which colour scale ("auto": probabilities 0–1 where a map has at most 64 keys, where they
 * read; beyond, one scale for the maps shown, where weights of 1/n would all look dark). */
export interface AttentionChoice {
  mode: "map" | "heads" | "model" | "image";
  scale: AttentionScale | "auto";
}

/** The scale a choice means for a map with `keys` keys. */
export function scaleFor(choice: AttentionChoice["scale"], keys: number): AttentionScale {
  return choice === "auto" ? (keys <= 64 ? "absolute" : "shared") : choice;
}

/** What these parts ask of the inspector's Output section (inspector_output.ts, attention_output.ts). */
export interface AttentionHost {
  attention: AttentionChoice;
  setAttention: (change: Partial<AttentionChoice>) => void;
  available: (change: Partial<StageRequest>) => boolean; // whether such a request can be answered (an offline page: only what it baked)
  reload: (change: Partial<StageRequest>) => void;
}

export const SCALE_WORDS: Record<AttentionScale | "auto", string> = {
  auto: "auto (0–1 up to 64 keys)",
  shared: "one scale for the maps shown",
  "per map": "each map its own scale",
  absolute: "probability 0–1",
};

/** The attention section's choices: how (map, head view, model view, over the input image
 * where the keys are its patches: `mode` is the one shown) and the scale. */
export function attentionControls(ctx: AttentionHost, mode: AttentionChoice["mode"], image: boolean): HTMLElement[] {
  const modes = h("div", { class: "nfw-tabs nfw-subtabs", role: "tablist", "aria-label": "attention view" });
  const all = [
    ["map", "map"],
    ["heads", "head view"],
    ["model", "model view"],
    ["image", "on the image"],
  ] as const;
  for (const [m, label] of all.filter(([m]) => m !== "image" || image)) {
    const b = h(
      "button",
      { class: "nfw-tab", role: "tab", "aria-selected": String(mode === m), "data-attention-mode": m },
      label,
    );
    b.addEventListener("click", () => ctx.setAttention({ mode: m }));
    modes.append(b);
  }
  const scale = h(
    "select",
    { class: "nfw-select", "aria-label": "attention colour scale" },
    ...(["auto", "absolute", "shared", "per map"] as const).map((v) => h("option", { value: v }, SCALE_WORDS[v])),
  );
  scale.value = ctx.attention.scale;
  scale.addEventListener("change", () => ctx.setAttention({ scale: scale.value as AttentionChoice["scale"] }));
  // over the image, each panel has its own scale, said on its colour bar
  return mode === "image" ? [modes] : [modes, h("label", { class: "nfw-label" }, "colours ", scale)];
}

/** The map's row and column under a pointer event, or null outside it. */
function cellAt(canvas: HTMLCanvasElement, a: AttentionData, e: MouseEvent): [number, number] | null {
  const [q, k] = a.mapShape;
  const [x0 = 0, y0 = 0, cw = 1, ch = 1] = (canvas.dataset.cells ?? "").split(",").map(Number); // set by drawAttention
  const r = canvas.getBoundingClientRect();
  const i = Math.floor((e.clientY - r.top - y0) / ch);
  const j = Math.floor((e.clientX - r.left - x0) / cw);
  return i < 0 || j < 0 || i >= q || j >= k ? null : [i, j];
}

/** Read the weight under the pointer, with its query and key (tokens where known). */
export function hoverReadout(canvas: HTMLCanvasElement, a: AttentionData, tokens: string[] | null, out: HTMLElement) {
  const k = a.mapShape[1];
  const [q0, q1, k0, k1] = a.window;
  const what = a.head === null ? "mean over heads" : `head ${a.head}`;
  const name = (p: number, start: number, end: number, size: number) => {
    const label = windowLabel(p, start, end, size, tokens);
    return size === 1 && tokens ? `${start + p} “${label}”` : label;
  };
  canvas.addEventListener("mousemove", (e) => {
    const at = cellAt(canvas, a, e);
    if (!at) return;
    const [i, j] = at;
    const exact = a.pool[0] === 1 && a.pool[1] === 1;
    out.textContent = `query ${name(i, q0, q1, a.pool[0])} → key ${name(j, k0, k1, a.pool[1])}: ${fmtWeight(a.map[i * k + j]!)} (${what}${exact ? "" : ", block mean"})`;
  });
}

/** Click to zoom ×4 around a point (the kernel answers the part, as finely as the run kept
 * it); the whole map again from a button. Not where nothing finer can be asked for. */
export function zoomControls(canvas: HTMLCanvasElement, a: AttentionData, ctx: AttentionHost): HTMLElement | null {
  const whole = a.window[0] === 0 && a.window[1] === a.q_len && a.window[2] === 0 && a.window[3] === a.k_len;
  const can = (w: number[] | null) => w !== null && ctx.available({ window: w });
  const probe = zoomWindow(a, 0, 0);
  if (can(probe)) {
    canvas.classList.add("nfw-zoomable");
    canvas.title = "Click to zoom in around a point";
    canvas.addEventListener("click", (e) => {
      const at = cellAt(canvas, a, e);
      const next = at && zoomWindow(a, at[0], at[1]);
      if (next) ctx.reload({ window: next });
    });
  }
  if (whole) return null;
  const back = h("button", { class: "nfw-btn", type: "button" }, "whole map");
  back.addEventListener("click", () => ctx.reload({ window: null }));
  return h(
    "div",
    { class: "nfw-zoom" },
    `zoomed: queries ${a.window[0]}–${a.window[1] - 1} × keys ${a.window[2]}–${a.window[3] - 1} `,
    back,
  );
}

export const fmtWeight = (w: number) => (Math.abs(w) >= 0.01 || w === 0 ? w.toFixed(3) : w.toExponential(2));
