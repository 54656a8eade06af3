/**
 * Wrapping a long arrangement into bands (columns side by side in TB, rows one under the
 * other in LR) so that the whole model fits the canvas at a scale its names read at, instead
 * of a thin column in a wide empty canvas: the root, for the canvas (wrapBands), and an open
 * group, into as many bands as the fit of the whole asks of it (wrapInto; app/framing.ts
 * chooses the count). A band ends only between rows that one edge crosses (the trunk, drawn
 * on from the bottom of one band over the top of the gap into the next; a group's entries
 * and exits count as edges from above its first row and below its last). The number of
 * bands of the root: the one that shows the model largest (up to a point past which larger
 * does not help), fewer on a tie; when no number fits, the most bands whose width leaves the
 * reserved strip free (the first view then shows the start of every band at the readable
 * scale, the minimap the rest). Flow coordinates; pure, no DOM.
 */
import { at } from "../wire_check";
import { type Arranged, type Direction, FIT_MARGIN as MARGIN, type FitTarget, type FlowGroup } from "./flow";

export const BAND_GAP = 64;
const GROUP_BAND_GAP = 44; // inside a group: room for the connector up the gap
const TOP_MARGIN = 28; // room above the bands for the connectors
const MAX_BANDS = 8;

interface Rows {
  lo: Float64Array; // per row: its across extent ...
  hi: Float64Array;
  a0: Float64Array; // ... and its along extent
  a1: Float64Array;
  cutOk: (r: number) => boolean; // whether a band may end after row r
}

/** The extents of each row and where a band may end. */
function rowsOf(arr: Arranged, g: FlowGroup | null): Rows {
  const { rows, items, a, c } = arr;
  const lo = new Float64Array(rows).fill(Infinity);
  const hi = new Float64Array(rows).fill(-Infinity);
  const a0 = new Float64Array(rows).fill(Infinity);
  const a1 = new Float64Array(rows).fill(-Infinity);
  for (let v = 0; v < items.length; v++) {
    const r = arr.row[v]!;
    lo[r] = Math.min(lo[r]!, c[v]!);
    hi[r] = Math.max(hi[r]!, c[v]! + at(items, v).ac);
    a0[r] = Math.min(a0[r]!, a[v]!);
    a1[r] = Math.max(a1[r]!, a[v]! + at(items, v).al);
  }
  // how many edges cross below each row (a bus' tap needs no connector)
  const crossing = new Int32Array(rows + 1);
  const span = (r0: number, r1: number) => {
    if (r1 <= r0) return;
    crossing[Math.max(r0, 0)]!++;
    crossing[r1]!--;
  };
  for (const e of arr.edges) {
    if (e.src < 0 || e.dst < 0 || e.hidden) continue;
    span(Math.min(arr.row[e.src]!, arr.row[e.dst]!), Math.max(arr.row[e.src]!, arr.row[e.dst]!));
  }
  for (const v of g?.entries ?? []) span(0, arr.row[v]!);
  for (const v of g?.exits ?? []) span(arr.row[v]!, rows - 1);
  for (let r = 1; r < rows; r++) crossing[r]! += crossing[r - 1]!;
  return { lo, hi, a0, a1, cutOk: (r) => crossing[r] === 1 };
}

/** The cuts that split the rows into `bands` of about equal length; null when there are too few. */
function evenCuts(rows: Rows, count: number, bands: number): number[] | null {
  const { a0, a1, cutOk } = rows;
  const total = a1[count - 1]! - a0[0]!;
  const cuts: number[] = [];
  const target = total / bands;
  for (let r = 0; r < count - 1 && cuts.length < bands - 1; r++) {
    if (!cutOk(r)) continue;
    const reach = a1[r]! - a0[0]!;
    if (reach >= target * (cuts.length + 1) - 1) {
      // this cut or the previous allowed one, whichever ends nearer the target
      let prev = -1;
      for (let q = r - 1; q > (cuts[cuts.length - 1] ?? -1); q--) {
        if (cutOk(q)) {
          prev = q;
          break;
        }
      }
      const here = Math.abs(reach - target * (cuts.length + 1));
      const there = prev >= 0 ? Math.abs(a1[prev]! - a0[0]! - target * (cuts.length + 1)) : Infinity;
      cuts.push(there < here ? prev : r);
    }
  }
  return cuts.length === bands - 1 ? cuts : null;
}

