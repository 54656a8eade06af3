import { it } from "vitest";
import { writeFileSync } from "node:fs";
import { computeLayout, type Direction } from "../src/layout/layout";
import { buildTree } from "../src/model/tree";
import { buildView, initialState, toggleExpanded, toggleUnfolded, type ViewState } from "../src/model/view_model";
import { buildScene, layoutRequest, edgePath } from "../src/scene/scene";
import { loadGraph } from "./fixtures";
const unet = buildTree(loadGraph("wire_unet.json"));
const gpt = buildTree(loadGraph("wire_transformer12.json"));
function svg(name: string, tree: any, state: ViewState, dir: Direction) {
  const view = buildView(tree, state);
  const sc = buildScene(tree, view, computeLayout(layoutRequest(view, dir)), dir);
  const parts: string[] = [];
  for (const c of sc.clusters) parts.push(`<rect x="${c.box[0]}" y="${c.box[1]}" width="${c.box[2]}" height="${c.box[3]}" fill="#f4f4f4" stroke="#bbb"/><text x="${c.box[0]+4}" y="${c.box[1]+14}" font-size="11">${c.label}</text>`);
  for (const n of sc.nodes) parts.push(`<rect x="${n.box[0]}" y="${n.box[1]}" width="${n.box[2]}" height="${n.box[3]}" fill="white" stroke="#333"/><text x="${n.box[0]+6}" y="${n.box[1]+18}" font-size="13">${n.title}</text>`);
  for (const j of sc.junctions) parts.push(`<circle cx="${j.box[0]+j.box[2]/2}" cy="${j.box[1]+j.box[3]/2}" r="${j.box[2]/2}" fill="white" stroke="black"/><text x="${j.box[0]+6}" y="${j.box[1]+15}" font-size="12">${j.glyph}</text>`);
  const col: any = { flow: "#555", skip: "orange", merge: "purple", order: "#aaa" };
  for (const e of [...sc.edges, ...sc.stubs]) parts.push(`<path d="${edgePath(e.points)}" fill="none" stroke="${col[e.kind]}" stroke-width="1.5"/>`);
  for (const b of sc.buses) parts.push(`<path d="${edgePath(b.points)}" fill="none" stroke="green" stroke-width="3"/>`);
  writeFileSync(`/tmp/shots/${name}.svg`, `<svg xmlns="http://www.w3.org/2000/svg" width="${sc.width+20}" height="${sc.height+20}"><g transform="translate(10,10)">${parts.join("")}</g></svg>`);
}
it("svg", () => {
  for (const dir of ["TB", "LR"] as const) {
    svg(`unet_${dir}`, unet, initialState(unet), dir);
    svg(`unet_bn_${dir}`, unet, toggleExpanded(unet, initialState(unet), unet.byId.get("bottleneck")!), dir);
    svg(`gpt_b3_${dir}`, gpt, toggleExpanded(gpt, toggleUnfolded(initialState(gpt), "layers.0"), gpt.byId.get("layers.3")!), dir);
  }
});
