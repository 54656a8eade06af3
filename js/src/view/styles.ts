/** The widget's CSS, injected into its own element. JupyterLab variables with fallbacks. */
/** Names of the theme variables; the SVG export resolves them to colours. */
export const THEME_VARS = [
  "--nfw-bg", "--nfw-bg1", "--nfw-bg2", "--nfw-bg3", "--nfw-fg0", "--nfw-fg1", "--nfw-fg2", "--nfw-fg3",
  "--nfw-border", "--nfw-border2", "--nfw-accent", "--nfw-error", "--nfw-flow", "--nfw-skip", "--nfw-merge",
  "--nfw-font", "--nfw-mono",
];

/** Rules for the graph drawing only: used live and inside exported SVG files. */
export const GRAPH_CSS = `
.nfw-graph { font-family: var(--nfw-font); }
.nfw-node { cursor: pointer; }
.nfw-node .nfw-card { fill: var(--nfw-bg1); stroke: var(--nfw-border); stroke-width: 1; }
.nfw-node .nfw-stack { fill: var(--nfw-bg2); stroke: var(--nfw-border); stroke-width: 1; }
.nfw-node:hover .nfw-card { stroke: var(--nfw-fg2); }
.nfw-node .nfw-t1 { font-size: 12.5px; font-weight: 600; fill: var(--nfw-fg0); }
.nfw-node .nfw-t2 { font-size: 11px; fill: var(--nfw-fg2); }
.nfw-node .nfw-num { font-family: var(--nfw-mono); font-size: 10.5px; fill: var(--nfw-fg2); }
.nfw-node.nfw-stat-fill .nfw-t1, .nfw-node.nfw-stat-fill .nfw-t2, .nfw-node.nfw-stat-fill .nfw-num { fill: var(--nfw-ink, inherit); }
.nfw-node.nfw-port .nfw-card { fill: var(--nfw-bg2); }
.nfw-node.nfw-port .nfw-t1 { font-weight: 500; font-size: 11.5px; fill: var(--nfw-fg1); }
.nfw-node.nfw-error .nfw-card { stroke: var(--nfw-error); stroke-width: 2; }
.nfw-node.nfw-selected .nfw-card { stroke: var(--nfw-accent); stroke-width: 2.5; }
.nfw-node.nfw-focus .nfw-ring { display: block; }
.nfw-ring { display: none; fill: none; stroke: var(--nfw-accent); stroke-width: 1.5; stroke-dasharray: 4 3; }
.nfw-node.nfw-match .nfw-card { stroke: #eab308; stroke-width: 2.5; }
.nfw-badge { fill: var(--nfw-bg2); stroke: var(--nfw-border); }
.nfw-badge-text { font-size: 12px; font-weight: 600; fill: var(--nfw-fg1); pointer-events: none; }
.nfw-node [data-action]:hover .nfw-badge, .nfw-cluster [data-action]:hover .nfw-badge { fill: var(--nfw-bg3); }

.nfw-cluster rect.nfw-box { fill: var(--nfw-fg0); fill-opacity: 0.025; stroke: var(--nfw-border); stroke-width: 1; }
.nfw-cluster.nfw-run rect.nfw-box { stroke-dasharray: 5 4; }
.nfw-cluster .nfw-ct { font-size: 11.5px; font-weight: 600; fill: var(--nfw-fg1); }
.nfw-cluster .nfw-ct2 { font-size: 11px; fill: var(--nfw-fg2); }
.nfw-cluster [data-action] { cursor: pointer; }

.nfw-edge { fill: none; stroke: var(--nfw-flow); stroke-width: 1.4; }
.nfw-edge[data-edge-kind="skip"] { stroke: var(--nfw-skip); stroke-dasharray: 6 4; stroke-width: 1.5; }
.nfw-edge[data-edge-kind="merge"] { stroke: var(--nfw-merge); stroke-width: 1.6; }
.nfw-hovering .nfw-edge { opacity: 0.18; }
.nfw-hovering .nfw-edge.nfw-hl { opacity: 1; stroke-width: 2.4; }
.nfw-hovering .nfw-node { opacity: 0.45; }
.nfw-hovering .nfw-node.nfw-hl { opacity: 1; }
.nfw-arrow-flow { fill: var(--nfw-flow); }
.nfw-arrow-skip { fill: var(--nfw-skip); }
.nfw-arrow-merge { fill: var(--nfw-merge); }

.nfw-edge, .nfw-card, .nfw-stack, .nfw-cluster rect.nfw-box { vector-effect: non-scaling-stroke; }
.nfw-lod-mid .nfw-t2, .nfw-lod-mid .nfw-num, .nfw-lod-mid .nfw-ct2 { display: none; }
.nfw-lod-low text, .nfw-lod-low [data-action] { display: none; }
.nfw-lod-low .nfw-node .nfw-card { fill: var(--nfw-type, var(--nfw-bg2)); }

`;

