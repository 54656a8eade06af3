/**
 * Wrapping a long root into bands (columns side by side in TB, rows one under the other in
 * LR) so that the whole model fits the canvas at a scale its names read at, instead of a thin
 * column in a wide empty canvas. A band ends only between rows that one edge crosses (the
 * trunk, drawn on from the bottom of one band over the top of the gap into the next). The
 * number of bands: the one that shows the model largest (up to a point past which larger does
 * not help), fewer on a tie; when no number fits, the most bands whose width leaves the
 * reserved strip free (the first view then shows the start of every band at the readable
 * scale, the minimap the rest). Flow coordinates; pure, no DOM.
 */
import { at } from "../wire_check";
import { type Arranged, type Direction, FIT_MARGIN as MARGIN, type FitTarget } from "./flow";

export const BAND_GAP = 64;
const TOP_MARGIN = 28; // room above the bands for the connectors
const MAX_BANDS = 8;

interface Plan {
  cuts: number[]; // the last row of each band but the last
  scale: number; // readable scale multiples the canvas allows
  across: number;
}

export function wrapBands(arr: Arranged, fit: FitTarget, dir: Direction): number {
  const { rows, items, a, c } = arr;
  const n = items.length;
  if (rows < 4) return 1;
  const rowLo = new Float64Array(rows).fill(Infinity);
  const rowHi = new Float64Array(rows).fill(-Infinity);
  const rowA0 = new Float64Array(rows).fill(Infinity);
  const rowA1 = new Float64Array(rows).fill(-Infinity);
  for (let v = 0; v < n; v++) {
    const r = arr.row[v]!;
    rowLo[r] = Math.min(rowLo[r]!, c[v]!);
    rowHi[r] = Math.max(rowHi[r]!, c[v]! + at(items, v).ac);
    rowA0[r] = Math.min(rowA0[r]!, a[v]!);
    rowA1[r] = Math.max(rowA1[r]!, a[v]! + at(items, v).al);
  }
  // how many edges cross below each row
  const crossing = new Int32Array(rows + 1);
  for (const e of arr.edges) {
    if (e.src < 0 || e.dst < 0 || e.hidden) continue; // (a bus' tap needs no connector)
    const r0 = Math.min(arr.row[e.src]!, arr.row[e.dst]!);
    const r1 = Math.max(arr.row[e.src]!, arr.row[e.dst]!);
    crossing[r0]!++;
    crossing[r1]!--;
  }
  for (let r = 1; r < rows; r++) crossing[r]! += crossing[r - 1]!;
  const cutOk = (r: number) => crossing[r] === 1;
  const alongCap = ((dir === "TB" ? fit.h : fit.w) - 2 * MARGIN) / fit.k;
  const acrossCap = ((dir === "TB" ? fit.w : fit.h) - 2 * MARGIN) / fit.k;
  const total = rowA1[rows - 1]! - rowA0[0]!;

  const measure = (cuts: number[]): Plan => {
    let across = 0;
    let along = 0;
    let first = 0;
    for (const last of [...cuts, rows - 1]) {
      let lo = Infinity;
      let hi = -Infinity;
      for (let r = first; r <= last; r++) {
        lo = Math.min(lo, rowLo[r]!);
        hi = Math.max(hi, rowHi[r]!);
      }
      across += hi - lo;
      along = Math.max(along, rowA1[last]! - rowA0[first]! + (first > 0 ? TOP_MARGIN : 0));
      first = last + 1;
    }
    across += cuts.length * BAND_GAP;
    if (cuts.length) along += 20; // the connector under a band
    return { cuts, across, scale: Math.min(acrossCap / across, alongCap / along) };
  };
  const whole = measure([]);
  const plans: Plan[] = [whole];
  for (let bands = 2; bands <= MAX_BANDS; bands++) {
    const cuts: number[] = [];
    const target = total / bands;
    for (let r = 0; r < rows - 1 && cuts.length < bands - 1; r++) {
      if (!cutOk(r)) continue;
      const reach = rowA1[r]! - rowA0[0]!;
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
        const there = prev >= 0 ? Math.abs(rowA1[prev]! - rowA0[0]! - target * (cuts.length + 1)) : Infinity;
        cuts.push(there < here ? prev : r);
      }
    }
    if (cuts.length === bands - 1) plans.push(measure(cuts));
  }
  let best = plans.find((p) => p.scale >= 1) ?? whole;
  if (best.scale < 1) {
    const room = acrossCap - fit.reserve / fit.k;
    for (const p of plans) if (p.across <= room && p.scale > best.scale) best = p;
  }
  if (best.cuts.length === 0) return 1;
  // move each band beside the one before
  const bandOf = new Int32Array(rows);
  let b = 0;
  for (let r = 0; r < rows; r++) {
    bandOf[r] = b;
    if (best.cuts.includes(r)) b++;
  }
  let cursor = 0;
  let first = 0;
  for (let k = 0; k <= best.cuts.length; k++) {
    const last = best.cuts[k] ?? rows - 1; // the last band runs to the last row
    let lo = Infinity;
    let hi = -Infinity;
    for (let r = first; r <= last; r++) {
      lo = Math.min(lo, rowLo[r]!);
      hi = Math.max(hi, rowHi[r]!);
    }
    const shiftA = (k > 0 ? TOP_MARGIN : 0) - rowA0[first]!; // the connector comes in from above
    const shiftC = cursor - lo;
    for (let v = 0; v < n; v++) {
      if (bandOf[arr.row[v]!] !== k) continue;
      a[v]! += shiftA;
      c[v]! += shiftC;
      arr.band[v] = k;
    }
    if (k === 0) arr.lineIn += shiftC;
    if (k === best.cuts.length) arr.lineOut += shiftC;
    cursor += hi - lo + BAND_GAP;
    first = last + 1;
  }
  return best.cuts.length + 1;
}
