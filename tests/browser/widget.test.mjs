// The widget in real headless chromium with a fake anywidget model and a fake kernel.
// Run: cd js && npm run test:browser   (builds the bundle first)
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { inkFraction, launch, newPage, openWidget, paintedAfter, REPO, settle } from "./harness.mjs";

const ART = `${REPO}test-artifacts`;
mkdirSync(ART, { recursive: true });
const HOSTILE = "<img src=x onerror=alert(1)>";

let browser;
before(async () => (browser = await launch()));
after(async () => browser?.close());

const count = (page, sel) => page.$$eval(sel, (els) => els.length);

describe("U-Net", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, "wire_unet.json", {
      failing: ["up1"],
      // A hostile module name and type must stay text.
      mutate: `graph.calls[26].module = ${JSON.stringify(HOSTILE)}; graph.calls[26].type = ${JSON.stringify(HOSTILE)};`,
    });
  });

  it("draws the top-level stages, ports and cat skips", async () => {
    assert.equal(await count(page, '.nfw-node[data-kind="stage"]'), 8);
    assert.equal(await count(page, ".nfw-node[data-stage-id]"), 10);
    assert.equal(await count(page, '[data-edge-kind="skip"]'), 2);
    assert.equal(await count(page, '[data-edge-kind="skip"][data-src="enc1"][data-dst="dec1"]'), 1);
    assert.equal(await count(page, '[data-edge-kind="flow"]'), 9);
  });

  it("draws the U: each skip straight across into a junction glyph, dashed, off its own port", async () => {
    const edges = await page.$$eval(".nfw-edge:not(.nfw-stub)", (els) =>
      els.map((p) => ({
        src: p.dataset.src,
        dst: p.dataset.dst,
        kind: p.dataset.edgeKind,
        nums: p
          .getAttribute("d")
          .match(/-?[\d.]+/g)
          .map(Number),
        dash: getComputedStyle(p).strokeDasharray,
      })),
    );
    const skips = edges.filter((e) => e.kind === "skip");
    assert.equal(skips.length, 2);
    for (const e of skips) {
      const ys = e.nums.filter((_, i) => i % 2 === 1);
      assert.ok(Math.max(...ys) - Math.min(...ys) < 0.5, `${e.src}>${e.dst} is not straight across: ${e.nums}`);
      assert.notEqual(e.dash, "none");
    }
    // both skips end where dec1 and dec2 concatenate: at a "⧺" junction each, which feeds the stage
    assert.equal(await count(page, '.nfw-junction[data-junction="cat"][data-glyph="⧺"]'), 2);
    assert.equal(await count(page, ".nfw-stub"), 2);
    const fromEnc1 = edges.filter((e) => e.src === "enc1");
    assert.deepEqual(fromEnc1.map((e) => e.kind).sort(), ["flow", "skip"]);
    assert.notDeepEqual(fromEnc1[0].nums.slice(0, 2), fromEnc1[1].nums.slice(0, 2));
  });

  it("keeps hostile names as text", async () => {
    assert.equal(await count(page, "img"), 0);
    const text = await page.$eval(`[data-stage-id="head"]`, (g) => g.textContent);
    assert.ok(text.includes("<img"), text);
    assert.deepEqual(errors, []);
  });

  it("expands and collapses a residual block without leaking its add", async () => {
    await paintedAfter(
      page,
      `document.querySelector('[data-stage-id="bottleneck"] [data-action]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`,
    );
    assert.equal(await count(page, '[data-cluster-id="bottleneck"]'), 1);
    assert.equal(await count(page, '[data-stage-id="bottleneck.conv2"]'), 1);
    assert.equal(await count(page, '[data-edge-kind="skip"]'), 3);
    assert.equal(await count(page, '[data-edge-kind="skip"][data-src="enc2"][data-dst="up2"]'), 1);
    await paintedAfter(
      page,
      `document.querySelector('[data-cluster-id="bottleneck"] [data-action]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`,
    );
    assert.equal(await count(page, '[data-cluster-id="bottleneck"]'), 0);
    assert.equal(await count(page, '[data-edge-kind="skip"]'), 2);
  });

  it("opens the inspector on click, sets `selected`, draws the view", async () => {
    await page.click('[data-stage-id="enc2"]');
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    const state = await page.evaluate(() => ({
      selected: window.__t.model.get("selected"),
      saved: window.__t.model.saved,
      log: window.__t.log,
      sent: window.__t.model.sent.at(-1).msg,
    }));
    assert.equal(state.selected, "enc2");
    assert.ok(state.saved >= 1);
    assert.deepEqual(state.log.at(-1).msg, { stage: "enc2", view: null, channel: null, head: null, sample: null });
    // on the wire: a custom message with this view's request id, the request as its body
    assert.equal(state.sent.type, "stage");
    assert.match(state.sent.request, /^\w+:\d+$/);
    assert.deepEqual(state.sent.body, state.log.at(-1).msg);
    assert.ok((await inkFraction(page, 'canvas[data-view-kind="grid"]')) > 0.3);
    assert.ok((await inkFraction(page, "canvas.nfw-hist")) > 0.02);
    assert.equal(await count(page, ".nfw-colorbar"), 1);
  });

  it("switches view kinds and channels through the kernel", async () => {
    await page.click('.nfw-tab[data-view="channel"]');
    await page.waitForSelector('canvas[data-view-kind="channel"]');
    await page.fill('input[aria-label="channel"]', "5");
    await page.press('input[aria-label="channel"]', "Enter");
    await page.waitForFunction(() => window.__t.log.at(-1).msg.channel === 5);
    const last = await page.evaluate(() => window.__t.log.at(-1).msg);
    assert.deepEqual(last, { stage: "enc2", view: "channel", channel: 5, head: null, sample: null });
    await page.waitForSelector('canvas[data-view-kind="channel"]');
    assert.ok((await inkFraction(page, 'canvas[data-view-kind="channel"]')) > 0.3);
  });

  it("shows an error, not a spinner, when the kernel does not answer", async () => {
    await page.click('[data-stage-id="up1"]');
    await page.waitForSelector(".nfw-errorbox");
    const msg = await page.$eval(".nfw-errorbox", (e) => e.textContent);
    assert.match(msg, /did not answer within 10 s/);
    assert.equal(await count(page, ".nfw-spinner"), 0);
  });

  it("follows `selected` set from Python, revealing hidden stages", async () => {
    await paintedAfter(page, `t.model.set("selected", "dec1.conv2")`);
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    assert.equal(await page.$eval(".nfw-ins-title b", (b) => b.textContent), "dec1.conv2");
    assert.equal(await count(page, '[data-stage-id="dec1.conv2"].nfw-selected'), 1);
    assert.equal(await count(page, '[data-cluster-id="dec1"]'), 1);
  });

  it('clears `selected` to null (not "") when the inspector\'s close button is clicked', async () => {
    await page.click(".nfw-close");
    assert.equal(await page.$eval(".nfw-inspector", (e) => e.hidden), true);
    assert.equal(await page.evaluate(() => window.__t.model.get("selected")), null);
    assert.equal(await count(page, ".nfw-selected"), 0);
    await page.evaluate(() => window.__t.model.set("selected", "dec1.conv2")); // already drawn: no new layout
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    assert.equal(await page.$eval(".nfw-ins-title b", (b) => b.textContent), "dec1.conv2");
  });

  it("moves along edges with the keyboard; Esc closes", async () => {
    await page.focus(".nfw-canvas");
    await page.keyboard.press("ArrowDown");
    assert.equal(await page.$eval(".nfw-focus", (g) => g.dataset.stageId), "dec1.act2");
    await page.keyboard.press("ArrowUp");
    await page.keyboard.press("ArrowUp");
    assert.equal(await page.$eval(".nfw-focus", (g) => g.dataset.stageId), "dec1.act1");
    await page.keyboard.press("Escape");
    assert.equal(await page.$eval(".nfw-inspector", (e) => e.hidden), true);
    assert.equal(await page.evaluate(() => window.__t.model.get("selected")), null);
    await page.keyboard.press("Enter");
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    assert.equal(await page.$eval(".nfw-ins-title b", (b) => b.textContent), "dec1.act1");
  });

  it("search highlights matches and Enter steps into them", async () => {
    await page.fill(".nfw-search", "conv2d");
    await page.waitForFunction(() => document.querySelector(".nfw-search-count").textContent.includes("match"));
    assert.match(await page.$eval(".nfw-search-count", (e) => e.textContent), /^1[0-9] matches$/);
    assert.ok((await count(page, ".nfw-match")) >= 3);
    await page.press(".nfw-search", "Escape");
    assert.equal(await count(page, ".nfw-match"), 0);
    // Enter goes to the match and opens it: focused, in the inspector, selected in Python
    await page.fill(".nfw-search", "up2");
    await page.waitForFunction(() => document.querySelector(".nfw-search-count").textContent.includes("match"));
    await page.press(".nfw-search", "Enter");
    await page.waitForFunction(() => document.querySelector(".nfw-ins-title b")?.textContent === "up2");
    assert.equal(await page.evaluate(() => window.__t.model.get("selected")), "up2");
    assert.equal(await count(page, '.nfw-node.nfw-focus[data-stage-id="up2"]'), 1);
    await page.press(".nfw-search", "Escape");
    await page.keyboard.press("Escape");
  });

  it("exports SVG and PNG when the kernel asks", async () => {
    const out = await page.evaluate(async () => {
      const { model } = window.__t;
      // What NeuralFlowWidget.save_svg / save_png send.
      model.emit("msg:custom", { type: "export", request: 1, format: "svg" });
      model.emit("msg:custom", { type: "export", request: 2, format: "png" });
      const exports = () => model.sent.filter(({ msg }) => msg.type === "export"); // (not the stage requests)
      for (let i = 0; i < 100 && exports().length < 2; i++) await new Promise((r) => setTimeout(r, 50));
      return exports().map(({ msg, buffers }) => ({
        msg,
        head: new TextDecoder().decode(buffers[0].slice(0, 200)),
        size: buffers[0].byteLength,
        png: Array.from(buffers[0].slice(0, 4)),
      }));
    });
    const svg = out.find((o) => o.msg.request === 1);
    const png = out.find((o) => o.msg.request === 2);
    assert.equal(svg.msg.type, "export");
    assert.equal(svg.msg.ok, true);
    assert.match(svg.head, /^<svg/);
    assert.deepEqual(png.png, [0x89, 0x50, 0x4e, 0x47]);
    assert.ok(png.size > 5000);
  });

  it("LR layout and a polished screenshot", async () => {
    await page.evaluate(() => window.__t.model.set("selected", "enc2"));
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    await paintedAfter(
      page,
      `[...document.querySelectorAll(".nfw-btn")].find((b) => b.textContent === "Reset").click()`,
    );
    await page.mouse.move(5, 5);
    await settle(page);
    await page.screenshot({ path: `${ART}/frontend.png` });
    await paintedAfter(
      page,
      `[...document.querySelectorAll(".nfw-btn")].find((b) => b.textContent.includes("LR")).click()`,
    );
    await settle(page);
    await page.screenshot({ path: `${ART}/frontend_lr.png` });
    assert.equal((await count(page, '[data-edge-kind="skip"]')) >= 2, true);
  });

  it("cleanup removes every listener, element and worker", async () => {
    const left = await page.evaluate(() => {
      const { cleanup, model, el } = window.__t;
      cleanup();
      return { listeners: model.listenerCount(), children: el.children.length };
    });
    assert.deepEqual(left, { listeners: 0, children: 0 });
  });
});

