// Where the first NaN / Inf was made, when the first stage that holds it received it with its
// input (graph.nonfinite_origin): decoded, and worded as graph/origin.py's describe() words it.
import { describe, expect, it } from "vitest";
import { nonfiniteHeadline, originPhrases, problemsOf, viewMarks } from "../src/model/problems";
import { buildTree } from "../src/model/tree";
import { buildView } from "../src/model/view_model";
import { revealCall } from "../src/model/view_state";
import { flagsOf } from "../src/view/flags";
import { decodeGraph, WireError } from "../src/wire";
import { loadRaw, type Raw } from "./fixtures";

const raw = () => structuredClone(loadRaw("wire_unet.json")) as Raw;
const index = (g: Raw, id: string) => (g.calls as { id: string }[]).findIndex((c) => c.id === id);
const ORIGIN = {
  op: "torch.Tensor.div",
  module: "",
  type: "UNet",
  function: "UNet.forward",
  file: "model.py",
  line: 12,
  text: "x / (x - x)",
};

function withOrigin(origin: Raw | null, first = "enc2.conv1") {
  const g = raw();
  g.nonfinite = [first, "enc2", "dec2"].map((id) => index(g, id));
  g.nonfinite_origin = origin && {
    ...origin,
    before: origin.before === undefined ? index(g, "enc1") : origin.before,
    after: origin.after === undefined ? index(g, "enc2") : origin.after,
  };
  return decodeGraph(g);
}

describe("nonfinite_origin", () => {
  it("decodes the record, null when there is none (never missing)", () => {
    const graph = withOrigin(ORIGIN);
    const g = raw();
    expect(graph.nonfinite_origin).toEqual({ ...ORIGIN, before: index(g, "enc1"), after: index(g, "enc2") });
    expect(decodeGraph(raw()).nonfinite_origin).toBeNull();
    const none = raw();
    delete none.nonfinite_origin;
    expect(() => decodeGraph(none)).toThrow(/graph\.nonfinite_origin: missing/);
  });

  it("rejects a call index out of range and a field that is not text", () => {
    expect(() => withOrigin({ ...ORIGIN, after: 9999 })).toThrow(WireError);
    expect(() => withOrigin({ ...ORIGIN, after: 9999 })).toThrow(
      /graph\.nonfinite_origin\.after: call index 9999 is out of range/,
    );
    expect(() => withOrigin({ ...ORIGIN, text: 3 })).toThrow(/graph\.nonfinite_origin\.text: expected a string/);
  });

  it("the banner names the forward, the line and its code, and the stages around it", () => {
    const graph = withOrigin(ORIGIN);
    const head = nonfiniteHeadline(graph, problemsOf(graph))!;
    expect(head.stage).toBe("enc2.conv1"); // the first stage that holds it: the banner goes there
    expect(head.text).toBe("NaN/Inf produced between enc1 and enc2, in UNet.forward (line 12: x / (x - x))");
    expect(head.count).toBe("3 stages hold NaN/Inf");
    expect(head.origin?.filter((p) => p.kind === "id").map((p) => p.text)).toEqual(["enc1", "enc2"]);
    expect(head.origin?.filter((p) => p.kind === "code").map((p) => p.text)).toEqual(["UNet.forward", "x / (x - x)"]);
  });

  it("says what is known, in the words of NonfiniteOrigin.describe()", () => {
    const g = withOrigin(ORIGIN);
    const words = (o: Raw) =>
      originPhrases(g, { ...ORIGIN, before: null, after: null, ...o } as never)
        .map((p) => p.text)
        .join("");
    const enc2 = index(raw(), "enc2");
    // (tests/tracing/test_origin.py::test_the_words_say_what_is_known, with this graph's ids)
    expect(
      words({ op: "torch.log", module: "enc", type: "Encoder", function: "helper", line: 0, text: "", after: enc2 }),
    ).toBe("produced by torch.log before enc2, in helper, run by enc (Encoder)'s forward");
    expect(
      words({ op: "torch.log", module: "enc", type: "Encoder", function: "Encoder.forward", line: 3, text: "" }),
    ).toBe("produced by torch.log, in Encoder.forward (line 3)");
    expect(words({ before: enc2 })).toBe("produced after enc2, in UNet.forward (line 12: x / (x - x))");
  });

  it("without an origin the banner says where NaN first appeared, as before", () => {
    const graph = withOrigin(null);
    expect(nonfiniteHeadline(graph, problemsOf(graph))?.text).toBe("First NaN/Inf at enc2.conv1");
  });

  it("the node that only received it says so, not '1st NaN/Inf'", () => {
    const flag = (origin: Raw | null) => {
      const graph = withOrigin(origin);
      const tree = buildTree(graph);
      const view = buildView(
        tree,
        revealCall(tree, { expanded: new Set(), unfolded: new Set() }, tree.byId.get("enc2.conv1")!),
      );
      return flagsOf(viewMarks(tree, view, problemsOf(graph)).get("s:enc2.conv1") ?? null).map((f) => f.text);
    };
    expect(flag(ORIGIN)).toEqual(["received NaN/Inf"]);
    expect(flag(null)).toEqual(["1st NaN/Inf"]);
  });
});
