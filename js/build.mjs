// Builds neural_flow_widget/static/widget.js from src/widget.ts: the layout worker
// (src/layout/worker.ts) is bundled first and inlined as text, the module
// "virtual:layout-worker" that src/layout/client.ts imports (anywidget loads the bundle from
// a blob, so a worker URL cannot resolve).
import * as esbuild from "esbuild";
import { mkdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const outfile = here("../neural_flow_widget/static/widget.js");
mkdirSync(here("../neural_flow_widget/static"), { recursive: true });
const dev = process.argv.includes("--dev");

const worker = await esbuild.build({
  entryPoints: [here("src/layout/worker.ts")],
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2020",
  minify: !dev,
  write: false,
  legalComments: "none",
});
const workerCode = worker.outputFiles[0].text;

const inlineWorker = {
  name: "inline-layout-worker",
  setup(build) {
    build.onResolve({ filter: /^virtual:layout-worker$/ }, () => ({ path: "layout-worker", namespace: "nfw" }));
    build.onLoad({ filter: /.*/, namespace: "nfw" }, () => ({
      contents: `export default ${JSON.stringify(workerCode)};`,
      loader: "js",
    }));
  },
};

await esbuild.build({
  entryPoints: [here("src/widget.ts")],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2020",
  minify: !dev,
  sourcemap: false,
  outfile,
  plugins: [inlineWorker],
  legalComments: "none",
});

const text = (await import("node:fs")).readFileSync(outfile, "utf8");
// The static export embeds this file in an HTML page: keep it free of a closing script tag.
if (/<\/script|<!--/i.test(text))
  throw new Error("bundle contains '</script' or '<!--': the static export could not inline it");
console.log(
  `built ${outfile} (${(statSync(outfile).size / 1024).toFixed(1)} KiB, worker ${(workerCode.length / 1024).toFixed(1)} KiB)`,
);
