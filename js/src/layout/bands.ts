/**
 * Wrapping a long arrangement into bands (columns side by side in TB, rows one under the
 * other in LR) so that the whole model fits the canvas at a scale its names read at, instead
 * of a thin column in a wide empty canvas: the root, for the canvas (wrapBands), and an open
 * group, into as many bands as the fit of the whole asks of it (wrapInto; layout/wrapping.ts
 * chooses the count). A band ends only below a row that one edge crosses, or where every
 * edge that crosses leaves one junction (right after a residual stream's (+): the stream is
 * one value there; not after a U-Net's conv_in, whose long skip would cross the gap), and no
 * edge crosses two cuts; each is drawn on from the bottom of one
 * band over the top of the gap into the next, where it parts (routes.ts). A group's entries
 * and exits count as edges from above its first row and below its last. The cuts into a
 * number of bands make the longest band shortest (a tall item keeps a band of its own). The
 * number of bands of the root: the fewest that fit; when none does, the one that shows most
 * of the model at the readable scale with the reserved strip free (the first view then shows
 * the start of every band at that scale, the minimap the rest). Flow coordinates; pure, no DOM.
 */
import { at } from "../wire_check";
import { COLUMN_GAP } from "./columns";
import { type Arranged, type Direction, FIT_MARGIN as MARGIN, type FitTarget, type FlowGroup } from "./flow";

export const BAND_GAP = 64;
const GROUP_BAND_GAP = 44; // inside a group: room for the connector up the gap
const TOP_MARGIN = 28; // room above the bands for the connectors
const MAX_BANDS = 8;
const GAIN = 1.01; // more bands where they show at least 1 % more
const COLUMN_BANDS = 3; // bands per column of the root (layout/columns.ts)
const NONE: ReadonlySet<number> = new Set();

interface Rows {
  lo: Float64Array; // per row: its across extent ...
  hi: Float64Array;
  a0: Float64Array; // ... and its along extent
  a1: Float64Array;
  cutOk: Uint8Array; // per row: whether a band may end after it
  from: Int32Array; // per row: the first row that an edge crossing below it leaves (-1: the group's entry)
}

const MIXED = -2; // the edges crossing below a row leave more than one junction (or another item, or come from outside)

/** The extents of each row and where a band may end: below a row that one edge crosses, or
 * where every edge that crosses leaves one junction (the stream after a (+): one value). */
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
  // per row: how many edges cross below it (a bus' tap needs no connector), the one item they
  // all leave (-1: none yet; MIXED), and the first row they leave
  const count = new Int32Array(rows);
  const source = new Int32Array(rows).fill(-1);
  const from = new Int32Array(rows).fill(rows);
  const span = (r0: number, r1: number, src: number, srcRow: number) => {
    for (let r = Math.max(r0, 0); r < r1; r++) {
      count[r]!++;
      source[r] = source[r] === -1 || source[r] === src ? src : MIXED;
      from[r] = Math.min(from[r]!, srcRow);
    }
  };
  for (const e of arr.edges) {
    if (e.src < 0 || e.dst < 0 || e.hidden) continue;
    const [rs, rd] = [arr.row[e.src]!, arr.row[e.dst]!];
    const one = rd >= rs && at(items, e.src).junction; // a junction's edges carry one value
    span(Math.min(rs, rd), Math.max(rs, rd), one ? e.src : MIXED, Math.min(rs, rd));
  }
  // a group's entries and exits count as edges from above its first row and below its last
  for (const v of g?.entries ?? []) span(0, arr.row[v]!, MIXED, -1);
  for (const v of g?.exits ?? []) span(arr.row[v]!, rows - 1, MIXED, arr.row[v]!);
  const cutOk = new Uint8Array(rows);
  for (let r = 0; r < rows - 1; r++) cutOk[r] = count[r] === 1 || (count[r]! > 1 && source[r]! >= 0) ? 1 : 0;
  // nor below a source whose readers all come after it (BERT's mask, read by the layers' stack
  // only: stranded at the foot of a band, on the connector's way out of it)
  const fed = new Uint8Array(items.length);
  const first = new Int32Array(items.length).fill(rows); // the first row that reads it
  for (const e of arr.edges)
    if (e.src >= 0 && e.dst >= 0) {
      fed[e.dst] = 1;
      first[e.src] = Math.min(first[e.src]!, arr.row[e.dst]!);
    }
  for (let v = 0; v < items.length; v++)
    if (!fed[v] && !at(items, v).spine && first[v]! < rows && first[v]! > arr.row[v]!) cutOk[arr.row[v]!] = 0;
  return { lo, hi, a0, a1, cutOk, from };
}

/** Whether a band may end after row `r` where the one before ended after `prev`: no edge
 * crosses two cuts (each connector runs from one band into the next). */
const mayCut = (rows: Rows, r: number, prev: number) => rows.cutOk[r] === 1 && rows.from[r]! > prev;

/** The cuts that fill each band of rows `first`..`count - 1` as far as `cap` (along, the
 * room above a later band counted) allows: at the last row within it after which the band may
 * end, past it where none may. */
