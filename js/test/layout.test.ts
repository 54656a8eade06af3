import { describe, expect, it } from "vitest";
import { computeLayout, GROUP_PAD, LayoutCache, type Box, type LayoutGroup } from "../src/layout/layout";
import { buildTree } from "../src/model/tree";
import { buildView } from "../src/model/view_model";
import { initialState, toggleExpanded, toggleUnfolded } from "../src/model/view_state";
import { buildScene, edgePath, layoutRequest } from "../src/scene/scene";
import { loadGraph, must } from "./fixtures";
import { arrange } from "../src/layout/spine";
import { type FlowGroup, type FlowItem, segmentHitsBox } from "../src/layout/flow";

const unet = buildTree(loadGraph("wire_unet.json"));
const gpt = buildTree(loadGraph("wire_transformer12.json"));

function overlaps(a: Box, b: Box): boolean {
  return a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
}

function inside(inner: Box, outer: Box): boolean {
  return (
    inner[0] >= outer[0] &&
    inner[1] >= outer[1] &&
    inner[0] + inner[2] <= outer[0] + outer[2] &&
    inner[1] + inner[3] <= outer[1] + outer[3]
  );
}

describe("layout", () => {
  it("places every visible node without overlaps, flowing downwards (a U down and up again)", () => {
    const state = toggleExpanded(unet, initialState(unet), unet.byId.get("bottleneck")!);
    const view = buildView(unet, state);
    const lay = computeLayout(layoutRequest(view, "TB"));
    const boxes = view.nodes.map((n) => must(lay.boxes, n.key));
    expect(boxes.every(Boolean)).toBe(true);
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) expect(overlaps(boxes[i]!, boxes[j]!)).toBe(false);
    const rising = new Set(["s:up2", "s:dec2", "s:up1", "s:dec1"]); // the decoder, up the U's other side
    for (const e of view.edges) {
      if (e.kind !== "flow" || e.dst === "s:head") continue;
      if (rising.has(e.dst) && e.src !== "s:bottleneck.conv2")
        expect(must(lay.boxes, e.src)[1]).toBeGreaterThan(must(lay.boxes, e.dst)[1]);
      else if (!rising.has(e.dst)) expect(must(lay.boxes, e.src)[1]).toBeLessThan(must(lay.boxes, e.dst)[1]);
    }
    const chain = buildView(
      gpt,
      toggleExpanded(gpt, toggleUnfolded(initialState(gpt), "layers.0"), gpt.byId.get("layers.3")!),
    );
    const chainLay = computeLayout(layoutRequest(chain, "TB"));
    for (const e of chain.edges)
      if (e.kind === "flow") expect(chainLay.boxes[e.src]![1]).toBeLessThan(chainLay.boxes[e.dst]![1]);
    // Children sit inside their cluster box.
    const cluster = must(lay.boxes, "c:bottleneck");
    for (const id of ["bottleneck.conv1", "bottleneck.act", "bottleneck.conv2"])
      expect(inside(must(lay.boxes, `s:${id}`), cluster)).toBe(true);
  });

  it("left-to-right flows along x; a U lies on its side (encoder along +x, decoder back along -x)", () => {
    const chain = buildView(gpt, initialState(gpt));
    const lay = computeLayout(layoutRequest(chain, "LR"));
    for (const e of chain.edges)
      if (e.kind === "flow") expect(must(lay.boxes, e.src)[0]).toBeLessThan(must(lay.boxes, e.dst)[0]);
    expect(lay.width).toBeGreaterThan(lay.height);
    const view = buildView(unet, initialState(unet));
    const u = computeLayout(layoutRequest(view, "LR"));
    const x = (id: string) => u.boxes[`s:${id}`]![0];
    const y = (id: string) => u.boxes[`s:${id}`]![1];
    expect(x("enc1")).toBeLessThan(x("enc2"));
    expect(x("enc2")).toBeLessThan(x("bottleneck"));
    expect(x("up1")).toBeLessThan(x("up2"));
    expect(x("dec1")).toBeLessThan(x("dec2"));
    expect(y("dec1")).toBeGreaterThan(y("enc1")); // the decoder beneath the encoder
    expect(u.width).toBeGreaterThan(u.height);
  });

  it("is incremental: expanding a block lays out only that block and its containers", () => {
    const cache = new LayoutCache();
    const s0 = toggleUnfolded(initialState(gpt), "layers.0");
    const first = computeLayout(layoutRequest(buildView(gpt, s0), "TB"), cache);
    expect(first.laidOut).toBe(2); // the root and the unfolded run
    const s1 = toggleExpanded(gpt, s0, gpt.byId.get("layers.4")!);
    const second = computeLayout(layoutRequest(buildView(gpt, s1), "TB"), cache);
    expect(second.laidOut).toBe(3); // the block, the run around it, the root
    const again = computeLayout(layoutRequest(buildView(gpt, s0), "TB"), cache);
    expect(again.laidOut).toBe(0);
    expect(again.boxes).toEqual(first.boxes);
  });

  it("stacks a plain chain without the layered solver", () => {
    const chain: LayoutGroup = {
      key: "root",
      items: [
        { key: "a", w: 100, h: 40 },
        { key: "b", w: 60, h: 40 },
        { key: "c", w: 100, h: 20 },
      ],
      edges: [
        { src: 0, dst: 1, weight: 1 },
        { src: 1, dst: 2, weight: 1 },
      ],
    };
    const lay = computeLayout({ dir: "TB", root: chain });
    expect(lay.boxes.b).toEqual([20, 74, 60, 40]);
    expect(must(lay.routes, "a>b")).toEqual([50, 40, 50, 74]);
    expect([lay.width, lay.height]).toEqual([100, 40 + 34 + 40 + 34 + 20]);
  });

  it("builds a scene whose edges start and end at their nodes", () => {
    const view = buildView(unet, toggleExpanded(unet, initialState(unet), unet.byId.get("dec1")!));
    const lay = computeLayout(layoutRequest(view, "TB"));
    const scene = buildScene(unet, view, lay, "TB");
    expect(scene.edges.length).toBe(view.edges.length);
    const skip = scene.edges.find((e) => e.srcId === "enc1" && e.dstId === "dec1.conv1")!;
    expect(skip.kind).toBe("skip");
    // the U holds with dec1 open (upside down, its data rising like the decoder's): the
    // skip runs straight across from enc1's side into the junction where the model
    // concatenates it with up1's output, whose stub rises into dec1's first stage
    const [sx, sy, sw, sh] = must(lay.boxes, "s:enc1");
    expect(skip.from).toBe("s:enc1");
    expect(skip.points[0]).toBeCloseTo(sx + sw, 0);
    expect(skip.points[1]).toBeCloseTo(sy + sh / 2, 0);
    const junction = scene.junctions.find((j) => j.key === skip.to)!;
    expect(junction.glyph).toBe("⧺");
    expect(junction.outs).toEqual(["s:dec1.conv1"]);
    const [jx, jy, , jh] = junction.box;
    expect(skip.points.slice(-2)).toEqual([jx, jy + jh / 2]);
    const stub = scene.stubs.find((e) => e.from === junction.key)!;
    const [, dy, , dh] = must(lay.boxes, "s:dec1.conv1");
    expect(stub.dst).toBe("s:dec1.conv1");
    expect(stub.points[stub.points.length - 1]).toBeCloseTo(dy + dh, 0); // from below
    // inside dec1 the data rises: conv1 at the bottom, act2 at the top
    expect(must(lay.boxes, "s:dec1.act2")[1]).toBeLessThan(must(lay.boxes, "s:dec1.conv1")[1]);
    expect(edgePath(scene.edges.find((e) => e.srcId === "enc2")!.points)).toMatch(/^M[\d.]+,[\d.]+L/);
    const folded = buildView(gpt, { ...initialState(gpt), stacked: undefined }); // it opens as a stack: stack.test.ts
    const fold = buildScene(gpt, folded, computeLayout(layoutRequest(folded, "TB")), "TB");
    expect(fold.nodes.find((n) => n.kind === "fold")!.title).toBe("TransformerBlock × 12");
  });
});

