// Time to first paint and time to expand a group, in headless chromium, for synthetic
// transformer-like graphs of about 50, 1,000 and 5,000 stages. Prints medians.
// Run: cd js && npm run bench      (NFW_BENCH_RUNS=5 by default)
import { launch, newPage, openWidget, paintedAfter } from "../../tests/browser/harness.mjs";
import { synthTransformer } from "./synth.mjs";

const RUNS = Number(process.env.NFW_BENCH_RUNS ?? 5);
const SIZES = (process.env.NFW_BENCH_SIZES ?? "50,1000,5000").split(",").map(Number);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const click = (sel) =>
  `document.querySelector(${JSON.stringify(sel)}).dispatchEvent(new MouseEvent("click", {bubbles: true}))`;

const browser = await launch();
const rows = [];
for (const size of SIZES) {
  const graph = synthTransformer(size);
  const stages = graph.calls.length;
  const m = { paint: [], layoutFirst: [], shown: [], unfold: [], unfoldNodes: [], expand: [], collapse: [] };
  for (let r = 0; r < RUNS; r++) {
    const { page, context } = await newPage(browser, { width: 1280, height: 800 });
    const first = await openWidget(page, graph);
    m.paint.push(first.sinceRender);
    m.layoutFirst.push(first.layoutMs);
    m.shown.push(first.nodes);
    // Expand a group: unfold the encoder's run of blocks (a fold of a run that stacks opens as
    // a stack, whose "unfold all" then unfolds it).
    const fold = '[data-fold="encoder.layers.0"]';
    const stack = '[data-action][data-key="u:encoder.layers.0"]';
    let unfold = null;
    if (await page.$(fold)) unfold = await paintedAfter(page, click(fold));
    if (await page.$(stack)) unfold = await paintedAfter(page, click(stack));
    if (unfold) {
      m.unfold.push(unfold.ms);
      m.unfoldNodes.push(unfold.nodes);
    }
    // Expand one block inside it, then collapse it again (layout cache makes this cheap).
    const expand = await paintedAfter(page, click('[data-stage-id="encoder.layers.1"] [data-action]'));
    m.expand.push(expand.ms);
    const collapse = await paintedAfter(page, click('[data-cluster-id="encoder.layers.1"] [data-action]'));
    m.collapse.push(collapse.ms);
    await context.close();
  }
  rows.push({
    stages,
    "first paint ms": median(m.paint).toFixed(0),
    "(layout ms)": median(m.layoutFirst).toFixed(0),
    "nodes shown": median(m.shown),
    "unfold group ms": m.unfold.length ? median(m.unfold).toFixed(0) : "(no fold)",
    "nodes after": m.unfoldNodes.length ? median(m.unfoldNodes) : "-",
    "expand block ms": median(m.expand).toFixed(0),
    "collapse ms": median(m.collapse).toFixed(0),
  });
  console.log(JSON.stringify(rows.at(-1)));
}
await browser.close();
console.log(`\nmedians of ${RUNS} runs (headless chromium, layout in a Web Worker):`);
console.table(rows);
