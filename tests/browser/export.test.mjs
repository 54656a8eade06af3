// The exported figures (what save_svg / save_png and the SVG / PNG buttons give) in real
// headless chromium: no UI in them, a legend drawn in SVG, a readable size.
// Run: cd js && node build.mjs && node --test --test-concurrency=1 ../tests/browser/export.test.mjs
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { launch, newPage, openWidget, paintedAfter, REPO, SCHEMA } from "./harness.mjs";

const ART = `${REPO}test-artifacts`;
mkdirSync(ART, { recursive: true });
const MAX_SIDE = 8192; // export.ts MAX_PNG_SIDE
const MAX_ASPECT = 4; // export.ts MAX_ASPECT: longer than this along the flow, a graph is wrapped

let browser;
before(async () => (browser = await launch()));
after(async () => browser?.close());

/** The file the kernel gets for {type: "export", format}, as the widget sends it (base64). */
async function exported(page, format) {
  const b64 = await page.evaluate(async (format) => {
    const { model } = window.__t;
    const request = model.sent.length + 1000;
    model.emit("msg:custom", { type: "export", request, format });
    let reply;
    for (let i = 0; i < 400; i++) {
      reply = model.sent.find((m) => m.msg.request === request);
      if (reply) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!reply) throw new Error(`no ${format} export within 20 s`);
    if (!reply.msg.ok) throw new Error(`the ${format} export failed: ${reply.msg.error}`);
    const bytes = new Uint8Array(reply.buffers[0].buffer ?? reply.buffers[0]);
    let text = "";
    for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(text);
  }, format);
  return Buffer.from(b64, "base64");
}

/** Width and height from a PNG's IHDR chunk. */
function pngSize(bytes) {
  assert.deepEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], "not a PNG");
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** What the exported SVG holds, parsed in the page, next to what the live view shows. */
async function svgFacts(page, svg) {
  return page.evaluate((text) => {
    const doc = new DOMParser().parseFromString(text, "image/svg+xml");
    const root = doc.documentElement;
    const live = document.querySelector(".nfw-svg");
    const n = (el, sel) => el.querySelectorAll(sel).length;
    const legend = [...root.querySelectorAll("[data-legend]")];
    return {
      parsed: root.localName === "svg" && !doc.querySelector("parsererror"),
      width: Number(root.getAttribute("width")),
      height: Number(root.getAttribute("height")),
      actions: n(root, "[data-action]"),
      rings: n(root, ".nfw-ring"),
      current: n(root, "[data-current]"),
      uiClasses: n(root, ".nfw-selected, .nfw-focus, .nfw-match, .nfw-current, .nfw-hl, .nfw-live"),
      foreign: n(root, "foreignObject"),
      stages: n(root, "[data-stage-id]"),
      liveStages: n(live, ".nfw-node[data-stage-id]"),
      kinds: ["flow", "skip", "merge", "order"].map((k) => n(root, `.nfw-edge[data-edge-kind="${k}"]`)),
      liveKinds: ["flow", "skip", "merge", "order"].map((k) => n(live, `.nfw-edge[data-edge-kind="${k}"]`)),
      junctions: n(root, ".nfw-junction"),
      liveJunctions: n(live, ".nfw-junction"),
      legend: legend.map((g) => g.textContent),
      legendPaint: legend
        .flatMap((g) =>
          [...g.querySelectorAll("[stroke], [fill]")].flatMap((e) => [
            e.getAttribute("stroke"),
            e.getAttribute("fill"),
          ]),
        )
        .filter(Boolean),
      strips: n(root, ".nfw-strip"),
    };
  }, svg.toString("utf8"));
}

const LR = `[...document.querySelectorAll(".nfw-btn")].find((b) => b.textContent.includes("LR")).click()`;

describe("U-Net export, exported in the middle of work", () => {
  let page, errors, facts, svg;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, "wire_unet.json");
    // the live view full of UI: a selection, the keyboard focus, search matches, a stage playback is at
    await page.click('[data-stage-id="enc2"]');
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    await page.fill(".nfw-search", "conv");
    await page.waitForFunction(() => document.querySelector(".nfw-match"));
    await page.evaluate(() => window.__t.model.set("playback", { at: 3, playing: false }));
    await page.waitForFunction(() => document.querySelector(".nfw-svg [data-current]"));
    await page.$eval('[data-stage-id="dec2"]', (g) =>
      g.dispatchEvent(new PointerEvent("pointerover", { bubbles: true })),
    );
    svg = await exported(page, "svg");
    writeFileSync(`${ART}/export_unet.svg`, svg);
    facts = await svgFacts(page, svg);
  });

  it("is a well-formed SVG document of a finite size", () => {
    assert.equal(facts.parsed, true);
    assert.ok(Number.isFinite(facts.width) && facts.width > 0, `width ${facts.width}`);
    assert.ok(Number.isFinite(facts.height) && facts.height > 0, `height ${facts.height}`);
  });

  it("carries no UI: no badges, no focus ring, no marks of selection, search, hover or playback", async () => {
    // the live view has them all (else this test proves nothing)
    assert.ok(await page.$(".nfw-svg [data-action]"));
    assert.ok(await page.$(".nfw-svg .nfw-selected"));
    assert.ok(await page.$(".nfw-svg .nfw-live"));
    assert.equal(facts.actions, 0);
    assert.equal(facts.rings, 0);
    assert.equal(facts.current, 0);
    assert.equal(facts.uiClasses, 0);
    assert.doesNotMatch(svg.toString("utf8"), /data-action|nfw-ring|data-current/);
  });

  it("keeps every stage, edge kind and junction the live view draws", () => {
    assert.ok(facts.liveStages >= 10);
    assert.equal(facts.stages, facts.liveStages);
    assert.deepEqual(facts.kinds, facts.liveKinds);
    assert.equal(facts.junctions, facts.liveJunctions);
  });

  it("has a legend in SVG text: the edge kinds drawn, the junctions' signs, the residual marks, in resolved colours", () => {
    // no merge, no order edges in this U-Net; its skips meet the decoder in concatenations;
    // its collapsed bottleneck (conv2(act(conv1(x))) + x) carries the residual mark
    assert.deepEqual(facts.legend, ["flow", "skip", "⧺concatenated", "residual inside"]);
    assert.equal(facts.foreign, 0);
    assert.ok(facts.legendPaint.length >= 4);
    for (const paint of facts.legendPaint) assert.doesNotMatch(paint, /var\(/);
  });

  it("renders to a PNG at twice its size", async () => {
    const png = await exported(page, "png");
    writeFileSync(`${ART}/export_unet.png`, png);
    const { width, height } = pngSize(png);
    assert.equal(width, 2 * facts.width);
    assert.equal(height, 2 * facts.height);
    assert.deepEqual(errors, []);
  });
});

