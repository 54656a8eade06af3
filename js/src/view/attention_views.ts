/**
 * Views of attention beyond one heatmap: the head view (one layer: a line from each query
 * token to each key token it attends to, one colour per head, heads toggled, a token hovered
 * or focused keeps only its lines) and the model view (every attention stage × every head as
 * small maps in one grid; a click opens that layer and head). Both read the per-head maps a
 * reply carries (`AttentionData.grid`: exact up to 64 positions, block means beyond, which
 * the labels then say), and colour on one scale (view/attention_scale.ts) stated beside them.
 */
import type { AttentionData } from "../wire";
import { categoricalColor, cssColor, viridis } from "./colormap";
import { h } from "./dom";
import { inkOf, sized } from "./plots";
import { at } from "../wire_check";

/** A scale for probabilities: the same top for every map drawn together, each map's own top,
 * or the whole range of a probability (0–1). */
export type AttentionScale = "shared" | "per map" | "absolute";

/** The per-head maps of a reply: [heads, queries', keys'] and whether they are exact. */
export function headMaps(
  a: AttentionData,
): { maps: Float32Array; heads: number; q: number; k: number; exact: boolean } | null {
  if (!a.grid || !a.gridShape) return null;
  const [heads, q, k] = a.gridShape;
  return { maps: a.grid, heads, q, k, exact: q === a.q_len && k === a.k_len };
}

/** The label of position (or block) i of n drawn for `length` positions: the token when the
 * map is exact and the tokens are this sequence's, else the positions a block covers. */
export function positionLabel(i: number, n: number, length: number, tokens: string[] | null): string {
  if (n === length) return (tokens?.length === length ? tokens[i] : undefined) ?? String(i);
  const size = Math.ceil(length / n);
  const lo = i * size;
  return `${lo}–${Math.min(length, lo + size) - 1}`;
}

function maxIn(values: Float32Array, from: number, n: number): number {
  let m = 0;
  for (const v of values.subarray(from, from + n)) if (v > m) m = v;
  return m || 1;
}

/** The label of row (or column) i of a map that covers positions start..end in blocks of
 * `size`: the token (or the position) for a single position, else the range of positions. */
export function windowLabel(i: number, start: number, end: number, size: number, tokens: string[] | null): string {
  const lo = start + i * size;
  if (size === 1) return tokens?.[lo] ?? String(lo);
  return `${lo}–${Math.min(end, lo + size) - 1}`;
}

/** A zoom ×4 around row i, column j of a map: the new window of positions, or null when the
 * map is exact and small enough already. At least 64 positions a side, within the sequence. */
export function zoomWindow(a: AttentionData, i: number, j: number): [number, number, number, number] | null {
  const [q0, q1, k0, k1] = a.window;
  if (a.pool[0] === 1 && a.pool[1] === 1 && q1 - q0 <= 64 && k1 - k0 <= 64) return null;
  const around = (start: number, end: number, size: number, at: number, length: number): [number, number] => {
    const span = Math.min(length, Math.max(64, Math.ceil((end - start) / 4)));
    const centre = start + (at + 0.5) * size;
    const lo = Math.max(0, Math.min(length - span, Math.round(centre - span / 2)));
    return [lo, lo + span];
  };
  return [...around(q0, q1, a.pool[0], i, a.q_len), ...around(k0, k1, a.pool[1], j, a.k_len)];
}

/** The top of the colour scale for head `h` of `maps` under `scale` (shared: over `heads`). */
export function topOf(
  maps: Float32Array,
  per: number,
  head: number,
  heads: Iterable<number>,
  scale: AttentionScale,
): number {
  if (scale === "absolute") return 1;
  if (scale === "per map") return maxIn(maps, head * per, per);
  let m = 0;
  for (const hh of heads) m = Math.max(m, maxIn(maps, hh * per, per));
  return m || 1;
}

const ROW = 16; // px per token row in the head view

/**
 * The head view of one attention call: chips to toggle heads, the queries on the left, the
 * keys on the right, a line for each weight (its opacity the weight on the scale). Hover a
 * token (or focus it with Tab and arrows) to keep its lines only. `data-lines` on the canvas
 * counts the lines drawn, `data-heads` the heads shown (tests read them).
 */
