/**
 * Node fills by an activation statistic of the graph (`stats`: mean |x| or std), viridis on a
 * robust scale: log10 of the values (they span decades through a network), clipped where
 * the bulk of the stages ends (no further than 1.5 IQR beyond the quartiles, and, from 20
 * stages on, the 5th–95th percentiles), so that one outlier does not wash out every other
 * stage. A stage whose
 * output held NaN or ±Inf gets the NaN colour, never a ramp colour. Comparing two runs,
 * "divergence" colours each stage that differs by the relative L2 difference of its output
 * (A vs B, the same robust log scale over the differing stages only, so that it starts above
 * the comparison's tolerance; a fold shows its largest); a stage equal within the tolerance
 * is "same", pale and off the ramp (an identical stage and one at 0.086 never share a
 * colour), a stage where a run raised has the raised colour, stages of one run only a grey
 * of their own. After a backward pass, "grad" colours each stage by the norm of the
 * gradient of the loss with respect to its output (the same robust log scale; a fold: the
 * geometric mean of its members'; NaN/Inf in the NaN colour; a stage no gradient reached in a
 * grey of its own), and each edge by its source's: the gradient flowing back along it. With
 * activation patching, "patching" colours each patched stage by the share of the gap between
 * the corrupted and the clean run that restoring it closes, on a fixed linear scale 0 to 1.
 * DOM-free.
 */
import { gradientNonfinite, gradientOf } from "../model/gradients";
import type { CallTree } from "../model/tree";
import type { ViewGraph } from "../model/view_model";
import type { Scene, SceneNode } from "../scene/types";
import { NAN_MARK, nonfiniteColor, viridis, type RGB } from "./colormap";
import type { NodeFill } from "./cards";
import { at } from "../wire_check";

/** What the nodes are coloured by: their module type, a statistic of their output, or how it differs in run B. */
export type ColorMode = "type" | "mean_abs" | "std" | "divergence" | "grad" | "patching";

/** The scale of a colouring: ramp ends (values), whether values fell outside them, NaN/Inf seen. */
export interface StatScale {
  mode: Exclude<ColorMode, "type">;
  lo: number; // the value at the low end of the ramp (smaller ones are clipped to it)
  hi: number; // the value at the high end
  log: boolean; // log10 between lo and hi (false: fewer than two distinct positive values)
  clippedLo: boolean; // some values are below lo
  clippedHi: boolean; // some values are above hi
  nonfinite: boolean; // some drawn stages held NaN / Inf (drawn in the NaN colour)
  onlyA?: boolean; // divergence: some drawn stages ran in run A only (ONLY_A_FILL)
  rtol?: number; // divergence: the threshold above which a stage counts as diverging
  same?: boolean; // divergence: some drawn stages are equal within rtol (SAME_FILL)
  raised?: boolean; // divergence: in some drawn stages a run raised (RAISED_FILL)
  unramped?: boolean; // divergence: no drawn stage differs: the ramp is not shown
  none?: boolean; // grad: some drawn stages got no gradient (NO_GRAD_FILL)
}

/** How a node compares between runs A and B, for its fill. */
export type Divergence =
  | { kind: "raised" } // a run's forward raised in a call it shows: no output to compare
  | { kind: "nonfinite" } // a NaN / Inf difference (NaN in an output, shapes that differ)
  | { kind: "onlyA" } // every call it shows ran in run A only
  | { kind: "differs"; relL2: number } // its largest relative L2 above the tolerance
  | { kind: "same" }; // every call it shows with data is equal within the tolerance

/** A node's calls: a fold's members, else the node's own call. */
export function callsOf(view: ViewGraph, n: SceneNode): number[] {
  return n.kind === "fold" ? (view.byKey.get(n.key)?.run?.members ?? [n.call]) : [n.call];
}

