/**
 * Attention drawn over the input image's patches (a vision transformer): what the CLS token
 * of this layer attends to (or, with no CLS token, the attention each patch receives), and
 * the attention rollout through every layer up to this one (model/patches.ts), each over the
 * image the model was given, on its own colour bar, with the weight under the pointer read
 * with the patch's pixels.
 */
import type { AttentionData, ViewData } from "../wire";
import { type PatchGrid, patchRow, received, rollout } from "../model/patches";
import { gradientStops, viridis } from "./colormap";
import { h } from "./dom";
import { colorBar, pictureOf, sized, strip } from "./plots";
import type { ModelRow } from "./attention_views";
import { fmtWeight } from "./attention_section";

export interface ImageAttentionHost {
  stage: string; // the stage shown
  width: number;
  image: (input: string) => Promise<ViewData | null>; // the input image's reading
  rows: () => Promise<ModelRow[]>; // every attention stage (mean over heads), in execution order
}

/** One panel's values over the patches (rows × cols), and what they are. */
interface Heat {
  values: Float64Array | null;
  title: string;
  why: string; // what the values are, or why there are none
}

/** What this layer's map says of the patches: the CLS token's row, or the mean received. */
export function layerHeat(a: AttentionData, grid: PatchGrid): Heat {
  const [q, k] = a.mapShape;
  const exact = a.pool[0] === 1 && a.pool[1] === 1 && k === a.k_len && q === a.q_len;
  const whose = a.head === null ? "mean over heads" : `head ${a.head}`;
  if (!exact)
    return {
      values: null,
      title: "this layer",
      why: "this map is block means of positions: patches cannot be told apart",
    };
  if (grid.extra > 0 && a.q_len === a.k_len) {
    return { values: patchRow(a.map, k, 0, grid.extra), title: `this layer: token 0 (CLS) → patches`, why: whose };
  }
  return {
    values: received(a.map, q, k, grid.extra),
    title: "this layer: attention each patch receives",
    why: `${whose}, mean over ${q} queries`,
  };
}

/** Rollout from token 0 through the attention stages up to `stage`: exact square maps of n. */
export function rolloutHeat(rows: ModelRow[], stage: string, grid: PatchGrid, n: number): Heat {
  const upTo = rows.findIndex((r) => r.id === stage);
  const used = rows.slice(0, upTo + 1).filter((r) => r.a && r.a.q_len === n && r.a.k_len === n);
  const title = `rollout through ${used.length} layer${used.length === 1 ? "" : "s"}`;
  if (upTo < 0 || grid.extra === 0)
    return { values: null, title: "rollout", why: "rollout follows a CLS token: this sequence has none" };
  const pooled = used.find(
    (r) => r.a!.pool[0] !== 1 || r.a!.pool[1] !== 1 || r.a!.mapShape[0] !== n || r.a!.head !== null,
  );
  if (pooled)
    return {
      values: null,
      title,
      why: `${pooled.id}'s map is pooled (block means): rollout needs every layer's exact map`,
    };
  const flow = rollout(
    used.map((r) => r.a!.map),
    n,
  );
  return {
    values: flow.slice(grid.extra),
    title,
    why: "mean over heads, half of each layer's input kept by its residual path (Abnar & Zuidema 2020)",
  };
}

/** The panel: the image, the heat over its patches at `alpha`, a colour bar 0 – its top. */
function drawHeat(
  canvas: HTMLCanvasElement,
  heat: Float64Array,
  grid: PatchGrid,
  image: ViewData | null,
  side: number,
  alpha: number,
): number {
  const h = Math.round((side * grid.rows) / grid.cols);
  const ctx = sized(canvas, side, h);
  ctx.imageSmoothingEnabled = true;
  const picture = image && pictureOf(image);
  if (picture) ctx.drawImage(picture, 0, 0, side, h);
  let top = 0;
  for (const v of heat) if (v > top) top = v;
  top = top || 1;
  // a pixel per patch, scaled up without smoothing: each patch one flat colour
  const cells = strip(1, grid.rows, grid.cols, (img) => {
    for (const [i, v] of heat.entries()) img.set([...viridis(v / top), 255], 4 * i);
  });
  ctx.imageSmoothingEnabled = false;
  ctx.globalAlpha = picture ? alpha : 1;
  ctx.drawImage(cells, 0, 0, side, h);
  ctx.globalAlpha = 1;
  return top;
}

