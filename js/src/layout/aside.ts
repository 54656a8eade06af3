/**
 * The conditioning beside a U (ushape.ts) in slots, each stacked in its column: a chain (a
 * timestep -> time_proj -> time_embedding) item by item, straight down; a part that branches
 * or merges (SDXL's text embeds and time ids concatenated into add_embedding, added to the
 * time embedding; Kandinsky's image embeds into both add_embedding and encoder_hid_proj)
 * laid out whole by spine.ts, one slot. Flow coordinates; pure, no DOM.
 */
import { at } from "../wire_check";
import type { FlowEdge, FlowItem, FlowPlacement } from "./flow";
import { RANKSEP, rounded } from "./flow";
import { routeArranged } from "./routes";
import { arrange } from "./spine";

export interface Slot {
  qs: number[]; // positions in the conditioning's order: one for a chain's item, all of a part laid out whole
  al: number;
  ac: number;
  /** A part laid out whole: its items' places (in `qs` order) and its edges' routes, from the
   * slot's corner, and those edges (indices into the group's). */
  whole?: { placed: FlowPlacement; edges: number[] };
}

/** The conditioning's slots in its order (`aside`, each part contiguous in it; `partOf`
 * names each one's part); `inside`: the group's edges between two of its items. null where a
 * part tangles. */
export function slotsOf(
  items: readonly FlowItem[],
  edges: readonly FlowEdge[],
  aside: readonly number[],
  partOf: (v: number) => number,
  inside: readonly number[],
  narrow: boolean,
): Slot[] | null {
  const q = new Map(aside.map((v, i) => [v, i]));
  const slots: Slot[] = [];
  for (let i = 0; i < aside.length; ) {
    const p = partOf(at(aside, i));
    let j = i;
    while (j < aside.length && partOf(at(aside, j)) === p) j++;
    const qs = Array.from({ length: j - i }, (_, k) => i + k);
    const own = inside.filter((e) => partOf(at(edges, e).src) === p);
    const chain = own.every((e) => q.get(at(edges, e).dst) === q.get(at(edges, e).src)! + 1);
    if (chain)
      for (const k of qs) slots.push({ qs: [k], al: at(items, at(aside, k)).al, ac: at(items, at(aside, k)).ac });
    else {
      const local = (v: number) => q.get(v)! - i;
      const sub = {
        items: qs.map((k) => ({ ...at(items, at(aside, k)), spine: false })),
        edges: own.map((e) => ({ ...at(edges, e), src: local(at(edges, e).src), dst: local(at(edges, e).dst) })),
        entries: [],
        exits: [],
        lead: 0,
        trail: 0,
      };
      // (narrow: its sources on its trunk where that is narrower, SDXL's text embeds over the
      // concatenation with its time ids)
      const tries = [sub, ...(narrow ? [{ ...sub, sourcesInline: true }] : [])].flatMap((f) => {
        const arr = arrange(f);
        return arr ? [routeArranged(arr, f)] : [];
      });
      if (!tries.length) return null;
      const placed = tries.reduce((a, b) => (b.ac < a.ac - 1 ? b : a));
      slots.push({ qs, al: placed.al, ac: placed.ac, whole: { placed, edges: own } });
    }
    i = j;
  }
  return slots;
}

/** A conditioning item's edge into the U's bottom (ushape.ts), from its out side at `from`
 * (along, across): down a little, across to `lane` (outside the encoder's column), down to a
 * rank above the bottom's `top`, across to `x` and down into its top (the trunk enters a plain
 * bottom's side, and under it the buses go round the U). */
export function feedRoute([a, c]: [number, number], lane: number, x: number, top: number): number[] {
  const [below, over] = [a + 12, top - RANKSEP / 2];
  return rounded([a, c, below, c, below, lane, over, lane, over, x, top, x], 10);
}
