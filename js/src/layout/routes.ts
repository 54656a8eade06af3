/**
 * Edge routes of an arranged group (spine.ts), in flow coordinates: straight along a column
 * where nothing is in the way (the trunk, a strand); into a junction from the side it comes
 * from, out of one towards where it goes; an S between neighbouring rows; else down a lane
 * beside everything in the rows it passes (the cheaper side, lanes kept apart); from one band
 * of a wrapped group to the next over the top of the gap between them (the edges of one cut,
 * all from one item, share that connector and part above the next band). Then the group's
 * extent, and the routes from its entry and to its exit. Pure, no DOM.
 */
import type { EdgeKind } from "../wire";
import { at } from "../wire_check";
import { type Arranged, type FlowGroup, type FlowPlacement, rounded, segmentHitsBox } from "./flow";

const LANE_SEP = 18; // a lane's distance from what it passes
const LANE_STEP = 10; // between two lanes on one side
const CORNER = 12;

interface End {
  box: [number, number, number, number]; // along, across, along size, across size
  row: number;
  band: number;
  junction: boolean;
  cin: number; // across where edges enter / leave
  cout: number;
  index: number; // item index; -1 entry, -2 exit, BAND_ENTRY: where a connector comes into a band
}

const BAND_ENTRY = -3;