function greedyCuts(rows: Rows, count: number, cap: number, first = 0): number[] {
  const { a0, a1 } = rows;
  const cuts: number[] = [];
  let start = first;
  let best = -1;
  for (let r = first; r < count; r++) {
    const over = a1[r]! - a0[start]! + (start > first ? TOP_MARGIN : 0) > cap + 1e-6;
    if (over && best >= 0) {
      cuts.push(best);
      start = best + 1;
      best = -1;
      r = start - 1;
      continue;
    }
    if (r < count - 1 && mayCut(rows, r, cuts[cuts.length - 1] ?? first - 1)) {
      if (!over) best = r;
      else {
        cuts.push(r); // no cut within the cap: the first after it
        start = r + 1;
      }
    }
  }
  return cuts;
}

/** The cuts of rows `first`..`count - 1` into at most `bands` whose longest band is shortest
 * (the cap searched for); a tall item keeps a band of its own rather than splitting the rest
 * evenly. */
function cutsInto(rows: Rows, count: number, bands: number, first = 0): number[] {
  const { a0, a1 } = rows;
  let hi = a1[count - 1]! - a0[first]!;
  let lo = hi / bands;
  let best: number[] = [];
  while (hi - lo > 0.5) {
    const cap = (lo + hi) / 2;
    const cuts = greedyCuts(rows, count, cap, first);
    if (cuts.length < bands) {
      hi = cap;
      best = cuts;
    } else lo = cap;
  }
  return best;
}

/** Each band's across and along extent with `cuts`, the gaps between them counted; a cut in
 * `apart` ends a column (layout/columns.ts): nothing crosses it, the next starts at the top. */
function extent(
  rows: Rows,
  count: number,
  cuts: number[],
  gap: number,
  apart: ReadonlySet<number> = NONE,
): { across: number; along: number } {
  let across = 0;
  let along = 0;
  let first = 0;
  let connectors = false;
  for (const last of [...cuts, count - 1]) {
    let lo = Infinity;
    let hi = -Infinity;
    for (let r = first; r <= last; r++) {
      lo = Math.min(lo, rows.lo[r]!);
      hi = Math.max(hi, rows.hi[r]!);
    }
    across += hi - lo;
    const led = first > 0 && !apart.has(first - 1); // a connector comes in from above
    along = Math.max(along, rows.a1[last]! - rows.a0[first]! + (led ? TOP_MARGIN : 0));
    connectors ||= led;
    first = last + 1;
  }
  for (const r of cuts) across += apart.has(r) ? COLUMN_GAP : gap;
  if (connectors) along += 20; // the connector under a band
  return { across, along };
}

/** Move each band beside the one before; how many bands there are. A cut in `apart` ends a
 * column: the next band starts at the top, a column's gap from it. */
function applyCuts(arr: Arranged, rows: Rows, cuts: number[], gap: number, apart: ReadonlySet<number> = NONE): number {
  if (cuts.length === 0) return 1;
  const bandOf = new Int32Array(arr.rows);
  let b = 0;
  for (let r = 0; r < arr.rows; r++) {
    bandOf[r] = b;
    if (cuts.includes(r)) b++;
  }
  // the line out leaves the last band of the first column (where the model's output is)
  const out = apart.size ? bandOf[Math.min(...apart)]! : cuts.length;
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
    const led = k > 0 && !apart.has(first - 1); // a connector comes in from above
    const shiftA = (led ? TOP_MARGIN : 0) - rows.a0[first]!;
    const shiftC = cursor - lo;
    for (let v = 0; v < arr.items.length; v++) {
      if (bandOf[arr.row[v]!] !== k) continue;
      arr.a[v]! += shiftA;
      arr.c[v]! += shiftC;
      arr.band[v] = k;
    }
    if (k === 0) arr.lineIn += shiftC;
    if (k === out) arr.lineOut += shiftC;
    cursor += hi - lo + (apart.has(last) ? COLUMN_GAP : gap);
    first = last + 1;
  }
  return cuts.length + 1;
}

/** A layout that reaches under the minimap's strip is taken where it shows this much more. */
export const BESIDE_WORTH = 1.2;

/** How a layout shows on the canvas of a fit at the fit's scale (shownAt). */
export interface Shown {
  fits: boolean; // whole
  scale: number; // the largest scale it shows whole at, over the fit's
  part: number; // else the part of it shown beside the reserved strip (width part x height part)
  clear: boolean; // it leaves the strip (the minimap, its note) free
}

/** How a layout `w` × `h` (x / y, at scale 1) shows on the canvas of `fit` at the fit's scale. */
export function shownAt(w: number, h: number, fit: FitTarget): Shown {
  const roomW = (fit.w - 2 * MARGIN) / fit.k;
  const roomH = (fit.h - 2 * MARGIN) / fit.k;
  const beside = roomW - fit.reserve / fit.k;
  const scale = Math.min(roomW / Math.max(w, 1), roomH / Math.max(h, 1));
  return {
    fits: scale >= 1 - 1e-6,
    scale,
    part: Math.min(1, Math.max(0, beside) / Math.max(w, 1)) * Math.min(1, roomH / Math.max(h, 1)),
    clear: w <= beside + 1e-6,
  };
}

