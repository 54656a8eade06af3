// Shared set-up for the browser tests and the benchmark: Debian's chromium driven by
// playwright-core (never `playwright install`), files served from disk by request routing.
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(new URL("../../js/package.json", import.meta.url));
const { chromium } = require("playwright-core");

export const REPO = fileURLToPath(new URL("../../", import.meta.url));
export const ORIGIN = "http://nfw.test";
/** The wire schema the front end reads (js/src/wire.ts), for graphs a test builds by hand. */
export const SCHEMA = Number(
  /export const SCHEMA = (\d+);/.exec(readFileSync(`${REPO}js/src/wire_schema.ts`, "utf8"))[1],
);
export const CHROMIUM = process.env.NFW_CHROMIUM ?? "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
];

const ROUTES = {
  "/page.html": "tests/browser/page.html",
  "/fake_kernel.js": "tests/browser/fake_kernel.js",
  "/widget.js": "neural_flow_widget/static/widget.js",
};
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".json": "application/json" };

export async function launch() {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/install_browser.sh`);
  if (!existsSync(`${REPO}neural_flow_widget/static/widget.js`))
    throw new Error("no bundle: run `npm run build` in js/");
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}

/** A page on the fake origin; extra routes map a path to a file or to {body, type}. */
export async function newPage(browser, { width = 1280, height = 760, extra = {} } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.origin !== ORIGIN) return route.abort();
    const special = extra[url.pathname];
    if (special && typeof special === "object") return route.fulfill({ body: special.body, contentType: special.type });
    let rel = special ?? ROUTES[url.pathname];
    if (!rel && url.pathname.startsWith("/fixtures/")) rel = `tests/fixtures/${url.pathname.slice(10)}`;
    if (!rel && url.pathname.startsWith("/tmp/")) rel = url.pathname.slice(1);
    const file = rel && (rel.startsWith("/") ? rel : `${REPO}${rel}`);
    if (!file || !existsSync(file)) return route.fulfill({ status: 404, body: "not found" });
    return route.fulfill({ body: readFileSync(file), contentType: TYPES[extname(file)] ?? "application/octet-stream" });
  });
  await page.goto(`${ORIGIN}/page.html`);
  return { page, errors, context };
}

/**
 * Render the widget in the page for a fixture (or a graph object), with a fake model and a
 * fake kernel. Resolves after the first painted frame with its paint info.
 */
export async function openWidget(
  page,
  graphOrFixture,
  { failing = [], mutate = null, height = 640, selected = null } = {},
) {
  return page.evaluate(
    async ({ graphOrFixture, failing, mutate, height, selected }) => {
      const mod = await import("/widget.js");
      const { FakeModel, fakeKernel } = await import("/fake_kernel.js");
      const graph =
        typeof graphOrFixture === "string" ? await (await fetch(`/fixtures/${graphOrFixture}`)).json() : graphOrFixture;
      if (mutate) new Function("graph", mutate)(graph);
      const host = document.getElementById("host");
      host.replaceChildren();
      const el = document.createElement("div");
      el.style.setProperty("--nfw-height", `${height}px`);
      host.append(el);
      // Like the Python traitlet: `selected` is a stage id or null, never "".
      const log = [];
      const model = new FakeModel({ graph, selected }, fakeKernel(graph, { failing, log }));
      const painted = new Promise((resolve, reject) => {
        el.addEventListener("nfw-painted", (e) => resolve(e.detail), { once: true });
        // never hang a suite: a graph the front end refuses shows a message and paints no frame
        setTimeout(
          () => reject(new Error(`no frame painted within 20 s; the widget shows: ${el.textContent.slice(0, 300)}`)),
          20000,
        );
      });
      const t0 = performance.now();
      const cleanup = mod.default.render({ model, el });
      const info = await painted;
      window.__t = { mod, model, el, cleanup, log, graph };
      return { ...info, sinceRender: performance.now() - t0 };
    },
    { graphOrFixture, failing, mutate, height, selected },
  );
}

/** Wait for the next painted frame after `action` runs in the page. */
export async function paintedAfter(page, action) {
  return page.evaluate(async (action) => {
    const { el } = window.__t;
    const painted = new Promise((resolve, reject) => {
      el.addEventListener("nfw-painted", (e) => resolve(e.detail), { once: true });
      setTimeout(() => reject(new Error(`no frame painted within 10 s after: ${action}`)), 10000);
    });
    await new Function("t", action)(window.__t);
    return painted;
  }, action);
}

/** Whether the widget has come to rest: an expression (tests/browser/settled.js, which live.py
 * reads too, called). */
const SETTLED = `(${readFileSync(`${REPO}tests/browser/settled.js`, "utf8")
  .split("\n")
  .filter((l) => !l.startsWith("//"))
  .join("\n")})()`;

/**
 * Wait until the view has come to rest after an action: from two frames on (what the action
 * set off has begun by then: a resize observer, a transition, a layout), until no layout is
 * in flight, no camera move runs, the minimap is placed and no CSS transition runs.
 */
export async function settle(page, timeout = 15000) {
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.waitForFunction(SETTLED, null, { polling: "raf", timeout });
}

/** Fraction of canvas pixels that are not background-ish (non-blank check). */
export async function inkFraction(page, selector) {
  return page.$eval(selector, (c) => {
    const ctx = c.getContext("2d");
    const { data } = ctx.getImageData(0, 0, c.width, c.height);
    let ink = 0;
    for (let i = 0; i < data.length; i += 4)
      if (data[i + 3] > 0 && !(data[i] > 245 && data[i + 1] > 245 && data[i + 2] > 245)) ink++;
    return ink / (data.length / 4);
  });
}

/**
 * Boxes of the widget's HTML elements (and its svg elements, not their insides) as
 * "selector-ish path: x,y,w,h" lines, to compare one layout with another.
 */
export async function layoutBoxes(page) {
  return page.evaluate(() => {
    const root = document.querySelector(".nfw-root");
    const out = [];
    const walk = (el, path) => {
      const r = el.getBoundingClientRect();
      const f = (v) => Math.round(v * 2) / 2;
      out.push(`${path}: ${f(r.x)},${f(r.y)},${f(r.width)},${f(r.height)}`);
      if (el.tagName.toLowerCase() === "svg") return;
      for (const [i, c] of [...el.children].entries())
        walk(c, `${path}>${c.tagName.toLowerCase()}${c.classList[0] ? `.${c.classList[0]}` : ""}[${i}]`);
    };
    walk(root, "root");
    return out.filter((line) => !line.includes(">style["));
  });
}