export function headView(a: AttentionData, tokens: string[] | null, width: number, scale: AttentionScale): HTMLElement {
  const hm = headMaps(a);
  if (!hm) return h("div", { class: "nfw-note" }, "No per-head maps here.");
  const { maps, heads, q, k, exact } = hm;
  const per = q * k;
  const on = new Set(Array.from({ length: heads }, (_, i) => i));
  let focus: { side: "q" | "k"; index: number } | null = null;
  const canvas = h("canvas", {
    class: "nfw-plot nfw-head-view",
    "data-view-kind": "attention-head-view",
    "aria-label": "head view: lines from query tokens to key tokens, one colour per head",
  });
  const chips = h("div", { class: "nfw-chips", role: "group", "aria-label": "heads" });
  const chipOf: HTMLButtonElement[] = [];
  for (let i = 0; i < heads; i++) {
    const chip = h(
      "button",
      {
        class: "nfw-chip-btn",
        type: "button",
        "aria-pressed": "true",
        "data-head": i,
        title: `head ${i}: show or hide its lines`,
      },
      String(i),
    );
    chip.style.setProperty("--nfw-chip", cssColor(categoricalColor(i)));
    chip.addEventListener("click", (e) => {
      if ((e as MouseEvent).shiftKey) on.clear(); // shift-click: this head alone
      if (on.has(i) && !(e as MouseEvent).shiftKey) on.delete(i);
      else on.add(i);
      draw();
    });
    chipOf.push(chip);
    chips.append(chip);
  }
  const all = h("button", { class: "nfw-btn nfw-chip-all", type: "button" }, "all");
  all.addEventListener("click", () => {
    for (let i = 0; i < heads; i++) on.add(i);
    draw();
  });
  const none = h("button", { class: "nfw-btn nfw-chip-all", type: "button" }, "none");
  none.addEventListener("click", () => {
    on.clear();
    draw();
  });
  chips.append(all, none);
  const qLabels = Array.from({ length: q }, (_, i) => positionLabel(i, q, a.q_len, tokens));
  const kLabels = Array.from({ length: k }, (_, j) => positionLabel(j, k, a.k_len, tokens));
  const longest = Math.max(
    ...qLabels.map((s) => Math.min(14, s.length)),
    ...kLabels.map((s) => Math.min(14, s.length)),
  );
  const labelW = Math.min(120, 14 + 7 * longest);
  const rows = Math.max(q, k);
  const heightPx = rows * ROW + 12;
  const x0 = labelW;
  const x1 = width - labelW;
  const y = (i: number, n: number) => 6 + (i + 0.5) * ((rows * ROW) / n);
  const trim = (s: string) => (s.length > 14 ? `${s.slice(0, 13)}…` : s);

  function draw() {
    const ctx = sized(canvas, width, heightPx);
    const ink = inkOf(canvas, "--nfw-fg1", "#1f2937");
    const dim = inkOf(canvas, "--nfw-fg3", "#9ca3af");
    ctx.font = `11px ${inkOf(canvas, "--nfw-mono", "monospace")}`;
    ctx.textBaseline = "middle";
    let lines = 0;
    ctx.lineWidth = 1.6;
    for (const hh of on) {
      const top = topOf(maps, per, hh, on, scale);
      const [r, g, b] = categoricalColor(hh);
      ctx.strokeStyle = `rgb(${r},${g},${b})`;
      for (let i = 0; i < q; i++) {
        if (focus?.side === "q" && focus.index !== i) continue;
        for (let j = 0; j < k; j++) {
          if (focus?.side === "k" && focus.index !== j) continue;
          const w = maps[hh * per + i * k + j]! / top;
          if (w < 0.02) continue; // too faint to see
          ctx.globalAlpha = Math.min(1, w) * 0.85;
          ctx.beginPath();
          ctx.moveTo(x0, y(i, q));
          ctx.lineTo(x1, y(j, k));
          ctx.stroke();
          lines++;
        }
      }
    }
    ctx.globalAlpha = 1;
    for (let i = 0; i < q; i++) {
      ctx.fillStyle = focus && !(focus.side === "q" && focus.index === i) ? dim : ink;
      ctx.textAlign = "right";
      ctx.fillText(trim(at(qLabels, i)), x0 - 6, y(i, q));
    }
    for (let j = 0; j < k; j++) {
      ctx.fillStyle = focus && !(focus.side === "k" && focus.index === j) ? dim : ink;
      ctx.textAlign = "left";
      ctx.fillText(trim(at(kLabels, j)), x1 + 6, y(j, k));
    }
    canvas.dataset.lines = String(lines);
    canvas.dataset.heads = String(on.size);
    canvas.dataset.focus = focus ? `${focus.side}:${focus.index}` : "";
    for (const [i, c] of chipOf.entries()) c.setAttribute("aria-pressed", String(on.has(i)));
  }

  const pick = (e: MouseEvent): { side: "q" | "k"; index: number } | null => {
    const r = canvas.getBoundingClientRect();
    const px = e.clientX - r.left;
    const py = e.clientY - r.top - 6;
    if (py < 0 || py > rows * ROW) return null;
    if (px < x0) return { side: "q", index: Math.min(q - 1, Math.floor((py / (rows * ROW)) * q)) };
    if (px > x1) return { side: "k", index: Math.min(k - 1, Math.floor((py / (rows * ROW)) * k)) };
    return null;
  };
  canvas.addEventListener("mousemove", (e) => {
    const next = pick(e);
    if (next?.side === focus?.side && next?.index === focus?.index) return;
    focus = next;
    draw();
  });
  canvas.addEventListener("mouseleave", () => {
    focus = null;
    draw();
  });
  const note = h(
    "div",
    { class: "nfw-note" },
    `${heads} heads · queries on the left, keys on the right; a line's opacity is its weight (${scale === "absolute" ? "0–1" : scale === "per map" ? "each head on its own top" : "on the top of the heads shown"}). Hover a token for its lines; shift-click a head for it alone.${exact ? "" : ` Block means of ${Math.ceil(a.q_len / q)}×${Math.ceil(a.k_len / k)} positions (${a.q_len} × ${a.k_len} in all).`}`,
  );
  const box = h("div", { class: "nfw-head-view-box" }, chips, canvas, note);
  (box as HTMLElement & { draw?: () => void }).draw = draw;
  return box;
}