describe("a source that feeds the trunk (a position embedding: it reads no data)", () => {
  // input -> tok -> (+) -> norm, pos -> (+); tok -> pos "runs after": places nothing
  const leaf = (key: string, w: number, spine = true) => ({ key, w, h: 50, spine });
  const root: LayoutGroup = {
    key: "root",
    items: [leaf("in", 120), leaf("tok", 200), leaf("pos", 300, false), leaf("sum", 22), leaf("norm", 200)],
    edges: [
      { src: 0, dst: 1, weight: 1 },
      { src: 1, dst: 2, weight: 1, kind: "order" },
      { src: 1, dst: 3, weight: 1 },
      { src: 2, dst: 3, weight: 1, kind: "merge" },
      { src: 3, dst: 4, weight: 1 },
    ],
  };
  const mid = (b: Box) => b[0] + b[2] / 2;

  it("sits beside the trunk, in the row of what runs before it, where that fits", () => {
    const lay = computeLayout({ dir: "TB", root });
    const [tok, pos, sum] = [must(lay.boxes, "tok"), must(lay.boxes, "pos"), must(lay.boxes, "sum")];
    expect(pos[1]).toBe(tok[1]);
    expect(overlaps(pos, tok)).toBe(false);
    expect(pos[1] + pos[3]).toBeLessThan(sum[1]);
    // "runs after" straight across the row, from side to side (not under and up through it)
    const route = must(lay.routes, "tok>pos");
    expect(route.length).toBe(4);
    const [x0, y0, x1, y1] = route as [number, number, number, number];
    expect(y0).toBe(y1);
    expect(y0).toBeGreaterThan(tok[1]);
    expect(y0).toBeLessThan(tok[1] + tok[3]);
    expect([x0, x1].sort((p, q) => p - q)).toEqual(
      pos[0] > tok[0] ? [tok[0] + tok[2], pos[0]] : [pos[0] + pos[2], tok[0]],
    );
  });

  it("stands on the trunk above what it feeds where the canvas is too narrow for it beside", () => {
    const beside = computeLayout({ dir: "TB", root });
    // a canvas as wide as the trunk (plus its margins) at scale 1, tall enough for another row
    const fit = { w: 320, h: beside.height + 200, k: 1, reserve: 0 };
    const lay = computeLayout({ dir: "TB", root, fit });
    const [tok, pos, sum] = [must(lay.boxes, "tok"), must(lay.boxes, "pos"), must(lay.boxes, "sum")];
    expect(lay.width).toBeLessThan(beside.width);
    expect(Math.abs(mid(pos) - mid(tok))).toBeLessThan(1);
    expect(pos[1]).toBeGreaterThan(tok[1] + tok[3]);
    expect(pos[1] + pos[3]).toBeLessThan(sum[1]);
  });
});

