/** Keyboard moves between nodes: along edges forward / backward, sideways within a layer. */
import type { Direction } from "../layout/layout";
import type { Scene, SceneEdge, SceneNode } from "../scene/types";
import type { EdgeKind } from "../wire";

interface Graphish {
  node(key: string): SceneNode | undefined;
  edgesAt(key: string): readonly SceneEdge[];
}

const RANK: Record<EdgeKind, number> = { flow: 0, merge: 1, skip: 2, order: 3 };

function center(n: SceneNode): [number, number] {
  return [n.box[0] + n.box[2] / 2, n.box[1] + n.box[3] / 2];
}

/** The key focus moves to for an arrow key, or null to stay. */
export function moveFocus(g: Graphish, scene: Scene, focus: string | null, key: string, dir: Direction): string | null {
  if (!focus) {
    const first = scene.nodes.find((n) => n.kind === "stage" || n.kind === "fold") ?? scene.nodes[0];
    return first?.key ?? null;
  }
  const here = g.node(focus);
  if (!here) return null;
  const forward = dir === "TB" ? "ArrowDown" : "ArrowRight";
  const backward = dir === "TB" ? "ArrowUp" : "ArrowLeft";
  const along = (out: boolean) => {
    const edges = g.edgesAt(focus).filter((e) => (out ? e.src === focus : e.dst === focus));
    edges.sort((a, b) => RANK[a.kind] - RANK[b.kind]);
    const [first] = edges;
    return first ? (out ? first.dst : first.src) : null;
  };
  if (key === forward) return along(true);
  if (key === backward) return along(false);
  // Sideways: the nearest node in the same layer (overlapping across the flow axis).
  const [cx, cy] = center(here);
  const sign = key === "ArrowRight" || key === "ArrowDown" ? 1 : -1;
  let best: SceneNode | null = null;
  let bestD = Infinity;
  for (const n of scene.nodes) {
    if (n.key === focus) continue;
    const [x, y] = center(n);
    const sameLayer = dir === "TB" ? Math.abs(y - cy) < here.box[3] : Math.abs(x - cx) < here.box[2];
    const d = dir === "TB" ? (x - cx) * sign : (y - cy) * sign;
    if (sameLayer && d > 0 && d < bestD) {
      best = n;
      bestD = d;
    }
  }
  return best?.key ?? null;
}
