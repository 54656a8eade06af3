/** The keyboard help (the `?` key, the toolbar's "?" button): what each key does. */
import { h } from "./dom";

const KEYS: [string, string][] = [
  ["Space", "play or pause the forward pass, step by step"],
  ["← →", "while playing: a step back or on; else move along the edges"],
  ["↑ ↓", "move along the edges"],
  ["Enter", "open the focused stage in the inspector"],
  ["+  −", "expand the focused block, collapse the one around it"],
  ["Shift + F10", "what if: switch the focused stage off, or some of its heads (also a right click)"],
  ["F", "fit the whole graph in view"],
  ["/", "find a stage by name or type"],
  ["Ctrl + scroll", "zoom (or click the graph first)"],
  ["Esc", "close this help, stop playback, close the inspector, end the presentation"],
  ["?", "show or hide this help"],
];

/** The help panel, hidden; `toggle` shows or hides it. */
export function buildHelp(): HTMLElement {
  const rows = KEYS.map(([key, what]) =>
    h("div", { class: "nfw-help-row" }, h("span", { class: "nfw-kbd" }, key), h("span", {}, what)),
  );
  return h(
    "div",
    { class: "nfw-help", role: "dialog", "aria-label": "Keyboard help", hidden: true },
    h("div", { class: "nfw-help-title" }, "Keys"),
    ...rows,
  );
}
