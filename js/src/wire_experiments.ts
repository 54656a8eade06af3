/**
 * The traitlets of what a user asks of the model from the graph, mirrored from
 * `neural_flow_widget/notebook/experiments.py` and `encode_patching` in
 * `neural_flow_widget/wire/graph.py`: `intervention` (run B is run A with one stage's output
 * replaced) and `patching` (activation patching of this run against a corrupted one). Read
 * through wire.ts.
 */
import { fail, isInt, isObj } from "./wire_check";

/** Run B is this run with one intervention: which stage, and what was done to it, in words. */
export interface WireIntervention {
  stage: number; // call index of the stage whose output was replaced
  spec: string; // "zero", "mean", "heads 2, 5 off", a function's name (text, never HTML)
}

/** Activation patching: each patched stage restored from the clean run into the corrupted one. */
export interface WirePatching {
  stages: number[]; // call indices of the stages patched
  positions: number; // sequence positions patched one by one (0: none)
  scores: (number | null)[]; // per stage: the metric with its whole output restored
  /** per stage, the share of the gap between the corrupted and the clean run that restoring it
   * closes (1: all of it), its whole output (`whole`) and, with positions, per position */
  whole: (number | null)[];
  byPosition: (number | null)[][] | null; // per stage x position; null: not patched by position
  clean: number | null; // the metric of the clean run (this one)
  corrupted: number | null; // the metric of the corrupted run
}

const orNull = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : null);

/** The `intervention` traitlet; null, absent or {} is none. */
export function decodeIntervention(raw: unknown, nCalls: number): WireIntervention | null {
  if (raw === null || raw === undefined) return null;
  if (!isObj(raw)) fail("intervention", "expected {stage, spec} or null");
  if (!("stage" in raw)) return null;
  if (!isInt(raw.stage) || raw.stage < 0 || raw.stage >= nCalls)
    fail("intervention.stage", `call index ${String(raw.stage)} out of range (0..${nCalls - 1})`);
  if (typeof raw.spec !== "string") fail("intervention.spec", "expected the intervention in words");
  return { stage: raw.stage, spec: raw.spec };
}

/**
 * The `patching` traitlet; null, absent or {} is none. With positions, `restored` is per stage
 * x position and a stage's whole-output share is its score against the clean and corrupted
 * metrics (what `Patching.restored()` computes for the whole output).
 */
export function decodePatching(raw: unknown, nCalls: number): WirePatching | null {
  if (raw === null || raw === undefined) return null;
  if (!isObj(raw)) fail("patching", "expected an object or null");
  if (!("stages" in raw)) return null;
  const { stages, positions, scores, restored } = raw;
  if (!Array.isArray(stages) || !stages.every((c) => isInt(c) && c >= 0 && c < nCalls))
    fail("patching.stages", `expected call indices in 0..${nCalls - 1}`);
  if (!isInt(positions) || positions < 0) fail("patching.positions", "expected a count >= 0");
  if (!Array.isArray(scores) || scores.length !== stages.length)
    fail("patching.scores", `expected one score per stage (${stages.length})`);
  if (!Array.isArray(restored) || restored.length !== stages.length)
    fail("patching.restored", `expected one entry per stage (${stages.length})`);
  const clean = orNull(raw.clean);
  const corrupted = orNull(raw.corrupted);
  const gap = clean !== null && corrupted !== null ? clean - corrupted : 0;
  const share = (s: unknown) => {
    const v = orNull(s);
    return v === null ? null : gap ? (v - (corrupted as number)) / gap : 0;
  };
  let byPosition: (number | null)[][] | null = null;
  if (positions > 0) {
    byPosition = restored.map((row: unknown, i: number) => {
      if (!Array.isArray(row) || row.length !== positions)
        fail(`patching.restored[${i}]`, `expected one share per position (${positions})`);
      return row.map(orNull);
    });
  } else if (restored.some((r: unknown) => Array.isArray(r))) {
    fail("patching.restored", "per stage x position, but positions is 0");
  }
  return {
    stages: stages as number[],
    positions,
    scores: scores.map(orNull),
    whole: byPosition ? scores.map(share) : restored.map(orNull),
    byPosition,
    clean,
    corrupted,
  };
}
