/**
 * The model's two ends and its runs, for the view: the node key of an input or output that
 * opens like a stage (graph.ends), whether two graphs are of the same model (a re-run keeps
 * the view), and the comparison's figures of a call. Pure and DOM-free.
 */
import type { StageDiff, WireCall, WireEnd, WireGraph } from "../wire";
import { portOf } from "./ports";
import { inputKey, outputKey } from "./view_model";
import { at } from "../wire_check";

/** The view key of a model input or output with captured data (an item of a tuple returned:
 * its port, model/ports.ts), or null. */
export function endKey(graph: WireGraph, id: string | null): string | null {
  if (id === null || !Object.hasOwn(graph.ends, id)) return null;
  if (graph.inputs.includes(id)) return inputKey(id);
  return graph.outputs.includes(id) ? outputKey(portOf(graph, id)) : null;
}

/** Two graphs of the same model: the same calls (ids and nesting), in the same order. */
export function sameCalls(a: WireGraph, b: WireGraph): boolean {
  return (
    a.calls.length === b.calls.length &&
    a.calls.every((c, i) => c.id === b.calls[i]?.id && c.parent === b.calls[i]?.parent)
  );
}

/** How a stage (by id) or model end differs between runs A and B; null: no comparison, or it ran in one run only. */
export function diffOf(graph: WireGraph, id: string): StageDiff | null {
  const c = graph.comparison;
  if (!c) return null;
  const call = graph.calls.findIndex((x) => x.id === id);
  return (call >= 0 ? c.stages.get(call) : c.ends.get(id)) ?? null;
}

/** Whether a stage (by id) ran in run A only (there is no B to show). */
export function onlyInA(graph: WireGraph, id: string): boolean {
  const c = graph.comparison;
  if (!c) return false;
  const call = graph.calls.findIndex((x) => x.id === id);
  return call >= 0 && c.onlyA.includes(call);
}

/** A model input or output with captured data: it opens in the inspector like a stage. */
export interface EndTarget {
  kind: "input" | "output";
  id: string;
  end: WireEnd;
}

/** The inspector's target for a model input or output with captured data, or null. */
export function endTarget(graph: WireGraph, id: string): EndTarget | null {
  const end = Object.hasOwn(graph.ends, id) ? graph.ends[id] : undefined;
  if (!end) return null;
  return { kind: graph.inputs.includes(id) ? "input" : "output", id, end };
}

/** What the inspector opens for a selected id: its call, or a model input / output; null for none. */
export function targetOf(
  graph: WireGraph,
  byId: ReadonlyMap<string, number>,
  id: string | null,
): WireCall | ReturnType<typeof endTarget> {
  if (id === null) return null;
  const call = byId.get(id);
  return call !== undefined ? at(graph.calls, call) : endTarget(graph, id);
}