describe("12-block transformer", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, "wire_transformer12.json");
  });

  it("draws the 12 blocks as one block × 12 (a stack) and unfolds them from its header", async () => {
    assert.equal(await count(page, ".nfw-stacked"), 1);
    assert.equal(await page.$eval(".nfw-stacked", (g) => g.dataset.key), "k:layers.0");
    assert.match(await page.$eval(".nfw-stacked", (g) => g.textContent), /TransformerBlock × 12/);
    assert.equal(await count(page, '.nfw-node[data-stage-id="layers.0.attn"]'), 1);
    await paintedAfter(
      page,
      `document.querySelector('[data-action][data-key="u:layers.0"]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`,
    );
    assert.equal(await count(page, "[data-fold]"), 0);
    assert.equal(await count(page, '.nfw-node[data-stage-id^="layers."]'), 12);
    assert.equal(await count(page, '[data-edge-kind="flow"][data-src="layers.3"][data-dst="layers.4"]'), 1);
  });

  it("folding the blocks again leaves the whole graph in view, none of it above the canvas", async () => {
    await settle(page); // the unfold's pan
    await paintedAfter(
      page,
      `document.querySelector('[data-cluster-id] [data-action]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`,
    );
    await settle(page);
    assert.equal(await count(page, ".nfw-stacked"), 1); // back to the stack it was unfolded from
    const { canvas, nodes } = await page.evaluate(() => ({
      canvas: document.querySelector(".nfw-canvas").getBoundingClientRect().toJSON(),
      nodes: [...document.querySelectorAll(".nfw-node")].map((g) => g.getBoundingClientRect().toJSON()),
    }));
    for (const n of nodes) {
      assert.ok(n.top >= canvas.top - 0.5 && n.bottom <= canvas.bottom + 0.5, JSON.stringify([n, canvas]));
      assert.ok(n.left >= canvas.left - 0.5 && n.right <= canvas.right + 0.5, JSON.stringify([n, canvas]));
    }
    await paintedAfter(
      page,
      `document.querySelector('[data-action][data-key="u:layers.0"]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`,
    );
  });

  it("draws attention heads with token labels as text", async () => {
    await paintedAfter(page, `t.model.set("selected", "layers.2.attn")`);
    await page.waitForSelector(".nfw-tab[data-view=attention]");
    await page.click(".nfw-tab[data-view=attention]");
    await page.waitForSelector('canvas[data-view-kind="attention"]');
    assert.ok((await inkFraction(page, 'canvas[data-view-kind="attention"]')) > 0.2);
    assert.ok((await inkFraction(page, 'canvas[data-view-kind="attention-heads"]')) > 0.2);
    await page.selectOption('select[aria-label="attention head"]', "2");
    await page.waitForFunction(() => window.__t.log.at(-1).msg.head === 2);
    await page.waitForSelector('canvas[data-view-kind="attention"]');
    assert.match(await page.$eval(".nfw-note", (e) => e.textContent), /head 2/);
    assert.equal(await count(page, "img"), 0);
    await page.mouse.move(5, 5);
    await settle(page);
    await page.screenshot({ path: `${ART}/frontend_attention.png` });
    assert.deepEqual(errors, []);
  });

  it("colours nodes by an activation statistic, in a dark theme", async () => {
    await page.evaluate(() => document.body.classList.add("dark"));
    await page.selectOption('select[aria-label="node colour"]', "mean_abs");
    assert.ok((await count(page, ".nfw-node.nfw-stat-fill")) >= 12);
    assert.match(await page.$eval(".nfw-legend", (e) => e.textContent), /mean \|x\|/);
    await page.keyboard.press("Escape");
    await page.click(".nfw-btn >> text=Fit");
    await page.mouse.move(5, 5);
    await settle(page);
    await page.screenshot({ path: `${ART}/frontend_dark.png` });
  });
});

