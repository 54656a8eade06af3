/**
 * What the user asked of the model, for the view's words and figures: run B as an
 * intervention on run A ("h.1.attn switched off"), and activation patching (the patched
 * stages, the heat map of stage x position, the figures of the clean and corrupted runs).
 * Pure and DOM-free; every text is shown as text.
 */
import type { WireGraph } from "../wire";
import { at } from "../wire_check";

/** An intervention's spec (the `intervention` traitlet's words, notebook/experiments.py) after the stage's name. */
export function specPhrase(spec: string): string {
  if (spec === "zero") return "switched off (zero)";
  if (spec === "mean") return "replaced by its batch mean";
  if (spec.startsWith("heads ")) return `with ${spec}`;
  return `replaced by ${spec}`;
}

/** Run B in words when it is run A with an intervention: "h.1.attn switched off (zero)"; null otherwise. */
export function interventionLabel(graph: WireGraph): { stage: string; text: string } | null {
  const i = graph.intervention;
  if (!i || !graph.comparison) return null;
  const stage = at(graph.calls, i.stage).id;
  return { stage, text: `${stage} ${specPhrase(i.spec)}` };
}

/** The caption of run B's panels: "B · h.1.attn switched off (zero)", else "B · compared run". */
export function runBCaption(graph: WireGraph | null): string {
  const label = graph ? interventionLabel(graph) : null;
  return label ? `B · ${label.text}` : "B · compared run";
}

/** The patching heat map: a row per patched stage, a column per position, the share of the gap restored. */
export interface PatchMap {
  rows: string[]; // stage ids, in the order patched
  calls: number[];
  positions: number; // 0: whole outputs only (one column)
  values: (number | null)[][]; // rows x max(positions, 1)
  whole: (number | null)[]; // per row: the share its whole output restores
  clean: number | null;
  corrupted: number | null;
}

/** The heat map of the graph's patching (null: none). */
export function patchMap(graph: WireGraph): PatchMap | null {
  const p = graph.patching;
  if (!p) return null;
  return {
    rows: p.stages.map((c) => at(graph.calls, c).id),
    calls: p.stages,
    positions: p.positions,
    values: p.byPosition ?? p.whole.map((v) => [v]),
    whole: p.whole,
    clean: p.clean,
    corrupted: p.corrupted,
  };
}

/** The share of the gap a patched stage restores with its whole output (null: not patched, or unknown). */
export function patchedWhole(graph: WireGraph, call: number): number | null {
  const p = graph.patching;
  const i = p ? p.stages.indexOf(call) : -1;
  return p && i >= 0 ? (p.whole[i] ?? null) : null;
}
