// What the widget says when a run went wrong, in real headless chromium with the fake kernel:
// "order" edges (a stage that receives no data), NaN/Inf badges and their banner, the failure
// banner and the failing stage's message, the run's notes. Names and messages stay text.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { launch, newPage, openWidget, settle } from "./harness.mjs";

const HOSTILE = "<img src=x onerror=alert(1)>";
let browser;
before(async () => (browser = await launch()));
after(async () => browser?.close());

const count = (page, sel) => page.$$eval(sel, (els) => els.length);
const idx = (id) => `graph.calls.findIndex((c) => c.id === ${JSON.stringify(id)})`;
const rect = (page, sel) => page.$eval(sel, (e) => e.getBoundingClientRect().toJSON());

/** Every drawn node lies below the banners (none is covered by them). */
async function nodesClearOfBanners(page) {
  const banners = await rect(page, ".nfw-banners");
  const canvas = await rect(page, ".nfw-canvas");
  assert.ok(
    canvas.top >= banners.bottom - 0.5,
    `canvas ${canvas.top} starts above the banners' bottom ${banners.bottom}`,
  );
  const tops = await page.$$eval(".nfw-node", (els) => els.map((e) => e.getBoundingClientRect().top));
  for (const t of tops)
    assert.ok(t >= banners.bottom - 12, `a node at ${t} under the banners (bottom ${banners.bottom})`); // (its badge may straddle)
}

describe("order edges: a stage that receives no data", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, "wire_unet.json", {
      mutate: `Object.assign(graph.calls[${idx("head")}], { in: [], args: [] });`,
    });
  });

  it("is drawn as a thin dotted, muted line, unlike flow, skip and merge", async () => {
    assert.equal(await count(page, '.nfw-edge[data-edge-kind="order"][data-src="dec1"][data-dst="head"]'), 1);
    const style = (kind) =>
      page.$eval(`.nfw-edge[data-edge-kind="${kind}"]`, (p) => {
        const s = getComputedStyle(p);
        return {
          dash: s.strokeDasharray,
          cap: s.strokeLinecap,
          stroke: s.stroke,
          marker: p.getAttribute("marker-end"),
        };
      });
    const order = await style("order");
    const flow = await style("flow");
    const skip = await style("skip");
    assert.notEqual(order.dash, "none");
    assert.notEqual(order.dash, skip.dash);
    assert.equal(order.cap, "round"); // dots
    assert.notEqual(order.stroke, flow.stroke);
    assert.ok(await page.$(`marker${order.marker.slice(4, -1)} path`), `no arrow marker ${order.marker}`);
  });

  it("the legend names it, only when drawn", async () => {
    assert.match(await page.$eval(".nfw-legend", (e) => e.textContent), /runs after \(no data\)/);
    const plain = await newPage(browser);
    await openWidget(plain.page, "wire_unet.json");
    assert.doesNotMatch(await plain.page.$eval(".nfw-legend", (e) => e.textContent), /runs after/);
    assert.equal(await count(plain.page, ".nfw-banners:not([hidden])"), 0); // a clean run: no banner
    await plain.context.close();
    assert.deepEqual(errors, []);
  });
});

