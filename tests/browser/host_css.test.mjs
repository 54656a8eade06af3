// The widget inside a host page whose global CSS restyles plain elements (dl / dt / dd,
// table, h1..h4, canvas, svg, button, input, select, label, div, span ...), as notebook front
// ends do: JupyterLab's `.jp-OutputArea-output dt { float: left; width: 20% }` scattered the
// inspector's key / value block. The widget must look exactly the same with and without it.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { launch, layoutBoxes, newPage, openWidget, REPO, settle } from "./harness.mjs";

let browser;
before(async () => (browser = await launch()));
after(async () => browser?.close());

const hostile = (page, on) =>
  page.evaluate((on) => {
    document.body.classList.toggle("hostile", on);
    return document.body.offsetHeight; // lay out now
  }, on);

/** Each key of the inspector's meta and statistics blocks, with its value: same row, value to the right. */
async function pairs(page) {
  return page.evaluate(() => {
    const rows = [];
    for (const [k, v] of [
      [".nfw-meta-k", ".nfw-meta-v"],
      [".nfw-stat-k", ".nfw-stat-v"],
    ]) {
      for (const key of document.querySelectorAll(k)) {
        const value = key.nextElementSibling;
        if (!value?.matches(v)) continue;
        const a = key.getBoundingClientRect();
        const b = value.getBoundingClientRect();
        rows.push({ key: key.textContent, top: Math.abs(a.top - b.top), right: b.left >= a.right, width: a.width });
      }
    }
    return rows;
  });
}

describe("host page CSS", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser));
    await openWidget(page, "wire_unet.json");
    await page.click('[data-stage-id="enc2"]');
    await page.waitForSelector('canvas[data-view-kind="grid"]');
    await page.mouse.move(5, 5);
    await settle(page);
  });

  it("keeps every box of the widget where it is", async () => {
    await hostile(page, false);
    const plain = await layoutBoxes(page);
    await hostile(page, true);
    const styled = await layoutBoxes(page);
    await hostile(page, false);
    assert.ok(plain.length > 60, `only ${plain.length} boxes`);
    const moved = plain.flatMap((line, i) => (styled[i] === line ? [] : [`${line}  ->  ${styled[i]}`]));
    assert.deepEqual(moved, [], `${moved.length} boxes moved under host CSS:\n${moved.slice(0, 12).join("\n")}`);
    assert.equal(styled.length, plain.length);
  });

  it("shows each inspector key and its value on one row", async () => {
    await hostile(page, true);
    const rows = await pairs(page);
    await page.screenshot({ path: `${REPO}test-artifacts/frontend_hostile_css.png` });
    await hostile(page, false);
    assert.deepEqual(
      rows.slice(0, 4).map((r) => r.key),
      ["stage", "output", "dtype", "params"],
    );
    assert.ok(rows.length >= 8, JSON.stringify(rows));
    for (const r of rows) {
      assert.ok(r.top < 2, `${r.key}: value ${r.top}px off its row`);
      assert.ok(r.right, `${r.key}: value not right of its key`);
      assert.ok(r.width < 120, `${r.key}: key is ${r.width}px wide`);
    }
    assert.deepEqual(errors, []);
  });
});

describe("host page CSS, with the banners of a run that went wrong", () => {
  let page, errors;
  before(async () => {
    ({ page, errors } = await newPage(browser, { width: 1024, height: 768 }));
    const at = (id) => `graph.calls.findIndex((c) => c.id === ${JSON.stringify(id)})`;
    await openWidget(page, "wire_unet.json", {
      height: 620,
      mutate: `graph.failure = { message: "stage 'dec1' (module ConvBlock) raised RuntimeError: a long message that wraps over the lines of the inspector, shapes [1, 8, 64, 64] and [1, 16, 64, 64]", stage: ${at("dec1")}, call: ${at("dec1")} };
        graph.nonfinite = [${at("enc2.conv2")}, ${at("enc2")}];
        graph.notes = ["the model ran on the meta device"];`,
    });
    await page.click('[data-banner="failure"] button');
    await page.waitForSelector(".nfw-trace");
    await page.mouse.move(5, 5);
    await settle(page);
  });

  it("keeps the banners, the badges and the failure's message where they are", async () => {
    await hostile(page, false);
    const plain = await layoutBoxes(page);
    await hostile(page, true);
    const styled = await layoutBoxes(page);
    await hostile(page, false);
    assert.ok(
      plain.some((line) => line.includes("nfw-banners")),
      "no banners",
    );
    const moved = plain.flatMap((line, i) => (styled[i] === line ? [] : [`${line}  ->  ${styled[i]}`]));
    assert.deepEqual(moved, [], `${moved.length} boxes moved under host CSS:\n${moved.slice(0, 12).join("\n")}`);
    assert.deepEqual(errors, []);
  });
});
