/**
 * The widget's CSS, injected into its own element. JupyterLab variables with fallbacks.
 *
 * The widget lives inside host pages (JupyterLab, Notebook, VS Code, exported HTML) whose
 * global rules reach every element below them, e.g. JupyterLab's
 * `.jp-OutputArea-output dt { float: left; width: 20% }`. So: every rule is scoped under
 * `.nfw-root` and names an nfw- class (specificity (0,2,0) and up, above the usual
 * `.host-class element` rules at (0,1,1)); a reset before them sets back, for every element
 * type the widget uses, the properties a host likes to change; and the widget uses no
 * elements that hosts style heavily (no dl, table or h1..h6: plain divs with grid rules).
 */

import { EXPERIMENT_CSS, EXPERIMENT_GRAPH_CSS } from "./styles_experiments";
import { INSPECTOR_CSS } from "./styles_inspector";

/** Names of the theme variables; the SVG export resolves them to colours. */
export const THEME_VARS = [
  "--nfw-bg",
  "--nfw-bg1",
  "--nfw-bg2",
  "--nfw-bg3",
  "--nfw-fg0",
  "--nfw-fg1",
  "--nfw-fg2",
  "--nfw-fg3",
  "--nfw-border",
  "--nfw-border2",
  "--nfw-accent",
  "--nfw-error",
  "--nfw-flow",
  "--nfw-skip",
  "--nfw-merge",
  "--nfw-order",
  "--nfw-raised",
  "--nfw-diverges",
  "--nfw-font",
  "--nfw-mono",
];