describe("12-block transformer, unfolded, in LR", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, "wire_transformer12.json");
    await paintedAfter(
      page,
      `document.querySelector('[data-action][data-key="u:layers.0"]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`,
    );
    await paintedAfter(page, LR);
  });

  it("exports a PNG of sane proportions, every stage in it", async () => {
    const svg = await exported(page, "svg");
    writeFileSync(`${ART}/export_transformer12_lr.svg`, svg);
    const facts = await svgFacts(page, svg);
    assert.equal(facts.stages, facts.liveStages);
    assert.equal(facts.actions + facts.rings, 0);
    const png = await exported(page, "png");
    writeFileSync(`${ART}/export_transformer12_lr.png`, png);
    const { width, height } = pngSize(png);
    for (const side of [width, height]) assert.ok(side >= 200 && side <= MAX_SIDE, `${width} × ${height}`);
    assert.ok(Math.max(width, height) / Math.min(width, height) <= MAX_ASPECT, `${width} × ${height}`);
    assert.deepEqual(errors, []);
  });
});

/**
 * A long model the layout cannot fold into bands (it cuts only where one edge alone crosses;
 * here every stage reads the two before it): one row, 60 stages long, in LR.
 */
function denseChain(n) {
  const calls = [];
  const ops = [[-1, []]];
  for (let i = 0; i < n; i++) {
    const inOps = i === 0 ? [0] : [i, i - 1];
    calls.push({
      id: `stage${i}`,
      module: `stage${i}`,
      type: i % 2 ? "Linear" : "GELU",
      call: 0,
      parent: -1,
      depth: 1,
      leaf: true,
      params: i % 2 ? 4160 : 0,
      shapes: [[1, 64]],
      dtypes: ["float32"],
      sig: `s${i}`,
      error: null,
      in: inOps,
      args: inOps.map((_, k) => k),
      state: -1,
    });
    ops.push([i, inOps]);
  }
  return {
    schema: SCHEMA,
    model: "DenseChain",
    topology: "dataflow",
    inputs: ["input:0"],
    outputs: ["output:0"],
    calls,
    ops,
    input_ops: [["input:0", 0]],
    output_ops: [["output:0", [n]]],
    joins: [],
    operands: [],
    leads: [],
    selected: calls.map((_, i) => i),
    initial: null,
    attention: [],
    stats: calls.map(() => null),
    nonfinite: [],
    nonfinite_origin: null,
    failure: null,
    notes: [],
    ends: {},
    grad: null,
    nonfinite_grad: [],
    gradient_flow: null,
    readouts: [],
    readout_names: {},
  };
}

describe("a 60-stage chain in LR, too long to fold", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, denseChain(60));
    await paintedAfter(page, LR);
  });

  it("is drawn live as one long row (what the export has to wrap)", async () => {
    const box = await page.$eval(".nfw-svg .nfw-world", (g) => ({
      width: g.getBBox().width,
      height: g.getBBox().height,
    }));
    assert.ok(box.width > 10 * box.height, JSON.stringify(box));
  });

  it("is wrapped into strips: a PNG of sane proportions, every stage in it once", async () => {
    const svg = await exported(page, "svg");
    writeFileSync(`${ART}/export_long_chain_lr.svg`, svg);
    const facts = await svgFacts(page, svg);
    assert.ok(facts.strips >= 2, `${facts.strips} strips`);
    assert.equal(facts.stages, facts.liveStages);
    const png = await exported(page, "png");
    writeFileSync(`${ART}/export_long_chain_lr.png`, png);
    const { width, height } = pngSize(png);
    for (const side of [width, height]) assert.ok(side >= 200 && side <= MAX_SIDE, `${width} × ${height}`);
    assert.ok(Math.max(width, height) / Math.min(width, height) <= MAX_ASPECT, `${width} × ${height}`);
    // at scale 2 still (the labels as sharp as the U-Net's): only the side cap may lower it
    assert.equal(width, 2 * facts.width);
    assert.deepEqual(errors, []);
  });
});
