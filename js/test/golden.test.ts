// The Python-written golden files: the JS walk must give exactly the edges of flow.select().
// Both files are required: a missing one fails here (loadRaw throws), it is never skipped.
import { describe, expect, it } from "vitest";
import { buildTree } from "../src/model/tree";
import { buildView, initialState } from "../src/model/view_model";
import { stageEdges, topologyIndex } from "../src/model/topology";
import { decodeGraph, SCHEMA } from "../src/wire";
import { loadRaw } from "./fixtures";

interface Case {
  name: string;
  graph: unknown;
  selections: { expanded: number[]; selected: number[]; edges: [string, string, string][] }[];
}

const golden = loadRaw("edges_golden.json") as { schema: number; cases: Case[] };

describe("edges_golden.json (written by scripts/make_fixtures.py)", () => {
  it("has this front end's schema and cases", () => {
    expect(golden.schema).toBe(SCHEMA);
    expect(golden.cases.length).toBeGreaterThan(0);
  });
  for (const c of golden.cases) {
    it(`${c.name}: ${c.selections.length} expansion states give Python's edges`, () => {
      const index = topologyIndex(decodeGraph(c.graph));
      for (const sel of c.selections) {
        const got = stageEdges(index, sel.selected).map((e) => [e.src, e.dst, e.kind]);
        expect(got, `${c.name} expanded=${JSON.stringify(sel.expanded)}`).toEqual(sel.edges);
      }
    });
  }

  it("the view model's visible stages match Python's for each expansion state (no folds)", () => {
    for (const c of golden.cases) {
      const tree = buildTree(decodeGraph(c.graph));
      for (const sel of c.selections) {
        const unfolded = new Set(tree.runList.map((r) => r.key));
        const view = buildView(tree, { expanded: new Set(sel.expanded), unfolded });
        expect([...view.selection].sort((a, b) => a - b), c.name).toEqual(sel.selected);
      }
    }
  });
});

describe("wire_golden.json", () => {
  it("decodes and opens at a readable depth", () => {
    const g = decodeGraph(loadRaw("wire_golden.json"));
    expect(g.model).toBe("UNet");
    expect(g.initial).toBeNull(); // traced without stages=: the view picks the depth
    const tree = buildTree(g);
    const view = buildView(tree, initialState(tree));
    expect(view.edges.filter((e) => e.kind === "skip").length).toBeGreaterThanOrEqual(2);
  });
});
