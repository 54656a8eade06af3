/**
 * The backward pass of a run with a loss, for the view: each call's gradient norm (of the loss
 * with respect to its output; `graph.grad`), a drawn node's (a fold: the geometric mean of
 * its members', the norms spanning decades), where the gradient vanishes or explodes along
 * the trunk and where NaN / Inf entered the backward pass (the banners' words), and the order
 * a walk backwards visits things. Pure and DOM-free; every text is shown as text.
 */
import type { WireGraph } from "../wire";
import { at } from "../wire_check";

/** Whether the run had a loss (a backward pass ran): the graph carries gradient norms. */
export const hasGradients = (graph: WireGraph): boolean => graph.grad !== null;

/** The gradient norm of some calls together: the geometric mean of their finite, positive
 * norms (a fold's members), 0 where every one that reached them is 0; null where none did. */
export function gradientOf(graph: WireGraph, calls: readonly number[]): number | null {
  const norms = calls
    .map((c) => graph.grad?.[c])
    .filter((v): v is number => typeof v === "number" && Number.isFinite(v));
  if (!norms.length) return null;
  const positive = norms.filter((v) => v > 0);
  if (!positive.length) return 0;
  return 10 ** (positive.reduce((s, v) => s + Math.log10(v), 0) / positive.length);
}

/** Whether any of these calls' gradients held NaN / Inf. */
export function gradientNonfinite(graph: WireGraph, calls: readonly number[]): boolean {
  return calls.some((c) => graph.nonfinite_grad.includes(c));
}

/** A banner's words about the backward pass: what, where (the stage it selects), in detail. */
export interface GradientHeadline {
  kind: "vanishing" | "exploding" | "nonfinite";
  lead: string; // its pill: "gradient vanishes", "gradient explodes", "NaN/Inf gradient"
  stage: string; // the stage it names and selects
  text: string; // the sentence, the stage's name in it as `stage`
  detail: string; // the figures
}

const upper = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * The banners of the backward pass: where NaN / Inf entered it (the first call of
 * `nonfinite_grad`), then where the gradient vanished or exploded along the trunk
 * (`gradient_flow`, in graph/gradients.py's words); none when it flowed.
 */
export function gradientHeadlines(graph: WireGraph): GradientHeadline[] {
  const out: GradientHeadline[] = [];
  const first = graph.nonfinite_grad[0];
  if (first !== undefined) {
    const n = graph.nonfinite_grad.length;
    out.push({
      kind: "nonfinite",
      lead: "NaN/Inf gradient",
      stage: at(graph.calls, first).id,
      text: "NaN/Inf entered the backward pass at",
      detail: n > 1 ? `${n} stages' gradients hold NaN/Inf` : "the only stage whose gradient holds NaN/Inf",
    });
  }
  const flow = graph.gradient_flow;
  if (flow && flow.kind !== "healthy" && flow.at !== null) {
    out.push({
      kind: flow.kind,
      lead: flow.kind === "vanishing" ? "gradient vanishes" : "gradient explodes",
      stage: at(graph.calls, flow.at).id,
      text: upper(flow.text),
      detail: `along the ${flow.calls.length} stages of the trunk`,
    });
  }
  return out;
}
