/**
 * Edges drawn as another kind than the topology's (graph/edges.py), where its rule would mislead
 * a reader; the kinds on the wire stay as they are. Pure and DOM-free.
 *
 * Branches of a stream: a merge (a source off the reader's path) whose source forks from the
 * stream the reader continues, not from another input. The flow edges form a forest (each node
 * continues at most one source), so a source forks from the reader's stream when both lie in
 * one tree: the keys and values of a self-attention beside its queries, an Inception module's
 * branches beside the one its concatenation continues, a parallel block's MLP beside its
 * attention, a projected shortcut. They are drawn as the data flowing (flow), not as
 * conditioning, which comes from a tree of its own (a timestep, a text, an encoder's output
 * into a decoder, a position embedding, a second modality).
 *
 * Token ids read again: a skip (a source on the reader's path) from an integer model input is
 * the ids read as an index or a mask (CLIP's pooling at each text's end token, a padding mask
 * made from the ids), not data carried past the layers: drawn as a merge.
 */
import type { EdgeKind } from "../wire";
import type { ViewEdge, ViewGraph } from "./view_model";

/** The edges of a view drawn as another kind, and that kind. */
export function drawnKinds(view: ViewGraph): Map<ViewEdge, EdgeKind> {
  const kinds = new Map<ViewEdge, EdgeKind>();
  for (const e of branchMerges(view)) kinds.set(e, "flow");
  const { ends } = view.tree.graph;
  for (const e of view.edges) {
    const id = e.kind === "skip" ? view.byKey.get(e.src)?.id : undefined;
    if (id !== undefined && view.byKey.get(e.src)?.kind === "input" && /int|long/.test(ends[id]?.dtype ?? ""))
      kinds.set(e, "merge");
  }
  return kinds;
}

/** The merges of a view that are branches of their reader's own stream. */
export function branchMerges(view: ViewGraph): Set<ViewEdge> {
  const from = new Map<string, string>(); // node -> the source it continues (its flow edge)
  for (const e of view.edges) if (e.kind === "flow" && !from.has(e.dst)) from.set(e.dst, e.src);
  const roots = new Map<string, string>();
  const root = (key: string): string => {
    const path = new Set<string>(); // (a cycle of flow edges, never drawn, ends the walk)
    let k = key;
    while (!roots.has(k) && !path.has(k) && from.has(k)) {
      path.add(k);
      k = from.get(k)!;
    }
    const r = roots.get(k) ?? k;
    for (const p of path) roots.set(p, r);
    roots.set(k, r);
    return r;
  };
  const found = new Set<ViewEdge>();
  for (const e of view.edges) {
    const trunk = e.kind === "merge" ? from.get(e.dst) : undefined;
    if (trunk !== undefined && root(e.src) === root(trunk)) found.add(e);
  }
  return found;
}