/** Rules for the graph drawing only: used live and inside exported SVG files. */
export const GRAPH_CSS = `
.nfw-graph { font-family: var(--nfw-font); }
.nfw-node { cursor: pointer; }
.nfw-node .nfw-card { fill: var(--nfw-bg1); stroke: var(--nfw-border); stroke-width: 1; }
.nfw-node .nfw-stack { fill: var(--nfw-bg2); stroke: var(--nfw-border); stroke-width: 1; }
.nfw-node:hover .nfw-card { stroke: var(--nfw-fg2); }
.nfw-node .nfw-t1 { font-size: 14px; font-weight: 600; fill: var(--nfw-fg0); }
.nfw-node .nfw-t2, .nfw-junction-operand { font-size: 13px; fill: var(--nfw-fg2); }
.nfw-node .nfw-num { font-family: var(--nfw-mono); font-size: 13px; fill: var(--nfw-fg2); }
.nfw-node.nfw-stat-fill .nfw-t1, .nfw-node.nfw-stat-fill .nfw-t2, .nfw-node.nfw-stat-fill .nfw-num { fill: var(--nfw-ink, inherit); }
.nfw-node.nfw-port .nfw-card { fill: var(--nfw-bg2); }
.nfw-node.nfw-port .nfw-t1 { font-weight: 500; font-size: 13px; fill: var(--nfw-fg1); }
.nfw-node.nfw-error .nfw-card { stroke: var(--nfw-error); stroke-width: 2; }
.nfw-node.nfw-failed .nfw-card { stroke: var(--nfw-error); stroke-width: 2.5; }
.nfw-node.nfw-selected .nfw-card, .nfw-junction.nfw-selected .nfw-junction-disc { stroke: var(--nfw-accent); stroke-width: 2.5; }
.nfw-node.nfw-focus .nfw-ring { display: block; }
.nfw-ring { display: none; fill: none; stroke: var(--nfw-accent); stroke-width: 1.5; stroke-dasharray: 4 3; }
.nfw-node.nfw-match .nfw-card { stroke: #eab308; stroke-width: 2.5; }
.nfw-badge { fill: var(--nfw-bg2); stroke: var(--nfw-border); }
.nfw-badge-text { font-size: 12px; font-weight: 600; fill: var(--nfw-fg1); pointer-events: none; }
.nfw-node [data-action]:hover .nfw-badge, .nfw-cluster [data-action]:hover .nfw-badge { fill: var(--nfw-bg3); }

.nfw-cluster rect.nfw-box { fill: var(--nfw-fg0); fill-opacity: 0.025; stroke: var(--nfw-border); stroke-width: 1; }
.nfw-cluster.nfw-run rect.nfw-box { stroke-dasharray: 5 4; }
.nfw-cluster .nfw-ct { font-size: 14px; font-weight: 600; fill: var(--nfw-fg1); }
.nfw-cluster .nfw-ct2 { font-size: 13px; fill: var(--nfw-fg2); }
.nfw-cluster .nfw-ct, .nfw-cluster .nfw-ct2 { paint-order: stroke; stroke: var(--nfw-bg); stroke-width: 4px; stroke-linejoin: round; }
.nfw-cluster [data-action] { cursor: pointer; }
.nfw-cluster[data-failed] rect.nfw-box { stroke: var(--nfw-error); stroke-width: 2; }
.nfw-flag rect { stroke: var(--nfw-bg); stroke-width: 1.5; }
.nfw-flag text { font-size: 11px; font-weight: 700; fill: #ffffff; pointer-events: none; }
.nfw-flag-nonfinite rect { fill: var(--nfw-error); }
.nfw-flag-failed rect { fill: var(--nfw-raised); }
.nfw-flag-diverges rect { fill: var(--nfw-diverges); }

.nfw-edge { fill: none; stroke: var(--nfw-flow); stroke-width: 1.4; }
.nfw-edge[data-edge-kind="skip"] { stroke: var(--nfw-skip); stroke-dasharray: 6 4; stroke-width: 1.5; }
.nfw-edge[data-edge-kind="merge"] { stroke: var(--nfw-merge); stroke-width: 1.6; }
.nfw-edge[data-edge-kind="order"] { stroke: var(--nfw-order); stroke-dasharray: 0.5 4; stroke-linecap: round; stroke-width: 2; }
.nfw-stub { stroke: var(--nfw-flow); }
.nfw-junction-disc { fill: var(--nfw-bg); stroke: var(--nfw-fg1); stroke-width: 1.5; vector-effect: non-scaling-stroke; }
.nfw-junction-glyph { fill: none; stroke: var(--nfw-fg0); stroke-width: 2; stroke-linecap: round; }
.nfw-junction-name { font-size: 13px; font-weight: 600; fill: var(--nfw-fg1); }
.nfw-residual-arc { fill: none; stroke: var(--nfw-skip); stroke-width: 1.6; stroke-linecap: round; vector-effect: non-scaling-stroke; }
.nfw-residual-disc { fill: var(--nfw-bg); stroke: var(--nfw-skip); stroke-width: 1.5; vector-effect: non-scaling-stroke; }
.nfw-residual-glyph { fill: none; stroke: var(--nfw-fg0); stroke-width: 1.8; stroke-linecap: round; }
.nfw-bus-line { fill: none; stroke: var(--nfw-merge); stroke-width: 1.6; }
.nfw-bus[data-bus-kind="skip"] .nfw-bus-line { stroke: var(--nfw-skip); stroke-dasharray: 6 4; stroke-width: 1.5; }
.nfw-bus-dot { fill: var(--nfw-merge); }
.nfw-bus-label { fill: var(--nfw-merge); font-size: 14px; font-weight: 600; }
.nfw-bus[data-bus-kind="skip"] .nfw-bus-dot { fill: var(--nfw-skip); }
.nfw-hovering .nfw-bus, .nfw-hovering .nfw-stub, .nfw-hovering .nfw-edge { opacity: 0.18; }
.nfw-hovering .nfw-edge.nfw-hl { opacity: 1; stroke-width: 2.4; }
.nfw-hovering .nfw-node { opacity: 0.45; }
.nfw-hovering .nfw-node.nfw-hl { opacity: 1; }
.nfw-stepping .nfw-node:not(.nfw-current) { opacity: 0.5; }
.nfw-stepping .nfw-edge:not(.nfw-live), .nfw-stepping .nfw-bus { opacity: 0.3; }
.nfw-node.nfw-current .nfw-card { stroke: var(--nfw-accent); stroke-width: 3.5; }
.nfw-node .nfw-t2.nfw-part { fill: var(--nfw-accent); font-weight: 600; }
.nfw-edge.nfw-live { opacity: 1; stroke-width: 2.6; stroke-dasharray: 8 5; animation: nfw-flow 0.65s linear infinite; }
@keyframes nfw-flow { to { stroke-dashoffset: -13; } }
@media (prefers-reduced-motion: reduce) { .nfw-edge.nfw-live { animation: none; } }
.nfw-thumb { image-rendering: pixelated; }
.nfw-thumb-wait { fill: var(--nfw-bg2); stroke: none; }
.nfw-arrow-flow { fill: var(--nfw-flow); }
.nfw-arrow-skip { fill: var(--nfw-skip); }
.nfw-arrow-merge { fill: var(--nfw-merge); }
.nfw-arrow-order { fill: var(--nfw-order); }

.nfw-edge, .nfw-card, .nfw-stack, .nfw-cluster rect.nfw-box { vector-effect: non-scaling-stroke; }
.nfw-lod-mid .nfw-t2, .nfw-lod-mid .nfw-num, .nfw-lod-mid .nfw-ct2 { display: none; }
.nfw-lod-low text, .nfw-lod-low [data-action] { display: none; }
.nfw-lod-low .nfw-node .nfw-card { fill: var(--nfw-type, var(--nfw-bg2)); }
${EXPERIMENT_GRAPH_CSS}`;