/** One stage's row of the model view: its id and its attention (null: not (yet) loaded). */
export interface ModelRow {
  id: string;
  a: AttentionData | null;
}

/**
 * The model view: a row per attention stage, a column per head, each cell that head's map.
 * `pick(stage, head)` on a click. Cells carry data-cell="stage|head" (tests count them).
 */
export function modelView(
  rows: ModelRow[],
  width: number,
  scale: AttentionScale,
  pick: (stage: string, head: number) => void,
): HTMLElement {
  const heads = Math.max(1, ...rows.map((r) => r.a?.gridShape?.[0] ?? 0));
  const labelW = Math.min(150, 16 + 6.6 * Math.max(...rows.map((r) => r.id.length)));
  const cell = Math.max(14, Math.min(56, Math.floor((width - labelW - 4) / heads) - 2));
  // the shared top: over every head of every stage drawn
  let shared = 0;
  for (const r of rows) {
    const hm = r.a && headMaps(r.a);
    if (hm) shared = Math.max(shared, maxIn(hm.maps, 0, hm.maps.length));
  }
  const grid = h("div", {
    class: "nfw-model-view",
    role: "grid",
    "aria-label": "model view: attention stages by heads",
  });
  grid.style.gridTemplateColumns = `${labelW}px repeat(${heads}, ${cell}px)`;
  grid.append(h("div", { class: "nfw-mv-corner" }, "stage \\ head"));
  for (let hh = 0; hh < heads; hh++) grid.append(h("div", { class: "nfw-mv-head" }, String(hh)));
  const draws: (() => void)[] = [];
  for (const r of rows) {
    grid.append(h("div", { class: "nfw-mv-label", title: r.id }, r.id));
    const hm = r.a && headMaps(r.a);
    for (let hh = 0; hh < heads; hh++) {
      if (!hm || hh >= hm.heads) {
        grid.append(h("div", { class: "nfw-mv-empty" }, r.a ? "" : "…"));
        continue;
      }
      const c = h("canvas", {
        class: "nfw-mv-cell",
        "data-cell": `${r.id}|${hh}`,
        title: `${r.id} · head ${hh}: open it`,
        role: "gridcell",
        tabindex: "0",
      });
      c.addEventListener("click", () => pick(r.id, hh));
      c.addEventListener("keydown", (e) => (e.key === "Enter" || e.key === " ") && pick(r.id, hh));
      grid.append(c);
      const per = hm.q * hm.k;
      const top = scale === "absolute" ? 1 : scale === "per map" ? maxIn(hm.maps, hh * per, per) : shared || 1;
      draws.push(() => drawSmall(c, hm.maps, hh * per, hm.q, hm.k, top, cell));
    }
  }
  (grid as HTMLElement & { draw?: () => void }).draw = () => {
    for (const f of draws) f();
  };
  return grid;
}

function drawSmall(
  canvas: HTMLCanvasElement,
  maps: Float32Array,
  from: number,
  q: number,
  k: number,
  top: number,
  size: number,
) {
  const src = document.createElement("canvas");
  src.width = k;
  src.height = q;
  const sctx = src.getContext("2d")!;
  const img = sctx.createImageData(k, q);
  for (let i = 0; i < q * k; i++) img.data.set([...viridis(Math.min(1, maps[from + i]! / top)), 255], 4 * i);
  sctx.putImageData(img, 0, 0);
  const ctx = sized(canvas, size, size);
  ctx.drawImage(src, 0, 0, k, q, 0, 0, size, size);
}
