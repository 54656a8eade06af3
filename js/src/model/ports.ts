/**
 * Model outputs that are the items of one tuple or list: `hidden_states.0` … `hidden_states.12`
 * (a Hugging Face model called with output_hidden_states=True), `attentions.0` …, ControlNet's
 * `down_block_res_samples.0` …. They are drawn as one port, "output:hidden_states.0 … 12", that
 * every stage which made one of them feeds, instead of thirteen ports side by side; playback
 * and the inspector go through the items one by one. Pure and DOM-free.
 */
import type { WireGraph } from "../wire";

/** At least this many items make a family (a 2-layer model's attentions). */
export const MIN_FAMILY = 2;
const ITEM = /^(output:.+)\.(\d+)$/; // "output:hidden_states.3" (not "output:0": a plain tuple's items differ)

export interface Family {
  head: string; // its first output's name: the port's id
  members: string[]; // the outputs, in order
  label: string; // "output:hidden_states.0 … 12"
}

const memo = new WeakMap<WireGraph, Map<string, Family>>();

/** The family of each output that has one: consecutive outputs `prefix.N`, `prefix.N+1`, …
 * (>= MIN_FAMILY of them) of one prefix. */
export function familyOf(graph: WireGraph): Map<string, Family> {
  const known = memo.get(graph);
  if (known) return known;
  const of = new Map<string, Family>();
  const { outputs } = graph;
  let i = 0;
  while (i < outputs.length) {
    const m = ITEM.exec(outputs[i]!);
    let j = i + 1;
    if (m) {
      for (let n = Number(m[2]); j < outputs.length; j++, n++) {
        const next = ITEM.exec(outputs[j]!);
        if (!next || next[1] !== m[1] || Number(next[2]) !== n + 1) break;
      }
    }
    if (m && j - i >= MIN_FAMILY) {
      const members = outputs.slice(i, j);
      const last = ITEM.exec(members.at(-1)!)![2];
      const family = { head: members[0]!, members, label: `${m[1]}.${m[2]} … ${last}` };
      for (const name of members) of.set(name, family);
    }
    i = j;
  }
  memo.set(graph, of);
  return of;
}

/** The port an output is drawn as: its family's head, else itself. */
export function portOf(graph: WireGraph, name: string): string {
  return familyOf(graph).get(name)?.head ?? name;
}
