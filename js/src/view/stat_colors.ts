/** Node fills by an activation statistic of the graph (`stats`: mean |x| or std), viridis. */
import type { CallTree } from "../model/tree";
import type { ViewGraph } from "../model/view_model";
import type { Scene, SceneNode } from "../scene/types";
import type { ColorMode } from "./chrome";
import { viridis } from "./colormap";
import type { NodeFill } from "./graph_view";

/** A node's statistic; a fold averages its members. */
export function statOf(tree: CallTree, view: ViewGraph, n: SceneNode, mode: ColorMode): number | null {
  if (mode === "type" || n.call < 0) return null;
  const col = mode === "std" ? 1 : 0;
  const members = n.kind === "fold" ? (view.byKey.get(n.key)?.run?.members ?? [n.call]) : [n.call];
  const vals = members.map((m) => tree.graph.stats[m]?.[col]).filter((v): v is number => typeof v === "number" && Number.isFinite(v));
  return vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : null;
}

export function statRange(tree: CallTree, view: ViewGraph, scene: Scene, mode: ColorMode): [number, number] | null {
  if (mode === "type") return null;
  let lo = Infinity;
  let hi = -Infinity;
  for (const n of scene.nodes) {
    const v = statOf(tree, view, n, mode);
    if (v === null) continue;
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  return lo <= hi ? [lo, hi] : null;
}

export function statFills(tree: CallTree, view: ViewGraph, scene: Scene, mode: ColorMode): Map<string, NodeFill> | null {
  const range = statRange(tree, view, scene, mode);
  if (!range) return null;
  const out = new Map<string, NodeFill>();
  const span = range[1] - range[0] || 1;
  for (const n of scene.nodes) {
    const v = statOf(tree, view, n, mode);
    if (v === null) continue;
    const [r, g, b] = viridis((v - range[0]) / span);
    const light = 0.299 * r + 0.587 * g + 0.114 * b > 150;
    out.set(n.key, { fill: `rgb(${r}, ${g}, ${b})`, ink: light ? "#111827" : "#f9fafb" });
  }
  return out;
}
