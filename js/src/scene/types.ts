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
  range?: string; // a fold's range as drawn, its last two names ("layers.0 … 2"; path in the tip)
  type: string;
  shape: string;
  params: string;
  expandable: boolean;
  foldCount: number;
  error: string | null;
  mark: Mark | null; // NaN / Inf in what it shows, or the call that raised
  /** A collapsed residual block (or a fold of them, model/residual.ts): its output is
   * f(x) + x, drawn as a small ⊕ and an arc around it; "projected": the shortcut is a
   * projection (downsample(x)); "mixed": a fold with both. Absent: none. */
  residual?: "identity" | "projected" | "mixed";
  /** A residual block's sublayer folded (model/parts.ts): drawn as a stage is, its members'
   * names on line 1, their types on line 2 (no stacked cards: it repeats nothing). */
  part?: true;
  /** In a column right of another (a decoder's, layout/columns.ts): its marks face away from it. */
  mirror?: boolean;
}

export interface SceneCluster {
  key: string;
  id: string;
  kind: "cluster" | "run" | "stack";
  call: number; // a stack: the call of the member shown
  box: Box;
  label: string;
  type: string;
  depth: number;
  mark: Mark | null; // an open group whose own output held NaN / Inf, or that raised itself
  stack?: SceneStack; // a run drawn as one block: what its header's stepper says
}

/** A stack's header: "GPT2Block × 12", the member shown and the keys of its controls. */
export interface SceneStack {
  count: number;
  shown: number; // 0-based
  steppable: boolean; // any member can be shown (their trees match)
  shared?: true; // one module called `count` times (ALBERT's layer): passes, not layers
  prev: string; // action keys (view_model.ts toggleKey): previous / next member, unfold all, fold
  next: string;
  unfold: string;
  fold: string;
}

export interface SceneEdge {
  key: string;
  src: string; // node keys
  dst: string;
  srcId: string; // wire ids (data-src / data-dst)
  dstId: string;
  kind: EdgeKind;
  points: number[];
  from: string; // where it is drawn from: src, a junction's key (the stream), or a bus's
  to: string; // where it is drawn to: dst, or a junction's key (no arrowhead there)
}

/** Where the data of two or more sources meets (model/junctions.ts), drawn as a glyph. */
export interface SceneJunction {
  key: string;
  box: Box;
  what: string; // add, cat, mul, ... or a function name
  glyph: string; // "+", "⧺", "×", ... or the name, short
  outs: string[]; // node keys it feeds
  stage?: string; // an attention's: the stage whose forward ran it (a click shows its maps)
  operand?: string; // the model's parameter it joins in (ViT's "position_embeddings")
}

/** A source read by many (a mask, an embedding): one line along the graph, a tap into each. */
export interface SceneBus {
  key: string;
  src: string; // node key
  srcId: string;
  kind: EdgeKind;
  points: number[]; // the line, from the source to the last tap
  taps: number[]; // flat x, y where each tap leaves the line (its dot)
  /** What it carries, written along its lane ("cross-attention"): centred on x, y, beside the
   * lane away from its readers (in TB reading upwards, its baseline along the lane); in two
   * `lines` where the lane is too short for it, the second's baseline at y. */
  label?: { text: string; x: number; y: number; vertical: boolean; lines?: [string, string] };
}

export interface Scene {
  dir: Direction;
  nodes: SceneNode[];
  clusters: SceneCluster[];
  edges: SceneEdge[];
  junctions: SceneJunction[];
  stubs: SceneEdge[]; // junction -> node: the joined data going in (from/src: the junction)
  buses: SceneBus[];
  width: number;
  height: number;
  /** The layout's extent in the scene (what app/framing.ts fitted to the canvas); beyond it
   * run only lines (a bus' lane round the outside) and the marks' overhang (view/marks.ts). */
  core?: Box;
}
