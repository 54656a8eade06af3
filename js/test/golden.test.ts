// The Python-written golden files: the JS walk must give exactly the edges of flow.select().
// Both files are required: a missing one fails here (loadRaw throws), it is never skipped.
import { describe, expect, it } from "vitest";
import { buildTree } from "../src/model/tree";
import { buildView } from "../src/model/view_model";
import { initialState } from "../src/model/view_state";
import { stageEdges, topologyIndex } from "../src/model/topology";
import { decodeGraph, SCHEMA } from "../src/wire";
import { loadRaw } from "./fixtures";
import { at } from "../src/wire_check";

// A node of an edge: a call index (a stage), or an input / output name.
type Node = number | string;

interface State {
  expanded: number[];
  folded: number[]; // first members of the runs drawn folded
}

interface Case {
  name: string;
  graph: unknown;
  runs: number[][]; // the runs of repeated blocks Python found (tree.ts's rule)
  selections: { selected: number[]; states: State[]; edges: [Node, Node, string][] }[];
}

const golden = loadRaw("edges_golden.json") as { schema: number; cases: Case[] };

describe("edges_golden.json (written by scripts/make_fixtures.py)", () => {
  it("has this front end's schema and cases", () => {
    expect(golden.schema).toBe(SCHEMA);
    expect(golden.cases.length).toBeGreaterThan(0);
  });
  for (const c of golden.cases) {
    const states = c.selections.reduce((n, s) => n + s.states.length, 0);
    it(`${c.name}: ${c.selections.length} selections (${states} view states) give Python's edges`, () => {
      const graph = decodeGraph(c.graph);
      const index = topologyIndex(graph);
      const name = (n: Node) => (typeof n === "number" ? at(graph.calls, n).id : n);
      const ids = (cs: number[]) => cs.map((i) => at(graph.calls, i).id);
      for (const [k, sel] of c.selections.entries()) {
        const want = sel.edges.map(([src, dst, kind]) => `${name(src)} -> ${name(dst)} ${kind}`);
        const got = stageEdges(index, sel.selected).map((e) => `${e.src} -> ${e.dst} ${e.kind}`);
        if (got.join("\n") !== want.join("\n")) {
          const where = `${c.name} selection #${k} ${JSON.stringify(ids(sel.selected))} (states ${JSON.stringify(sel.states)})`;
          expect(got, where).toEqual(want); // fails, with the difference
        }
      }
    });
  }

  it("the view model draws exactly Python's selection for each state, folds included", () => {
    for (const c of golden.cases) {
      const tree = buildTree(decodeGraph(c.graph));
      expect(
        tree.runList.map((r) => r.members),
        `${c.name}: the runs that fold`,
      ).toEqual(c.runs);
      for (const sel of c.selections) {
        for (const state of sel.states) {
          const folded = new Set(state.folded);
          const unfolded = new Set(tree.runList.filter((r) => !folded.has(r.members[0]!)).map((r) => r.key));
          const view = buildView(tree, { expanded: new Set(state.expanded), unfolded });
          const drawn = [...view.selection].sort((a, b) => a - b);
          if (drawn.join() !== sel.selected.join())
            expect(drawn, `${c.name} ${JSON.stringify(state)}`).toEqual(sel.selected);
        }
      }
    }
  });

  it("the state a graph opens in is one of them, its stacks folded (its edges are checked above)", () => {
    // A stack's edges are those of its own selection, spliced (stack.test.ts derives them by hand).
    for (const c of golden.cases) {
      const tree = buildTree(decodeGraph(c.graph));
      const drawn = buildView(tree, { ...initialState(tree), stacked: undefined })
        .selection.sort((a, b) => a - b)
        .join();
      expect(
        c.selections.some((s) => s.selected.join() === drawn),
        c.name,
      ).toBe(true);
    }
  });

  it("covers folds, arbitrary selections and the sequential topology", () => {
    const all = golden.cases.flatMap((c) => c.selections);
    expect(all.length).toBeGreaterThan(2000);
    expect(golden.cases.filter((c) => c.runs.length > 0).length).toBeGreaterThan(10);
    expect(all.filter((s) => s.states.some((st) => st.folded.length > 0)).length).toBeGreaterThan(100);
    expect(all.filter((s) => s.states.length === 0).length).toBeGreaterThan(500);
    expect(
      golden.cases.filter((c) => (c.graph as { topology: string }).topology === "sequential").length,
    ).toBeGreaterThan(1);
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