export function routeArranged(arr: Arranged, g: FlowGroup): FlowPlacement {
  const { items, a, c } = arr;
  const n = items.length;
  const end = (v: number): End => ({
    box: [a[v]!, c[v]!, at(items, v).al, at(items, v).ac],
    row: arr.row[v]!,
    band: arr.band[v]!,
    junction: at(items, v).junction,
    cin: c[v]! + at(items, v).ain,
    cout: c[v]! + at(items, v).aout,
    index: v,
  });
  const byRow: number[][] = Array.from({ length: arr.rows }, () => []);
  for (let v = 0; v < n; v++) at(byRow, arr.row[v]!).push(v);
  const bands = Math.max(...arr.band, 0) + 1;
  const bandBox = Array.from({ length: bands }, (): [number, number, number, number] => [
    Infinity,
    Infinity,
    -Infinity,
    -Infinity,
  ]);
  for (let v = 0; v < n; v++) {
    const b = at(bandBox, arr.band[v]!);
    b[0] = Math.min(b[0], a[v]!);
    b[1] = Math.min(b[1], c[v]!);
    b[2] = Math.max(b[2], a[v]! + at(items, v).al);
    b[3] = Math.max(b[3], c[v]! + at(items, v).ac);
  }
  const firstRow = new Int32Array(bands).fill(arr.rows); // per band: its first row
  for (let v = 0; v < n; v++) firstRow[arr.band[v]!] = Math.min(at(firstRow, arr.band[v]!), arr.row[v]!);
  const lanes: { side: number; at: number; a0: number; a1: number }[] = [];

  const blocked = (pts: number[], u: End, v: End): boolean => {
    const r0 = Math.max(0, Math.min(u.row, v.row));
    const r1 = Math.min(arr.rows - 1, Math.max(u.row, v.row));
    for (let r = r0; r <= r1; r++) {
      for (const w of at(byRow, r)) {
        if (w === u.index || w === v.index || arr.band[w] !== (u.index >= 0 ? u.band : v.band)) continue;
        const box: [number, number, number, number] = [a[w]!, c[w]!, at(items, w).al, at(items, w).ac];
        for (let i = 0; i + 3 < pts.length; i += 2)
          if (segmentHitsBox(pts[i]!, pts[i + 1]!, pts[i + 2]!, pts[i + 3]!, box)) return true;
      }
    }
    return false;
  };
  const mid = (u: End) => u.box[0] + u.box[2] / 2;
  const side = (u: End, toward: number): [number, number] => [
    mid(u),
    toward >= u.box[1] + u.box[3] / 2 ? u.box[1] + u.box[3] : u.box[1],
  ];
  const gapBelow = (u: End) => arr.gapAfter[u.row] ?? 24; // none for the entry and exit (row -1)

  const gapLanes = new Map<string, number>(); // per gap between two bands: the lanes in it
  const entered = new Map<number, number>(); // per item: the merges from another band into it
  const laneOf = new Map<string, number>(); // per gap and source: its lane
  // (lanes away from a bus' taps into the group's sources: the side its branches face)
  const away = g.tapped?.length ? (g.mirror ? 1 : -1) : 0;
  const route = (u: End, v: End, kind: EdgeKind): number[] => {
    const out: [number, number] = [u.box[0] + u.box[2], u.cout];
    const inn: [number, number] = [v.box[0], v.cin];
    if (kind === "merge" && u.index >= 0 && v.index >= 0 && u.band !== v.band) {
      const beside = across(u, v);
      if (beside) return beside;
    }
    if (u.index >= 0 && v.index >= 0 && u.band !== v.band) {
      // the next band: down, over the top of the gap, along above the band and down into the
      // target; the edges of one cut (all from one item) share this connector up to where
      // each turns down, and one that something in the band would hide goes round it from
      // the band's top (into a junction from the side, as the stream's arcs do)
      const from = at(bandBox, u.band);
      const to = at(bandBox, v.band);
      const gap = (from[3] + to[1]) / 2;
      const above = to[0] - 14;
      // from a band's first row (a model input that feeds an encoder and a decoder, BART's):
      // across in the gap after it, not down the whole band
      const turn = u.row === at(firstRow, u.band) ? out[0] + gapBelow(u) / 2 : from[2] + 14;
      const bridge = [...out, turn, out[1], turn, gap, above, gap];
      const entry: End = {
        box: [above, gap, 0, 0],
        row: at(firstRow, v.band) - 1,
        band: v.band,
        junction: false,
        cin: gap,
        cout: gap,
        index: BAND_ENTRY,
      };
      const drop = [above, inn[1], ...inn];
      if (!blocked(drop, entry, v)) return rounded([...bridge, ...drop], 14);
      const rest = route(entry, v, kind);
      return [...rounded([...bridge, rest[2]!, rest[3]!], 14).slice(0, -2), ...rest.slice(2)];
    }
    if (u.index >= 0 && v.index >= 0 && u.row === v.row) {
      // across its row ("runs after" beside it: LLaMA's rotary embedding), straight from side
      // to side where nothing is between, else over the row's top
      const right = v.box[1] > u.box[1];
      const across = [mid(u), right ? u.box[1] + u.box[3] : u.box[1], mid(v), right ? v.box[1] : v.box[1] + v.box[3]];
      if (!blocked(across, u, v)) return across;
      const over = Math.min(u.box[0], v.box[0]) - 10;
      return rounded([u.box[0], u.cin, over, u.cin, over, v.cin, v.box[0], v.cin], CORNER);
    }
    if (Math.abs(out[1] - inn[1]) < 0.5) {
      const straight = [...out, ...inn];
      if (!blocked(straight, u, v)) return straight;
    }
    if (v.junction && !u.junction && u.index >= 0) {
      const [sa, sc] = side(v, out[1]);
      const hook = rounded([...out, sa, out[1], sa, sc], CORNER);
      if (!blocked(hook, u, v)) return hook;
    }
    if (u.junction && !v.junction && v.index >= 0) {
      // on down the stream a little, then off to the branch (clear of what joins from the side)
      const turn = Math.max(out[0] + 4, inn[0] - 10);
      const branch = rounded([...out, turn, out[1], turn, inn[1], ...inn], 8);
      if (!blocked(branch, u, v)) return branch;
    }
    // the turns across the flow: in the gap after the source's row, before the target's; from
    // the group's entry below its header, to its exit past its last row
    const afterOut = (d: number) => (u.index === -1 ? -Math.min(7, g.lead / 2) : out[0] + d);
    const beforeIn = (d: number) => (v.index === -2 ? bottomTurn : inn[0] - d);
    const m = afterOut(Math.min(gapBelow(u) / 2, Math.max(4, (inn[0] - out[0]) / 2)));
    const s = rounded([...out, m, out[1], m, inn[1], ...inn], CORNER);
    if (!blocked(s, u, v)) return s;
    // sources or outputs stacked in a column (spine.ts): beside what is in the way only (the
    // source under it; the trunk's side of the outputs above it), not round the whole rows
    // between, where that passes no node
    if ((g.sourcesStacked || g.sinksStacked || g.tapped?.length) && u.index >= 0 && v.index >= 0) {
      const [c0, c1] = [Math.min(out[1], inn[1]), Math.max(out[1], inn[1])];
      let [lo, hi] = [c0, c1];
      let [near, far] = [Infinity, -Infinity]; // (the outputs' column above the target, across)
      let [under0, under1] = [Infinity, -Infinity]; // (a tapped source's column under it)
      for (let r = u.row + 1; r < v.row; r++)
        for (const w of at(byRow, r))
          if (arr.band[w] === u.band && c[w]! < c1 + 1 && c[w]! + at(items, w).ac > c0 - 1) {
            lo = Math.min(lo, c[w]!);
            hi = Math.max(hi, c[w]! + at(items, w).ac);
            if (arr.col[w] === arr.col[v.index])
              [near, far] = [Math.min(near, c[w]!), Math.max(far, c[w]! + at(items, w).ac)];
            if (arr.col[w] === arr.col[u.index])
              [under0, under1] = [Math.min(under0, c[w]!), Math.max(under1, c[w]! + at(items, w).ac)];
          }
      const p1 = afterOut(Math.min(gapBelow(u) / 2, 17));
      const p2 = beforeIn(Math.min(17, Math.max(4, (inn[0] - out[0]) / 4)));
      // between the column and what it feeds: past the outputs above the target, or past the
      // source under a tapped one on the reader's side (not across the bus' taps)
      const between =
        g.sinksStacked && Number.isFinite(near)
          ? [inn[1] > out[1] ? near - LANE_SEP : far + LANE_SEP]
          : g.tapped?.includes(u.index) && Number.isFinite(under0)
            ? [inn[1] > out[1] || (inn[1] === out[1] && away > 0) ? under1 + LANE_SEP : under0 - LANE_SEP]
            : [];
      // (straight under it, on the trunk: outside the lane of the trunk's own edge past it)
      if (g.tapped?.includes(u.index) && inn[1] === out[1] && between.length) between[0]! += away * LANE_STEP;
      const sides = [hi + LANE_SEP, lo - LANE_SEP].sort((x, y) =>
        away ? away * (y - x) : Math.abs(x - c0) - Math.abs(y - c0),
      );
      for (const lane of [...between, ...sides]) {
        const pts = rounded([...out, p1, out[1], p1, lane, p2, lane, p2, inn[1], ...inn], CORNER);
        if (!blocked(pts, u, v)) return pts;
      }
    }
    // a lane beside everything in the rows between
    let loEdge = Math.min(out[1], inn[1]);
    let hiEdge = Math.max(out[1], inn[1]);
    for (let r = Math.max(0, u.row + 1); r <= Math.min(arr.rows - 1, v.row - 1); r++) {
      for (const w of at(byRow, r)) {
        if (arr.band[w] !== u.band && u.index >= 0) continue;
        loEdge = Math.min(loEdge, c[w]!);
        hiEdge = Math.max(hiEdge, c[w]! + at(items, w).ac);
      }
    }
    const a0 = out[0];
    const a1 = inn[0];
    const pick = (sgn: number) => {
      let at = sgn > 0 ? hiEdge + LANE_SEP : loEdge - LANE_SEP;
      for (let moved = true; moved; ) {
        moved = false;
        for (const l of lanes) {
          if (l.side === sgn && l.a0 < a1 && a0 < l.a1 && Math.abs(l.at - at) < LANE_STEP) {
            at = l.at + sgn * LANE_STEP;
            moved = true;
          }
        }
      }
      return at;
    };
    const hiLane = pick(1);
    const loLane = pick(-1);
    const cost = (l: number) => Math.abs(l - out[1]) + Math.abs(l - inn[1]);
    const sgn = away || (cost(hiLane) <= cost(loLane) ? 1 : -1);
    const lane = sgn > 0 ? hiLane : loLane;
    lanes.push({ side: sgn, at: lane, a0, a1 });
    const p1 = afterOut(Math.min(gapBelow(u) / 2, 17));
    // into a junction from the lane's side, level with it; over its top where something of its
    // row stands between (an output beside it: CLIP's pooling beside last_hidden_state)
    if (v.junction) {
      const [sa, sc] = side(v, lane);
      const [x0, x1] = [Math.min(lane, sc), Math.max(lane, sc)];
      const between = at(byRow, v.row).some((w) => w !== v.index && c[w]! < x1 && c[w]! + at(items, w).ac > x0);
      if (!between) return rounded([...out, p1, out[1], p1, lane, sa, lane, sa, sc], CORNER);
    }
    const p2 = beforeIn(Math.min(17, Math.max(4, (inn[0] - out[0]) / 4)));
    return rounded([...out, p1, out[1], p1, lane, p2, lane, p2, inn[1], ...inn], CORNER);
  };

  /** A merge from one column into another (T5's encoder into its decoder, whose trunk is its
   * own ids; T5's mask into both): out of the source's side (or its end), along a lane in the
   * gap between the two columns, into the target's side (or its top); null where every such
   * route passes behind a node. */
  function across(u: End, v: End): number[] | null {
    const from = at(bandBox, u.band);
    const to = at(bandBox, v.band);
    const right = to[1] > from[1];
    const key = right ? `${u.band}>${v.band}` : `${v.band}>${u.band}`;
    // one lane per source in a gap: its merges into several readers share it to their turns
    const own = laneOf.get(`${key}:${u.index}`);
    const k = gapLanes.get(key) ?? 1; // (not the gap's middle: a band's connector runs there)
    const lane =
      own ?? (right ? from[3] + to[1] : to[3] + from[1]) / 2 + (k % 2 ? 1 : -1) * Math.ceil(k / 2) * LANE_STEP;
    const [ua, va] = [mid(u), mid(v)];
    const exit = right ? u.box[1] + u.box[3] : u.box[1];
    const hits = (pts: number[]) => {
      for (let w = 0; w < n; w++) {
        if (w === u.index || w === v.index) continue;
        const box: [number, number, number, number] = [a[w]!, c[w]!, at(items, w).al, at(items, w).ac];
        for (let i = 0; i + 3 < pts.length; i += 2)
          if (segmentHitsBox(pts[i]!, pts[i + 1]!, pts[i + 2]!, pts[i + 3]!, box)) return true;
      }
      return false;
    };
    // out of its side (or, where that is hidden, its end, turning in the gap after its row)
    const turn = u.box[0] + u.box[2] + gapBelow(u) / 2;
    const outs = [
      [ua, exit, ua, lane],
      [u.box[0] + u.box[2], u.cout, turn, u.cout, turn, lane],
    ];
    // into its side (or its top), a second one into the same side beside the first
    const j = entered.get(v.index) ?? 0;
    const into = Math.max(
      v.box[0] + 4,
      Math.min(v.box[0] + v.box[2] - 4, va + (j % 2 ? -1 : 1) * Math.ceil(j / 2) * 8),
    );
    const ins = [
      [into, lane, into, right ? v.box[1] : v.box[1] + v.box[3]],
      [v.box[0] - 12, lane, v.box[0] - 12, v.cin, v.box[0], v.cin],
    ];
    // a group is left from its end and entered over its top: its own routes (layout.ts exits,
    // entries) go on from there, at its trunk
    if (at(items, u.index).group) outs.shift();
    if (at(items, v.index).group) ins.shift();
    const pts = outs.flatMap((o) => ins.map((i) => [...o, ...i])).find((p) => !hits(p));
    if (!pts) return null;
    if (own === undefined) gapLanes.set(key, k + 1);
    laneOf.set(`${key}:${u.index}`, lane);
    entered.set(v.index, j + 1);
    return rounded(pts, CORNER);
  }

  let bottomTurn = 0; // along, in flow coordinates of the finished group: set below
  const routes = arr.edges.map((e) =>
    e.src >= 0 && e.dst >= 0 && !e.hidden ? route(end(e.src), end(e.dst), e.kind) : [],
  );
  // the extent of items and routes; the content starts at 0, 0
  let minA = Infinity,
    minC = Infinity,
    maxA = -Infinity,
    maxC = -Infinity;
  for (let v = 0; v < n; v++) {
    minA = Math.min(minA, a[v]!);
    minC = Math.min(minC, c[v]!);
    maxA = Math.max(maxA, a[v]! + at(items, v).al);
    maxC = Math.max(maxC, c[v]! + at(items, v).ac);
  }
  for (const r of routes) {
    for (let i = 0; i < r.length; i += 2) {
      minA = Math.min(minA, r[i]!);
      maxA = Math.max(maxA, r[i]!);
      minC = Math.min(minC, r[i + 1]!);
      maxC = Math.max(maxC, r[i + 1]!);
    }
  }
  if (n === 0) minA = minC = maxA = maxC = 0;
  for (let v = 0; v < n; v++) {
    a[v]! -= minA;
    c[v]! -= minC;
  }
  for (const r of routes) {
    for (let i = 0; i < r.length; i += 2) {
      r[i]! -= minA;
      r[i + 1]! -= minC;
    }
  }
  for (const b of bandBox) {
    b[0] -= minA;
    b[1] -= minC;
    b[2] -= minA;
    b[3] -= minC;
  }
  const al = maxA - minA;
  const ain = arr.lineIn - minC;
  const aout = arr.lineOut - minC;
  const top: End = { box: [-g.lead, ain, 0, 0], row: -1, band: 0, junction: false, cin: ain, cout: ain, index: -1 };
  const bottom: End = {
    box: [al + g.trail, aout, 0, 0],
    row: arr.rows,
    band: bands - 1,
    junction: false,
    cin: aout,
    cout: aout,
    index: -2,
  };
  bottomTurn = al + Math.min(7, g.trail / 2);
  const inRoutes = g.entries.map((v) => route(top, end(v), "flow"));
  const outRoutes = g.exits.map((v) => route(end(v), bottom, "flow"));
  // a lane of an entry or exit may pass beside everything: the group grows to hold it
  let lo = 0;
  let hi = maxC - minC;
  for (const r of [...inRoutes, ...outRoutes])
    for (let i = 1; i < r.length; i += 2) {
      lo = Math.min(lo, r[i]!);
      hi = Math.max(hi, r[i]!);
    }
  if (lo < 0 || hi > maxC - minC) {
    lo -= lo < 0 ? LANE_SEP / 2 : 0;
    hi += hi > maxC - minC ? LANE_SEP / 2 : 0;
    for (let v = 0; v < n; v++) c[v]! -= lo;
    for (const r of [...routes, ...inRoutes, ...outRoutes]) for (let i = 1; i < r.length; i += 2) r[i]! -= lo;
  }
  const pos: number[] = [];
  for (let v = 0; v < n; v++) pos.push(a[v]!, c[v]!);
  return { al, ac: hi - lo, pos, routes, inRoutes, outRoutes, ain: ain - lo, aout: aout - lo };
}
