/** The widget's frame: toolbar, banners, legend, hint; plain DOM built once per render. */
import type { EdgeKind } from "../wire";
import { cssColor, gradientStops, NAN_MARK, nonfiniteColor, viridis } from "./colormap";
import { h, s } from "./dom";
import { buildHelp } from "./help";
import { residualSwatch } from "./residual_mark";
import { NO_GRAD_FILL, ONLY_A_FILL, RAISED_FILL, SAME_FILL, type ColorMode, type StatScale } from "./stat_colors";

export type { ColorMode };

export interface Chrome {
  root: HTMLElement;
  title: HTMLElement;
  counts: HTMLElement;
  notes: HTMLButtonElement; // the run's notes shown or hidden (view/banners.ts)
  search: HTMLInputElement;
  searchCount: HTMLElement;
  dirTB: HTMLButtonElement;
  dirLR: HTMLButtonElement;
  color: HTMLSelectElement;
  fit: HTMLButtonElement;
  reset: HTMLButtonElement;
  svg: HTMLButtonElement;
  png: HTMLButtonElement;
  present: HTMLButtonElement;
  data: HTMLButtonElement; // data on the graph
  helpButton: HTMLButtonElement;
  help: HTMLElement; // the keyboard help, over the graph
  banners: HTMLElement; // what went wrong in the run, above the graph (never over it)
  main: HTMLElement;
  canvas: HTMLElement;
  legend: HTMLElement;
  hint: HTMLElement;
  busy: HTMLElement;
}

/** A toolbar button; `wide`: more words, shown where the toolbar has room (not in a narrow column). */
function button(label: string, title: string, attrs: Record<string, string> = {}, wide = ""): HTMLButtonElement {
  const more = wide ? [h("span", { class: "nfw-wide" }, wide)] : [];
  return h("button", { class: "nfw-btn", type: "button", title, ...attrs }, label, ...more);
}

export function buildChrome(css: string): Chrome {
  const title = h("b", {});
  const counts = h("span", {});
  // the run's notes (the data an exported page left out, the meta device) are a banner the
  // user opens from this button: the graph keeps the canvas's height (view/banners.ts)
  const notes = h("button", { class: "nfw-notes-toggle", type: "button", hidden: true, "aria-expanded": "false" }, "i");
  const search = h("input", {
    class: "nfw-search",
    type: "search",
    placeholder: "Find a stage",
    title: "Find stages by name or type (/)",
    "aria-label": "search stages",
    spellcheck: "false",
  });
  const searchCount = h("span", { class: "nfw-search-count", "aria-live": "polite" });
  const dirTB = button("↓", "Top to bottom", { "aria-pressed": "true" }, " TB");
  const dirLR = button("→", "Left to right", { "aria-pressed": "false" }, " LR");
  const color = h(
    "select",
    { class: "nfw-select", title: "Node colour", "aria-label": "node colour" },
    h("option", { value: "type" }, "type"),
    h("option", { value: "mean_abs" }, "mean |x|"),
    h("option", { value: "std" }, "std"),
    h("option", { value: "divergence", hidden: true, disabled: true }, "A vs B"),
    h("option", { value: "grad", hidden: true, disabled: true }, "gradient norm"),
    h("option", { value: "patching", hidden: true, disabled: true }, "patching"),
  );
  const fit = button("Fit", "Fit the graph to the view (F)");
  const reset = button("Reset", "Back to the starting expansion");
  const svg = button("SVG", "Download the graph as SVG", { class: "nfw-btn nfw-export" });
  const png = button("PNG", "Download the graph as PNG", { class: "nfw-btn nfw-export" });
  const present = button("", "Present: full screen, larger type, more contrast", {
    "aria-label": "Present",
    "aria-pressed": "false",
  });
  present.append(
    s(
      "svg",
      { width: 16, height: 14, viewBox: "0 0 16 14", "aria-hidden": "true" },
      s("rect", {
        x: 1,
        y: 1,
        width: 14,
        height: 9,
        rx: 1.5,
        fill: "none",
        stroke: "currentColor",
        "stroke-width": 1.4,
      }),
      s("path", { d: "M8 10v3M5 13h6", stroke: "currentColor", "stroke-width": 1.4, "stroke-linecap": "round" }),
    ),
    h("span", { class: "nfw-present-label" }, "End"),
  );
  const data = button("Data", "Data on the graph: each stage's view as a picture on its node", {
    "aria-label": "Data on the graph",
    "aria-pressed": "false",
  });
  const helpButton = button("?", "Keyboard help (?)", { "aria-label": "Keyboard help", "aria-expanded": "false" });
  const help = buildHelp();
  const toolbar = h(
    "div",
    { class: "nfw-toolbar" },
    h("div", { class: "nfw-title" }, title, counts, notes),
    search,
    searchCount,
    h("span", { class: "nfw-sep" }),
    h("span", { class: "nfw-btn-group", role: "group", "aria-label": "direction" }, dirTB, dirLR),
    h("label", { class: "nfw-color" }, h("span", { class: "nfw-color-word" }, "Colour"), color),
    data,
    fit,
    reset,
    h("span", { class: "nfw-sep" }),
    svg,
    png,
    present,
    helpButton,
  );
  const legend = h("div", { class: "nfw-legend", "aria-hidden": "true" });
  const hint = h("div", { class: "nfw-hint" }, "Ctrl + scroll (or click the graph) to zoom");
  const busy = h("div", { class: "nfw-busy", hidden: true }, "laying out …");
  const canvas = h(
    "div",
    {
      class: "nfw-canvas",
      tabindex: "0",
      "aria-label":
        "graph: arrows move along edges, Enter opens, Space plays the forward pass step by step, Esc closes",
    },
    legend,
    hint,
    busy,
  );
  const main = h("div", { class: "nfw-main" }, canvas, help);
  const banners = h("div", { class: "nfw-banners", hidden: true });
  const style = h("style", {});
  style.textContent = css;
  const root = h("div", { class: "nfw-root" }, style, toolbar, banners, main);
  return {
    root,
    title,
    counts,
    notes,
    search,
    searchCount,
    dirTB,
    dirLR,
    color,
    fit,
    reset,
    svg,
    png,
    present,
    data,
    helpButton,
    help,
    banners,
    main,
    canvas,
    legend,
    hint,
    busy,
  };
}