/** Each band's across and along extent with `cuts`, the gaps between them counted. */
function extent(rows: Rows, count: number, cuts: number[], gap: number): { across: number; along: number } {
  let across = 0;
  let along = 0;
  let first = 0;
  for (const last of [...cuts, count - 1]) {
    let lo = Infinity;
    let hi = -Infinity;
    for (let r = first; r <= last; r++) {
      lo = Math.min(lo, rows.lo[r]!);
      hi = Math.max(hi, rows.hi[r]!);
    }
    across += hi - lo;
    along = Math.max(along, rows.a1[last]! - rows.a0[first]! + (first > 0 ? TOP_MARGIN : 0));
    first = last + 1;
  }
  across += cuts.length * gap;
  if (cuts.length) along += 20; // the connector under a band
  return { across, along };
}

/** Move each band beside the one before; how many bands there are. */
function applyCuts(arr: Arranged, rows: Rows, cuts: number[], gap: number): number {
  if (cuts.length === 0) return 1;
  const bandOf = new Int32Array(arr.rows);
  let b = 0;
  for (let r = 0; r < arr.rows; r++) {
    bandOf[r] = b;
    if (cuts.includes(r)) b++;
  }
  let cursor = 0;
  let first = 0;
  for (let k = 0; k <= cuts.length; k++) {
    const last = cuts[k] ?? arr.rows - 1; // the last band runs to the last row
    let lo = Infinity;
    let hi = -Infinity;
    for (let r = first; r <= last; r++) {
      lo = Math.min(lo, rows.lo[r]!);
      hi = Math.max(hi, rows.hi[r]!);
    }
    const shiftA = (k > 0 ? TOP_MARGIN : 0) - rows.a0[first]!; // the connector comes in from above
    const shiftC = cursor - lo;
    for (let v = 0; v < arr.items.length; v++) {
      if (bandOf[arr.row[v]!] !== k) continue;
      arr.a[v]! += shiftA;
      arr.c[v]! += shiftC;
      arr.band[v] = k;
    }
    if (k === 0) arr.lineIn += shiftC;
    if (k === cuts.length) arr.lineOut += shiftC;
    cursor += hi - lo + gap;
    first = last + 1;
  }
  return cuts.length + 1;
}

/** Wrap the root for the canvas `fit`; how many bands it took. */
export function wrapBands(arr: Arranged, fit: FitTarget, dir: Direction): number {
  const { rows: count } = arr;
  if (count < 4) return 1;
  const rows = rowsOf(arr, null);
  const alongCap = ((dir === "TB" ? fit.h : fit.w) - 2 * MARGIN) / fit.k;
  const acrossCap = ((dir === "TB" ? fit.w : fit.h) - 2 * MARGIN) / fit.k;
  const plan = (cuts: number[]) => {
    const { across, along } = extent(rows, count, cuts, BAND_GAP);
    return { cuts, across, scale: Math.min(acrossCap / across, alongCap / along) };
  };
  const whole = plan([]);
  const plans = [whole];
  for (let bands = 2; bands <= MAX_BANDS; bands++) {
    const cuts = evenCuts(rows, count, bands);
    if (cuts) plans.push(plan(cuts));
  }
  let best = plans.find((p) => p.scale >= 1) ?? whole;
  if (best.scale < 1) {
    const room = acrossCap - fit.reserve / fit.k;
    for (const p of plans) if (p.across <= room && p.scale > best.scale) best = p;
  }
  return applyCuts(arr, rows, best.cuts, BAND_GAP);
}

/** Wrap an open group's arrangement into `bands` (fewer where its rows allow no more cuts). */
export function wrapInto(arr: Arranged, g: FlowGroup, bands: number): number {
  if (bands < 2 || arr.rows < 2) return 1;
  const rows = rowsOf(arr, g);
  for (let b = Math.min(bands, arr.rows); b >= 2; b--) {
    const cuts = evenCuts(rows, arr.rows, b);
    if (cuts) return applyCuts(arr, rows, cuts, GROUP_BAND_GAP);
  }
  return 1;
}