/** How a node compares (null: no comparison, or nothing of it to compare); see Divergence. */
export function divergenceOf(tree: CallTree, view: ViewGraph, n: SceneNode): Divergence | null {
  const c = tree.graph.comparison;
  if (!c || n.call < 0) return null;
  const calls = callsOf(view, n);
  const rows = calls.map((m) => c.stages.get(m)).filter((d) => d !== undefined);
  if (rows.some((d) => d.raised)) return { kind: "raised" };
  if (rows.some((d) => d.relL2 === null && d.diverges)) return { kind: "nonfinite" };
  if (c.onlyA.length && calls.every((m) => c.onlyA.includes(m))) return { kind: "onlyA" };
  const differs = rows.filter((d) => d.diverges && d.relL2 !== null).map((d) => d.relL2 as number);
  if (differs.length) return { kind: "differs", relL2: Math.max(...differs) };
  return rows.some((d) => d.relL2 !== null) ? { kind: "same" } : null;
}

/** A node's statistic; a fold averages its members. By divergence: the relative L2 of a stage that differs (null for the rest). */
export function statOf(tree: CallTree, view: ViewGraph, n: SceneNode, mode: ColorMode): number | null {
  if (mode === "type" || n.call < 0) return null;
  if (mode === "divergence") {
    const d = divergenceOf(tree, view, n);
    return d?.kind === "differs" ? d.relL2 : null;
  }
  if (mode === "grad") return gradientOf(tree.graph, callsOf(view, n));
  if (mode === "patching") return patchedShare(tree, view, n);
  const col = mode === "std" ? 1 : 0;
  const vals = callsOf(view, n)
    .map((m) => tree.graph.stats[m]?.[col])
    .filter((v): v is number => typeof v === "number" && Number.isFinite(v));
  return vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : null;
}

/** A patched node's share of the gap restored (a fold: the mean of its patched members'). */
function patchedShare(tree: CallTree, view: ViewGraph, n: SceneNode): number | null {
  const p = tree.graph.patching;
  if (!p) return null;
  const shares = callsOf(view, n)
    .map((c) => p.whole[p.stages.indexOf(c)])
    .filter((v): v is number => typeof v === "number");
  return shares.length ? shares.reduce((a, b) => a + b, 0) / shares.length : null;
}

/** Whether a node shows a call whose output (by "grad": whose gradient) held NaN / Inf (its
 * statistic is of the finite rest). */
function isNonfinite(tree: CallTree, view: ViewGraph, n: SceneNode, mode: ColorMode): boolean {
  if (n.call < 0) return false;
  if (mode === "grad") return gradientNonfinite(tree.graph, callsOf(view, n));
  if (mode === "patching") return false;
  return callsOf(view, n).some((c) => tree.graph.nonfinite.includes(c));
}

/** The q-quantile (0..1) of sorted values, linear between neighbours. */
function quantile(sorted: number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const i = Math.floor(pos);
  const f = pos - i;
  const lo = at(sorted, i);
  return i + 1 < sorted.length ? lo * (1 - f) + sorted[i + 1]! * f : lo;
}

/** Robust ramp ends [lo, hi] of some values (on the scale they are given in). */
export function robustRange(values: number[]): [number, number] {
  const v = [...values].sort((a, b) => a - b);
  const least = v[0];
  const most = v[v.length - 1];
  if (least === undefined || most === undefined) throw new Error("robustRange of no values");
  const q1 = quantile(v, 0.25);
  const q3 = quantile(v, 0.75);
  const fence = 1.5 * (q3 - q1);
  // Percentiles of a handful of stages would clip the ordinary smallest and largest ones.
  const many = v.length >= 20;
  const lo = Math.max(many ? quantile(v, 0.05) : -Infinity, q1 - fence, least);
  const hi = Math.min(many ? quantile(v, 0.95) : Infinity, q3 + fence, most);
  return hi > lo ? [lo, hi] : [least, most];
}

