/**
 * The shape of js/src: every relative import (type imports and re-exports included) read
 * from the source text, the module graph built from them, no cycle in it, and imports that
 * point one way through the layers:
 *   wire (wire*.ts) <- model/ <- layout/ <- scene/ <- view/ <- app/ <- entries (widget.ts, static.ts)
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));

/** Lower layers first; a module may import from its own layer and the layers before it. */
const LAYERS = ["wire", "model", "layout", "scene", "view", "app", "entry"] as const;
type Layer = (typeof LAYERS)[number];

function layerOf(file: string): Layer | null {
  const parts = file.split("/");
  if (parts.length === 1) {
    if (/^wire(_\w+)?\.ts$/.test(file)) return "wire";
    if (file === "widget.ts" || file === "static.ts") return "entry";
    return null;
  }
  const folder = parts[0] as Layer;
  return (LAYERS as readonly string[]).includes(folder) && folder !== "wire" && folder !== "entry" ? folder : null;
}

function sourceFiles(dir = SRC): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(full));
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) out.push(relative(SRC, full).split(sep).join("/"));
  }
  return out;
}

/** The relative specifiers of a module: `import ... from "./x"`, `import type`, `export ... from`, `import "./x"`, `import("./x")`. */
function relativeImports(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const specs: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*["'](\.{1,2}\/[^"']*)["']/g,
    /\bimport\s*["'](\.{1,2}\/[^"']*)["']/g,
    /\bimport\s*\(\s*["'](\.{1,2}\/[^"']*)["']\s*\)/g,
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) specs.push(m[1]!);
  return specs;
}

/** A specifier resolved against its importer, relative to src (null: outside src, e.g. the shared JSON). */
function resolveImport(from: string, spec: string): string | null {
  const base = resolve(SRC, dirname(from), spec);
  for (const cand of [base, `${base}.ts`, join(base, "index.ts")]) {
    if (existsSync(cand) && statSync(cand).isFile()) {
      const rel = relative(SRC, cand).split(sep).join("/");
      return rel.startsWith("..") ? null : rel;
    }
  }
  throw new Error(`${from}: cannot resolve import "${spec}"`);
}

type ModuleGraph = Map<string, string[]>;

function buildGraph(): ModuleGraph {
  const graph: ModuleGraph = new Map();
  for (const file of sourceFiles()) {
    const deps = relativeImports(readFileSync(join(SRC, file), "utf8"))
      .map((spec) => resolveImport(file, spec))
      .filter((d): d is string => d?.endsWith(".ts") ?? false);
    graph.set(file, [...new Set(deps)]);
  }
  return graph;
}

/** Every cycle found by a depth-first walk, each as the path a -> ... -> a. */
function findCycles(graph: ModuleGraph): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    stack.push(node);
    for (const dep of graph.get(node) ?? []) {
      if (state.get(dep) === "open") cycles.push([...stack.slice(stack.indexOf(dep)), dep]);
      else if (!state.has(dep)) visit(dep);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

/** Imports that point the wrong way through the layers (or from a file no layer claims). */
function layerViolations(graph: ModuleGraph): string[] {
  const bad: string[] = [];
  for (const [file, deps] of graph) {
    const from = layerOf(file);
    if (from === null) {
      bad.push(`${file}: in no layer (put it in wire*.ts, model/, layout/, scene/, view/ or app/)`);
      continue;
    }
    for (const dep of deps) {
      const to = layerOf(dep);
      if (to === null || LAYERS.indexOf(to) > LAYERS.indexOf(from))
        bad.push(`${file} (${from}) imports ${dep} (${to ?? "no layer"})`);
    }
  }
  return bad;
}

describe("the module graph of js/src", () => {
  const graph = buildGraph();

  it("reads every kind of relative import", () => {
    const text = [
      'import { a, type B } from "./a";',
      'import type {\n  C,\n  D,\n} from "../c/d";',
      'export { e } from "./e";',
      'export type { F } from "./f";',
      'export * from "./g";',
      'import "./h";',
      'const i = await import("./i");',
      'import { x } from "node:fs";',
      '// import { no } from "./commented";',
    ].join("\n");
    expect(relativeImports(text)).toEqual(["./a", "../c/d", "./e", "./f", "./g", "./h", "./i"]);
  });

  it("covers the whole pipeline", () => {
    for (const f of [
      "wire.ts",
      "model/topology.ts",
      "layout/layout.ts",
      "layout/worker.ts",
      "scene/scene.ts",
      "scene/routing.ts",
      "view/graph_view.ts",
      "app/app.ts",
      "widget.ts",
    ]) {
      expect(graph.has(f), f).toBe(true);
    }
    expect(graph.get("scene/scene.ts")).toContain("scene/routing.ts");
    expect(graph.get("layout/worker.ts")).toContain("layout/messages.ts");
    expect(graph.get("layout/client.ts")).toContain("layout/messages.ts");
  });

  it("the cycle finder finds cycles, type imports included", () => {
    expect(
      findCycles(
        new Map([
          ["a", ["b"]],
          ["b", ["c"]],
          ["c", []],
        ]),
      ),
    ).toEqual([]);
    expect(
      findCycles(
        new Map([
          ["a", ["b"]],
          ["b", ["c"]],
          ["c", ["a"]],
        ]),
      ),
    ).toEqual([["a", "b", "c", "a"]]);
    expect(findCycles(new Map([["a", ["a"]]]))).toEqual([["a", "a"]]);
  });

  it("has no import cycle", () => {
    expect(findCycles(graph).map((c) => c.join(" -> "))).toEqual([]);
  });

  it("imports point one way: wire <- model <- layout <- scene <- view <- app <- entries", () => {
    expect(layerViolations(graph)).toEqual([]);
    expect(
      layerViolations(
        new Map([
          ["model/x.ts", ["view/y.ts"]],
          ["view/y.ts", []],
        ]),
      ),
    ).toHaveLength(1);
  });

  it("model/ imports nothing from layout/, scene/, view/; layout/ nothing from scene/, view/; scene/ nothing from view/", () => {
    const banned: Record<string, string[]> = {
      model: ["layout", "scene", "view", "app"],
      layout: ["scene", "view", "app"],
      scene: ["view", "app"],
    };
    const bad: string[] = [];
    for (const [file, deps] of graph) {
      const folder = file.split("/")[0]!;
      for (const dep of deps) if (banned[folder]?.includes(dep.split("/")[0]!)) bad.push(`${file} imports ${dep}`);
    }
    expect(bad).toEqual([]);
  });

  it("keeps every module at 400 lines or less", () => {
    const long = sourceFiles()
      .map((f) => [f, readFileSync(join(SRC, f), "utf8").split("\n").length - 1] as const)
      .filter(([, n]) => n > 400);
    expect(long).toEqual([]);
  });

  it("the wire mirror imports nothing but itself", () => {
    for (const [file, deps] of graph)
      if (layerOf(file) === "wire") for (const dep of deps) expect(layerOf(dep), `${file} imports ${dep}`).toBe("wire");
  });
});