/** The patch under a pointer event on a panel, or -1. */
function patchAt(canvas: HTMLCanvasElement, grid: PatchGrid, e: MouseEvent): number {
  const r = canvas.getBoundingClientRect();
  const col = Math.floor(((e.clientX - r.left) / r.width) * grid.cols);
  const row = Math.floor(((e.clientY - r.top) / r.height) * grid.rows);
  return row < 0 || col < 0 || row >= grid.rows || col >= grid.cols ? -1 : row * grid.cols + col;
}

/**
 * The "on the image" view of attention stage `host.stage`, whose map is `a`. Resolves to its
 * element once the image and (for the rollout) every layer's map have arrived.
 */
export async function imageAttention(
  a: AttentionData,
  grid: PatchGrid,
  host: ImageAttentionHost,
): Promise<HTMLElement> {
  const [image, rows] = await Promise.all([host.image(grid.input).catch(() => null), host.rows()]);
  const heats = [layerHeat(a, grid), rolloutHeat(rows, host.stage, grid, a.k_len)];
  const row = host.width >= 2 * 150 + 12;
  const side = row ? Math.floor((host.width - 12) / 2) : Math.min(host.width, 360);
  const readout = h("div", { class: "nfw-readout", "aria-live": "polite" }, "Point at a patch to read its weight.");
  const opacity = h("input", {
    type: "range",
    min: "0",
    max: "100",
    value: "60",
    "aria-label": "heat opacity",
    class: "nfw-range",
  });
  const panels = h("div", { class: `nfw-panels${row ? " nfw-panels-row" : ""}` });
  const draws: (() => void)[] = [];
  for (const heat of heats) {
    const box = h(
      "div",
      { class: "nfw-panel", "data-heat": heat === heats[0] ? "layer" : "rollout" },
      h("div", { class: "nfw-panel-cap" }, heat.title),
    );
    panels.append(box);
    if (!heat.values) {
      box.append(h("div", { class: "nfw-note" }, `Not drawn: ${heat.why}.`));
      continue;
    }
    const values = heat.values;
    const canvas = h("canvas", {
      class: "nfw-plot",
      "data-view-kind": "attention-image",
      "aria-label": `${heat.title}, over the input image`,
    });
    let peak = 0;
    for (const [i, v] of values.entries()) if (v > values[peak]!) peak = i;
    canvas.dataset.peak = `${Math.floor(peak / grid.cols)},${peak % grid.cols}`;
    const bar = h("div");
    box.append(canvas, bar, h("div", { class: "nfw-note" }, heat.why));
    const draw = () => {
      const top = drawHeat(canvas, values, grid, image, side, Number(opacity.value) / 100);
      const cb = colorBar(gradientStops(false, 0, top), 0, top);
      cb.prepend(h("span", { class: "nfw-colorbar-what" }, "this panel"));
      bar.replaceChildren(cb);
    };
    draws.push(draw);
    canvas.addEventListener("mousemove", (e) => {
      const i = patchAt(canvas, grid, e);
      if (i < 0) return;
      const [r, c] = [Math.floor(i / grid.cols), i % grid.cols];
      const px = (n: number) => `${n * grid.patch}–${(n + 1) * grid.patch - 1}`;
      const both = heats
        .map((x) => (x.values ? `${x.title.split(":")[0]} ${fmtWeight(x.values[i]!)}` : ""))
        .filter(Boolean)
        .join(" · ");
      readout.textContent = `patch row ${r}, column ${c} (pixels y ${px(r)}, x ${px(c)}): ${both}`;
    });
  }
  const drawAll = () => {
    for (const d of draws) d();
  };
  opacity.addEventListener("input", drawAll);
  const extra = grid.extra ? ` after ${grid.extra} leading token${grid.extra > 1 ? "s" : ""} (token 0: CLS)` : "";
  const words = `${grid.rows} × ${grid.cols} patches of ${grid.patch} × ${grid.patch} px of ${grid.input}${extra}${image ? "" : " · the input image is not available here"}`;
  const el = h(
    "div",
    { class: "nfw-attention-image" },
    h("div", { class: "nfw-note" }, words),
    panels,
    h("label", { class: "nfw-label" }, "heat over the image ", opacity),
    readout,
  ) as HTMLElement & { draw?: () => void };
  el.draw = drawAll;
  return el;
}
