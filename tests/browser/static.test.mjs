// The static (no kernel) mode as an exported offline HTML file would use it, opened from file://.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { inkFraction, launch, REPO } from "./harness.mjs";
import { bakeReplies, writeStaticPage } from "./static_page.mjs";

const ART = `${REPO}test-artifacts`;
let browser;
before(async () => (browser = await launch()));
after(async () => browser?.close());

describe("static export page", () => {
  it("renders offline from file:// and answers the inspector from baked replies", async () => {
    mkdirSync(ART, { recursive: true });
    const graph = JSON.parse(readFileSync(`${REPO}tests/fixtures/wire_unet.json`, "utf8"));
    const top = graph.calls.filter((c) => c.parent === -1).map((c) => c.id);
    const baked = bakeReplies(
      graph,
      top.map((stage) => ({ stage, view: null, channel: null, head: null, sample: null })),
    );
    const path = `${ART}/static_unet.html`;
    writeStaticPage(path, graph, baked, "UNet");
    const context = await browser.newContext({ viewport: { width: 1280, height: 760 } });
    const page = await context.newPage();
    const requests = [];
    const errors = [];
    page.on("request", (r) => requests.push(r.url()));
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`file://${path}`);
    await page.waitForSelector('[data-stage-id="enc1"]');
    assert.equal(await page.$$eval('[data-edge-kind="skip"]', (e) => e.length), 2);
    await page.click('[data-stage-id="dec2"]');
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    assert.ok((await inkFraction(page, 'canvas[data-view-kind="grid"]')) > 0.3);
    // The page offers the views it carries (the grid), and no other.
    assert.deepEqual(await page.$$eval(".nfw-tab", (els) => els.map((e) => e.dataset.view)), ["grid"]);
    // A stage that was not baked says so plainly, with no Retry that cannot help.
    await page.evaluate(() => window.nfw.select("enc1.conv1"));
    await page.waitForSelector("[data-missing]");
    assert.match(
      await page.$eval("[data-missing]", (e) => e.textContent),
      /not in this page: it was over the page's budget/,
    );
    assert.equal(
      await page.$$eval(".nfw-inspector button", (els) => els.filter((b) => b.textContent === "Retry").length),
      0,
    );
    assert.deepEqual(errors, []);
    assert.deepEqual(
      requests.filter((u) => !u.startsWith("file:") && !u.startsWith("blob:") && !u.startsWith("data:")),
      [],
    );
    const svg = await page.evaluate(() => window.nfw.exportSvg());
    assert.match(svg, /^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.ok(svg.includes('data-stage-id="bottleneck"'));
    await context.close();
  });
});

describe("page written by NeuralFlowWidget.to_html", () => {
  const python = `${REPO}.venv/bin/python`;
  it("opens offline and inspects a stage from the baked replies", async (t) => {
    const { existsSync } = await import("node:fs");
    const { spawnSync } = await import("node:child_process");
    if (!existsSync(python)) return t.skip("no .venv: run scripts/setup.sh");
    const path = `${ART}/to_html_unet.html`;
    const code = [
      "import sys, torch",
      `sys.path.insert(0, ${JSON.stringify(`${REPO}tests`)})`,
      "import zoo, neural_flow_widget as nfw",
      "torch.manual_seed(0)",
      "w = nfw.NeuralFlowWidget(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))",
      `w.to_html(${JSON.stringify(path)})`,
    ].join("\n");
    const run = spawnSync(python, ["-c", code], { encoding: "utf8", timeout: 120_000 });
    assert.equal(run.status, 0, run.stderr);
    const context = await browser.newContext({ viewport: { width: 1280, height: 760 } });
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`file://${path}`);
    await page.waitForSelector('[data-stage-id="enc1"]');
    assert.ok((await page.$$eval('[data-edge-kind="skip"]', (e) => e.length)) >= 2);
    await page.click('[data-stage-id="enc2"]');
    await page.waitForSelector("canvas[data-view-kind]");
    assert.ok((await inkFraction(page, "canvas[data-view-kind]")) > 0.2);
    assert.deepEqual(errors, []);
    await page.screenshot({ path: `${ART}/to_html_unet.png` });
    await context.close();
  });
});
