/**
 * The CSS of acting on the model from the graph (issue 22), scoped by styles.ts like the
 * rest: on the graph (GRAPH part, which the exported SVG keeps) the gradient's flags and
 * edges, the backward walk, the logit lens's chips; in the widget the gradient banners, the
 * context menu and the status of a run, the lens's entry in the legend, and in the inspector
 * the output / gradient switch, the readout table and the patching heat map.
 */

/** Graph rules (kept in the exported SVG). */
export const EXPERIMENT_GRAPH_CSS = `
.nfw-flag-gradient rect { fill: #b45309; }
.nfw-edge.nfw-edge-stroked { stroke-width: 2.4; }
.nfw-backward .nfw-edge.nfw-live { animation-direction: reverse; }
.nfw-chip-lens { cursor: default; }
.nfw-lod-low .nfw-chip-lens { display: none; }
`;

/** Widget rules. */
export const EXPERIMENT_CSS = `
.nfw-pill-gradient { background: #b45309; }
.nfw-banner-gradient { border-left-color: #b45309; background: color-mix(in srgb, #b45309 7%, var(--nfw-bg1)); cursor: pointer; font: inherit; font-size: 12.5px; }
.nfw-banner-gradient:hover { background: color-mix(in srgb, #b45309 13%, var(--nfw-bg1)); }
.nfw-banner-gradient-nonfinite { border-left-color: var(--nfw-error); background: color-mix(in srgb, var(--nfw-error) 5%, var(--nfw-bg1)); }
.nfw-banner-gradient b { font-family: var(--nfw-mono); font-weight: 700; }
.nfw-banner-row { display: flex; align-items: stretch; }
.nfw-banner-row > .nfw-banner { flex: 1 1 auto; min-width: 0; }
.nfw-banner-row + .nfw-banner, .nfw-banner + .nfw-banner-row { border-top: 1px solid var(--nfw-border2); }
.nfw-banner-row > .nfw-banner-end { flex: none; align-self: center; margin: 0 8px; }

.nfw-run-status {
  position: absolute; top: 10px; left: 50%; transform: translateX(-50%); z-index: 6; max-width: min(640px, 90%);
  display: flex; align-items: center; gap: 8px; padding: 7px 12px; font-size: 12.5px; color: var(--nfw-fg0);
  background: var(--nfw-bg1); border: 1px solid var(--nfw-border); border-left: 4px solid var(--nfw-accent);
  border-radius: 6px; box-shadow: 0 4px 14px rgba(0, 0, 0, .14);
}
.nfw-run-status[data-state="failed"] { border-left-color: var(--nfw-error); }

.nfw-menu {
  position: absolute; z-index: 8; min-width: 230px; max-width: 320px; padding: 4px 0; display: flex; flex-direction: column;
  background: var(--nfw-bg1); border: 1px solid var(--nfw-border); border-radius: 8px; box-shadow: 0 8px 24px rgba(0, 0, 0, .18);
  font-size: 12.5px; color: var(--nfw-fg0);
}
.nfw-menu-title { display: flex; gap: 8px; align-items: baseline; padding: 6px 12px 6px; border-bottom: 1px solid var(--nfw-border2); font-family: var(--nfw-mono); font-weight: 700; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.nfw-menu-title span { font-family: var(--nfw-font); font-weight: 400; color: var(--nfw-fg2); font-size: 11px; }
.nfw-menu-item {
  display: block; width: 100%; margin: 0; padding: 7px 12px; border: none; background: none; text-align: left;
  font: inherit; color: inherit; cursor: pointer;
}
.nfw-menu-item:hover, .nfw-menu-item:focus-visible { background: var(--nfw-bg2); outline: none; }
.nfw-menu-item:disabled { color: var(--nfw-fg3); cursor: default; background: none; }
.nfw-menu-note { padding: 6px 12px; color: var(--nfw-fg2); font-size: 11.5px; line-height: 1.45; }
.nfw-menu-note code { font-family: var(--nfw-mono); font-size: 11px; color: var(--nfw-fg0); }
.nfw-menu-heads { display: flex; flex-wrap: wrap; gap: 4px; padding: 4px 12px; }
.nfw-head-toggle {
  min-width: 28px; height: 24px; padding: 0 6px; border: 1px solid var(--nfw-border); border-radius: 4px;
  background: var(--nfw-bg); color: var(--nfw-fg0); font: inherit; font-size: 12px; cursor: pointer; font-variant-numeric: tabular-nums;
}
.nfw-head-toggle[aria-pressed="true"] { background: var(--nfw-error); border-color: var(--nfw-error); color: #fff; text-decoration: line-through; }
.nfw-menu-apply { margin: 4px 12px 6px; align-self: flex-start; }

.nfw-legend:has(.nfw-lens) { flex-wrap: wrap; row-gap: 4px; max-width: calc(100% - 20px); }
.nfw-legend .nfw-lens { gap: 5px; white-space: nowrap; pointer-events: auto; }
.nfw-legend .nfw-lens-sample {
  padding: 0 7px; height: 16px; border: 1.25px solid #b45309; border-radius: 8px; background: #fffbeb; color: #1f2937;
  font-size: 10.5px; font-weight: 600;
}
.nfw-legend .nfw-lens-pick { height: 22px; padding: 0 4px; font-size: 11px; max-width: 200px; }

.nfw-of-switch { display: inline-flex; margin: 10px 0 0; border: 1px solid var(--nfw-border); border-radius: 6px; overflow: hidden; }
.nfw-of {
  margin: 0; padding: 4px 10px; border: none; background: var(--nfw-bg); color: var(--nfw-fg1); font: inherit; font-size: 12px; cursor: pointer;
}
.nfw-of + .nfw-of { border-left: 1px solid var(--nfw-border); }
.nfw-of[aria-pressed="true"] { background: var(--nfw-accent); color: #fff; font-weight: 600; }
.nfw-of:focus-visible { outline: 2px solid var(--nfw-accent); outline-offset: -2px; }

.nfw-readout { display: flex; flex-direction: column; gap: 2px; margin: 6px 0 0; }
.nfw-readout-row { display: grid; grid-template-columns: 78px 1fr; gap: 6px; align-items: center; padding: 2px 0; border-radius: 4px; }
.nfw-readout-last { background: color-mix(in srgb, #b45309 9%, transparent); }
.nfw-readout-pos { display: flex; gap: 4px; min-width: 0; font-size: 12px; color: var(--nfw-fg2); font-variant-numeric: tabular-nums; white-space: nowrap; overflow: hidden; }
.nfw-readout-pos b { color: var(--nfw-fg0); font-weight: 600; overflow: hidden; text-overflow: ellipsis; }
.nfw-readout-cells { display: grid; grid-template-columns: repeat(5, minmax(0, 1fr)); gap: 3px; }
.nfw-readout-tok {
  position: relative; display: flex; justify-content: space-between; gap: 3px; min-width: 0; padding: 1px 4px; font-size: 12px;
  border: 1px solid var(--nfw-border2); border-radius: 3px; overflow: hidden; background: var(--nfw-bg);
}
.nfw-readout-bar { position: absolute; left: 0; top: 0; bottom: 0; background: color-mix(in srgb, #b45309 22%, transparent); }
.nfw-readout-name { position: relative; min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; color: var(--nfw-fg0); }
.nfw-readout-p { position: relative; flex-shrink: 0; white-space: nowrap; color: var(--nfw-fg2); font-variant-numeric: tabular-nums; }

.nfw-patching .nfw-patch-map { display: block; margin: 6px 0 0; }
`;
