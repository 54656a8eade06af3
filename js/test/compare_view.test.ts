// Comparing two runs, in the view: colour by divergence gives a stage equal within the
// tolerance the pale "same" fill and starts the ramp above the tolerance (an identical stage
// and one at 0.086 once got the same dark colour); a run B whose forward raised is a failure
// in the banners' words, the stage where it raised has the raised fill, and nothing ever
// says the runs agree then.
import { describe, expect, it } from "vitest";
import { computeLayout } from "../src/layout/layout";
import { divergesHeadline, runFailureHeadline } from "../src/model/problems";
import { buildTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { buildScene, layoutRequest } from "../src/scene/scene";
import { cssColor, viridis } from "../src/view/colormap";
import { ONLY_A_FILL, RAISED_FILL, SAME_FILL, statFills, statRange } from "../src/view/stat_colors";
import { decodeGraph } from "../src/wire";
import { loadRaw, type Raw } from "./fixtures";
import { at } from "../src/wire_check";

const none: ViewState = { expanded: new Set(), unfolded: new Set() };
const RTOL = 1e-3;

/** The U-Net fixture compared with a run B: relative L2 by stage id (absent: not compared). */
function compared(rel: Record<string, number>, extra: Raw = {}) {
  const raw = structuredClone(loadRaw("wire_unet.json")) as Raw;
  const at = (id: string) => (raw.calls as { id: string }[]).findIndex((c) => c.id === id);
  const stages = Object.entries(rel).map(([id, r]) => [at(id), r, 1 - r, r * 3, true, r > RTOL]);
  const firstId = Object.keys(rel).find((id) => rel[id]! > RTOL) ?? null;
  const comparison: Raw = {
    rtol: RTOL,
    first: firstId === null ? null : at(firstId),
    stages,
    ends: {},
    only_a: [],
    only_b: [],
    ...extra,
  };
  if (typeof extra.first === "string") comparison.first = at(extra.first);
  const graph = decodeGraph(raw, comparison);
  const tree = buildTree(graph);
  const view = buildView(tree, none);
  const scene = buildScene(tree, view, computeLayout(layoutRequest(view, "TB")), "TB");
  return { graph, tree, view, scene, at };
}

describe("colour by divergence", () => {
  // enc1 and enc2 identical, bottleneck within the tolerance, the decoder affected.
  const rel = { enc1: 0, enc2: 0, bottleneck: 4e-4, up2: 0.086, dec2: 0.12, up1: 0.3, dec1: 0.5, head: 0.9 };

  it("an identical stage and an affected one never share a colour: equal ones are 'same'", () => {
    const { tree, view, scene } = compared(rel);
    const fills = statFills(tree, view, scene, "divergence")!;
    for (const id of ["enc1", "enc2", "bottleneck"]) expect(fills.get(`s:${id}`)).toEqual(SAME_FILL);
    const affected = ["up2", "dec2", "up1", "dec1", "head"].map((id) => fills.get(`s:${id}`)!.fill);
    expect(affected).not.toContain(SAME_FILL.fill);
    expect(new Set(affected).size).toBe(5); // each its own colour on the ramp
    expect(fills.get("s:up2")!.fill).toBe(cssColor(viridis(0))); // the smallest difference: the ramp's low end
  });

  it("the ramp starts above the tolerance, and the scale says 'same' is drawn", () => {
    const { tree, view, scene } = compared(rel);
    const scale = statRange(tree, view, scene, "divergence")!;
    expect(scale.lo).toBeGreaterThan(RTOL);
    expect(scale.lo).toBeCloseTo(0.086, 9);
    expect(scale).toMatchObject({ same: true, raised: false, onlyA: false, unramped: false, rtol: RTOL, log: true });
  });

  it("two runs equal everywhere are all 'same', with no ramp", () => {
    const { tree, view, scene } = compared({
      enc1: 0,
      enc2: 0,
      bottleneck: 0,
      up2: 0,
      dec2: 0,
      up1: 0,
      dec1: 0,
      head: 0,
    });
    const fills = statFills(tree, view, scene, "divergence")!;
    expect(new Set([...fills.values()].map((f) => f.fill))).toEqual(new Set([SAME_FILL.fill]));
    expect(statRange(tree, view, scene, "divergence")).toMatchObject({ same: true, unramped: true });
  });
});

describe("a run B that raised", () => {
  // Run B raised in dec2: the encoder ran equal, up1, dec1 and head never ran in B.
  const failure = {
    run: "b",
    stage: "dec2",
    call: null as number | null,
    module: "dec2.conv1",
    message:
      "stage 'dec2' (module ConvBlock, inside 'dec2.conv1' (Conv2d)) raised RuntimeError: expected 64 channels, got 32; it received inputs of shape [1, 32, 8, 8]. Check that the inputs match what this module expects.",
  };
  const make = () => {
    const probe = compared({});
    const dec2 = probe.at("dec2");
    const onlyA = ["up1", "dec1", "head"].map(probe.at);
    return compared(
      { enc1: 0, enc2: 0, bottleneck: 0, up2: 0 },
      {
        stages: [
          ...["enc1", "enc2", "bottleneck", "up2"].map((id) => [probe.at(id), 0, 1, 0, true, false]),
          [dec2, null, null, null, false, true],
        ],
        first: "dec2",
        raised: [[dec2, "b"]],
        failed: [{ ...failure, call: dec2 }],
        only_a: onlyA,
      },
    );
  };

  it("the banner says run B failed at the stage, with what it raised, and never that the runs agree", () => {
    const { graph } = make();
    const words = runFailureHeadline(graph)!;
    expect(words.lead).toBe("Run B failed at dec2 (dec2.conv1)");
    expect(words.what).toMatch(/^RuntimeError: expected 64 channels, got 32/);
    expect(at(graph.calls, words.call!).id).toBe("dec2");
    expect(divergesHeadline(graph)).toBeNull(); // the failure banner says where: no "A = B", no second banner
    expect(graph.comparison!.stages.get(words.call!)!.raised).toBe("b");
  });

  it("a comparison whose wire 'first' is null still never says 'agree' when a run raised", () => {
    const { graph } = compared(
      { enc1: 0 },
      {
        failed: [
          {
            ...failure,
            stage: null,
            module: null,
            message: "the model's own forward (UNet, after stage 'enc1') raised RuntimeError: no",
          },
        ],
      },
    );
    expect(graph.comparison!.first).toBeNull();
    expect(divergesHeadline(graph)).toBeNull();
    expect(runFailureHeadline(graph)!.lead).toBe("Run B failed in the model's own forward (UNet, after stage 'enc1')");
  });

  it("the stage that raised has the raised fill, those it never reached the run-A-only grey", () => {
    const { tree, view, scene } = make();
    const fills = statFills(tree, view, scene, "divergence")!;
    expect(fills.get("s:dec2")).toEqual(RAISED_FILL);
    expect(fills.get("s:head")).toEqual(ONLY_A_FILL);
    expect(fills.get("s:enc1")).toEqual(SAME_FILL);
    expect(statRange(tree, view, scene, "divergence")).toMatchObject({
      raised: true,
      onlyA: true,
      same: true,
      unramped: true,
    });
  });

  it("a malformed failure is refused with where", () => {
    expect(() => compared({}, { failed: [{ run: "c", message: "x" }] })).toThrow(/comparison\.failed\[0\]/);
    expect(() => compared({}, { raised: [[0, "z"]] })).toThrow(/comparison\.raised\[0\]/);
  });
});
