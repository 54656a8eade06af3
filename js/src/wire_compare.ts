/**
 * The `comparison` traitlet (run A against run B, stage by stage), mirrored from
 * `encode_comparison` in `neural_flow_widget/wire/__init__.py`. Read through wire.ts.
 */
import { fail, intList, isInt, isObj, strList } from "./wire_check";

/** How one stage (or model end) differs between the runs. */
export interface StageDiff {
  relL2: number | null; // ||a - b|| / ||a|| (null where not finite)
  cosine: number | null;
  maxAbs: number | null; // max |a - b| over the elements compared
  exact: boolean; // every element compared (else the fixed sample)
  diverges: boolean; // relative L2 above rtol (or NaN), or a run raised here
  raised?: "a" | "b" | "both"; // a run's forward raised in this stage: no output to compare
}

/** A run of the comparison whose forward raised (run B's: the view must not say A = B). */
export interface RunFailure {
  run: "a" | "b";
  stage: string | null; // the stage that was running, its id in that run (null: outside every stage)
  call: number | null; // that stage's call index in run A (null: run A has no such stage)
  module: string | null; // the innermost module that raised
  message: string; // what raised where (text, never HTML)
}

export interface WireComparison {
  rtol: number;
  first: number | null; // call index (in run A) of the first divergent stage
  stages: Map<number, StageDiff>; // by call index
  ends: Map<string, StageDiff>; // by input / output node id
  onlyA: number[]; // call indices that ran in run A only
  onlyB: string[]; // stage ids that ran in run B only
  failed: RunFailure[]; // the runs whose forward raised ([]: both ran to the end)
}

const orNull = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : null);

function row(r: unknown, where: string): StageDiff {
  if (!Array.isArray(r) || r.length < 5) fail(where, "expected [rel L2, cosine, max |a-b|, exact, diverges]");
  const [relL2, cosine, maxAbs, exact, diverges] = r.slice(-5);
  return {
    relL2: orNull(relL2),
    cosine: orNull(cosine),
    maxAbs: orNull(maxAbs),
    exact: exact === true,
    diverges: diverges === true,
  };
}

/** Validate the comparison traitlet; null, absent or {} is "no comparison". */
export function decodeComparison(raw: unknown, nCalls: number): WireComparison | null {
  if (raw === null || raw === undefined) return null;
  if (!isObj(raw)) fail("comparison", "expected an object or null");
  if (!("stages" in raw)) return null;
  const inRange = (c: number, where: string) => {
    if (!isInt(c) || c < 0 || c >= nCalls) fail(where, `call index ${String(c)} out of range (0..${nCalls - 1})`);
    return c;
  };
  const stages = new Map<number, StageDiff>();
  (Array.isArray(raw.stages) ? raw.stages : []).forEach((r: unknown, i: number) => {
    const where = `comparison.stages[${i}]`;
    if (!Array.isArray(r)) fail(where, "expected [call index, ...]");
    stages.set(inRange(r[0] as number, where), row(r, where));
  });
  const ends = new Map<string, StageDiff>();
  if (isObj(raw.ends)) for (const [k, r] of Object.entries(raw.ends)) ends.set(k, row(r, `comparison.ends.${k}`));
  if (Array.isArray(raw.raised))
    raw.raised.forEach((r: unknown, i: number) => {
      const where = `comparison.raised[${i}]`;
      if (!Array.isArray(r) || (r[1] !== "a" && r[1] !== "b" && r[1] !== "both"))
        fail(where, 'expected [call index, "a" | "b" | "both"]');
      const d = stages.get(inRange(r[0] as number, where));
      if (d) d.raised = r[1] as "a" | "b" | "both";
    });
  const failed = (Array.isArray(raw.failed) ? raw.failed : []).map((f: unknown, i: number): RunFailure => {
    const where = `comparison.failed[${i}]`;
    if (!isObj(f) || (f.run !== "a" && f.run !== "b") || typeof f.message !== "string")
      fail(where, "expected {run, stage, call, module, message}");
    const text = (x: unknown) => (typeof x === "string" ? x : null);
    const call = f.call === null || f.call === undefined ? null : inRange(f.call as number, `${where}.call`);
    return { run: f.run, stage: text(f.stage), call, module: text(f.module), message: f.message };
  });
  const first = raw.first === null || raw.first === undefined ? null : inRange(raw.first as number, "comparison.first");
  return {
    rtol: typeof raw.rtol === "number" ? raw.rtol : 1e-3,
    first,
    stages,
    ends,
    onlyA: Array.isArray(raw.only_a)
      ? intList(raw.only_a, "comparison.only_a").map((c) => inRange(c, "comparison.only_a"))
      : [],
    onlyB: Array.isArray(raw.only_b) ? strList(raw.only_b, "comparison.only_b") : [],
    failed,
  };
}
