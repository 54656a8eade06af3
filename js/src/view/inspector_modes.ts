/**
 * What the inspector shows of a stage after a backward pass: its output, or the gradient of
 * the loss with respect to it (the same views and statistics, of the gradient, with its L2
 * norm); the switch between them, above the Output section.
 */
import { h } from "./dom";

export type Of = "output" | "grad";

/** The switch: "Output" | "Gradient ∂loss/∂output" (aria-pressed on the one shown). */
export function ofSwitch(of: Of, change: (of: Of) => void): HTMLElement {
  const button = (value: Of, label: string, title: string) => {
    const b = h(
      "button",
      { class: "nfw-of", type: "button", "aria-pressed": String(of === value), "data-of": value, title },
      label,
    );
    b.addEventListener("click", () => change(value));
    return b;
  };
  return h(
    "div",
    { class: "nfw-of-switch", role: "group", "aria-label": "output or gradient" },
    button("output", "Output", "What this stage returned in the forward pass"),
    button(
      "grad",
      "Gradient ∂loss/∂output",
      "The gradient of the loss with respect to this stage's output (the backward pass)",
    ),
  );
}
