// Where a run went wrong, in the view model and the scene: NaN/Inf and failure marks go to the
// node that shows the call now (a collapsed group or a fold carries what it hides), the
// banners' words; and the scene draws "order" edges of a source-less stage.
import { describe, expect, it } from "vitest";
import { computeLayout } from "../src/layout/layout";
import { failureHeadline, nonfiniteHeadline, problemsOf, viewMarks } from "../src/model/problems";
import { buildTree } from "../src/model/tree";
import { buildView, type ViewState } from "../src/model/view_model";
import { initialState, revealCall, toggleExpanded, toggleUnfolded } from "../src/model/view_state";
import { buildScene, layoutRequest } from "../src/scene/scene";
import { decodeGraph } from "../src/wire";
import { loadRaw, type Raw } from "./fixtures";

const graphWith = (name: string, change: (g: Raw) => void) => {
  const raw = structuredClone(loadRaw(name)) as Raw;
  change(raw);
  return decodeGraph(raw);
};
const index = (g: Raw, id: string) => (g.calls as { id: string }[]).findIndex((c) => c.id === id);
const none: ViewState = { expanded: new Set(), unfolded: new Set() };

describe("NaN / Inf marks", () => {
  // enc2.conv2 made the first NaN; enc2.act2, enc2 and dec2 carried it on.
  const graph = graphWith(
    "wire_unet.json",
    (g) => (g.nonfinite = ["enc2.conv2", "enc2.act2", "enc2", "dec2"].map((id) => index(g, id))),
  );
  const tree = buildTree(graph);
  const p = problemsOf(graph);

  it("starts where the first listed call returned", () => {
    expect(p.first).toBe(tree.byId.get("enc2.conv2"));
    expect(nonfiniteHeadline(graph, p)).toEqual({
      stage: "enc2.conv2",
      text: "First NaN/Inf at enc2.conv2",
      count: "4 stages hold NaN/Inf",
      origin: null,
    });
  });

  it("a collapsed group carries the marks of the stages it hides", () => {
    const marks = viewMarks(tree, buildView(tree, none), p);
    expect(marks.get("s:enc2")).toEqual({ nonfinite: 3, first: true, failed: false });
    expect(marks.get("s:dec2")).toEqual({ nonfinite: 1, first: false, failed: false });
    expect([...marks.keys()].sort()).toEqual(["s:dec2", "s:enc2"]);
  });

  it("an open group's stages carry their own; the group keeps the mark of its own output", () => {
    const open = toggleExpanded(tree, none, tree.byId.get("enc2")!);
    const marks = viewMarks(tree, buildView(tree, open), p);
    expect(marks.get("s:enc2.conv2")).toEqual({ nonfinite: 1, first: true, failed: false });
    expect(marks.get("s:enc2.act2")?.nonfinite).toBe(1);
    expect(marks.get("c:enc2")).toEqual({ nonfinite: 1, first: false, failed: false });
    expect(marks.has("s:enc2.conv1")).toBe(false);
    expect(marks.has("s:enc2")).toBe(false);
  });

  it("the scene hands the marks to nodes and groups", () => {
    const view = buildView(tree, revealCall(tree, none, tree.byId.get("enc2.conv2")!));
    const scene = buildScene(tree, view, computeLayout(layoutRequest(view, "TB")), "TB");
    expect(scene.nodes.find((n) => n.id === "enc2.conv2")?.mark?.first).toBe(true);
    expect(scene.nodes.find((n) => n.id === "enc1")?.mark).toBeNull();
    expect(scene.clusters.find((c) => c.id === "enc2")?.mark?.nonfinite).toBe(1);
  });

  it("a fold carries its members' marks", () => {
    const gpt = graphWith(
      "wire_transformer12.json",
      (g) => (g.nonfinite = ["layers.4.attn", "layers.4", "layers.5", "norm"].map((id) => index(g, id))),
    );
    const t = buildTree(gpt);
    const folded = viewMarks(t, buildView(t, none), problemsOf(gpt));
    expect(folded.get("f:layers.0")).toEqual({ nonfinite: 3, first: true, failed: false });
    expect(folded.get("s:norm")?.nonfinite).toBe(1);
    const unfolded = viewMarks(t, buildView(t, toggleUnfolded(initialState(t), "layers.0")), problemsOf(gpt));
    expect(unfolded.get("s:layers.4")).toEqual({ nonfinite: 2, first: true, failed: false });
    expect(unfolded.get("s:layers.5")?.first).toBe(false);
  });

  it("nothing is marked when every output was finite", () => {
    const clean = loadRaw("wire_unet.json") as Raw;
    const g = decodeGraph(clean);
    const t = buildTree(g);
    expect(viewMarks(t, buildView(t, none), problemsOf(g)).size).toBe(0);
    expect(nonfiniteHeadline(g, problemsOf(g))).toBeNull();
    expect(failureHeadline(g, problemsOf(g))).toBeNull();
  });
});