describe("`selected` from Python reveals stages hidden in folds and groups", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    // Selected before the first render: the first view already shows it.
    await openWidget(page, "wire_transformer12.json", { selected: "layers.2.attn" });
  });

  it("a selection made before the widget rendered", async () => {
    await page.waitForSelector('.nfw-node.nfw-selected[data-stage-id="layers.2.attn"]');
    assert.equal(await count(page, '[data-cluster-id="layers.2"]'), 1);
    assert.equal(await page.$eval(".nfw-ins-title b", (b) => b.textContent), "layers.2.attn");
  });

  it("a stage inside a fold, and one inside a block of a fold", async () => {
    await paintedAfter(
      page,
      `[...document.querySelectorAll(".nfw-btn")].find((b) => b.textContent === "Reset").click()`,
    );
    assert.equal(await count(page, ".nfw-stacked"), 1); // the blocks as one, layer 1 shown
    await paintedAfter(page, `t.model.set("selected", "layers.7.mlp.fc1")`); // the stack shows layer 8
    assert.equal(await count(page, "[data-fold]"), 0);
    assert.equal(await count(page, '.nfw-node.nfw-selected[data-stage-id="layers.7.mlp.fc1"]'), 1);
    assert.equal(await count(page, '[data-cluster-id="layers.7.mlp"]'), 1);
    assert.equal(await page.$eval(".nfw-ins-title b", (b) => b.textContent), "layers.7.mlp.fc1");
    await paintedAfter(
      page,
      `[...document.querySelectorAll(".nfw-btn")].find((b) => b.textContent === "Reset").click()`,
    );
    await paintedAfter(page, `t.model.set("selected", "layers.5")`);
    assert.equal(await count(page, "[data-fold]"), 0);
    assert.equal(await count(page, '.nfw-node.nfw-selected[data-stage-id="layers.5"]'), 1);
    // The selected node is brought on screen (an animated move).
    await settle(page);
    const box = await page.$eval('[data-stage-id="layers.5"]', (g) => g.getBoundingClientRect().toJSON());
    const canvas = await page.$eval(".nfw-canvas", (c) => c.getBoundingClientRect().toJSON());
    assert.ok(
      box.top >= canvas.top && box.bottom <= canvas.bottom,
      `${JSON.stringify(box)} outside ${JSON.stringify(canvas)}`,
    );
    await page.focus(".nfw-canvas");
    await page.keyboard.press("Escape");
    assert.equal(await page.$eval(".nfw-inspector", (e) => e.hidden), true);
    assert.equal(await page.evaluate(() => window.__t.model.get("selected")), null);
    assert.deepEqual(errors, []);
  });
});