describe("sources that feed one reader, where side by side they do not fit (Flux's six inputs at 1024 px)", () => {
  // x -> emb -> block -> out; a, b -> cond -> block (Flux's timestep and pooled text into their
  // embedding), c, d -> cat -> block (its text and image ids into the rotary embedding)
  const leaf = (key: string, spine = false) => ({ key, w: 200, h: 40, spine });
  const root: LayoutGroup = {
    key: "root",
    items: [leaf("x", true), leaf("emb", true), leaf("block", true), leaf("out", true), leaf("a"), leaf("b")].concat([
      leaf("cond"),
      leaf("c"),
      leaf("d"),
      leaf("cat"),
    ]),
    edges: [
      { src: 0, dst: 1, weight: 1 },
      { src: 1, dst: 2, weight: 1 },
      { src: 2, dst: 3, weight: 1 },
      { src: 4, dst: 6, weight: 1 },
      { src: 5, dst: 6, weight: 1, kind: "merge" },
      { src: 6, dst: 2, weight: 1, kind: "merge" },
      { src: 7, dst: 9, weight: 1 },
      { src: 8, dst: 9, weight: 1, kind: "merge" },
      { src: 9, dst: 2, weight: 1, kind: "merge" },
    ],
  };
  const mid = (b: Box) => b[0] + b[2] / 2;

  it("stand one above the other in their reader's column (the one it continues lowest), each edge round the one below only", () => {
    const wide = computeLayout({ dir: "TB", root });
    const fit = { w: wide.width - 100, h: wide.height + 400, k: 1, reserve: 0 };
    const lay = computeLayout({ dir: "TB", root, fit });
    expect(wide.width).toBeGreaterThan(fit.w); // side by side: too wide
    expect(lay.width + 2 * 16).toBeLessThanOrEqual(fit.w);
    for (const [upper, lower, reader] of [
      ["b", "a", "cond"], // a -> cond is the flow: a stands just above cond, b above a
      ["d", "c", "cat"],
    ] as const) {
      const [u, l, r] = [must(lay.boxes, upper), must(lay.boxes, lower), must(lay.boxes, reader)];
      expect(Math.abs(mid(u) - mid(l))).toBeLessThan(1);
      expect(u[1] + u[3]).toBeLessThan(l[1]);
      expect(l[1] + l[3]).toBeLessThan(r[1]);
      const route = must(lay.routes, `${upper}>${reader}`);
      const xs = route.filter((_, i) => i % 2 === 0);
      expect(Math.max(...xs)).toBeLessThan(l[0] + l[2] + 40); // beside the lower source, not round the row
      expect(Math.min(...xs)).toBeGreaterThan(l[0] - 40);
      for (const key of ["x", "emb", "a", "b", "c", "d", "cond", "cat"].filter((k) => k !== upper && k !== reader)) {
        const box = must(lay.boxes, key);
        for (let i = 0; i + 3 < route.length; i += 2)
          expect(
            segmentHitsBox(route[i + 1]!, route[i]!, route[i + 3]!, route[i + 2]!, [box[1], box[0], box[3], box[2]]),
            key,
          ).toBe(false);
      }
    }
  });
});

