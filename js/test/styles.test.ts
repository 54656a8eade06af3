import { describe, expect, it } from "vitest";
import { pickCorner } from "../src/view/minimap";
import { CSS, GRAPH_CSS, scopeCss, splitSelectors } from "../src/view/styles";

describe("scopeCss", () => {
  it("prefixes every selector and keeps @-blocks whole", () => {
    const out = scopeCss(
      ".a, .b:hover { color: red; }\n@keyframes spin { to { transform: rotate(1turn); } }\n.c :where(i, b) { x: 1 }",
      ".root",
    );
    expect(out).toBe(
      ".root .a, .root .b:hover { color: red; }\n@keyframes spin { to { transform: rotate(1turn); } }\n.root .c :where(i, b) { x: 1 }\n",
    );
    // the rules of a conditional group are scoped
    expect(scopeCss("@media (x) { .a { y: 1 } .b { z: 2 } }", ".root")).toBe(
      "@media (x) {\n.root .a { y: 1 }\n.root .b { z: 2 }\n}\n",
    );
  });

  it("leaves no rule of the live CSS unscoped (the exported SVG keeps the plain graph rules)", () => {
    const plain = CSS.replace(/@keyframes[^{]*\{[^}]*\{[^}]*\}\s*\}/g, "").replace(
      /@(media|supports|container)[^{]*\{((?:[^{}]*\{[^}]*\})*)\s*\}/g,
      "$2",
    );
    const selectors = [...plain.matchAll(/([^{}]+)\{[^}]*\}/g)].flatMap((m) => splitSelectors(m[1]!));
    expect(selectors.length).toBeGreaterThan(100);
    for (const sel of selectors) expect(sel.trim(), sel).toMatch(/^\.nfw-root/);
    expect(GRAPH_CSS).not.toMatch(/nfw-root/);
    // No element types the hosts restyle heavily.
    expect(CSS).not.toMatch(/(^|[\s,>])(dl|dt|dd|table|td|tr|h[1-6])[\s,{.:[]/);
  });
});

describe("minimap corner", () => {
  const W = 800;
  const H = 500;
  it("stays top right while that corner is free", () => {
    expect(pickCorner([[300, 0, 200, 500]], W, H, "top-right")).toBe("top-right");
  });

  it("moves to the corner that covers the fewest nodes, never over the legend's", () => {
    const topRight: [number, number, number, number] = [600, 0, 200, 120];
    expect(pickCorner([topRight], W, H, "top-right")).toBe("bottom-right");
    expect(pickCorner([topRight, [600, 380, 200, 120]], W, H, "top-right")).toBe("top-left");
    // Everything covered the same: no hopping.
    expect(pickCorner([[0, 0, W, H]], W, H, "bottom-right")).toBe("bottom-right");
  });
});