describe("graph.initial", () => {
  let page, errors;
  const chosen = ["embed", "layers.3.attn", "norm", "lm_head"];
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, "wire_transformer12.json", {
      mutate: `graph.initial = ${JSON.stringify(chosen)}.map((id) => graph.calls.findIndex((c) => c.id === id));`,
    });
  });

  it("the first view shows the chosen stages: ancestors open, the stages themselves closed", async () => {
    for (const id of chosen) assert.equal(await count(page, `.nfw-node[data-stage-id="${id}"]`), 1, id);
    assert.equal(await count(page, '[data-cluster-id="layers.3"]'), 1);
    assert.equal(await count(page, '[data-cluster-id="layers.3.attn"]'), 0);
    assert.equal(await count(page, "[data-fold]"), 0); // the run around layers.3 is open
    assert.equal(await count(page, '.nfw-node[data-stage-id="layers.3.mlp"]'), 1); // a sibling, collapsed
    assert.equal(await count(page, '[data-cluster-id="layers.4"]'), 0);
  });

  it("Reset goes back to the chosen stages", async () => {
    await paintedAfter(
      page,
      `document.querySelector('[data-cluster-id="layers.3"] [data-action]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`,
    );
    assert.equal(await count(page, '.nfw-node[data-stage-id="layers.3.attn"]'), 0);
    await paintedAfter(
      page,
      `[...document.querySelectorAll(".nfw-btn")].find((b) => b.textContent === "Reset").click()`,
    );
    assert.equal(await count(page, '.nfw-node[data-stage-id="layers.3.attn"]'), 1);
    assert.deepEqual(errors, []);
  });
});