const hintTimers = new WeakMap<HTMLElement, number>();

/** Show the zoom hint for a moment (`ms` 0: hide it now). */
export function flashHint(hint: HTMLElement, ms = 1200) {
  clearTimeout(hintTimers.get(hint));
  hint.classList.toggle("nfw-show", ms > 0);
  if (ms > 0)
    hintTimers.set(
      hint,
      window.setTimeout(() => hint.classList.remove("nfw-show"), ms),
    );
}

/** In place of the graph: why it cannot be shown (as text). */
export function showFatal(canvas: HTMLElement, err: unknown) {
  const box = h("div", { class: "nfw-fatal" });
  box.textContent = `neural_flow_widget cannot show this graph.\n${(err as Error)?.message ?? String(err)}`;
  canvas.replaceChildren(box);
}

/** The legend's names of the edge kinds. */
export const EDGE_NAMES: Record<EdgeKind, string> = {
  flow: "flow",
  skip: "skip",
  merge: "merge / conditioning",
  order: "runs after (no data)",
};

function swatch(kind: EdgeKind): SVGSVGElement {
  // Styled inline: data-edge-kind is reserved for the graph's edges (tests count them).
  const line = s("line", {
    x1: 2,
    y1: 5,
    x2: 24,
    y2: 5,
    "stroke-width": 2,
    stroke: `var(--nfw-${kind})`,
    "stroke-dasharray": kind === "skip" ? "5 3" : kind === "order" ? "0.5 4" : null,
    "stroke-linecap": kind === "order" ? "round" : null,
  });
  return s("svg", { width: 26, height: 10 }, line);
}

/** The residual mark's swatch in the theme's colours (view/residual_mark.ts). */
const INK = {
  card: "var(--nfw-bg2)",
  border: "var(--nfw-border)",
  arc: "var(--nfw-skip)",
  disc: "var(--nfw-bg)",
  glyph: "var(--nfw-fg0)",
};

function label(x: number): string {
  return x === 0
    ? "0"
    : Math.abs(x) >= 1e4 || Math.abs(x) < 1e-3
      ? x.toExponential(1)
      : String(Number(x.toPrecision(2)));
}

/** Edge kinds (flow, skip, merge always; "runs after" when drawn), the signs of the junctions
 * drawn (where data meets: "+ added"), the residual marks' words (residual_mark.ts
 * residualLegendWords) when a collapsed residual block is drawn, then the colour scale, if any. */