describe("failure marks", () => {
  const message =
    "stage 'dec1' (module ConvBlock, inside 'dec1.conv2' (Conv2d)) raised RuntimeError: expected input[1, 8, 64, 64] to have 16 channels; it received inputs of shape [1, 8, 64, 64]. Check that the inputs match what this module expects.\nsecond line";
  const graph = graphWith("wire_unet.json", (g) => {
    g.failure = { message, stage: index(g, "dec1"), call: index(g, "dec1.conv2") };
    g.calls[index(g, "dec1.conv2")].error = "RuntimeError: expected ...";
  });
  const tree = buildTree(graph);
  const p = problemsOf(graph);

  it("marks the innermost call that raised, or the stage that hides it", () => {
    expect(p.failedStage).toBe(tree.byId.get("dec1"));
    expect(p.failedCall).toBe(tree.byId.get("dec1.conv2"));
    expect(viewMarks(tree, buildView(tree, none), p).get("s:dec1")?.failed).toBe(true);
    const open = viewMarks(tree, buildView(tree, toggleExpanded(tree, none, tree.byId.get("dec1")!)), p);
    expect(open.get("s:dec1.conv2")?.failed).toBe(true);
    expect(open.get("c:dec1")).toBeUndefined();
  });

  it("says where, then what, from the first line, without repeating the stage", () => {
    expect(failureHeadline(graph, p)).toEqual({
      where: "dec1 (dec1.conv2)",
      what: "RuntimeError: expected input[1, 8, 64, 64] to have 16 channels; it received inputs of shape [1, 8, 64, 64]. Check that the inputs match what this module expects.",
    });
  });

  it("a failure in the model's own forward names no stage", () => {
    const g = graphWith(
      "wire_unet.json",
      (r) =>
        (r.failure = {
          message: "the model's own forward (UNet, after stage 'up1') raised ValueError: bad",
          stage: null,
          call: null,
        }),
    );
    const q = problemsOf(g);
    expect(q.failedStage).toBeNull();
    expect(failureHeadline(g, q)).toEqual({
      where: "",
      what: "the model's own forward (UNet, after stage 'up1') raised ValueError: bad",
    });
  });
});

describe("order edges", () => {
  // head receives nothing from a stage (as a learned bias called with no input would): it
  // is attached to the stage before it, "runs after, no data".
  const graph = graphWith("wire_unet.json", (g) => Object.assign(g.calls[index(g, "head")], { in: [], args: [] }));
  const tree = buildTree(graph);
  const view = buildView(tree, none);
  const scene = buildScene(tree, view, computeLayout(layoutRequest(view, "TB")), "TB");

  it("are edges of the scene, drawn between the two stages", () => {
    const order = scene.edges.filter((e) => e.kind === "order");
    expect(order.map((e) => `${e.srcId}>${e.dstId}`)).toEqual(["dec1>head"]);
    expect(order[0]!.points.length).toBeGreaterThanOrEqual(4);
  });
});
