/** The inspector's CSS (its panel, views, plots, statistics); scoped under .nfw-root with
 * the rest of the widget's rules by styles.ts. */
export const INSPECTOR_CSS = `
.nfw-inspector {
  position: relative; width: clamp(360px, 42%, 640px); max-width: calc(100% - 200px); flex: none; display: flex; flex-direction: column; min-height: 0;
  border-left: 1px solid var(--nfw-border2); background: var(--nfw-bg1);
}
.nfw-grip { position: absolute; left: -4px; top: 0; bottom: 0; width: 8px; z-index: 2; cursor: col-resize; touch-action: none; }
.nfw-grip:hover, .nfw-grip:focus-visible { background: color-mix(in srgb, var(--nfw-accent) 35%, transparent); outline: none; }
.nfw-ins-head { flex: none; display: flex; align-items: flex-start; gap: 8px; padding: 10px 12px 8px; border-bottom: 1px solid var(--nfw-border2); }
.nfw-ins-head .nfw-ins-title { flex: 1; min-width: 0; }
.nfw-ins-title b { display: block; font-size: 13.5px; font-weight: 600; color: var(--nfw-fg0); overflow-wrap: anywhere; }
.nfw-ins-title span { display: block; color: var(--nfw-fg2); font-size: 11.5px; overflow-wrap: anywhere; }
.nfw-close { flex: none; display: inline-block; border: none; background: none; color: var(--nfw-fg2); font-size: 18px; line-height: 1; cursor: pointer; padding: 2px 4px; border-radius: 4px; }
.nfw-close:hover { background: var(--nfw-bg2); color: var(--nfw-fg0); }
.nfw-ins-body { overflow: auto; padding: 10px 12px 14px; display: flex; flex-direction: column; gap: 12px; flex: 1; min-height: 0; }
.nfw-ins-body > * { flex: none; /* sections keep their height; the body scrolls */ }
.nfw-section { display: block; }
.nfw-h { display: block; margin: 0 0 6px; font-size: 10.5px; font-weight: 600; line-height: 1.4; letter-spacing: .06em; text-transform: uppercase; color: var(--nfw-fg2); }
.nfw-meta { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 10px; align-items: baseline; font-size: 11.5px; }
.nfw-meta-k { display: block; color: var(--nfw-fg2); }
.nfw-meta-v { display: block; font-family: var(--nfw-mono); font-size: 11px; overflow-wrap: anywhere; }
.nfw-stats { display: grid; grid-template-columns: max-content minmax(0, 1fr); font-size: 11.5px; }
.nfw-stat-k, .nfw-stat-v { display: block; padding: 2px 0; border-bottom: 1px solid var(--nfw-border2); }
.nfw-stat-v { padding-left: 12px; text-align: right; font-family: var(--nfw-mono); font-size: 11px; overflow-wrap: anywhere; }
.nfw-tabs { display: flex; flex-wrap: wrap; gap: 4px; }
.nfw-tab { display: inline-block; height: 24px; padding: 0 9px; border-radius: 12px; border: 1px solid var(--nfw-border); background: var(--nfw-bg); color: var(--nfw-fg1); font: inherit; font-size: 11.5px; line-height: 22px; cursor: pointer; }
.nfw-tab[aria-selected="true"] { background: var(--nfw-accent); border-color: var(--nfw-accent); color: #fff; }
.nfw-controls { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; font-size: 11.5px; color: var(--nfw-fg2); }
.nfw-controls:empty { display: none; }
.nfw-controls .nfw-label { display: inline-flex; align-items: center; gap: 4px; }
.nfw-controls .nfw-select { height: 24px; line-height: 22px; font-size: 11.5px; }
.nfw-controls .nfw-number { width: 64px; }
.nfw-plot { display: block; max-width: 100%; margin: 6px 0 0; border-radius: 4px; image-rendering: pixelated; }
.nfw-plot.nfw-clickable { cursor: zoom-in; }
.nfw-view { display: block; }
.nfw-panels { display: flex; flex-direction: column; gap: 8px; margin: 4px 0 0; }
.nfw-panels-row { flex-direction: row; gap: 8px; }
.nfw-panels-row > .nfw-panel { flex: 1 1 0; min-width: 0; }
.nfw-panels-pair { display: grid; grid-template-columns: 1fr 1fr; gap: 8px 18px; }
.nfw-panels-pair > .nfw-panel { min-width: 0; }
.nfw-panels-pair > .nfw-panel > .nfw-panel-cap { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.nfw-panels-pair > .nfw-panel[data-run="diff"] { grid-column: 1 / -1; }
.nfw-panel { display: block; }
.nfw-panel-cap { display: block; margin: 2px 0 0; font-size: 11px; font-weight: 600; color: var(--nfw-fg1); }
.nfw-panel[data-run="diff"] .nfw-panel-cap { color: var(--nfw-diverges); }
.nfw-panel-error { color: var(--nfw-fg2); font-style: italic; }
.nfw-colorbar-what { display: inline-block; flex: none; min-width: 3.2em; font-family: var(--nfw-font); font-weight: 600; color: var(--nfw-fg1); }
.nfw-clip { display: inline; color: var(--nfw-fg0); font-weight: 600; }
.nfw-pager { display: inline-flex; align-items: center; gap: 6px; }
.nfw-controls .nfw-page { height: 24px; min-width: 26px; padding: 0 6px; font-size: 14px; }
.nfw-page[disabled] { opacity: .4; cursor: default; }
.nfw-bars { display: grid; grid-template-columns: minmax(0, max-content) minmax(80px, 1fr) max-content; gap: 3px 8px; align-items: center; margin: 6px 0 0; font-size: 12px; }
.nfw-bar-row { display: contents; }
.nfw-bar-label { display: block; min-width: 0; max-width: 220px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-family: var(--nfw-mono); color: var(--nfw-fg0); }
.nfw-bar-odds { display: block; font-size: 10.5px; color: var(--nfw-fg2); }
.nfw-bar-track { position: relative; display: block; height: 14px; border-radius: 3px; background: var(--nfw-bg2); overflow: hidden; }
.nfw-bar-track i { position: absolute; left: 0; top: 0; bottom: 0; display: block; border-radius: 3px; background: var(--nfw-accent); }
.nfw-bars-signed .nfw-bar-track::after { content: ""; position: absolute; left: 50%; top: 0; bottom: 0; width: 1px; background: var(--nfw-fg3); }
.nfw-bars-signed .nfw-bar-track i.nfw-bar-pos { background: var(--nfw-pos); }
.nfw-bars-signed .nfw-bar-track i.nfw-bar-neg { background: var(--nfw-neg); }
.nfw-bar-value { display: block; text-align: right; font-family: var(--nfw-mono); font-size: 11px; color: var(--nfw-fg1); white-space: nowrap; }
.nfw-chips { display: flex; flex-wrap: wrap; gap: 4px; margin: 6px 0 0; max-height: 260px; overflow: auto; }
.nfw-tok { display: inline-flex; align-items: baseline; gap: 3px; padding: 1px 6px; border: 1px solid var(--nfw-border); border-radius: 4px; background: var(--nfw-bg); font-family: var(--nfw-mono); font-size: 12px; color: var(--nfw-fg0); white-space: pre; }
.nfw-tok-at { display: inline; font-size: 9px; color: var(--nfw-fg3); }
.nfw-tok-changed { border-color: var(--nfw-diverges); background: color-mix(in srgb, var(--nfw-diverges) 14%, var(--nfw-bg)); }
.nfw-classes { display: flex; flex-wrap: wrap; gap: 4px 12px; margin: 6px 0 0; font-size: 11.5px; }
.nfw-class { display: inline-flex; align-items: center; gap: 4px; }
.nfw-class-share { display: inline; color: var(--nfw-fg2); font-family: var(--nfw-mono); font-size: 10.5px; }
.nfw-verdict { display: block; margin: 0 0 4px; font-weight: 600; color: var(--nfw-fg1); }
.nfw-verdict-diverges { color: var(--nfw-diverges); }
.nfw-missing { display: block; padding: 8px 10px; border: 1px dashed var(--nfw-border); border-radius: 6px; font-size: 11.5px; }
.nfw-state-small { padding: 8px 0; font-size: 11px; }
.nfw-hist { display: block; width: 100%; max-width: 100%; height: 90px; margin: 6px 0 0; }
.nfw-colorbar { display: flex; align-items: center; gap: 6px; margin: 4px 0 0; font-family: var(--nfw-mono); font-size: 10.5px; color: var(--nfw-fg2); }
.nfw-colorbar i { display: block; flex: 1; height: 9px; border-radius: 2px; }
.nfw-colorbar-none { display: inline-block; flex: 1; font-family: var(--nfw-font); font-style: italic; }
.nfw-swatch { display: inline-flex; align-items: center; gap: 3px; flex: none; color: var(--nfw-fg1); font-weight: 600; }
.nfw-swatch-chip { display: inline-block; width: 11px; height: 11px; border-radius: 2px; box-shadow: inset 0 0 0 1px rgba(0,0,0,.15); }
.nfw-raised .nfw-h { color: var(--nfw-error); }
.nfw-trace {
  display: block; margin: 0; padding: 8px 10px; max-height: 220px; overflow: auto; white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere;
  font-family: var(--nfw-mono); font-size: 11.5px; line-height: 1.45; color: var(--nfw-fg0);
  background: color-mix(in srgb, var(--nfw-error) 7%, var(--nfw-bg1)); border: 1px solid var(--nfw-error); border-radius: 6px;
  user-select: text; -webkit-user-select: text; cursor: text;
}
.nfw-meta-bad { color: var(--nfw-error); font-weight: 600; }
.nfw-nonfinite-note { margin: 0 0 6px; font-size: 11.5px; }
.nfw-state { display: flex; align-items: center; gap: 8px; color: var(--nfw-fg2); padding: 16px 0; }
.nfw-spinner { display: block; width: 14px; height: 14px; border: 2px solid var(--nfw-border); border-top-color: var(--nfw-accent); border-radius: 50%; animation: nfw-spin .8s linear infinite; }
@keyframes nfw-spin { to { transform: rotate(360deg); } }
.nfw-errorbox { display: block; border: 1px solid var(--nfw-error); border-radius: 6px; padding: 8px 10px; color: var(--nfw-error); background: transparent; overflow-wrap: anywhere; }
.nfw-errorbox .nfw-btn { margin-top: 6px; }
.nfw-note { display: block; margin: 4px 0 0; color: var(--nfw-fg2); font-size: 11px; }
.nfw-fatal { display: block; padding: 16px; color: var(--nfw-error); white-space: pre-wrap; font-family: var(--nfw-mono); }
.nfw-subtabs { margin: 0; }
.nfw-subtabs .nfw-tab { height: 22px; line-height: 20px; font-size: 11.5px; }
.nfw-chips { display: flex; flex-wrap: wrap; gap: 4px; align-items: center; margin: 6px 0; }
.nfw-chip-btn {
  min-width: 24px; height: 22px; padding: 0 6px; border-radius: 11px; font: inherit; font-size: 11px; font-weight: 600; cursor: pointer;
  color: #fff; background: var(--nfw-chip); border: 1px solid var(--nfw-chip); opacity: 1;
}
.nfw-chip-btn[aria-pressed="false"] { color: var(--nfw-fg2); background: transparent; border-color: var(--nfw-border); opacity: 0.8; }
.nfw-chip-all { height: 22px; line-height: 20px; font-size: 11px; padding: 0 6px; }
.nfw-head-view { display: block; cursor: crosshair; }
.nfw-model-view { display: grid; gap: 2px; align-items: center; margin: 6px 0; overflow-x: auto; }
.nfw-mv-corner, .nfw-mv-head, .nfw-mv-label { display: block; font-size: 10.5px; color: var(--nfw-fg2); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.nfw-mv-head { text-align: center; }
.nfw-mv-label { font-family: var(--nfw-mono); color: var(--nfw-fg1); }
.nfw-mv-cell { display: block; cursor: pointer; border-radius: 2px; }
.nfw-mv-cell:hover, .nfw-mv-cell:focus-visible { outline: 2px solid var(--nfw-accent); outline-offset: 1px; }
.nfw-mv-empty { display: block; color: var(--nfw-fg3); font-size: 10px; text-align: center; }
.nfw-readout { display: block; min-height: 1.4em; margin: 2px 0; font-family: var(--nfw-mono); font-size: 11px; color: var(--nfw-fg1); }
.nfw-zoomable { cursor: zoom-in; }
.nfw-zoom { display: flex; align-items: center; gap: 8px; margin: 4px 0; font-size: 11.5px; color: var(--nfw-fg1); }
`;