describe("NaN / Inf", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser, { width: 1024, height: 768 }));
    await openWidget(page, "wire_unet.json", {
      height: 620,
      // enc2.conv2 made the first NaN; enc2.act2, enc2 and dec2 carried it on. A hostile name.
      mutate: `graph.nonfinite = ["enc2.conv2", "enc2.act2", "enc2", "dec2"].map((id) => graph.calls.findIndex((c) => c.id === id));
        graph.calls[${idx("dec2")}].type = ${JSON.stringify(HOSTILE)};`,
    });
  });

  it("badges the collapsed group that holds the first NaN, and every stage with one", async () => {
    assert.equal(await count(page, '.nfw-node[data-stage-id="enc2"][data-nonfinite="3"][data-nonfinite-first]'), 1);
    assert.equal(await count(page, '.nfw-node[data-stage-id="dec2"][data-nonfinite="1"]'), 1);
    assert.equal(await count(page, ".nfw-node[data-nonfinite]"), 2);
    assert.match(await page.$eval('[data-stage-id="enc2"] .nfw-flag text', (g) => g.textContent), /^1st NaN\/Inf$/);
    assert.match(await page.$eval('[data-stage-id="dec2"] .nfw-flag text', (g) => g.textContent), /^NaN\/Inf$/);
  });

  it("a banner above the graph says where it began, and never covers a node", async () => {
    const banner = page.locator('[data-banner="nonfinite"]');
    assert.match(await banner.textContent(), /First NaN\/Inf at enc2\.conv2 · 4 stages hold NaN\/Inf/);
    assert.equal(await banner.evaluate((b) => b.tagName), "BUTTON");
    assert.match(await banner.getAttribute("aria-label"), /enc2\.conv2/);
    await nodesClearOfBanners(page);
  });

  it("clicking it expands the group, selects the stage, centres it and opens its inspector", async () => {
    await page.getByRole("button", { name: /First NaN\/Inf at enc2\.conv2/ }).click();
    await page.waitForSelector('.nfw-node.nfw-selected[data-stage-id="enc2.conv2"]');
    assert.equal(await count(page, '[data-cluster-id="enc2"][data-nonfinite="1"]'), 1); // the group's own output
    assert.equal(await page.evaluate(() => window.__t.model.get("selected")), "enc2.conv2");
    assert.equal(await page.$eval(".nfw-ins-title b", (b) => b.textContent), "enc2.conv2");
    await settle(page); // the view moves to it: centred, or the whole graph (it too) in view
    const node = await rect(page, '[data-stage-id="enc2.conv2"]');
    const canvas = await rect(page, ".nfw-canvas");
    const within = (b) =>
      b.left >= canvas.left - 1 &&
      b.right <= canvas.right + 1 &&
      b.top >= canvas.top - 1 &&
      b.bottom <= canvas.bottom + 1;
    const all = await page.$$eval(".nfw-node", (els) => els.map((e) => e.getBoundingClientRect().toJSON()));
    const cx = node.left + node.width / 2 - (canvas.left + canvas.width / 2);
    const cy = node.top + node.height / 2 - (canvas.top + canvas.height / 2);
    const centred = Math.abs(cx) < 40 && Math.abs(cy) < 40;
    assert.ok(within(node), "enc2.conv2 is not in view");
    assert.ok(centred || all.every(within), `enc2.conv2 is ${cx}, ${cy} px off the centre, the graph not all in view`);
  });

  it("its view paints NaN / ±Inf in their own colours, named beside the colour bar", async () => {
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    const magenta = await page.$eval('canvas[data-view-kind="grid"]', (c) => {
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] === 255 && d[i + 1] === 0 && d[i + 2] === 255) n++;
      return n / (d.length / 4);
    });
    assert.ok(magenta > 0.1, `only ${magenta} of the grid is the NaN colour`);
    assert.deepEqual(await page.$$eval(".nfw-colorbar [data-swatch]", (els) => els.map((e) => e.textContent)), [
      "NaN",
      "+Inf",
      "−Inf",
    ]);
    assert.match(
      await page.$eval("[data-nonfinite-note]", (e) => e.textContent),
      /96 NaN, 2 \+Inf, 1 −Inf of \d[\d,]* values/,
    );
    assert.match(await page.$eval(".nfw-meta", (e) => e.textContent), /NaN\/Inf.*first of the run/);
  });

  it("colouring by a statistic gives NaN/Inf stages the NaN colour, and says which scale", async () => {
    await page.selectOption('select[aria-label="node colour"]', "std");
    const fill = await page.$eval('[data-stage-id="enc2.conv2"] .nfw-card', (r) => getComputedStyle(r).fill);
    assert.equal(fill, "rgb(255, 0, 255)");
    assert.notEqual(
      await page.$eval('[data-stage-id="enc1"] .nfw-card', (r) => getComputedStyle(r).fill),
      "rgb(255, 0, 255)",
    );
    assert.match(await page.$eval(".nfw-legend", (e) => e.textContent), /std.*(log scale|linear).*NaN\/Inf/);
    assert.equal(await count(page, "img"), 0);
    assert.deepEqual(errors, []);
  });
});

describe("the forward raised", () => {
  let page, errors;
  const message = `stage 'dec1' (module ConvBlock, inside 'dec1.conv2' (${HOSTILE})) raised RuntimeError: expected input to have 16 channels, but got 8 channels instead; it received inputs of shape [1, 8, 64, 64]. Check that the inputs match what this module expects.`;
  before(async () => {
    ({ page, errors } = await newPage(browser, { width: 1024, height: 768 }));
    await openWidget(page, "wire_unet.json", {
      height: 620,
      mutate: `graph.failure = { message: ${JSON.stringify(message)}, stage: ${idx("dec1")}, call: ${idx("dec1.conv2")} };
        graph.calls[${idx("dec1.conv2")}].error = "RuntimeError: expected input to have 16 channels, but got 8 channels instead";
        graph.notes = [${JSON.stringify(`the model ran on the meta device ${HOSTILE}`)}];`,
    });
  });

  it("marks the stage that raised (the collapsed group around it) and says so in a red banner", async () => {
    assert.equal(await count(page, ".nfw-node[data-failed]"), 1);
    assert.equal(await count(page, '.nfw-node.nfw-failed[data-stage-id="dec1"][data-failed]'), 1);
    assert.match(await page.$eval('[data-stage-id="dec1"] .nfw-flag text', (g) => g.textContent), /^raised$/);
    const text = await page.$eval('[data-banner="failure"]', (e) => e.textContent);
    assert.match(
      text,
      /^raisedThe forward raised at dec1 \(dec1\.conv2\): RuntimeError: expected input to have 16 channels/,
    );
    assert.equal(await count(page, "img"), 0);
  });

  it("the notes banner lists the run's notes, as text", async () => {
    assert.match(
      await page.$eval('[data-banner="notes"]', (e) => e.textContent),
      /The model ran on the meta device <img src=x/,
    );
    assert.equal(await count(page, "img"), 0);
    await nodesClearOfBanners(page);
  });

  it("its button selects the stage; the inspector shows the whole message as selectable text", async () => {
    await page.getByRole("button", { name: "Show the failing stage dec1" }).click();
    await page.waitForSelector('.nfw-node.nfw-selected[data-stage-id="dec1"]');
    await page.waitForSelector(".nfw-trace");
    assert.equal(await page.$eval(".nfw-trace", (e) => e.textContent), message);
    const trace = await page.$eval(".nfw-trace", (e) => ({
      tag: e.tagName,
      select: getComputedStyle(e).userSelect,
      first: e.closest(".nfw-ins-body").firstElementChild.contains(e),
    }));
    assert.deepEqual(trace, { tag: "PRE", select: "text", first: true });
    // Selecting it by hand gives the message (nothing swallows the selection).
    const picked = await page.evaluate(() => {
      const r = document.createRange();
      r.selectNodeContents(document.querySelector(".nfw-trace"));
      getSelection().removeAllRanges();
      getSelection().addRange(r);
      return getSelection().toString();
    });
    assert.equal(picked, message);
    assert.equal(await count(page, "img"), 0);
    assert.deepEqual(errors, []);
  });
});
