/**
 * The module-call tree of a wire graph: each call's children, and the runs of repeated
 * blocks (`prefix.N`, same type and signature, >= MIN_RUN) that the view folds. Built once
 * per graph; view_model.ts reads it for every expansion state. Pure and DOM-free.
 */
import type { WireGraph } from "../wire";
import { topologyIndex, type TopologyIndex } from "./topology";

/** A run of >= 3 sibling calls `prefix.N` (consecutive N) of equal type and signature. */
export interface Run {
  key: string; // the first member's stage id
  members: number[];
  type: string;
  prefix: string;
}

export interface CallTree {
  graph: WireGraph;
  topo: TopologyIndex;
  children: number[][]; // per call, child call indices in start order
  roots: number[]; // calls whose parent is the model (-1)
  byId: Map<string, number>;
  runs: Map<string, Run>; // by key
  runOf: Int32Array; // per call: index into runList of the run it belongs to, else -1
  runList: Run[];
}

export const MIN_RUN = 3;
const INDEXED = /^(.*)\.(\d+)$/;

function findRuns(graph: WireGraph, siblings: number[]): Run[] {
  const runs: Run[] = [];
  let i = 0;
  while (i < siblings.length) {
    const first = graph.calls[siblings[i]];
    const m = INDEXED.exec(first.module);
    let j = i + 1;
    if (m) {
      let n = Number(m[2]);
      while (j < siblings.length) {
        const c = graph.calls[siblings[j]];
        const mj = INDEXED.exec(c.module);
        if (!mj || mj[1] !== m[1] || Number(mj[2]) !== n + 1 || c.type !== first.type || c.sig !== first.sig) break;
        n++;
        j++;
      }
    }
    if (m && j - i >= MIN_RUN) {
      runs.push({ key: first.id, members: siblings.slice(i, j), type: first.type, prefix: m[1] });
      i = j;
    } else {
      i++;
    }
  }
  return runs;
}

export function buildTree(graph: WireGraph): CallTree {
  const children: number[][] = graph.calls.map(() => []);
  const roots: number[] = [];
  const byId = new Map<string, number>();
  graph.calls.forEach((c, i) => {
    byId.set(c.id, i);
    if (c.parent >= 0) children[c.parent].push(i);
    else roots.push(i);
  });
  const runList: Run[] = [];
  for (const sibs of [roots, ...children]) if (sibs.length >= MIN_RUN) runList.push(...findRuns(graph, sibs));
  const runOf = new Int32Array(graph.calls.length).fill(-1);
  runList.forEach((r, k) => r.members.forEach((c) => (runOf[c] = k)));
  const runs = new Map(runList.map((r) => [r.key, r]));
  return { graph, topo: topologyIndex(graph), children, roots, byId, runs, runOf, runList };
}