/** Prefix each selector of plain CSS rules with a scope; @-blocks (keyframes) stay as they are. */
export function scopeCss(css: string, scope: string): string {
  let out = "";
  let i = 0;
  while (i < css.length) {
    const open = css.indexOf("{", i);
    if (open < 0) break;
    const selector = css.slice(i, open).trim();
    if (selector.startsWith("@")) {
      let depth = 0;
      let j = open;
      for (; j < css.length; j++) {
        if (css[j] === "{") depth++;
        else if (css[j] === "}" && --depth === 0) break;
      }
      // the rules of a conditional group are scoped too; a @keyframes block is kept as it is
      const conditional = /^@(media|supports|container)\b/.test(selector);
      out += conditional
        ? `${selector} {\n${scopeCss(css.slice(open + 1, j), scope)}}\n`
        : `${selector} ${css.slice(open, j + 1)}\n`;
      i = j + 1;
      continue;
    }
    const close = css.indexOf("}", open);
    const scoped = splitSelectors(selector)
      .map((part) => `${scope} ${part}`)
      .join(", ");
    out += `${scoped} ${css.slice(open, close + 1)}\n`;
    i = close + 1;
  }
  return out;
}

/** A selector list split at its top-level commas (not those inside :is(...) or :where(...)). */
export function splitSelectors(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const ch = list[i];
    if (ch === "(") depth++;
    else if (ch === ")") depth--;
    else if (ch === "," && depth === 0) {
      parts.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(list.slice(start).trim());
  return parts.filter(Boolean);
}

/** The root. Doubled class: (0,2,0), above host rules such as `.jp-OutputArea-output div`. */
const ROOT_CSS = `
.nfw-root.nfw-root {
  --nfw-bg: var(--jp-layout-color0, #ffffff);
  --nfw-bg1: var(--jp-layout-color1, #ffffff);
  --nfw-bg2: var(--jp-layout-color2, #f3f4f6);
  --nfw-bg3: var(--jp-layout-color3, #e5e7eb);
  --nfw-fg0: var(--jp-ui-font-color0, #111827);
  --nfw-fg1: var(--jp-ui-font-color1, #1f2937);
  --nfw-fg2: var(--jp-ui-font-color2, #6b7280);
  --nfw-fg3: var(--jp-ui-font-color3, #9ca3af);
  --nfw-border: var(--jp-border-color1, #d1d5db);
  --nfw-border2: var(--jp-border-color2, #e5e7eb);
  --nfw-accent: var(--jp-brand-color1, #2563eb);
  --nfw-error: var(--jp-error-color1, #dc2626);
  --nfw-flow: var(--jp-ui-font-color2, #6b7280);
  --nfw-skip: #e07b24;
  --nfw-merge: #8b5cf6;
  --nfw-order: var(--jp-ui-font-color3, #9ca3af);
  --nfw-raised: #7f1d1d;
  --nfw-diverges: #0e7490;
  --nfw-pos: #d6604d;
  --nfw-neg: #4393c3;
  --nfw-font: var(--jp-ui-font-family, system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif);
  --nfw-mono: var(--jp-code-font-family, ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace);
  position: relative; display: flex; flex-direction: column; float: none;
  width: auto; max-width: none; height: var(--nfw-height, 600px); min-height: 320px; margin: 0; padding: 0;
  font-family: var(--nfw-font); font-size: 12px; font-weight: 400; font-style: normal; line-height: 1.35;
  letter-spacing: normal; text-align: left; text-transform: none; color: var(--nfw-fg1);
  background: var(--nfw-bg); border: 1px solid var(--nfw-border2); border-radius: 8px;
  box-shadow: none; overflow: hidden; box-sizing: border-box; container: nfw / inline-size;
}
.nfw-root.nfw-root:focus-within { border-color: var(--nfw-border); }
.nfw-root [hidden] { display: none !important; }
.nfw-root.nfw-root.nfw-present {
  position: fixed; inset: 0; z-index: 2147483000; width: 100vw; height: 100vh; min-height: 0; border: 0; border-radius: 0;
  --nfw-bg: #ffffff; --nfw-bg1: #ffffff; --nfw-bg2: #eef0f3; --nfw-bg3: #dde1e6;
  --nfw-fg0: #000000; --nfw-fg1: #0b0f19; --nfw-fg2: #1f2937; --nfw-fg3: #4b5563;
  --nfw-border: #4b5563; --nfw-border2: #9ca3af; --nfw-flow: #1f2937; --nfw-skip: #c2410c; --nfw-merge: #6d28d9; --nfw-order: #4b5563;
}
.nfw-root.nfw-present .nfw-toolbar, .nfw-root.nfw-present .nfw-transport, .nfw-root.nfw-present .nfw-banners,
.nfw-root.nfw-present .nfw-legend, .nfw-root.nfw-present .nfw-help { zoom: 1.35; }
.nfw-root.nfw-present .nfw-toolbar > :is(.nfw-search, .nfw-search-count, .nfw-color, .nfw-sep, .nfw-export) { display: none; }
.nfw-root.nfw-present .nfw-present-label { display: inline; }
.nfw-root.nfw-present .nfw-inspector { zoom: 1.3; width: clamp(300px, 32%, 520px); }
.nfw-root.nfw-present .nfw-edge { stroke-width: 2.4px; }
.nfw-root.nfw-present .nfw-edge.nfw-live { stroke-width: 3.4px; }
.nfw-root.nfw-present .nfw-node .nfw-card { stroke-width: 1.6px; }
.nfw-root.nfw-present .nfw-node .nfw-t2, .nfw-root.nfw-present .nfw-node .nfw-num { fill: var(--nfw-fg1); }
`;

/**
 * Back to plain for every element type the widget makes. (0,2,0) through :where + :not: it
 * beats `.host-class element` rules, and the widget's own rules, later and as specific, beat it.
 */
const RESET_CSS = `
.nfw-root :where(div, span, b, i, label, section, aside, button, input, select, option, canvas, a, pre):not(.nfw-none) {
  float: none; clear: none; position: static; box-sizing: border-box;
  width: auto; height: auto; min-width: 0; max-width: none; min-height: 0; max-height: none;
  margin: 0; padding: 0; border: 0 solid transparent; border-radius: 0; outline: none; box-shadow: none;
  background: none; color: inherit; opacity: 1; transform: none;
  font: inherit; line-height: inherit; letter-spacing: inherit; text-align: inherit; text-indent: 0;
  text-transform: none; text-decoration: none; text-shadow: none; vertical-align: baseline; white-space: inherit;
  word-break: normal;
}
.nfw-root :where(div, section, aside, pre):not(.nfw-none) { display: block; }
.nfw-root :where(span, b, i, label, a):not(.nfw-none) { display: inline; }
.nfw-root :where(button, input, select):not(.nfw-none) { display: inline-block; }
.nfw-root :where(canvas):not(.nfw-none) { display: inline-block; }
`;

/** The frame, toolbar, legend, minimap and inspector; scoped under .nfw-root by scopeCss (no CSS
 * comments). In a narrow column (marimo's, a split JupyterLab) the toolbar keeps one row down to
 * 520 px: the search box narrows first (flex shrinks 50 to the name's 0.001), the words beside the
 * buttons go, then the exports (widget.save_svg / save_png still work). */
const WIDGET_CSS = `
.nfw-toolbar {
  flex: none; display: flex; align-items: center; gap: 6px; flex-wrap: nowrap;
  padding: 6px 8px; border-bottom: 1px solid var(--nfw-border2); background: var(--nfw-bg1);
}
.nfw-toolbar > * { flex: none; }
.nfw-title { display: grid; grid-template-columns: auto auto auto; grid-template-rows: 16px 16px; justify-content: start; align-items: baseline; column-gap: 6px; line-height: 1.2; flex: 0 0.001 auto; margin-right: auto; min-width: 0; overflow: hidden; padding-left: 2px; }
.nfw-title b { grid-column: 1 / -1; max-width: 100%; min-width: 3em; font-size: 13px; font-weight: 600; color: var(--nfw-fg0); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.nfw-title span { max-width: 100%; min-width: 0; font-size: 11px; color: var(--nfw-fg2); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.nfw-btn, .nfw-select, .nfw-search {
  height: 26px; margin: 0; font: inherit; font-size: 12px; line-height: 24px; color: var(--nfw-fg1); background: var(--nfw-bg);
  border: 1px solid var(--nfw-border); border-radius: 5px; padding: 0 8px; min-width: 0; box-shadow: none;
}
.nfw-btn { cursor: pointer; display: inline-flex; align-items: center; justify-content: center; gap: 4px; white-space: nowrap; width: auto; }
.nfw-btn:hover { background: var(--nfw-bg2); }
.nfw-btn:focus-visible, .nfw-select:focus-visible, .nfw-search:focus-visible, .nfw-tab:focus-visible, .nfw-close:focus-visible, .nfw-minimap-toggle:focus-visible {
  outline: 2px solid var(--nfw-accent); outline-offset: 1px;
}
.nfw-btn[aria-pressed="true"] { background: var(--nfw-bg3); }
.nfw-btn-group { display: inline-flex; }
.nfw-btn-group .nfw-btn { border-radius: 0; margin-left: -1px; }
.nfw-btn-group .nfw-btn:first-child { border-radius: 5px 0 0 5px; margin-left: 0; }
.nfw-btn-group .nfw-btn:last-child { border-radius: 0 5px 5px 0; }
.nfw-select { width: auto; padding: 0 4px; field-sizing: content; }
.nfw-toolbar > .nfw-search { flex: 0 50 150px; width: 150px; min-width: 90px; }
.nfw-color { display: inline-flex; align-items: center; gap: 5px; font-size: 12px; color: var(--nfw-fg2); }
.nfw-title .nfw-offview { position: static; align-self: center; justify-self: start; margin: 0; padding: 0 5px; line-height: 13px; box-shadow: none; }
@container nfw (max-width: 1180px) { .nfw-toolbar > .nfw-search { flex-basis: 120px; width: 120px; } }
@container nfw (max-width: 860px) {
  .nfw-toolbar { gap: 4px; padding: 6px; }
  .nfw-title span, .nfw-wide { display: none; }
  .nfw-toolbar > .nfw-search { flex-basis: 84px; width: 84px; min-width: 48px; }
  .nfw-toolbar .nfw-play { min-width: 0; }
}
@container nfw (max-width: 640px) { .nfw-toolbar > :is(.nfw-export, .nfw-sep) { display: none; } }
@container nfw (max-width: 580px) { .nfw-color-word { display: none; } }
@container nfw (max-width: 520px) { .nfw-toolbar { flex-wrap: wrap; } }
.nfw-search-count { display: inline-block; color: var(--nfw-fg2); min-width: 4.5em; font-size: 11px; }
.nfw-search-count:empty { display: none; }
.nfw-present-label { display: none; }
.nfw-sep { display: inline-block; width: 1px; height: 18px; background: var(--nfw-border2); margin: 0 2px; }
.nfw-play { min-width: 5.6em; font-weight: 600; }
.nfw-play[aria-pressed="true"] { background: var(--nfw-accent); border-color: var(--nfw-accent); color: #fff; }
.nfw-transport {
  flex: none; display: flex; align-items: center; gap: 6px; padding: 5px 8px;
  border-bottom: 1px solid var(--nfw-border2); background: var(--nfw-bg1);
}
.nfw-transport[hidden] { display: none; }
.nfw-scrub { flex: 1 1 auto; min-width: 80px; max-width: 520px; height: 18px; margin: 0; accent-color: var(--nfw-accent); }
.nfw-where { flex: 0 1 auto; min-width: 0; color: var(--nfw-fg1); font-size: 12px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; font-variant-numeric: tabular-nums; }

.nfw-banners { flex: none; display: flex; flex-direction: column; border-bottom: 1px solid var(--nfw-border2); }
.nfw-banner {
  display: flex; align-items: center; gap: 10px; width: 100%; min-height: 34px; padding: 6px 10px;
  font-size: 12.5px; line-height: 1.4; text-align: left; color: var(--nfw-fg0); border-left: 4px solid transparent;
}
.nfw-banner + .nfw-banner { border-top: 1px solid var(--nfw-border2); }
.nfw-banner-failure { border-left-color: var(--nfw-error); background: color-mix(in srgb, var(--nfw-error) 9%, var(--nfw-bg1)); }
.nfw-banner-failure b { color: var(--nfw-error); font-weight: 700; }
.nfw-banner-nonfinite { border-left-color: var(--nfw-error); background: color-mix(in srgb, var(--nfw-error) 5%, var(--nfw-bg1)); cursor: pointer; font: inherit; font-size: 12.5px; }
.nfw-banner-nonfinite:hover { background: color-mix(in srgb, var(--nfw-error) 11%, var(--nfw-bg1)); }
.nfw-banner-nonfinite:focus-visible { outline: 2px solid var(--nfw-accent); outline-offset: -2px; }
.nfw-banner-nonfinite b { font-family: var(--nfw-mono); font-weight: 700; }
.nfw-banner-code { font-family: var(--nfw-mono); font-size: 0.95em; padding: 0 3px; border-radius: 3px; background: color-mix(in srgb, var(--nfw-fg0) 7%, transparent); }
.nfw-banner-notes { border-left-color: var(--nfw-fg3); background: var(--nfw-bg2); color: var(--nfw-fg1); }
.nfw-banner-text { display: block; flex: 1; min-width: 0; overflow-wrap: anywhere; }
.nfw-banner-failure .nfw-banner-text { display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2; overflow: hidden; }
.nfw-note-line { display: block; }
.nfw-banner-go { display: inline-block; flex: none; color: var(--nfw-accent); font-weight: 600; white-space: nowrap; }
.nfw-banner-btn { flex: none; }
.nfw-banner-icon, .nfw-notes-toggle {
  display: inline-flex; flex: none; align-items: center; justify-content: center; width: 18px; height: 18px; border-radius: 50%;
  background: var(--nfw-fg2); color: var(--nfw-bg); font-family: Georgia, serif; font-style: italic; font-weight: 700; font-size: 12px; }
.nfw-notes-toggle { width: 15px; height: 15px; padding: 0; margin: 0; border: none; font-size: 10.5px; line-height: 1; align-self: center; cursor: pointer; } .nfw-notes-toggle:hover, .nfw-notes-toggle[aria-expanded="true"] { background: var(--nfw-accent); }
.nfw-pill {
  display: inline-block; flex: none; padding: 0 8px; height: 20px; line-height: 20px; border-radius: 10px;
  font-size: 11.5px; font-weight: 700; color: #ffffff; white-space: nowrap;
}
.nfw-pill-nonfinite { background: var(--nfw-error); }
.nfw-pill-failed { background: var(--nfw-raised); }
.nfw-pill-diverges { background: var(--nfw-diverges); }
.nfw-banner-diverges { border-left-color: var(--nfw-diverges); background: color-mix(in srgb, var(--nfw-diverges) 7%, var(--nfw-bg1)); font: inherit; font-size: 12.5px; }
button.nfw-banner-diverges { cursor: pointer; }
button.nfw-banner-diverges:hover { background: color-mix(in srgb, var(--nfw-diverges) 13%, var(--nfw-bg1)); }
.nfw-banner-diverges:focus-visible { outline: 2px solid var(--nfw-accent); outline-offset: -2px; }
.nfw-banner-diverges b { font-family: var(--nfw-mono); font-weight: 700; }

.nfw-main { position: relative; flex: 1; min-height: 0; display: flex; }
.nfw-canvas { position: relative; flex: 1; min-width: 0; overflow: hidden; outline: none; cursor: grab; background:
  radial-gradient(circle, var(--nfw-border2) 1px, transparent 1.2px) 0 0 / 22px 22px, var(--nfw-bg); }
.nfw-canvas.nfw-dragging { cursor: grabbing; }
.nfw-svg { display: block; width: 100%; height: 100%; max-width: none; max-height: none; margin: 0; user-select: none; -webkit-user-select: none; }

.nfw-help {
  position: absolute; top: 12px; right: 12px; z-index: 5; display: block; max-width: min(480px, 90%);
  padding: 10px 14px; background: var(--nfw-bg1); border: 1px solid var(--nfw-border); border-radius: 8px;
  box-shadow: 0 4px 16px rgba(0,0,0,.15); color: var(--nfw-fg1); font-size: 12.5px;
}
.nfw-help-title { display: block; font-weight: 600; margin: 0 0 6px; color: var(--nfw-fg0); }
.nfw-help-row { display: grid; grid-template-columns: 112px 1fr; gap: 8px; padding: 2px 0; align-items: baseline; }
.nfw-kbd {
  justify-self: start; font-family: var(--nfw-mono); font-size: 11.5px; padding: 0 6px; color: var(--nfw-fg0);
  border: 1px solid var(--nfw-border); border-bottom-width: 2px; border-radius: 4px; background: var(--nfw-bg2);
}
.nfw-legend {
  position: absolute; left: 10px; bottom: 10px; display: flex; gap: 12px; align-items: center;
  padding: 5px 10px; background: var(--nfw-bg1); border: 1px solid var(--nfw-border2); border-radius: 6px;
  color: var(--nfw-fg2); font-size: 11px; pointer-events: none; opacity: 0.95; transition: opacity .2s;
}
.nfw-legend.nfw-legend-faint { opacity: 0.35; }
.nfw-legend span { display: inline-flex; align-items: center; }
.nfw-legend svg { display: inline-block; width: 26px; height: 10px; max-width: none; margin: 0 4px 0 0; vertical-align: middle; }
.nfw-legend .nfw-legend-stat { gap: 4px; }
.nfw-legend .nfw-legend-sign { display: inline-grid; place-items: center; width: 17px; height: 17px; margin: 0 4px 0 0; border: 1.5px solid var(--nfw-flow); border-radius: 50%; font-size: 13px; line-height: 1; color: var(--nfw-fg1); background: var(--nfw-bg1); }
.nfw-legend .nfw-scale { font-style: italic; }
.nfw-legend .nfw-chip { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin: 0 0 0 6px; vertical-align: middle; box-shadow: inset 0 0 0 1px rgba(0, 0, 0, .18); }
.nfw-legend .nfw-legend-chip { gap: 4px; }
.nfw-legend .nfw-legend-stat { flex-wrap: wrap; row-gap: 2px; }
.nfw-legend .nfw-legend-stat span { white-space: nowrap; }
.nfw-legend .nfw-legend-chip .nfw-chip { margin: 0 0 0 4px; }
.nfw-legend .nfw-grad { display: inline-block; width: 70px; height: 8px; border-radius: 2px; margin: 0 4px; vertical-align: middle; }

.nfw-minimap {
  position: absolute; z-index: 1; display: block; width: 148px; height: 98px;
  background: var(--nfw-bg1); border: 1px solid var(--nfw-border2); border-radius: 6px;
  box-shadow: 0 1px 4px rgba(0,0,0,.08); opacity: 0.55; transition: opacity .15s;
}
.nfw-minimap[data-corner="top-right"] { top: 10px; right: 10px; }
.nfw-minimap[data-corner="bottom-right"] { bottom: 10px; right: 10px; }
.nfw-minimap[data-corner="top-left"] { top: 10px; left: 10px; }
.nfw-minimap:hover, .nfw-minimap:focus-within { opacity: 1; }
.nfw-minimap[data-collapsed="true"] { width: 24px; height: 24px; opacity: 0.8; }
.nfw-minimap-map { display: block; width: 100%; height: 100%; border-radius: 6px; cursor: crosshair; }
.nfw-minimap-toggle {
  position: absolute; top: 3px; right: 3px; display: flex; align-items: center; justify-content: center;
  width: 16px; height: 16px; padding: 0; border: 1px solid var(--nfw-border); border-radius: 4px; background: var(--nfw-bg1);
  color: var(--nfw-fg1); font-size: 12px; font-weight: 600; line-height: 1; cursor: pointer;
}
.nfw-minimap[data-collapsed="true"] .nfw-minimap-toggle { top: 3px; left: 3px; right: auto; }
.nfw-minimap[data-corner$="left"] .nfw-minimap-toggle { right: auto; left: 3px; }
.nfw-minimap-toggle:hover { background: var(--nfw-bg3); color: var(--nfw-fg0); }
.nfw-offview { position: absolute; z-index: 2; padding: 1px 6px; border: 1px solid var(--nfw-border2); border-radius: 9px; background: var(--nfw-bg1); color: var(--nfw-fg1); font-size: 11px; white-space: nowrap; cursor: pointer; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
/* inside the minimap's box, along its bottom; beside its button while it is folded */
.nfw-offview[data-corner$="right"] { right: 14px; } .nfw-offview[data-corner="top-left"] { left: 14px; }
.nfw-offview[data-corner^="top"] { top: 88px; } .nfw-offview[data-corner^="bottom"] { bottom: 14px; }
.nfw-offview[data-collapsed="true"][data-corner^="top"] { top: 12px; } .nfw-offview[data-collapsed="true"][data-corner^="bottom"] { bottom: 12px; }
.nfw-offview[data-collapsed="true"][data-corner$="right"] { right: 42px; } .nfw-offview[data-collapsed="true"][data-corner="top-left"] { left: 42px; }

.nfw-hint {
  position: absolute; left: 50%; top: 10px; transform: translateX(-50%); padding: 4px 10px; border-radius: 5px;
  background: var(--nfw-fg1); color: var(--nfw-bg); font-size: 11px; pointer-events: none; opacity: 0; transition: opacity .2s; white-space: nowrap;
}
.nfw-hint.nfw-show { opacity: 0.85; }
.nfw-busy { position: absolute; left: 50%; bottom: 12px; transform: translateX(-50%); color: var(--nfw-fg2); font-size: 11px; }

`;

export const CSS =
  ROOT_CSS + RESET_CSS + scopeCss(GRAPH_CSS + WIDGET_CSS + INSPECTOR_CSS + EXPERIMENT_CSS, ".nfw-root");