/** Whether `a` shows a model better than `b`: whole where `b` is not; else more of it, by
 * `gain` at least, where both leave the reserved strip free or neither does; else clear of
 * the strip unless the other shows `beside` times as much (the camera's part view can put
 * nodes under the minimap's note: the root's bands keep the strip free, beside = Infinity). */
export function better(a: Shown, b: Shown, gain: number, beside = Infinity): boolean {
  if (a.fits !== b.fits) return a.fits;
  if (a.fits) return a.scale > b.scale * gain;
  const need = a.clear === b.clear ? gain : a.clear ? 1 / beside : beside;
  return a.part > b.part * need;
}

/** Wrap the root for the canvas `fit`; how many bands it took. */
export function wrapBands(arr: Arranged, fit: FitTarget, dir: Direction): number {
  const { rows: count } = arr;
  if (count < 4) return 1;
  const rows = rowsOf(arr, null);
  const tb = dir === "TB";
  const plans: number[][] = [[]];
  for (let bands = 2; bands <= MAX_BANDS; bands++) {
    const cuts = cutsInto(rows, count, bands);
    if (cuts.length === bands - 1) plans.push(cuts);
  }
  // the fewest bands that fit; where none does, the one that shows most of the model at the
  // readable scale (the camera shows that part, the minimap the rest), fewer on a tie
  let best: number[] = [];
  let bestShown: Shown | null = null;
  for (const cuts of plans) {
    const { across, along } = extent(rows, count, cuts, BAND_GAP);
    const shown = tb ? shownAt(across, along, fit) : shownAt(along, across, fit);
    if (!bestShown || shown.fits || better(shown, bestShown, GAIN, BESIDE_WORTH)) {
      best = cuts;
      bestShown = shown;
    }
    if (shown.fits) break;
  }
  return applyCuts(arr, rows, best, BAND_GAP);
}

/** Wrap an open group's arrangement into `bands` (fewer where its rows allow no more cuts). */
export function wrapInto(arr: Arranged, g: FlowGroup, bands: number): number {
  if (bands < 2 || arr.rows < 2) return 1;
  const rows = rowsOf(arr, g);
  return applyCuts(arr, rows, cutsInto(rows, arr.rows, bands), GROUP_BAND_GAP);
}

/**
 * Wrap the root's columns (layout/columns.ts: an encoder's and a decoder's, each a band of
 * its own) for the canvas `fit`: each column into as many as COLUMN_BANDS bands, the column
 * that is longest first, until the whole fits; where it does not, the wrap that shows most of
 * the model at the readable scale. The columns keep their order and each its bands in order
 * (the encoder's left of the decoder's); each starts at the top. How many bands it took.
 */
export function wrapColumns(arr: Arranged, fit: FitTarget, dir: Direction): number {
  const rows = rowsOf(arr, null);
  const count = Math.max(...arr.band) + 1;
  const span = Array.from({ length: count }, () => [arr.rows, -1] as [number, number]);
  for (let v = 0; v < arr.items.length; v++) {
    const s = at(span, arr.band[v]!);
    s[0] = Math.min(s[0], arr.row[v]!);
    s[1] = Math.max(s[1], arr.row[v]!);
  }
  const apart = new Set(span.slice(0, -1).map(([, last]) => last));
  // per column, its cuts into 1 .. COLUMN_BANDS bands (fewer where it cannot be cut)
  const options = span.map(([first, last]) => {
    const plans: number[][] = [[]];
    for (let bands = 2; bands <= COLUMN_BANDS; bands++) {
      const cuts = cutsInto(rows, last + 1, bands, first);
      if (cuts.length === bands - 1) plans.push(cuts);
    }
    return plans;
  });
  const tb = dir === "TB";
  const shown = (pick: number[]) => {
    const cuts = [...pick.flatMap((p, k) => at(at(options, k), p)), ...apart].sort((a, b) => a - b);
    const { across, along } = extent(rows, arr.rows, cuts, BAND_GAP, apart);
    return { cuts, shown: tb ? shownAt(across, along, fit) : shownAt(along, across, fit) };
  };
  // one band more at a time, to the column whose wrap shows most, until the whole fits
  let pick = options.map(() => 0);
  let best = shown(pick);
  while (!best.shown.fits) {
    let next: { pick: number[]; got: ReturnType<typeof shown> } | null = null;
    for (let k = 0; k < count; k++) {
      if (at(pick, k) + 1 >= at(options, k).length) continue;
      const p = pick.map((x, i) => (i === k ? x + 1 : x));
      const got = shown(p);
      if (!next || better(got.shown, next.got.shown, 1, BESIDE_WORTH)) next = { pick: p, got };
    }
    if (!next || !better(next.got.shown, best.shown, GAIN, BESIDE_WORTH)) break;
    pick = next.pick;
    best = next.got;
  }
  return applyCuts(arr, rows, best.cuts, BAND_GAP, apart);
}