describe("minimap", () => {
  let page, errors;
  const rect = (sel) => page.$eval(sel, (e) => e.getBoundingClientRect().toJSON());
  const hits = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    // twelve blocks (made unequal, so they do not fold) in a short widget: too big to show
    // whole at a readable size
    const mutate = "graph.calls.forEach((c) => { if (/^layers\\.\\d+$/.test(c.id)) c.sig = c.id; });";
    await openWidget(page, "wire_transformer12.json", { height: 300, mutate });
    await page.mouse.move(5, 5);
    await settle(page);
  });

  it("is small, faint and clear of the nodes and the legend when the graph is bigger than the view", async () => {
    assert.equal(await page.$eval(".nfw-minimap", (e) => e.hidden), false);
    const map = await rect(".nfw-minimap");
    assert.ok(map.width <= 160 && map.height <= 110, JSON.stringify(map));
    assert.ok(Number(await page.$eval(".nfw-minimap", (e) => getComputedStyle(e).opacity)) < 0.7);
    assert.equal(hits(map, await rect(".nfw-legend")), false);
    const nodes = await page.$$eval(".nfw-node", (els) => els.map((e) => e.getBoundingClientRect().toJSON()));
    assert.ok(nodes.length >= 4);
    assert.deepEqual(
      nodes.filter((n) => hits(map, n)),
      [],
    );
  });

  it("is opaque while hovered", async () => {
    const map = await rect(".nfw-minimap");
    await page.mouse.move(map.left + map.width / 2, map.top + map.height / 2);
    await settle(page);
    assert.equal(await page.$eval(".nfw-minimap", (e) => getComputedStyle(e).opacity), "1");
    await page.mouse.move(5, 5);
  });

  it("collapses to a small toggle and opens again", async () => {
    await page.click(".nfw-minimap-toggle");
    assert.equal(await page.$eval(".nfw-minimap-map", (e) => e.hidden), true);
    const small = await rect(".nfw-minimap");
    assert.ok(small.width <= 26 && small.height <= 26, JSON.stringify(small));
    assert.equal(await page.$eval(".nfw-minimap-toggle", (e) => e.getAttribute("aria-expanded")), "false");
    await page.click(".nfw-minimap-toggle");
    assert.equal(await page.$eval(".nfw-minimap-map", (e) => e.hidden), false);
    assert.equal(await page.evaluate(() => window.__t.model.get("selected")), null); // the clicks selected nothing
  });

  it("hides while the whole graph is in view, and comes back when zoomed in", async () => {
    await page.click(".nfw-btn >> text=Fit");
    await settle(page);
    assert.equal(await page.$eval(".nfw-minimap", (e) => e.hidden), true);
    const c = await rect(".nfw-canvas");
    await page.mouse.move(c.left + c.width / 2, c.top + c.height / 2);
    await page.keyboard.down("Control");
    await page.mouse.wheel(0, -400);
    await page.keyboard.up("Control");
    await settle(page);
    assert.equal(await page.$eval(".nfw-minimap", (e) => e.hidden), false);
    assert.deepEqual(errors, []);
  });
});

describe("a short widget", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, "wire_unet.json", { height: 420 });
  });

  it("scrolls the inspector; its sections never squeeze into each other", async () => {
    await page.click('[data-stage-id="enc2"]');
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    const { boxes, scrolls } = await page.$eval(".nfw-ins-body", (body) => ({
      boxes: [...body.children].map((c) => {
        const r = c.getBoundingClientRect();
        return [r.top, r.bottom, c.scrollHeight, r.height];
      }),
      scrolls: body.scrollHeight > body.clientHeight,
    }));
    assert.equal(scrolls, true);
    for (let i = 0; i < boxes.length; i++) {
      assert.ok(
        boxes[i][3] >= boxes[i][2] - 1,
        `section ${i} is ${boxes[i][3]}px tall for ${boxes[i][2]}px of content`,
      );
      if (i) assert.ok(boxes[i][0] >= boxes[i - 1][1], `section ${i} starts inside section ${i - 1}`);
    }
    assert.deepEqual(errors, []);
  });
});
