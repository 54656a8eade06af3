/**
 * The inspector's activation patching section of a patched stage: how much of the gap between
 * the corrupted and the clean run restoring its output closes, and the causal-tracing heat map
 * (Meng et al., 2022): a row per patched stage (this one marked), a column per sequence
 * position (labelled by its token), each cell the share of the gap restored by restoring that
 * stage at that position alone, on the graph's patching scale (0 to 1, viridis). Canvas; the
 * labels are drawn as text, never HTML.
 */
import type { PatchMap } from "../model/experiments";
import { formatNumber, visible } from "../model/format";
import { cssColor, gradientStops, viridis } from "./colormap";
import { h, heading, textWidth } from "./dom";
import { colorBar, inkOf, sized } from "./plots";

const ROW_H = 22;
const LABEL_W = 96;

const share = (v: number | null) => (v === null ? "—" : `${Math.round(v * 100)}%`);

/** The section for one patched stage (`row`: its row of the map). */
export function patchingSection(
  map: PatchMap,
  row: number,
  tokens: string[] | null,
  width: number,
  draws: (() => void)[],
): HTMLElement {
  const stage = map.rows[row] ?? "";
  const whole = map.whole[row] ?? null;
  const sec = h(
    "section",
    { class: "nfw-section nfw-patching", "data-patching": stage },
    heading("Activation patching"),
  );
  const facts = h("div", { class: "nfw-stats", role: "list", "aria-label": "patching" });
  const fact = (k: string, v: string) =>
    facts.append(h("div", { class: "nfw-stat-k", role: "listitem" }, k), h("div", { class: "nfw-stat-v" }, v));
  fact("metric, clean", map.clean === null ? "—" : formatNumber(map.clean));
  fact("metric, corrupted", map.corrupted === null ? "—" : formatNumber(map.corrupted));
  if (whole !== null) fact(map.positions ? "restored, whole output" : "restored here", share(whole));
  sec.append(
    h(
      "div",
      { class: "nfw-note" },
      map.positions
        ? `Each cell: the corrupted run with one stage's output at one position restored from the clean run; its colour, the share of the gap between the two runs' metric that this closes (1: all of it). Row ${stage} is this stage.`
        : `The corrupted run with ${stage}'s output restored from the clean run closes ${share(whole)} of the gap between the two runs' metric.`,
    ),
    facts,
  );
  const canvas = h("canvas", {
    class: "nfw-plot nfw-patch-map",
    "data-view-kind": "patching",
    "aria-label": "causal tracing heat map",
  });
  sec.append(h("div", { class: "nfw-view" }, canvas));
  draws.push(() => drawPatchMap(canvas, map, row, tokens, width));
  sec.append(colorBar(gradientStops(false, 0, 1), 0, 1));
  return sec;
}

/** The heat map: stage rows, position columns (tokens under them), this stage's row outlined. */
export function drawPatchMap(
  canvas: HTMLCanvasElement,
  map: PatchMap,
  row: number,
  tokens: string[] | null,
  width: number,
) {
  const cols = Math.max(1, map.positions);
  const cell = Math.max(6, Math.min(48, Math.floor((width - LABEL_W) / cols)));
  const font = inkOf(canvas, "--nfw-font", "sans-serif");
  const labels = Array.from({ length: map.positions }, (_, c) => visible(tokens?.[c] ?? String(c)));
  const widest = Math.max(0, ...labels.map((l) => textWidth(l, `12px ${font}`)));
  const vertical = widest > cell - 4; // token labels read upwards under columns too narrow for them
  const labelsH = map.positions ? (vertical ? Math.min(72, widest + 8) : 20) : 0;
  const w = LABEL_W + cell * cols;
  const hgt = ROW_H * map.rows.length + labelsH + 4;
  const ctx = sized(canvas, w, hgt);
  const ink = inkOf(canvas, "--nfw-fg1", "#374151");
  ctx.font = `12px ${font}`;
  ctx.textBaseline = "middle";
  for (const [r, name] of shortNames(map.rows).entries()) {
    ctx.fillStyle = ink;
    ctx.font = `${r === row ? "700 " : ""}12px ${font}`;
    ctx.fillText(fitLabel(ctx, name, LABEL_W - 6, true), 0, r * ROW_H + ROW_H / 2);
    for (let c = 0; c < cols; c++) {
      const v = map.values[r]?.[c] ?? null;
      ctx.fillStyle = v === null ? "#d1d5db" : cssColor(viridis(Math.min(1, Math.max(0, v))));
      ctx.fillRect(LABEL_W + c * cell, r * ROW_H + 1, cell - 1, ROW_H - 2);
    }
  }
  ctx.strokeStyle = inkOf(canvas, "--nfw-accent", "#2563eb");
  ctx.lineWidth = 2;
  ctx.strokeRect(LABEL_W - 1, row * ROW_H, cell * cols + 1, ROW_H);
  ctx.font = `12px ${font}`;
  ctx.fillStyle = ink;
  const top = ROW_H * map.rows.length + 4;
  for (const [c, label] of labels.entries()) {
    const x = LABEL_W + c * cell + cell / 2;
    if (!vertical) {
      ctx.textAlign = "center";
      ctx.fillText(fitLabel(ctx, label, cell - 2), x, top + 7);
      continue;
    }
    ctx.save();
    ctx.translate(x, top);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "right";
    ctx.fillText(fitLabel(ctx, label, labelsH - 4), 0, 0);
    ctx.restore();
  }
  ctx.textAlign = "left";
  canvas.onmousemove = (e) => {
    const rect = canvas.getBoundingClientRect();
    const c = Math.floor((e.clientX - rect.left - LABEL_W) / cell);
    const r = Math.floor((e.clientY - rect.top) / ROW_H);
    const v = map.values[r]?.[c];
    canvas.title =
      c >= 0 && c < cols && v !== undefined
        ? `${map.rows[r]}${map.positions ? ` at ${c} (${visible(tokens?.[c] ?? String(c))})` : ""}: restores ${share(v)} of the gap`
        : "";
  };
}

/** Stage ids without the part they all share ("transformer.h.0", "transformer.h.1" -> "h.0", "h.1"). */
export function shortNames(ids: string[]): string[] {
  if (ids.length < 2) return ids;
  const parts = ids.map((id) => id.split("."));
  let k = 0;
  while (parts.every((p) => p.length > k + 1 && p[k] === parts[0]![k])) k++;
  return parts.map((p) => p.slice(k).join("."));
}

/** Text cut to a width: its end kept (`keepEnd`: a stage's last parts say which one), or its start. */
function fitLabel(ctx: CanvasRenderingContext2D, text: string, max: number, keepEnd = false): string {
  if (ctx.measureText(text).width <= max) return text;
  let t = text;
  while (t.length > 1 && ctx.measureText(`…${t}`).width > max) t = keepEnd ? t.slice(1) : t.slice(0, -1);
  return keepEnd ? `…${t}` : `${t}…`;
}
