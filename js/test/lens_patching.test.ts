// The logit lens, interventions and patching in the view model (issue 22), on real runs of
// GPT-2 (wire_experiments.json): which blocks carry a chip and what it says (a stack: the
// member it shows), run B named from the intervention, the patching heat map and colours,
// and which colourings the colour menu offers as runs come and go.
import { describe, expect, it } from "vitest";
import { computeLayout } from "../src/layout/layout";
import { interventionLabel, patchMap, runBCaption, specPhrase } from "../src/model/experiments";
import { lastInside, lastPosition, percent, readoutBlocks, tokenText } from "../src/model/readouts";
import { buildTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { initialState } from "../src/model/view_state";
import { buildScene, layoutRequest } from "../src/scene/scene";
import { chipsOf } from "../src/view/chips";
import { type ColorMode, colorModeFor, type Offered } from "../src/view/chrome";
import { cssColor, viridis } from "../src/view/colormap";
import { statFills, statRange } from "../src/view/stat_colors";
import type { WireGraph } from "../src/wire";
import { experiment } from "./fixtures";

const call = (g: WireGraph, id: string) => g.calls.findIndex((c) => c.id === id);

function drawn(graph: WireGraph, state?: ViewState) {
  const tree = buildTree(graph);
  const view = buildView(tree, state ?? initialState(tree));
  const scene = buildScene(tree, view, computeLayout(layoutRequest(view, "TB")), "TB");
  return { tree, view, scene };
}

describe("the logit lens on the graph", () => {
  it("puts chips on the blocks of the residual stream, not on their sublayers or the model body", () => {
    const g = experiment("gpt2");
    const blocks = readoutBlocks(g).map((c) => g.calls[c]!.id);
    expect(blocks).toEqual(["transformer.h.0", "transformer.h.1", "transformer.h.2", "transformer.h.3"]);
    // (the graph reads their attention and MLP too, and the model body's output)
    expect(g.readouts.map(([c]) => g.calls[c]!.id)).toContain("transformer.h.0.attn");
  });

  it("a stack's chip is the member it shows; a collapsed block's its own", () => {
    const g = experiment("gpt2");
    const tree = buildTree(g);
    const run = tree.runList.find((r) => g.calls[r.members[0]!]!.id === "transformer.h.0")!;
    const body = call(g, "transformer");
    const tops = lastPosition(g);
    const blocks = new Set(readoutBlocks(g));
    for (const shown of [0, 2]) {
      const state: ViewState = {
        expanded: new Set([body]),
        unfolded: new Set(),
        stacked: new Map([[run.key, shown]]),
      };
      const { view, scene } = drawn(g, state);
      const chips = chipsOf(view, scene, blocks, tops, "after the last position");
      const member = run.members[shown]!;
      const stack = [...chips.entries()].find(([key]) => key.startsWith("k:"));
      expect(stack?.[1].call).toBe(member);
      // the oracle: the graph's own readout of that block at the last position
      const [, id, p] = g.readouts.find(([c]) => c === member)!;
      expect(stack?.[1].top).toEqual({ id, name: g.readout_names[String(id)], p });
      expect(stack?.[1].text).toBe(tokenText(g.readout_names[String(id)]!));
      expect(stack?.[1].p).toBe(percent(p));
    }
    // the blocks unfolded, each its own node and chip
    const { view, scene } = drawn(g, { expanded: new Set([body]), unfolded: new Set([run.key]) });
    const chips = chipsOf(view, scene, blocks, tops, "");
    expect([...chips.keys()].sort()).toEqual(run.members.map((m) => `s:${g.calls[m]!.id}`).sort());
    // playback before a block has passed: no chip for it
    const some = chipsOf(view, scene, blocks, tops, "", (c) => c <= run.members[1]!);
    expect([...some.values()].map((c) => c.call)).toEqual(run.members.slice(0, 2));
  });

  it("writes tokens as text, quoted, blanks visible; probabilities plainly", () => {
    expect(tokenText(" the")).toBe("‘␣the’");
    expect(tokenText("\n")).toBe("‘↵’");
    expect(tokenText("<b>bold</b>")).toBe("‘<b>bold</b>’");
    expect([percent(0.9996), percent(0.26), percent(0.023), percent(0.004)]).toEqual(["99%", "26%", "2.3%", "<1%"]);
  });

  it("knows when a block has returned: the last call inside it", () => {
    const g = experiment("gpt2");
    const last = lastInside(buildTree(g));
    const h0 = call(g, "transformer.h.0");
    const inside = g.calls.flatMap((c, i) => (c.id.startsWith("transformer.h.0.") ? [i] : []));
    expect(last[h0]).toBe(Math.max(...inside));
    expect(last[inside[0]!]).toBeGreaterThanOrEqual(inside[0]!);
  });
});

describe("run B as an intervention", () => {
  it("names run B from the intervention traitlet", () => {
    const g = experiment("gpt2");
    expect(interventionLabel(g)).toEqual({
      stage: "transformer.h.1.attn",
      text: "transformer.h.1.attn switched off (zero)",
    });
    expect(runBCaption(g)).toBe("B · transformer.h.1.attn switched off (zero)");
    expect(specPhrase("mean")).toBe("replaced by its batch mean");
    expect(specPhrase("heads 2, 5 off")).toBe("with heads 2, 5 off");
    expect(runBCaption(experiment("gpt2", (r) => (r.intervention = null)))).toBe("B · compared run");
    // an intervention without its comparison (it was ended) names nothing
    expect(interventionLabel(experiment("gpt2", (r) => (r.comparison = null)))).toBeNull();
  });
});

describe("activation patching", () => {
  it("the heat map is stage x position, and a patched block's colour its whole output's share", () => {
    const g = experiment("gpt2");
    const map = patchMap(g)!;
    expect(map.rows).toEqual(["transformer.h.0", "transformer.h.1", "transformer.h.2", "transformer.h.3"]);
    expect(map.values.every((row) => row.length === 8)).toBe(true);
    const tree = buildTree(g);
    const run = tree.runList.find((r) => g.calls[r.members[0]!]!.id === "transformer.h.0")!;
    const { view, scene } = drawn(g, { expanded: new Set([call(g, "transformer")]), unfolded: new Set([run.key]) });
    const fills = statFills(tree, view, scene, "patching")!;
    const scale = statRange(tree, view, scene, "patching")!;
    expect([scale.lo, scale.hi, scale.log]).toEqual([0, 1, false]);
    for (const [i, c] of g.patching!.stages.entries()) {
      const share = g.patching!.whole[i]!;
      expect(fills.get(`s:${g.calls[c]!.id}`)!.fill).toBe(cssColor(viridis(Math.min(1, Math.max(0, share)))));
    }
    expect(fills.has("s:transformer.wte")).toBe(false); // not patched: not coloured
  });
});

describe("the colour menu", () => {
  // (the tests run in Node: a select's part that colorModeFor uses)
  const select = () => {
    const options = ["type", "mean_abs", "std", "divergence", "grad", "patching"].map((value) => ({
      value,
      hidden: false,
      disabled: false,
    }));
    const find = (sel: string) => options.find((o) => sel === `option[value="${o.value}"]`) ?? null;
    return { value: "type", options, querySelector: find } as unknown as HTMLSelectElement;
  };
  const offered = (o: Partial<Offered>): Offered => ({ divergence: false, grad: false, patching: false, ...o });

  it("offers what the run has, chooses a comparison or patching that came, falls back to type", () => {
    const el = select();
    const hidden = () => [...el.options].filter((o) => o.hidden).map((o) => o.value);
    let mode: ColorMode = colorModeFor(el, offered({ grad: true }), null, "type");
    expect([mode, hidden()]).toEqual(["type", ["divergence", "patching"]]);
    mode = colorModeFor(el, offered({ grad: true, patching: true }), offered({ grad: true }), "grad");
    expect(mode).toBe("patching"); // it came: the user asked for it just now
    mode = colorModeFor(el, offered({ grad: true, patching: true }), offered({ grad: true, patching: true }), "grad");
    expect(mode).toBe("grad"); // the same run again: the user's choice stays
    mode = colorModeFor(el, offered({ divergence: true }), offered({ grad: true }), "grad");
    expect([mode, el.value]).toEqual(["divergence", "divergence"]);
    mode = colorModeFor(el, offered({}), offered({ divergence: true }), "divergence");
    expect(mode).toBe("type"); // the comparison ended
  });
});
