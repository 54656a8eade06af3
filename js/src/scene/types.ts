/**
 * What a scene is: the drawable graph for one expansion state and direction (node and
 * cluster boxes with their labels, edges as absolute points). scene.ts builds it, routing.ts
 * moves edge ends on it, view/ draws it. Types only.
 */
import type { Box, Direction } from "../layout/layout";
import type { Mark } from "../model/problems";
import type { VisibleNode } from "../model/view_model";
import type { EdgeKind } from "../wire";

export interface SceneNode {
  key: string;
  id: string;
  kind: VisibleNode["kind"];
  call: number;
  box: Box;
  title: string; // last part of the module name, or "Type × n" for a fold
  path: string; // the full module name (or range for a fold)
  type: string;
  shape: string;
  params: string;
  expandable: boolean;
  foldCount: number;
  error: string | null;
  mark: Mark | null; // NaN / Inf in what it shows, or the call that raised
}

export interface SceneCluster {
  key: string;
  id: string;
  kind: "cluster" | "run";
  call: number;
  box: Box;
  label: string;
  type: string;
  depth: number;
  mark: Mark | null; // an open group whose own output held NaN / Inf, or that raised itself
}

export interface SceneEdge {
  key: string;
  src: string; // node keys
  dst: string;
  srcId: string; // wire ids (data-src / data-dst)
  dstId: string;
  kind: EdgeKind;
  points: number[];
}

export interface Scene {
  dir: Direction;
  nodes: SceneNode[];
  clusters: SceneCluster[];
  edges: SceneEdge[];
  width: number;
  height: number;
}