/** The scale for some statistic values (finite; NaN/Inf stages are not among them). */
export function statScale(mode: StatScale["mode"], values: number[], nonfinite = false): StatScale | null {
  if (!values.length)
    return nonfinite ? { mode, lo: 0, hi: 0, log: false, clippedLo: false, clippedHi: false, nonfinite } : null;
  const positive = values.filter((x) => x > 0);
  // mean |x| and std are >= 0: a zero (a stage that outputs zeros) sits at the low end.
  const log = positive.length >= 2 && values.every((x) => x >= 0) && Math.min(...positive) < Math.max(...positive);
  const [a, b] = robustRange(log ? positive.map(Math.log10) : values);
  const lo = log ? 10 ** a : a;
  const hi = log ? 10 ** b : b;
  const eps = (hi - lo) * 1e-9;
  return {
    mode,
    lo,
    hi,
    log,
    clippedLo: values.some((x) => x < lo - eps),
    clippedHi: values.some((x) => x > hi + eps),
    nonfinite,
  };
}

/** Where a value sits on the ramp, 0..1 (clipped at the ends). */
export function rampPosition(scale: StatScale, v: number): number {
  if (!(scale.hi > scale.lo)) return 0.5;
  const t = scale.log
    ? (Math.log10(Math.max(v, scale.lo)) - Math.log10(scale.lo)) / (Math.log10(scale.hi) - Math.log10(scale.lo))
    : (v - scale.lo) / (scale.hi - scale.lo);
  return Math.min(1, Math.max(0, t));
}

function fillOf([r, g, b]: RGB): NodeFill {
  const light = 0.299 * r + 0.587 * g + 0.114 * b > 150;
  return { fill: `rgb(${r}, ${g}, ${b})`, ink: light ? "#111827" : "#f9fafb" };
}

/** The NaN / Inf fill of a node coloured by a statistic. */
export const NONFINITE_FILL = fillOf(nonfiniteColor(NAN_MARK));
/** The fill of a stage that ran in run A only (coloured by divergence): off the ramp. */
export const ONLY_A_FILL: NodeFill = { fill: "rgb(209, 213, 219)", ink: "#111827" };
/** The fill of a stage equal in both runs within the tolerance (coloured by divergence): pale, off the ramp. */
export const SAME_FILL: NodeFill = { fill: "rgb(226, 238, 232)", ink: "#374151" };
/** The fill of a stage where a run's forward raised (coloured by divergence): the raised colour (--nfw-raised). */
export const RAISED_FILL: NodeFill = { fill: "rgb(127, 29, 29)", ink: "#f9fafb" };
/** The fill of a stage no gradient reached (coloured by gradient norm): off the ramp. */
export const NO_GRAD_FILL: NodeFill = { fill: "rgb(229, 231, 235)", ink: "#4b5563" };

const OFF_RAMP: Record<Exclude<Divergence["kind"], "differs">, NodeFill> = {
  raised: RAISED_FILL,
  nonfinite: NONFINITE_FILL,
  onlyA: ONLY_A_FILL,
  same: SAME_FILL,
};

/** The scale of the drawn nodes' statistic, or null (colour by type, or no statistics). */
export function statRange(tree: CallTree, view: ViewGraph, scene: Scene, mode: ColorMode): StatScale | null {
  if (mode === "type") return null;
  if (mode === "divergence") return divergenceRange(tree, view, scene);
  const values: number[] = [];
  let bad = false;
  let none = false;
  for (const n of drawn(scene, mode)) {
    if (isNonfinite(tree, view, n, mode)) {
      bad = true;
      continue;
    }
    const v = statOf(tree, view, n, mode);
    if (v !== null) values.push(v);
    else if (mode === "grad" && n.call >= 0) none = true;
  }
  if (mode === "patching") return patchingScale(values);
  const scale = statScale(mode, values, bad);
  return scale && none ? { ...scale, none } : scale;
}

/** What a mode colours: the nodes; by gradient norm and by patching also the open blocks
 * (a stack: the member it shows), which those colourings are often about (a transformer's
 * blocks). */