export const CSS = GRAPH_CSS + `
.nfw-root {
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
  --nfw-font: var(--jp-ui-font-family, system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif);
  --nfw-mono: var(--jp-code-font-family, ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace);
  position: relative;
  display: flex;
  flex-direction: column;
  height: var(--nfw-height, 600px);
  min-height: 320px;
  font-family: var(--nfw-font);
  font-size: 12px;
  color: var(--nfw-fg1);
  background: var(--nfw-bg);
  border: 1px solid var(--nfw-border2);
  border-radius: 8px;
  overflow: hidden;
  box-sizing: border-box;
}
.nfw-root *, .nfw-root *::before, .nfw-root *::after { box-sizing: border-box; }
.nfw-root:focus-within { border-color: var(--nfw-border); }

.nfw-toolbar {
  display: flex; align-items: center; gap: 6px; flex-wrap: wrap;
  padding: 6px 8px; border-bottom: 1px solid var(--nfw-border2); background: var(--nfw-bg1);
}
.nfw-title { display: flex; align-items: baseline; gap: 8px; margin-right: auto; min-width: 0; padding-left: 2px; }
.nfw-title b { font-size: 13px; font-weight: 600; color: var(--nfw-fg0); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.nfw-title span { color: var(--nfw-fg2); white-space: nowrap; }
.nfw-btn, .nfw-select, .nfw-search {
  height: 26px; font: inherit; color: var(--nfw-fg1); background: var(--nfw-bg);
  border: 1px solid var(--nfw-border); border-radius: 5px; padding: 0 8px;
}
.nfw-btn { cursor: pointer; display: inline-flex; align-items: center; gap: 4px; white-space: nowrap; }
.nfw-btn:hover { background: var(--nfw-bg2); }
.nfw-btn:focus-visible, .nfw-select:focus-visible, .nfw-search:focus-visible { outline: 2px solid var(--nfw-accent); outline-offset: 1px; }
.nfw-btn[aria-pressed="true"] { background: var(--nfw-bg3); }
.nfw-btn-group { display: inline-flex; }
.nfw-btn-group .nfw-btn { border-radius: 0; margin-left: -1px; }
.nfw-btn-group .nfw-btn:first-child { border-radius: 5px 0 0 5px; margin-left: 0; }
.nfw-btn-group .nfw-btn:last-child { border-radius: 0 5px 5px 0; }
.nfw-search { width: 170px; }
.nfw-search-count { color: var(--nfw-fg2); min-width: 4.5em; font-size: 11px; }
.nfw-sep { width: 1px; height: 18px; background: var(--nfw-border2); margin: 0 2px; }

.nfw-main { position: relative; flex: 1; min-height: 0; display: flex; }
.nfw-canvas { position: relative; flex: 1; min-width: 0; overflow: hidden; outline: none; cursor: grab; background:
  radial-gradient(circle, var(--nfw-border2) 1px, transparent 1.2px) 0 0 / 22px 22px, var(--nfw-bg); }
.nfw-canvas.nfw-dragging { cursor: grabbing; }
.nfw-svg { display: block; width: 100%; height: 100%; user-select: none; -webkit-user-select: none; }

.nfw-legend {
  position: absolute; left: 10px; bottom: 10px; display: flex; gap: 12px; align-items: center;
  padding: 5px 10px; background: var(--nfw-bg1); border: 1px solid var(--nfw-border2); border-radius: 6px;
  color: var(--nfw-fg2); font-size: 11px; pointer-events: none; opacity: 0.95;
}
.nfw-legend svg { vertical-align: middle; margin-right: 4px; }
.nfw-legend .nfw-grad { display: inline-block; width: 70px; height: 8px; border-radius: 2px; margin: 0 4px; vertical-align: middle; }

.nfw-minimap {
  position: absolute; right: 10px; bottom: 10px; width: 180px; height: 120px; cursor: crosshair;
  background: var(--nfw-bg1); border: 1px solid var(--nfw-border2); border-radius: 6px; box-shadow: 0 1px 4px rgba(0,0,0,.08);
}
.nfw-hint {
  position: absolute; left: 50%; top: 10px; transform: translateX(-50%); padding: 4px 10px; border-radius: 5px;
  background: var(--nfw-fg1); color: var(--nfw-bg); font-size: 11px; pointer-events: none; opacity: 0; transition: opacity .2s;
}
.nfw-hint.nfw-show { opacity: 0.85; }
.nfw-busy { position: absolute; right: 12px; top: 10px; color: var(--nfw-fg2); font-size: 11px; }

.nfw-inspector {
  width: 380px; max-width: 55%; flex: none; display: flex; flex-direction: column; min-height: 0;
  border-left: 1px solid var(--nfw-border2); background: var(--nfw-bg1);
}
.nfw-inspector[hidden] { display: none; }
.nfw-ins-head { display: flex; align-items: flex-start; gap: 8px; padding: 10px 12px 8px; border-bottom: 1px solid var(--nfw-border2); }
.nfw-ins-head .nfw-ins-title { flex: 1; min-width: 0; }
.nfw-ins-title b { display: block; font-size: 13.5px; color: var(--nfw-fg0); overflow-wrap: anywhere; }
.nfw-ins-title span { color: var(--nfw-fg2); font-size: 11.5px; overflow-wrap: anywhere; }
.nfw-close { border: none; background: none; color: var(--nfw-fg2); font-size: 18px; line-height: 1; cursor: pointer; padding: 2px 4px; border-radius: 4px; }
.nfw-close:hover { background: var(--nfw-bg2); color: var(--nfw-fg0); }
.nfw-ins-body { overflow: auto; padding: 10px 12px 14px; display: flex; flex-direction: column; gap: 12px; }
.nfw-section h4 { margin: 0 0 6px; font-size: 10.5px; font-weight: 600; letter-spacing: .06em; text-transform: uppercase; color: var(--nfw-fg2); }
.nfw-meta { margin: 0; display: grid; grid-template-columns: auto 1fr; gap: 2px 10px; font-size: 11.5px; }
.nfw-meta dt { color: var(--nfw-fg2); }
.nfw-meta dd { margin: 0; font-family: var(--nfw-mono); font-size: 11px; overflow-wrap: anywhere; }
.nfw-stats { width: 100%; border-collapse: collapse; font-size: 11.5px; }
.nfw-stats td { padding: 2px 0; border-bottom: 1px solid var(--nfw-border2); }
.nfw-stats td:last-child { text-align: right; font-family: var(--nfw-mono); font-size: 11px; }
.nfw-tabs { display: flex; flex-wrap: wrap; gap: 4px; }
.nfw-tab { height: 24px; padding: 0 9px; border-radius: 12px; border: 1px solid var(--nfw-border); background: var(--nfw-bg); color: var(--nfw-fg1); font: inherit; font-size: 11.5px; cursor: pointer; }
.nfw-tab[aria-selected="true"] { background: var(--nfw-accent); border-color: var(--nfw-accent); color: #fff; }
.nfw-controls { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; font-size: 11.5px; color: var(--nfw-fg2); }
.nfw-controls input[type=number] { width: 64px; }
.nfw-plot { display: block; width: 100%; border-radius: 4px; image-rendering: pixelated; }
.nfw-hist { display: block; width: 100%; height: 90px; }
.nfw-colorbar { display: flex; align-items: center; gap: 6px; font-family: var(--nfw-mono); font-size: 10.5px; color: var(--nfw-fg2); }
.nfw-colorbar i { flex: 1; height: 9px; border-radius: 2px; }
.nfw-state { display: flex; align-items: center; gap: 8px; color: var(--nfw-fg2); padding: 16px 0; }
.nfw-spinner { width: 14px; height: 14px; border: 2px solid var(--nfw-border); border-top-color: var(--nfw-accent); border-radius: 50%; animation: nfw-spin .8s linear infinite; }
@keyframes nfw-spin { to { transform: rotate(360deg); } }
.nfw-errorbox { border: 1px solid var(--nfw-error); border-radius: 6px; padding: 8px 10px; color: var(--nfw-error); background: transparent; overflow-wrap: anywhere; }
.nfw-errorbox .nfw-btn { margin-top: 6px; }
.nfw-note { color: var(--nfw-fg2); font-size: 11px; }
.nfw-fatal { padding: 16px; color: var(--nfw-error); white-space: pre-wrap; font-family: var(--nfw-mono); }
`;