export function fillLegend(
  legend: HTMLElement,
  scale: StatScale | null,
  kinds: ReadonlySet<EdgeKind>,
  signs: [string, string][] = [],
  residual: string | null = null,
) {
  const items: (HTMLElement | string)[] = (["flow", "skip", "merge", "order"] as const)
    .filter((k) => k !== "order" || kinds.has(k))
    .map((k) => h("span", { "data-legend": k }, swatch(k), EDGE_NAMES[k]));
  for (const [sign, words] of signs)
    items.push(h("span", { "data-legend": "junction" }, h("b", { class: "nfw-legend-sign" }, sign), words));
  if (residual) {
    const swatch = s("svg", { width: 28, height: 18, viewBox: "0 0 28 18" }, ...residualSwatch(INK));
    items.push(h("span", { "data-legend": "residual" }, swatch, residual));
  }
  if (scale) {
    const parts: (HTMLElement | string)[] = [h("span", {}, MODE_WORDS[scale.mode])];
    const chip = (fill: string, words: string, key: string) => {
      const box = h("i", { class: "nfw-chip" });
      box.style.background = fill;
      parts.push(h("span", { class: "nfw-legend-chip", "data-legend-fill": key }, box, words));
    };
    // Comparing: the stages equal within the tolerance first, pale and off the ramp, which starts above it.
    if (scale.mode === "divergence" && scale.same)
      chip(SAME_FILL.fill, `same (≤ ${label(scale.rtol ?? 1e-3)})`, "same");
    if (scale.mode === "divergence" && !scale.unramped) parts.push(h("span", {}, "rel. L2"));
    if (scale.mode === "grad") parts.push(h("span", {}, "‖∂loss/∂output‖"));
    if (scale.mode === "patching") parts.push(h("span", {}, "share of the gap restored"));
    if (scale.mode === "divergence" && scale.unramped) {
      // no drawn stage differs: no ramp
    } else if (scale.hi > scale.lo) {
      const grad = h("i", { class: "nfw-grad" });
      grad.style.background = `linear-gradient(to right, ${gradientStops(false, 0, 1)})`;
      parts.push(
        h("span", { class: "nfw-scale" }, scale.log ? "log scale" : "linear"),
        h(
          "span",
          { class: "nfw-legend-ramp" },
          `${scale.clippedLo ? "≤" : ""}${label(scale.lo)}`,
          grad,
          `${scale.clippedHi ? "≥" : ""}${label(scale.hi)}`,
        ),
      );
    } else if (scale.mode === "divergence") {
      chip(cssColor(viridis(0.5)), label(scale.lo), "differs"); // one value differs (rampPosition: the middle)
    } else if (scale.hi === scale.lo && !scale.nonfinite) {
      parts.push(` ${label(scale.lo)} everywhere`);
    }
    if (scale.nonfinite) chip(cssColor(nonfiniteColor(NAN_MARK)), "NaN/Inf", "nonfinite");
    if (scale.raised) chip(RAISED_FILL.fill, "raised", "raised");
    if (scale.onlyA) chip(ONLY_A_FILL.fill, "run A only", "onlyA");
    if (scale.none) chip(NO_GRAD_FILL.fill, "no gradient", "nograd");
    items.push(h("span", { class: "nfw-legend-stat", "data-legend": "stat" }, ...parts));
  }
  legend.replaceChildren(...items);
}

/** The legend's words for what the nodes are coloured by. */
const MODE_WORDS: Record<StatScale["mode"], string> = {
  mean_abs: "mean |x|",
  std: "std",
  divergence: "A vs B:",
  grad: "gradient norm",
  patching: "patching:",
};

/** The colourings a run offers beyond type and the statistics: "A vs B" with a comparison,
 * "gradient norm" after a backward pass, "patching" with activation patching. */
export type Offered = Record<"divergence" | "grad" | "patching", boolean>;

/**
 * The colour mode once a run comes (`before`: what the last one offered; null: none): each
 * colouring is offered only where the run has it; a comparison or patching that comes is
 * chosen (the user asked for it just now); a mode no longer offered falls back to type.
 */
export function colorModeFor(select: HTMLSelectElement, offered: Offered, before: Offered | null, mode: ColorMode) {
  for (const key of ["divergence", "grad", "patching"] as const) {
    const option = select.querySelector<HTMLOptionElement>(`option[value="${key}"]`);
    if (option) option.hidden = option.disabled = !offered[key];
  }
  const came = (key: keyof Offered) => offered[key] && !before?.[key];
  let next: ColorMode = mode;
  if (came("patching")) next = "patching";
  else if (came("divergence")) next = "divergence";
  else if (mode !== "type" && mode in offered && !offered[mode as keyof Offered]) next = "type";
  select.value = next;
  return next;
}
