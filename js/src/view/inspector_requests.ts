/**
 * What the inspector asks for and of what (inspector.ts keeps the state): a request without
 * the fields left at their defaults (its cache key), what a stage offers after a backward
 * pass, a logit lens or activation patching, and a failed request in words.
 */
import { patchMap } from "../model/experiments";
import type { StageRequest, WireGraph } from "../wire";

/** Whether a stage has a gradient to show (the run had a loss, and one reached it, finite or not). */
export function hasGrad(g: WireGraph | null, stage: string): boolean {
  const c = g?.calls.findIndex((x) => x.id === stage) ?? -1;
  return !!g?.grad && c >= 0 && (g.grad[c] !== null || g.nonfinite_grad.includes(c));
}

/** Whether a stage has a readout (the logit lens). */
export function reads(g: WireGraph | null, stage: string): boolean {
  return !!g?.readouts.some(([c]) => g.calls[c]?.id === stage);
}

/** The patching heat map and a stage's row in it (null: not patched). */
export function patchedRow(g: WireGraph | null, stage: string) {
  const map = g ? patchMap(g) : null;
  const row = map ? map.rows.indexOf(stage) : -1;
  return map && row >= 0 ? { map, row } : null;
}

/** A request without the optional fields it leaves at their defaults (page, channels, run A). */
export function plain(req: StageRequest): StageRequest {
  const { page, channels, run, window, of, readout, position, ...rest } = req;
  return {
    ...rest,
    ...(page ? { page } : {}),
    ...(channels ? { channels } : {}),
    ...(window ? { window } : {}),
    ...(run && run !== "a" ? { run } : {}),
    ...(of === "grad" ? { of } : {}),
    ...(readout ? { readout, position: position ?? null } : {}),
  };
}

export function describeError(err: unknown): string {
  const e = err as { name?: string; message?: string } | null;
  if (e?.name === "TimeoutError")
    return "The kernel did not answer within 10 s. Is it busy, or was it restarted? Re-run the cell that shows the widget, then retry.";
  if (e?.name === "AbortError") return "The request was cancelled.";
  return `Could not load this stage: ${e?.message ?? String(err)}`;
}
