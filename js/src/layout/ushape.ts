/**
 * A group whose trunk runs down and up again through skips that do not cross (a U-Net) is drawn
 * as a U, the paper's figure: the encoder down one side, the bottleneck across the bottom, the
 * decoder up the other side, the head on to the side at the top. Each target's deepest source
 * is its level, straight across; other skips into it (diffusers hands up_blocks.1 both conv_in
 * and down_blocks.0) come down the middle of the U. A side with fewer items between two levels
 * spreads them out to stay level.
 *
 * Items off the trunk that nothing on it feeds (a timestep or text conditioning: its bus taps
 * the blocks, model/trunk.ts; or its one edge feeds the bottom, the mid block alone reading the
 * text) stand in columns beside the encoder (side by side or one under the other; aside.ts),
 * above its first skip, the bus down the outside of the U; or, narrower, above the encoder's
 * first stage (diffusers' U beside the inspector at 1024 px). Then the tail rises up the
 * decoder's side (the bus enters it from outside, scene/bus.ts); so it does without
 * conditioning where that is narrower (`rise`).
 *
 * Open groups keep the U: on the encoder's side one flows down, a skip leaving below it; at the
 * bottom one is entered from above and left below; on the rising side one is drawn upside down
 * (`flip`: layout.ts mirrors it), its data going up like the decoder's. null when the group is
 * not such a U (spine.ts lays it out). Flow coordinates; pure, no DOM.
 */
import { at } from "../wire_check";
import { feedRoute, slotsOf } from "./aside";
import { type FlowGroup, type FlowPlacement, RANKSEP, rounded, topoOrder } from "./flow";

export const U_GAP = 104; // between the two sides (room for the skips' arrows)
const [JUNCTION_SEP, MIN_SKIPS] = [16, 2];
const SIDE_GAP = 48; // between the conditioning's column and the encoder (room for its bus)
const PART_GAP = 28; // between two of its columns (the timestep's, the text's)
const SHARED_OFF = 10; // a shared skip's end beside its target's level skip
const [BUS_OFF, BUS_STEP] = [16, 10]; // scene/bus.ts: a bus' distance from what it passes, and between two

/** Where the conditioning stands: its chains side by side beside the encoder (a lower U),
 * one under the other there (narrower), or side by side above the encoder's first stage
 * (narrower still: beside the inspector); `narrow`: a part of it that branches or merges
 * with its sources on its trunk (aside.ts). */
export type Conditioning = "beside" | "stacked" | "above";

