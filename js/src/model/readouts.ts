/**
 * The logit lens, for the view: which drawn node or group shows the readout of a block (its
 * output, the residual stream, read through the model's own final norm and unembedding: its
 * most likely next token), at a chosen position; during playback, only the blocks the walk
 * has passed. Pure and DOM-free; token texts are shown as text, never as HTML.
 */
import type { WireGraph } from "../wire";
import { visible } from "./format";
import { at } from "../wire_check";
import type { CallTree } from "./tree";

/** One readout at one position: the most likely next token, its text and probability. */
export interface Top {
  id: number;
  name: string; // the token's text (the tokenizer's), or "#<id>" without one
  p: number;
}

/** A token's text as the lens writes it: quoted, its blanks visible (model/format.ts). */
export const tokenText = (name: string): string => `‘${visible(name)}’`;

export const percent = (p: number): string =>
  p >= 0.995 ? "99%" : p >= 0.1 ? `${Math.round(p * 100)}%` : p >= 0.01 ? `${(p * 100).toFixed(1)}%` : "<1%";

/** Each readout call's top token at the last position, from the graph (`graph.readouts`). */
export function lastPosition(graph: WireGraph): Map<number, Top> {
  const out = new Map<number, Top>();
  for (const [call, id, p] of graph.readouts)
    out.set(call, { id, name: graph.readout_names[String(id)] ?? String(id), p });
  return out;
}

/**
 * The calls that show a chip: the blocks of the residual stream, i.e. the readout calls of
 * a run of equal blocks (another readout call under the same parent with the same
 * structure: GPT-2's h.0, h.1, ..., not their attention or MLP, which read too, nor the
 * model body around them); where there is no such run, every readout call.
 */
export function readoutBlocks(graph: WireGraph): number[] {
  const calls = graph.readouts.map(([c]) => c);
  const key = (c: number) => {
    const call = at(graph.calls, c);
    return `${call.parent}\u0000${call.sig}\u0000${call.type}`;
  };
  const count = new Map<string, number>();
  for (const c of calls) count.set(key(c), (count.get(key(c)) ?? 0) + 1);
  const blocks = calls.filter((c) => (count.get(key(c)) ?? 0) >= 2);
  return blocks.length ? blocks : calls;
}

/** Per call, the last call index inside it (itself when it has no children): the call has
 * returned once the forward pass has gone beyond it. */
export function lastInside(tree: CallTree): Int32Array {
  const last = new Int32Array(tree.graph.calls.length);
  for (let c = tree.graph.calls.length - 1; c >= 0; c--) {
    let m = c;
    for (const k of at(tree.children, c)) m = Math.max(m, last[k] ?? k);
    last[c] = m;
  }
  return last;
}
