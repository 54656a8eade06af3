// Writes a self-contained offline page the way the Python exporter does (see js/README.md):
// the bundle as text imported from a Blob URL, the graph and baked replies as JSON, all
// reply buffers in one base64 blob.
import { readFileSync, writeFileSync } from "node:fs";
import { REPO } from "./harness.mjs";
import { stageReply } from "./fake_kernel.js";

const json = (x) => JSON.stringify(x).replace(/</g, "\\u003c");

export function bakeReplies(graph, requests) {
  const chunks = [];
  let offset = 0;
  const entries = requests.map((request) => {
    const [reply, buffers] = stageReply(graph, request);
    const slices = buffers.map((b) => {
      const bytes = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      chunks.push(bytes);
      const slice = [offset, bytes.byteLength];
      offset += bytes.byteLength;
      return slice;
    });
    return { request, reply, buffers: slices };
  });
  const blob = Buffer.concat(chunks.map((c) => Buffer.from(c)));
  return { entries, blob: blob.toString("base64") };
}

export function writeStaticPage(path, graph, baked, title = "neural_flow_widget export") {
  const bundle = readFileSync(`${REPO}neural_flow_widget/static/widget.js`, "utf8");
  const { blob, ...index } = baked;
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>${title.replace(/[<&]/g, "")}</title>
<style>body { margin: 0; padding: 16px; font-family: system-ui, sans-serif; } #nfw { --nfw-height: 92vh; }</style>
</head><body>
<div id="nfw"></div>
<script id="nfw-bundle" type="text/plain">${bundle}</script>
<script id="nfw-graph" type="application/json">${json(graph)}</script>
<script id="nfw-baked" type="application/json">${json(index)}</script>
<script id="nfw-blob" type="text/plain">${blob}</script>
<script type="module">
const text = (id) => document.getElementById(id).textContent;
const url = URL.createObjectURL(new Blob([text("nfw-bundle")], { type: "text/javascript" }));
const { renderStatic } = await import(url);
URL.revokeObjectURL(url);
const baked = { ...JSON.parse(text("nfw-baked")), blob: text("nfw-blob").trim() };
window.nfw = renderStatic(document.getElementById("nfw"), JSON.parse(text("nfw-graph")), baked);
</script>
</body></html>
`;
  writeFileSync(path, html);
  return html.length;
}
