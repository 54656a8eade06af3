/** The widget's frame: toolbar, legend, hint; plain DOM built once per render. */
import { gradientStops } from "./colormap";
import { h, s } from "./dom";

export type ColorMode = "type" | "mean_abs" | "std";

export interface Chrome {
  root: HTMLElement;
  title: HTMLElement;
  counts: HTMLElement;
  search: HTMLInputElement;
  searchCount: HTMLElement;
  dirTB: HTMLButtonElement;
  dirLR: HTMLButtonElement;
  color: HTMLSelectElement;
  fit: HTMLButtonElement;
  reset: HTMLButtonElement;
  svg: HTMLButtonElement;
  png: HTMLButtonElement;
  main: HTMLElement;
  canvas: HTMLElement;
  legend: HTMLElement;
  hint: HTMLElement;
  busy: HTMLElement;
}

function button(label: string, title: string, attrs: Record<string, string> = {}): HTMLButtonElement {
  return h("button", { class: "nfw-btn", type: "button", title, ...attrs }, label);
}

export function buildChrome(css: string): Chrome {
  const title = h("b", {});
  const counts = h("span", {});
  const search = h("input", { class: "nfw-search", type: "search", placeholder: "Search name or type", "aria-label": "search stages", spellcheck: "false" });
  const searchCount = h("span", { class: "nfw-search-count", "aria-live": "polite" });
  const dirTB = button("↓ TB", "Top to bottom", { "aria-pressed": "true" });
  const dirLR = button("→ LR", "Left to right", { "aria-pressed": "false" });
  const color = h("select", { class: "nfw-select", title: "Node colour", "aria-label": "node colour" },
    h("option", { value: "type" }, "Colour: type"),
    h("option", { value: "mean_abs" }, "Colour: mean |x|"),
    h("option", { value: "std" }, "Colour: std"));
  const fit = button("Fit", "Fit the graph to the view (F)");
  const reset = button("Reset", "Back to the starting expansion");
  const svg = button("SVG", "Download the graph as SVG");
  const png = button("PNG", "Download the graph as PNG");
  const toolbar = h("div", { class: "nfw-toolbar" },
    h("div", { class: "nfw-title" }, title, counts),
    search, searchCount,
    h("span", { class: "nfw-sep" }),
    h("span", { class: "nfw-btn-group", role: "group", "aria-label": "direction" }, dirTB, dirLR),
    color, fit, reset,
    h("span", { class: "nfw-sep" }),
    svg, png);
  const legend = h("div", { class: "nfw-legend", "aria-hidden": "true" });
  const hint = h("div", { class: "nfw-hint" }, "Ctrl + scroll (or click the graph) to zoom");
  const busy = h("div", { class: "nfw-busy", hidden: true }, "laying out …");
  const canvas = h("div", { class: "nfw-canvas", tabindex: "0", "aria-label": "graph: arrows move along edges, Enter opens, Esc closes" }, legend, hint, busy);
  const main = h("div", { class: "nfw-main" }, canvas);
  const style = h("style", {});
  style.textContent = css;
  const root = h("div", { class: "nfw-root" }, style, toolbar, main);
  return { root, title, counts, search, searchCount, dirTB, dirLR, color, fit, reset, svg, png, main, canvas, legend, hint, busy };
}

function swatch(kind: "flow" | "skip" | "merge"): SVGSVGElement {
  // Styled inline: data-edge-kind is reserved for the graph's edges (tests count them).
  const line = s("line", {
    x1: 1, y1: 5, x2: 25, y2: 5, "stroke-width": 2,
    stroke: `var(--nfw-${kind})`, "stroke-dasharray": kind === "skip" ? "5 3" : null,
  });
  return s("svg", { width: 26, height: 10 }, line);
}

export function fillLegend(legend: HTMLElement, mode: ColorMode, range: [number, number] | null) {
  const items: (HTMLElement | string)[] = [
    h("span", {}, swatch("flow"), "flow"),
    h("span", {}, swatch("skip"), "skip"),
    h("span", {}, swatch("merge"), "merge"),
  ];
  if (mode !== "type" && range) {
    const grad = h("i", { class: "nfw-grad" });
    grad.style.background = `linear-gradient(to right, ${gradientStops(false, 0, 1)})`;
    items.push(h("span", {}, mode === "std" ? "std " : "mean |x| ", range[0].toPrecision(2), grad, range[1].toPrecision(2)));
  }
  legend.replaceChildren(...items);
}