export function placeU(
  g: FlowGroup,
  where: Conditioning = "beside",
  rise = false,
  narrow = false,
): FlowPlacement | null {
  const beside = where !== "stacked";
  const { items: all, edges } = g;
  if (all.length < 6 || g.exits.length) return null;
  const node = (v: number) => at(all, v);
  const order0 = topoOrder(all.length, edges);
  const order = order0.filter((v) => node(v).spine); // the trunk, in order
  // the conditioning, in order, each of its parts (a chain: timestep -> time_proj -> ...) whole
  const part = all.map((_, v) => v);
  const find = (v: number): number => {
    if (part[v] !== v) part[v] = find(part[v]!);
    return part[v];
  };
  for (const e of edges)
    if (e.src >= 0 && e.dst >= 0 && !node(e.src).spine && !node(e.dst).spine) part[find(e.src)] = find(e.dst);
  const aside0 = order0.filter((v) => !node(v).spine);
  const firstOf = new Map<number, number>();
  for (const [q, v] of aside0.entries()) if (!firstOf.has(find(v))) firstOf.set(find(v), q);
  const aside = aside0
    .map((v, q): [number, number, number] => [firstOf.get(find(v))!, q, v])
    .sort((x, y) => x[0] - y[0] || x[1] - y[1])
    .map((x) => x[2]);
  const n = order.length;
  if (n < 6) return null;
  const posOf = new Int32Array(all.length).fill(-1);
  for (const [i, v] of order.entries()) posOf[v] = i;
  const sideAt = new Int32Array(all.length).fill(-1);
  for (const [i, v] of aside.entries()) sideAt[v] = i;
  if (g.entries.some((v) => posOf[v] !== 0)) return null;
  const chain = new Map<number, number>(); // order position i -> edge index of i -> i + 1
  const all_skips: [number, number, number][] = []; // source position, target position, edge index
  const sideChain: number[] = []; // edges down the conditioning's column
  const feeds: number[] = []; // edges from the conditioning into the trunk: the U's bottom's
  for (const [k, e] of edges.entries()) {
    if (e.src < 0 || e.dst < 0) return null;
    if (sideAt[e.src]! >= 0 || sideAt[e.dst]! >= 0) {
      // the conditioning feeds the trunk through buses (inside it: aside.ts), or its bottom
      if (sideAt[e.dst]! < 0) feeds.push(k);
      else if (sideAt[e.src]! < 0) return null;
      else sideChain.push(k);
      continue;
    }
    const i = posOf[e.src]!;
    const j = posOf[e.dst]!;
    if (j === i + 1 && !chain.has(i)) chain.set(i, k);
    else if (j > i + 1 && (e.kind === "skip" || e.kind === "merge")) all_skips.push([i, j, k]);
    else return null;
  }
  if (chain.size !== n - 1) return null;
  // skips do not cross: by source, then outermost target first, each within the one before
  all_skips.sort((x, y) => x[0] - y[0] || y[1] - x[1]);
  for (let q = 1; q < all_skips.length; q++) {
    const [ps, pt] = at(all_skips, q - 1);
    const [qs, qt] = at(all_skips, q);
    if (!(qs >= ps && qt <= pt)) return null;
  }
  // the levels: each target with its deepest source (a source levels with one target only)
  const deepest = new Map<number, number>(); // target -> its skip of the deepest source
  all_skips.forEach(([s, t], q) => {
    const p = deepest.get(t);
    if (p === undefined || at(all_skips, p)[0] < s) deepest.set(t, q);
  });
  const skips: [number, number, number][] = [];
  const level = new Set<number>();
  for (const q of [...deepest.values()].sort(
    (x, y) => at(all_skips, x)[0] - at(all_skips, y)[0] || at(all_skips, y)[1] - at(all_skips, x)[1],
  )) {
    if (skips.length && at(skips, skips.length - 1)[0] === at(all_skips, q)[0]) continue;
    skips.push(at(all_skips, q));
    level.add(q);
  }
  const shared = all_skips.filter((_, q) => !level.has(q));
  if (skips.length < MIN_SKIPS) return null;
  const items = order.map(node);
  const k = skips.length;
  const [sk, tk] = at(skips, k - 1);
  const t1 = at(skips, 0)[1];
  const item = (i: number) => at(items, i);
  const m = tk - sk - 1;
  const bottom = m % 2 === 1 ? sk + (m + 1) / 2 : -1;
  const leftEnd = bottom >= 0 ? bottom - 1 : sk + m / 2;
  const rightStart = bottom >= 0 ? bottom + 1 : leftEnd + 1;
  const rEnd = item(t1).junction && t1 + 1 < n ? t1 + 1 : t1;
  const rises = aside.length > 0 || rise; // the tail up the decoder's side (narrower)
  // a skip ends on the rising side (at a junction, a node, or an open group: upside down,
  // entered from below); the tail is plain
  for (const [s, t] of all_skips) if (s > leftEnd || t < rightStart || t > rEnd) return null;
  for (let i = rEnd + 1; i < n; i++) if (item(i).group) return null;
  if (feeds.some((k) => posOf[at(edges, k).dst] !== bottom)) return null;

  const A = new Float64Array(n); // along of each position's centre
  const gap = (i: number, j: number) => (item(i).junction || item(j).junction ? JUNCTION_SEP : RANKSEP);
  const dist = (i: number, j: number) => item(i).al / 2 + gap(i, j) + item(j).al / 2; // neighbours on one side
  const sum = (i0: number, i1: number) => {
    let d = 0;
    for (let i = i0; i < i1; i++) d += dist(i, i + 1);
    return d;
  };
  // a skip's level below its source's centre: 0, or in the gap below a group (its exit)
  const off = (s: number) => (item(s).group ? item(s).al / 2 + RANKSEP / 2 : 0);
  // ... and below its target's: in the gap below an open group (upside down, entered there)
  const offIn = (t: number) => (item(t).group ? item(t).al / 2 + RANKSEP / 2 : 0);
  // spread a side's items from..to evenly between the along of its two ends
  const spread = (from: number, to: number, down: boolean) => {
    const extra = (Math.abs(A[to]! - A[from]!) - sum(from, to)) / (to - from);
    let cur = A[down ? from : to]!;
    for (let k = 0; k < to - from - 1; k++) {
      const [p, q] = down ? [from + k, from + k + 1] : [to - k, to - k - 1];
      cur += dist(p, q) + extra;
      A[q] = cur;
    }
  };
  // the skips' levels, top down, from the longer side between each two
  const head = at(skips, 0)[0];
  A[head] = sum(0, head) + item(0).al / 2;
  for (let q = 0; q < k; q++) {
    const [s, t] = at(skips, q);
    A[t] = A[s]! + off(s) - offIn(t);
    if (q + 1 === k) break;
    const [s2, t2] = at(skips, q + 1);
    const span = Math.max(sum(s, s2) + off(s2) - off(s), sum(t2, t) + offIn(t2) - offIn(t));
    const level = A[t] + offIn(t) + span;
    A[t2] = level - offIn(t2);
    A[s2] = level - off(s2);
    spread(s, s2, true);
    spread(t2, t, false);
  }
  for (let i = head - 1; i >= 0; i--) A[i] = A[i + 1]! - dist(i, i + 1);
  for (let i = sk + 1; i <= leftEnd; i++) A[i] = A[i - 1]! + dist(i - 1, i);
  for (let i = tk - 1; i >= rightStart; i--) A[i] = A[i + 1]! + dist(i, i + 1);
  for (let i = t1 + 1; i <= rEnd; i++) A[i] = A[i - 1]! - dist(i - 1, i);
  let floor = -Infinity;
  for (let i = 0; i < n; i++)
    if (i <= leftEnd || (i >= rightStart && i <= rEnd)) floor = Math.max(floor, A[i]! + item(i).al / 2);
  if (bottom >= 0) A[bottom] = floor + RANKSEP + item(bottom).al / 2;
  // the conditioning, along: its parts (the timestep's chain, the text embedding) side by
  // side, each a column ending a rank above the first level and above the decoder (an open
  // up block reaches higher), so that it is above every stage it feeds
  const sTop = new Float64Array(aside.length);
  const sLo = new Float64Array(aside.length);
  const slots = slotsOf(all, edges, aside, find, sideChain, narrow);
  if (!slots) return null;
  const slotTop = new Float64Array(slots.length);
  let sEnd = where === "above" ? A[0]! - item(0).al / 2 : A[head] - item(head).al / 2;
  for (let i = rightStart; i <= rEnd && where !== "above"; i++) sEnd = Math.min(sEnd, A[i]! - item(i).al / 2);
  sEnd -= RANKSEP;
  // the first nearest the U; what feeds the bottom nearer (its line passes no bus)
  const fed = new Set(feeds.map((k) => find(at(edges, k).src)));
  const parts = beside
    ? [...new Set(aside.map(find))].sort((x, y) => +fed.has(y) - +fed.has(x))
    : [find(aside[0] ?? 0)];
  const partOf = aside.map((v) => Math.max(0, parts.indexOf(find(v))));
  const colOf = slots.map((sl) => partOf[at(sl.qs, 0)]!);
  const upTo = parts.map(() => sEnd);
  for (let q = slots.length - 1; q >= 0; q--) {
    slotTop[q] = upTo[colOf[q]!]! - at(slots, q).al;
    upTo[colOf[q]!] = slotTop[q]! - RANKSEP;
  }
  if (where === "above") {
    // above the encoder its columns start level (a short one stands above the decoder's tail)
    const lift = Math.min(...upTo);
    for (const [q, p] of colOf.entries()) slotTop[q] = slotTop[q]! - (upTo[p]! - lift);
  }
  // the tail on up the decoder's side (the buses enter it from outside), or level with the
  // decoder's last item (above it when that is an open group: its data leaves at its top)
  const last = rises ? n - 1 : rEnd; // the rising side's last position
  if (rises) for (let i = rEnd + 1; i < n; i++) A[i] = A[i - 1]! - dist(i - 1, i);
  else {
    let tailA = A[rEnd]!;
    if (item(rEnd).group) {
      let tall = 0;
      for (let i = rEnd + 1; i < n; i++) tall = Math.max(tall, item(i).al);
      tailA = A[rEnd]! - item(rEnd).al / 2 - RANKSEP - tall / 2;
    }
    for (let i = rEnd + 1; i < n; i++) A[i] = tailA;
  }

  // across: two sides, the bottom between them, the tail on to the right at the top
  // each side's line through its items' anchors (a group's entry need not be its centre)
  let [leftA, leftB, rightA, rightB] = [0, 0, 0, 0];
  for (let i = 0; i <= leftEnd; i++) {
    leftA = Math.max(leftA, item(i).ain);
    leftB = Math.max(leftB, item(i).ac - item(i).ain);
  }
  for (let i = rightStart; i <= last; i++) {
    rightA = Math.max(rightA, item(i).ain);
    rightB = Math.max(rightB, item(i).ac - item(i).ain);
  }
  const cL = leftA;
  const cR = leftA + leftB + U_GAP + rightA;
  const C = new Float64Array(n); // across of each position's line (its anchor)
  for (let i = 0; i < n; i++) C[i] = i <= leftEnd ? cL : cR;
  const anchor = (i: number) => (i === bottom ? item(i).ac / 2 : item(i).ain);
  if (bottom >= 0) C[bottom] = (cL + cR) / 2;
  let cursor = cR + item(last).ac - item(last).ain + RANKSEP;
  for (let i = last + 1; i < n; i++) {
    C[i] = cursor + item(i).ain;
    cursor += item(i).ac + RANKSEP;
  }
  const top = (i: number) => A[i]! - item(i).al / 2;
  const low = (i: number) => A[i]! + item(i).al / 2;
  const lo = (i: number) => C[i]! - anchor(i);
  const hi = (i: number) => lo(i) + item(i).ac;
  const side = (i: number) => (i <= leftEnd ? 0 : i === bottom ? 1 : i <= last ? 2 : 3);
  // where data enters and leaves an item, across (an open group's entry and exit)
  const inC = (i: number) => lo(i) + item(i).ain;
  const outC = (i: number) => lo(i) + item(i).aout;
  // along a side, from a0 at c0 to a1 at c1: straight, or an S in the middle
  const along = (a0: number, c0: number, a1: number, c1: number) =>
    Math.abs(c0 - c1) < 0.5 ? [a0, c0, a1, c1] : rounded([a0, c0, (a0 + a1) / 2, c0, (a0 + a1) / 2, c1, a1, c1], 10);
  const turned = bottom >= 0 && !item(bottom).group; // a plain bottom: entered and left from its sides
  const routes: number[][] = edges.map(() => []);
  for (const [i, e] of chain) {
    const j = i + 1;
    const from = side(i);
    const to = side(j);
    let pts: number[];
    if (from === 0 && to === 0) pts = along(low(i), outC(i), top(j), inC(j));
    else if (from === 0 && to === 1 && turned) pts = rounded([low(i), outC(i), A[j]!, outC(i), A[j]!, lo(j)], 16);
    else if (from === 0 && to === 1) {
      const over = top(j) - RANKSEP / 2;
      pts = rounded([low(i), outC(i), over, outC(i), over, inC(j), top(j), inC(j)], 16);
    } else if (from === 1 && turned) pts = rounded([A[i]!, hi(i), A[i]!, inC(j), low(j), inC(j)], 16);
    else if (from < 2 && to === 2) {
      // down out of the bottom group (or the encoder's last item), under, up into the decoder
      const under = Math.max(low(i), low(j)) + RANKSEP / 2;
      pts = rounded([low(i), outC(i), under, outC(i), under, inC(j), low(j), inC(j)], 16);
    } else if (from === 2 && to === 2) pts = along(top(i), outC(i), low(j), inC(j));
    else if (from === 2 && item(i).group) {
      // out of the top of the last (upside-down) group of the decoder, up, on to the tail
      pts = rounded([top(i), outC(i), A[j]!, outC(i), A[j]!, lo(j)], 12);
    } else pts = [A[i]!, hi(i), A[j]!, lo(j)]; // on to the tail
    routes[e] = pts;
  }
  // into a plain target across, into an open group up through its entry below it
  const into = (t: number, a: number) => (item(t).group ? [a, inC(t), low(t), inC(t)] : [a, lo(t)]);
  for (const [s, t, e] of skips) {
    const a = A[t]! + offIn(t);
    routes[e] = rounded(
      item(s).group ? [low(s), outC(s), a, outC(s), ...into(t, a)] : [A[s]!, hi(s), ...into(t, a)],
      12,
    );
  }
  // a shared skip: out beside its source's level skip, down the middle of the U, into its
  // target above that one's level skip (its source is higher up)
  let leftHi = -Infinity;
  let rightLo = Infinity;
  for (let i = 0; i <= leftEnd; i++) leftHi = Math.max(leftHi, hi(i));
  for (let i = rightStart; i <= rEnd; i++) rightLo = Math.min(rightLo, lo(i));
  const middle = (leftHi + rightLo) / 2;
  const levelFrom = new Set(skips.map(([s]) => s));
  for (const [s, t, e] of shared) {
    const end = item(t).group
      ? A[t]! + offIn(t)
      : item(t).junction
        ? A[t]!
        : A[t]! - Math.min(SHARED_OFF, item(t).al / 4);
    const out = item(s).group
      ? [low(s), outC(s), A[s]! + off(s), outC(s), A[s]! + off(s), middle]
      : [A[s]! + (levelFrom.has(s) ? Math.min(SHARED_OFF, item(s).al / 4) : 0), hi(s)];
    if (!item(s).group) out.push(out[0]!, middle);
    routes[e] = rounded([...out, end, middle, ...into(t, end)], 10);
  }

  // the conditioning's columns, across: beside the encoder, one beside the other; or above it
  let minC0 = Infinity;
  for (let i = 0; i < n; i++) minC0 = Math.min(minC0, lo(i));
  const wide = parts.map(() => 0);
  for (const [q, sl] of slots.entries()) wide[colOf[q]!] = Math.max(wide[colOf[q]!]!, sl.ac);
  const mid: number[] = [];
  for (const [p, w] of wide.entries())
    mid.push(p === 0 ? minC0 - SIDE_GAP - w / 2 : mid[p - 1]! - wide[p - 1]! / 2 - PART_GAP - w / 2);
  if (where === "above") {
    // from the encoder's left on to the right, each clear of the rising side beside it (the
    // U wider to the left where they are not)
    let over = 0;
    for (const [p, w] of wide.entries()) {
      mid[p] = (p === 0 ? minC0 : mid[p - 1]! + wide[p - 1]! / 2 + PART_GAP) + w / 2;
      let a0 = Infinity;
      let a1 = -Infinity;
      for (const [q, sl] of slots.entries())
        if (colOf[q] === p) [a0, a1] = [Math.min(a0, slotTop[q]!), Math.max(a1, slotTop[q]! + sl.al)];
      for (let i = rightStart; i < n; i++)
        if (top(i) < a1 + RANKSEP / 2 && low(i) > a0 - RANKSEP / 2)
          over = Math.max(over, mid[p]! + w / 2 + PART_GAP - lo(i));
    }
    for (let p = 0; p < mid.length; p++) mid[p] = mid[p]! - over;
  }
  for (const [q, sl] of slots.entries()) {
    const it = node(aside[at(sl.qs, 0)]!);
    const left = mid[colOf[q]!]! - (sl.whole ? sl.ac / 2 : it.group ? it.ain : it.ac / 2);
    for (const [k, r] of sl.qs.entries()) {
      sTop[r] = slotTop[q]! + (sl.whole?.placed.pos[2 * k] ?? 0);
      sLo[r] = left + (sl.whole?.placed.pos[2 * k + 1] ?? 0);
    }
    for (const [k, e] of sl.whole?.edges.entries() ?? [])
      routes[e] = at(sl.whole!.placed.routes, k).map((x, i) => x + (i % 2 ? left : slotTop[q]!));
  }
  // what feeds the bottom alone (the mid block alone reading the text): aside.ts feedRoute
  const outOf = (q: number): [number, number] => [sTop[q]! + node(aside[q]!).al, sLo[q]! + node(aside[q]!).aout];
  const bx = () => (turned ? lo(bottom) + item(bottom).ac / 2 : inC(bottom)); // (feeds: a bottom)
  for (const k of feeds)
    routes[k] = feedRoute(outOf(sideAt[at(edges, k).src]!), minC0 - SIDE_GAP / 2, bx(), top(bottom));
  const whole = new Set(slots.flatMap((sl) => sl.whole?.edges ?? []));
  for (const e of sideChain.filter((e) => !whole.has(e))) {
    const w = sideAt[at(edges, e).dst]!;
    routes[e] = along(...outOf(sideAt[at(edges, e).src]!), sTop[w]!, sLo[w]! + node(aside[w]!).ain);
  }

  // the content from 0, 0
  let [minA, minC, maxA, maxC] = [Infinity, Infinity, -Infinity, -Infinity];
  for (let i = 0; i < n; i++) {
    minA = Math.min(minA, top(i));
    maxA = Math.max(maxA, low(i));
    minC = Math.min(minC, lo(i));
    maxC = Math.max(maxC, hi(i));
  }
  aside.forEach((v, q) => {
    minA = Math.min(minA, sTop[q]!);
    maxA = Math.max(maxA, sTop[q]! + node(v).al);
    minC = Math.min(minC, sLo[q]!);
    maxC = Math.max(maxC, sLo[q]! + node(v).ac);
  });
  for (const r of routes)
    for (let q = 0; q < r.length; q += 2) {
      minA = Math.min(minA, r[q]!);
      maxA = Math.max(maxA, r[q]!);
    }
  // room for the conditioning's buses round the U (one per end of it: a source of a bus)
  const sinks = aside.filter((v) => !edges.some((e) => e.src === v)).length;
  if (sinks) {
    const room = BUS_OFF + (sinks - 1) * BUS_STEP + 2; // (the outermost line, and its stroke)
    minC -= room;
    maxC += room;
    maxA += room;
  }
  const pos = new Array<number>(2 * all.length);
  for (let i = 0; i < n; i++) {
    pos[2 * order[i]!] = top(i) - minA;
    pos[2 * order[i]! + 1] = lo(i) - minC;
  }
  aside.forEach((v, q) => {
    pos[2 * v] = sTop[q]! - minA;
    pos[2 * v + 1] = sLo[q]! - minC;
  });
  for (const r of routes) {
    for (let q = 0; q < r.length; q += 2) {
      r[q] = r[q]! - minA;
      r[q + 1] = r[q + 1]! - minC;
    }
  }
  const ain = cL - minC;
  const inRoutes = g.entries.map(() => [-g.lead, ain, top(0) - minA, ain]);
  const flip: boolean[] = new Array(all.length).fill(false);
  for (let i = rightStart; i <= rEnd; i++) flip[order[i]!] = item(i).group;
  return { al: maxA - minA, ac: maxC - minC, pos, routes, inRoutes, outRoutes: [], ain, aout: C[n - 1]! - minC, flip };
}