describe("a group under a wider node, where centred on it the root does not fit (Gemma's attention opened at 1024 px)", () => {
  // x -> emb (wide) -> block (its residual stream at its left, a branch to its right) -> t1 -> t2 -> t3
  const leaf = (key: string, w: number, spine = true) => ({ key, w, h: 40, spine });
  const block: LayoutGroup = {
    key: "block",
    spine: true,
    items: [leaf("n1", 100), leaf("side", 300, false), leaf("n2", 100)],
    edges: [
      { src: 0, dst: 1, weight: 1 },
      { src: 1, dst: 2, weight: 1 },
      { src: 0, dst: 2, weight: 1, kind: "skip" },
    ],
    entries: [0],
    exits: [2],
  };
  const root: LayoutGroup = {
    key: "root",
    items: [leaf("x", 80), leaf("emb", 420), block, leaf("t1", 120), leaf("t2", 120), leaf("t3", 120)],
    edges: [0, 1, 2, 3, 4].map((i) => ({ src: i, dst: i + 1, weight: 1 })),
  };
  const mid = (b: Box) => b[0] + b[2] / 2;

  it("stands flush with the node's near side, wrapped beside its tail, the edge between them an S", () => {
    const free = computeLayout({ dir: "TB", root });
    expect(mid(must(free.boxes, "n1"))).toBeCloseTo(mid(must(free.boxes, "emb")), 5); // one straight line
    const fit = { w: 700, h: 460, k: 1, reserve: 0 };
    const lay = computeLayout({ dir: "TB", root, fit });
    expect(lay.width + 2 * 16).toBeLessThanOrEqual(fit.w);
    expect(lay.height + 2 * 16).toBeLessThanOrEqual(fit.h);
    const [emb, g, t1] = [must(lay.boxes, "emb"), must(lay.boxes, "block"), must(lay.boxes, "t1")];
    expect(g[0]).toBeCloseTo(emb[0], 5);
    expect(t1[0]).toBeGreaterThan(g[0] + g[2]); // the tail in a band of its own, beside
    const route = must(lay.routes, "emb>block");
    expect(route.at(-1)! - route[1]!).toBeGreaterThan(0); // down, from the middle of emb to the stream
    expect(Math.abs(route[0]! - mid(emb))).toBeLessThan(1);
    expect(Math.abs(route.at(-2)! - mid(must(lay.boxes, "n1")))).toBeLessThan(1);
  });
});

