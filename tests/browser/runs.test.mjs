// Runs in the live widget (real chromium, fake model and kernel): a re-run of the same model
// (`update`: the graph traitlet replaced) keeps open groups, the selection and the zoom; a
// comparison (the comparison traitlet) colours by divergence, flags where the runs part and
// shows A | B | A − B in the inspector, asking the kernel for run B at run A's tiles.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { launch, newPage, openWidget, paintedAfter, settle } from "./harness.mjs";

let browser;
before(async () => (browser = await launch()));
after(async () => browser?.close());

const count = (page, sel) => page.$$eval(sel, (els) => els.length);
const world = (page) => page.$eval(".nfw-world", (g) => g.getAttribute("transform"));
const click = (sel) =>
  `document.querySelector(${JSON.stringify(sel)}).dispatchEvent(new MouseEvent("click", {bubbles: true}))`;

describe("update: a new run of the same model", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, "wire_unet.json");
    await paintedAfter(page, click('[data-stage-id="bottleneck"] [data-action]'));
    await page.evaluate(click('[data-stage-id="dec1"]'));
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    await page.mouse.move(300, 300);
    await page.keyboard.down("Control");
    await page.mouse.wheel(0, -300);
    await page.keyboard.up("Control");
    await settle(page);
  });

  it("keeps the open groups, the selection and the zoom, and asks for the new data", async () => {
    const zoom = await world(page);
    const asked = await page.evaluate(() => window.__t.log.length);
    await paintedAfter(
      page,
      `t.model.set("graph", { ...t.graph, stats: t.graph.stats.map((s) => s && [s[0] * 3, s[1] * 3]) })`,
    );
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    assert.equal(await count(page, '[data-cluster-id="bottleneck"]'), 1);
    assert.equal(await count(page, '[data-stage-id="dec1"].nfw-selected'), 1);
    assert.equal(await page.$eval(".nfw-ins-title b", (b) => b.textContent), "dec1");
    assert.equal(await page.evaluate(() => window.__t.model.get("selected")), "dec1");
    assert.equal(await world(page), zoom);
    const log = await page.evaluate(() => window.__t.log.map((e) => e.msg.stage));
    assert.ok(log.length > asked && log.at(-1) === "dec1", log.join());
    assert.deepEqual(errors, []);
  });

  it("starts afresh on a graph of another model", async () => {
    const other = await page.evaluate(async () => (await fetch("/fixtures/wire_transformer12.json")).json());
    await paintedAfter(page, `t.model.set("graph", ${JSON.stringify(other)})`);
    assert.equal(await count(page, '[data-cluster-id="bottleneck"]'), 0);
    assert.equal(await page.$eval(".nfw-inspector", (e) => e.hidden), true);
  });
});

/** A comparison traitlet for a graph: stages diverge from `first` on; `onlyA` ran in run A only. */
function comparisonFor(graph, first, onlyA) {
  const at = (id) => graph.calls.findIndex((c) => c.id === id);
  const stages = graph.calls
    .map((_, i) => i)
    .filter((i) => i !== at(onlyA))
    .map((i) => {
      const rel = i >= at(first) ? 0.02 * (i + 1) : 0;
      return [i, rel, 1 - rel, rel * 3, false, rel > 1e-3];
    });
  return {
    rtol: 1e-3,
    first: at(first),
    stages,
    ends: { "input:0": [0, 1, 0, true, false] },
    only_a: [at(onlyA)],
    only_b: [],
  };
}

describe("compare: run A against run B", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, "wire_unet.json");
  });

  it("colours by divergence, marks the stages of one run, flags and banners where the runs part", async () => {
    await paintedAfter(page, `t.model.set("comparison", (${comparisonFor.toString()})(t.graph, "dec2", "head"))`);
    assert.equal(await page.$eval(".nfw-toolbar select", (s) => s.value), "divergence");
    assert.match(await page.$eval('[data-banner="diverges"]', (b) => b.textContent), /Runs part at dec2/);
    assert.equal(await count(page, '[data-stage-id="dec2"] .nfw-flag-diverges'), 1);
    assert.equal(await count(page, ".nfw-flag-diverges"), 1);
    assert.equal(await page.$eval('[data-stage-id="head"] .nfw-card', (r) => r.style.fill), "rgb(209, 213, 219)");
    const fills = await page.$$eval(
      '.nfw-node[data-kind="stage"] .nfw-card',
      (els) => new Set(els.map((r) => r.style.fill)).size,
    );
    assert.ok(fills >= 4, `${fills} colours`);
    assert.match(await page.$eval(".nfw-legend", (l) => l.textContent), /A vs B.*run A only/);
  });

  it("the banner opens the stage as A | B | A − B, B at A's tiles", async () => {
    await page.click('[data-banner="diverges"]');
    await page.waitForSelector('.nfw-panel[data-run="diff"] canvas[data-view-kind="grid"]');
    for (const run of ["a", "b", "diff"])
      assert.equal(await count(page, `.nfw-panel[data-run="${run}"] canvas`), 1, run);
    assert.equal(await page.evaluate(() => window.__t.model.get("selected")), "dec2");
    assert.match(await page.$eval("[data-versus]", (s) => s.textContent), /Differs.*first stage where the runs part/);
    const asked = await page.evaluate(() => window.__t.log.map((e) => e.msg).filter((m) => m.stage === "dec2"));
    const b = asked.find((m) => m.run === "b");
    const diff = asked.find((m) => m.run === "diff");
    assert.ok(b && diff, JSON.stringify(asked));
    assert.equal(b.view, "grid");
    const tiles = await page.evaluate(() => window.__t.graph.calls.find((c) => c.id === "dec2").shapes[0][1]);
    assert.deepEqual(
      b.channels,
      Array.from({ length: Math.min(16, tiles) }, (_, i) => i),
    ); // the fake kernel's tiles of run A
    assert.ok(asked.some((m) => m.run === undefined));
    assert.equal(await count(page, ".nfw-colorbar"), 2); // A and B on one range, A − B on its own
    assert.match(await page.$$eval(".nfw-colorbar", (els) => els.at(-1).textContent), /A − B/);
  });

  it("a stage of run A only says there is no B", async () => {
    await page.evaluate(() => window.__t.model.set("selected", "head"));
    await page.waitForSelector("[data-versus]");
    await page.waitForFunction(() => document.querySelector(".nfw-ins-title b").textContent === "head");
    assert.match(await page.$eval("[data-versus]", (s) => s.textContent), /ran in run A only/);
    assert.equal(await count(page, '.nfw-panel[data-run="b"]'), 0);
  });

  it("dropping the comparison goes back to the plain view", async () => {
    await paintedAfter(page, `t.model.set("comparison", null)`);
    assert.equal(await count(page, '[data-banner="diverges"]'), 0);
    assert.equal(await count(page, ".nfw-flag-diverges"), 0);
    assert.equal(await page.$eval(".nfw-toolbar select", (s) => s.value), "type");
    assert.deepEqual(errors, []);
  });
});