function drawn(scene: Scene, mode: ColorMode): SceneNode[] {
  if (mode !== "grad" && mode !== "patching") return scene.nodes;
  const groups = scene.clusters.filter((c) => c.kind !== "run" && c.call >= 0);
  return [...scene.nodes, ...groups.map((c) => ({ key: c.key, call: c.call, kind: "stage" }) as SceneNode)];
}

/** Patching's scale: 0 (restoring the stage restores nothing) to 1 (all of the gap), linear,
 * the same for every view so that colours compare; values beyond it clipped. */
function patchingScale(values: number[]): StatScale | null {
  if (!values.length) return null;
  const eps = 1e-9;
  return {
    mode: "patching",
    lo: 0,
    hi: 1,
    log: false,
    clippedLo: values.some((v) => v < -eps),
    clippedHi: values.some((v) => v > 1 + eps),
    nonfinite: false,
  };
}

/** By divergence: the ramp over the stages that differ (all above rtol), and which off-ramp fills are drawn. */
function divergenceRange(tree: CallTree, view: ViewGraph, scene: Scene): StatScale | null {
  const c = tree.graph.comparison;
  if (!c) return null;
  const seen = new Set<Divergence["kind"]>();
  const values: number[] = [];
  for (const n of scene.nodes) {
    const d = divergenceOf(tree, view, n);
    if (!d) continue;
    seen.add(d.kind);
    if (d.kind === "differs") values.push(d.relL2);
  }
  if (!seen.size) return null;
  const off = {
    onlyA: seen.has("onlyA"),
    same: seen.has("same"),
    raised: seen.has("raised"),
    rtol: c.rtol,
    unramped: !values.length,
  };
  const ramp = statScale("divergence", values, seen.has("nonfinite"));
  return {
    ...(ramp ?? {
      mode: "divergence",
      lo: 0,
      hi: 0,
      log: false,
      clippedLo: false,
      clippedHi: false,
      nonfinite: seen.has("nonfinite"),
    }),
    ...off,
  };
}

export function statFills(
  tree: CallTree,
  view: ViewGraph,
  scene: Scene,
  mode: ColorMode,
): Map<string, NodeFill> | null {
  const scale = statRange(tree, view, scene, mode);
  if (!scale) return null;
  const out = new Map<string, NodeFill>();
  for (const n of drawn(scene, mode)) {
    if (mode === "divergence") {
      const d = divergenceOf(tree, view, n);
      if (d) out.set(n.key, d.kind === "differs" ? fillOf(viridis(rampPosition(scale, d.relL2))) : OFF_RAMP[d.kind]);
      continue;
    }
    if (isNonfinite(tree, view, n, mode)) {
      out.set(n.key, NONFINITE_FILL);
      continue;
    }
    const v = statOf(tree, view, n, mode);
    if (v !== null) out.set(n.key, fillOf(viridis(rampPosition(scale, v))));
    else if (mode === "grad" && n.call >= 0) out.set(n.key, NO_GRAD_FILL);
  }
  return out;
}

/** A fill as a line's colour: a light one (viridis' top end) darkened to read on a light page. */
function lineInk(f: NodeFill): string {
  const [r = 0, g = 0, b = 0] = (f.fill.match(/\d+/g) ?? []).map(Number);
  const k = 0.299 * r + 0.587 * g + 0.114 * b > 150 ? 0.72 : 1;
  return `rgb(${Math.round(r * k)}, ${Math.round(g * k)}, ${Math.round(b * k)})`;
}

/** By gradient norm: each edge in its source's colour (the gradient flowing back along it);
 * edges from a node with no fill of the ramp (a model input) keep theirs. Null in other modes. */
export function edgeStrokes(
  scene: Scene,
  fills: ReadonlyMap<string, NodeFill> | null,
  mode: ColorMode,
): Map<string, string> | null {
  if (mode !== "grad" || !fills) return null;
  const out = new Map<string, string>();
  for (const e of scene.edges) {
    const f = fills.get(e.src);
    if (f && f !== NO_GRAD_FILL) out.set(e.key, lineInk(f));
  }
  return out;
}