describe("outputs one item feeds, where side by side they do not fit (BART's seven at 1024 px)", () => {
  // x -> m -> head -> out on the trunk; m -> p0 ... p5, outputs of m alone
  const leaf = (key: string, w: number, spine = false) => ({ key, w, h: 34, spine });
  const ports = ["p0", "p1", "p2", "p3", "p4", "p5"];
  const root: LayoutGroup = {
    key: "root",
    items: [leaf("x", 120, true), leaf("m", 200, true), leaf("head", 200, true), leaf("out", 120, true)].concat(
      ports.map((p) => leaf(p, 240)),
    ),
    edges: [0, 1, 2]
      .map((i) => ({ src: i, dst: i + 1, weight: 1 }))
      .concat(ports.map((_, k) => ({ src: 1, dst: 4 + k, weight: 1 }))),
  };

  it("stand one under the other in a column beside the trunk, each edge down a lane between them", () => {
    const wide = computeLayout({ dir: "TB", root });
    const fit = { w: 900, h: 700, k: 1, reserve: 0 };
    expect(wide.width + 32).toBeGreaterThan(fit.w); // side by side: too wide
    const lay = computeLayout({ dir: "TB", root, fit });
    expect(lay.width + 32).toBeLessThanOrEqual(fit.w);
    expect(lay.height + 32).toBeLessThanOrEqual(fit.h);
    const boxes = ports.map((p) => must(lay.boxes, p));
    const [m, head] = [must(lay.boxes, "m"), must(lay.boxes, "head")];
    for (const [k, b] of boxes.entries()) {
      expect(b[0] + b[2] / 2).toBeCloseTo(boxes[0]![0] + boxes[0]![2] / 2, 5); // one column
      if (k > 0) expect(b[1]).toBeGreaterThan(boxes[k - 1]![1] + boxes[k - 1]![3]); // in order
      expect(b[0]).toBeGreaterThan(head[0] + head[2]); // beside the trunk
      const route = must(lay.routes, `m>${ports[k]}`);
      expect(route[1]).toBeGreaterThanOrEqual(m[1] + m[3] - 1); // out of m's bottom
      const xs = route.filter((_, i) => i % 2 === 0);
      expect(Math.min(...xs)).toBeGreaterThan(m[0]); // not round the trunk's far side
      for (const key of ["x", "head", "out", ...ports.filter((p) => p !== ports[k])]) {
        const box = must(lay.boxes, key);
        for (let i = 0; i + 3 < route.length; i += 2)
          expect(
            segmentHitsBox(route[i + 1]!, route[i]!, route[i + 3]!, route[i + 2]!, [box[1], box[0], box[3], box[2]]),
            `${ports[k]} through ${key}`,
          ).toBe(false);
      }
    }
  });
});

