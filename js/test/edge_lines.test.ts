// Every drawn line runs square to the flow or across it (its corners rounded): none slants. The
// golden models (real ones from their configs, and random architectures) at their first view
// and with each node opened, at 1280x720 and 1024x768 (the canvas under the toolbar). Two
// ways lines slanted: a merge from one column into a group in the other (T5's and BART's
// cross-attention into the decoder's stack) was routed to the group's side, where the group's
// own route into its member starts at its top; and a port spread along a node's side moved
// the end of a long straight run, which then slanted from its far end (GPT-2's hidden states).
import { describe, expect, it } from "vitest";
import { Framing } from "../src/app/framing";
import { segmentHitsBox } from "../src/layout/flow";
import type { Box } from "../src/layout/layout";
import { LayoutClient } from "../src/layout/client";
import { buildTree } from "../src/model/tree";
import { buildView } from "../src/model/view_model";
import { initialState, toggleKey } from "../src/model/view_state";
import { buildScene, READ_K } from "../src/scene/scene";
import type { Scene } from "../src/scene/types";
import { decodeGraph } from "../src/wire";
import { loadRaw } from "./fixtures";

const golden = loadRaw("edges_golden.json") as { cases: { name: string; graph: unknown }[] };
const client = new LayoutClient(false);
const canvas = (w: number, h: number) => ({ clientWidth: w, clientHeight: h }) as HTMLElement;
/** A rounded corner cuts across in steps this small (layout/flow.ts rounded). */
const CORNER = 12;

/** The first segment that runs more than CORNER both along and across, as text. */
function slant(pts: readonly number[]): string | null {
  for (let i = 2; i + 1 < pts.length; i += 2) {
    const [dx, dy] = [pts[i]! - pts[i - 2]!, pts[i + 1]! - pts[i - 1]!];
    if (Math.abs(dx) > CORNER && Math.abs(dy) > CORNER)
      return `(${pts[i - 2]!.toFixed(0)}, ${pts[i - 1]!.toFixed(0)}) to (${pts[i]!.toFixed(0)}, ${pts[i + 1]!.toFixed(0)})`;
  }
  return null;
}

/** Each scene of a golden model at 1280x720 and 1024x768 (the canvas under the toolbar): its
 * first view and, with `opened`, that view with each of its nodes opened. */
async function scenes(name: string, opened = true): Promise<{ W: number; what: string; scene: Scene }[]> {
  const tree = buildTree(decodeGraph(golden.cases.find((c) => c.name === name)!.graph));
  const out: { W: number; what: string; scene: Scene }[] = [];
  for (const [W, H] of [
    [1280, 675],
    [1024, 723],
  ] as const) {
    const framing = new Framing(client, canvas(W, H));
    const start = initialState(tree);
    const first = await framing.lay(start, buildView(tree, start), "TB", true, READ_K);
    const views = [{ what: "first view", lay: first }];
    for (const n of opened ? first.view.nodes : []) {
      const t = toggleKey(tree, first.state, n.key);
      if (!t || n.kind === "input" || n.kind === "output") continue;
      const state = { ...t.state, auto: false };
      views.push({
        what: `${n.key} opened`,
        lay: await framing.lay(state, buildView(tree, state), "TB", false, READ_K, "expand"),
      });
    }
    for (const { what, lay } of views) out.push({ W, what, scene: buildScene(tree, lay.view, lay, "TB") });
  }
  return out;
}

async function slants(name: string): Promise<string[]> {
  const found: string[] = [];
  for (const { W, what, scene } of await scenes(name)) {
    const lines = [
      ...[...scene.edges, ...scene.stubs].map((e) => ({ line: `${e.kind} ${e.src} > ${e.dst}`, pts: e.points })),
      ...scene.buses.map((b) => ({ line: `bus ${b.src}`, pts: b.points })),
    ];
    // (two points: no route was found, a straight line stands for it; so for a "runs after"
    // line back up to a node drawn before its source, in a few random architectures, its
    // ends then set square on the nodes' sides)
    for (const { line, pts } of lines) {
      const s = pts.length > 4 && !line.startsWith("order") ? slant(pts) : null;
      if (s) found.push(`${W}, ${what}: ${line} slants ${s}`);
    }
  }
  return found;
}

describe("no drawn line slants", () => {
  it("the cross-attention into an encoder-decoder's decoder stack (T5, BART)", async () => {
    expect(await slants("t5")).toEqual([]);
    expect(await slants("t5_3")).toEqual([]);
    expect(await slants("bart")).toEqual([]);
  });

  it("a long run to a port spread along a node's side (GPT-2 with its hidden states)", async () => {
    expect(await slants("gpt2_hidden_states")).toEqual([]);
  });

  it("every golden model, first view and each node opened", async () => {
    const found: string[] = [];
    for (const c of golden.cases) found.push(...(await slants(c.name)).map((s) => `${c.name} ${s}`));
    expect(found).toEqual([]);
  }, 60000);
});

describe("no drawn line passes behind a node at a first view", () => {
  // BERT's and T5's attention mask, a source read by the layers' stack only, stood at the foot
  // of the first band (layout/bands.ts), on the trunk's way out of it into the next
  it("every golden model but the random ones, at 1280x720 and 1024x768", async () => {
    const found: string[] = [];
    for (const c of golden.cases.filter((c) => !c.name.startsWith("random")))
      for (const { W, scene } of await scenes(c.name, false))
        for (const e of [...scene.edges, ...scene.stubs])
          for (const n of scene.nodes) {
            if ([e.src, e.dst, e.from, e.to].includes(n.key)) continue;
            for (let i = 0; i + 3 < e.points.length; i += 2)
              if (segmentHitsBox(e.points[i]!, e.points[i + 1]!, e.points[i + 2]!, e.points[i + 3]!, n.box, 2)) {
                found.push(`${c.name} ${W}: ${e.src} -> ${e.dst} behind ${n.key}`);
                break;
              }
          }
    expect(found).toEqual([]);
  }, 60000);
});

describe("no node lies on another", () => {
  // A branch beside the trunk was placed about its middle while an open group in it stands at
  // its entry (layout/spine.ts): an opened block with its entry off its middle lay across the
  // trunk (13 random architectures with a block opened; DiT's norm1.emb opened on pos_embed)
  const overlap = (a: Box, b: Box) =>
    a[0] < b[0] + b[2] - 1 && b[0] < a[0] + a[2] - 1 && a[1] < b[1] + b[3] - 1 && b[1] < a[1] + a[3] - 1;
  const inside = (a: Box, b: Box) =>
    a[0] >= b[0] - 0.5 && a[1] >= b[1] - 0.5 && a[0] + a[2] <= b[0] + b[2] + 0.5 && a[1] + a[3] <= b[1] + b[3] + 0.5;
  it("every golden model, first view and each node opened, nor a group's box on a node outside it", async () => {
    const found: string[] = [];
    for (const c of golden.cases)
      for (const { W, what, scene } of await scenes(c.name)) {
        const { nodes, clusters } = scene;
        for (const [i, a] of nodes.entries())
          for (const b of nodes.slice(i + 1))
            if (overlap(a.box, b.box)) found.push(`${c.name} ${W}, ${what}: ${a.key} on ${b.key}`);
        for (const g of clusters)
          for (const n of nodes)
            if (overlap(g.box, n.box) && !inside(n.box, g.box))
              found.push(`${c.name} ${W}, ${what}: ${g.key} on ${n.key}`);
      }
    expect(found).toEqual([]);
  }, 120000);
});