describe("a group as wide as its header", () => {
  // three nodes side by side under a header wider than any of them: the group takes the
  // header's width, the nodes keep their own (ALBERT's attention opened: key, query, value
  // were each as wide as "albert_layers.0.attention AlbertAttention")
  const leaf = (key: string, spine = false) => ({ key, w: 120, h: 50, spine });
  const group: LayoutGroup = {
    key: "g",
    items: [leaf("in", true), leaf("a"), leaf("b"), leaf("out", true)],
    edges: [
      { src: 0, dst: 1, weight: 1 },
      { src: 0, dst: 2, weight: 1 },
      { src: 0, dst: 3, weight: 8 },
      { src: 1, dst: 3, weight: 1 },
      { src: 2, dst: 3, weight: 1 },
    ],
    minW: 900,
  };
  it("TB: the group is, its nodes keep their width", () => {
    const lay = computeLayout({ dir: "TB", root: { key: "root", items: [group], edges: [] } });
    for (const k of ["in", "a", "b", "out"]) expect(must(lay.boxes, k)[2]).toBe(120);
    const g = must(lay.boxes, "g");
    expect(g[2]).toBeCloseTo(900, 5);
    const xs = ["in", "a", "b", "out"].map((k) => must(lay.boxes, k));
    const lo = Math.min(...xs.map((b) => b[0]));
    const hi = Math.max(...xs.map((b) => b[0] + b[2]));
    expect(Math.abs(lo - g[0] - (g[0] + g[2] - hi))).toBeLessThan(1); // centred
  });

  it("as requested for a real view: in TB the group's width, in LR each node's (the header runs along the flow)", () => {
    // the fixture transformer's stack: its header "TransformerBlock × 12  ◀ layer 1 of 12 ▶"
    // is wider than its blocks' nodes
    const view = buildView(gpt, initialState(gpt));
    const find = (g: LayoutGroup, key: string): LayoutGroup | null => {
      if (g.key === key) return g;
      for (const it of g.items) {
        const hit = "items" in it ? find(it, key) : null;
        if (hit) return hit;
      }
      return null;
    };
    const tb = find(layoutRequest(view, "TB").root, "k:layers.0")!;
    const lr = find(layoutRequest(view, "LR").root, "k:layers.0")!;
    const widths = (g: LayoutGroup) => g.items.flatMap((it) => ("items" in it || it.junction ? [] : [it.w]));
    expect(tb.minW).toBeGreaterThan(Math.max(...widths(tb)) + 2 * GROUP_PAD); // the header, wider than its nodes
    expect(lr.minW ?? 0).toBe(0);
    for (const w of widths(lr)) expect(w).toBeGreaterThanOrEqual(tb.minW! - 2 * GROUP_PAD - 1e-6);
    const lay = computeLayout(layoutRequest(view, "LR"));
    const box = must(lay.boxes, "k:layers.0");
    expect(box[2]).toBeGreaterThanOrEqual(tb.minW! - 1e-6); // the header whole along the flow
  });
});

describe("the trunk layout's twins", () => {
  // an attention's projections: query, key and value read the group's entry, the junction
  // (item 3) reads all three, the output projection (item 4) reads it; query on the trunk
  const item = (spine: boolean, junction = false): FlowItem => ({
    al: junction ? 20 : 50,
    ac: junction ? 80 : 180,
    ain: junction ? 40 : 90,
    aout: junction ? 40 : 90,
    spine,
    junction,
    group: false,
  });
  const group = (trunk: number, mirror = false): FlowGroup => ({
    mirror,
    items: [0, 1, 2].map((i) => item(i === trunk)).concat([item(true, true), item(true)]),
    edges: [
      ...[0, 1, 2].map((i) => ({ src: -1, dst: i, kind: "flow" as const })),
      ...[0, 1, 2].map((i) => ({ src: i, dst: 3, kind: i === trunk ? ("flow" as const) : ("merge" as const) })),
      { src: 3, dst: 4, kind: "flow" },
    ],
    entries: [0, 1, 2],
    exits: [4],
    lead: 0,
    trail: 0,
  });
  it("stand in their run's order, the middle on the trunk: query | key | value, whichever the trunk ran through", () => {
    for (const trunk of [0, 1, 2]) {
      const a = arrange(group(trunk))!;
      expect([0, 1, 2, 3, 4].map((i) => a.col[i])).toEqual([-1, 0, 1, 0, 0]);
      const across = [0, 1, 2].map((i) => a.c[i]!);
      expect(across[0]).toBeLessThan(across[1]!);
      expect(across[1]).toBeLessThan(across[2]!);
      expect([0, 1, 2].map((i) => a.row[i])).toEqual([0, 0, 0]);
      // ... in a mirrored column (a decoder's) too
      const m = arrange(group(trunk, true))!;
      expect([0, 1, 2].map((i) => m.col[i])).toEqual([-1, 0, 1]);
    }
  });
});
