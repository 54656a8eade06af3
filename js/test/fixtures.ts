import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { decodeGraph, type WireGraph } from "../src/wire";

/** A wire message as plain JSON, for tests that edit one by hand (to build a malformed or
 * hand-made message, which no type describes). */
// biome-ignore lint/suspicious/noExplicitAny: raw JSON edited freely, then checked by decodeGraph
export type Raw = Record<string, any>;

/** `record[key]`, which the test needs: missing, the test fails here and names the key. */
export function must<T>(record: Readonly<Record<string, T>>, key: string): T {
  const v = record[key];
  if (v === undefined) throw new Error(`no ${key} among ${Object.keys(record).slice(0, 12).join(", ")}, …`);
  return v;
}

export function fixturePath(name: string): string {
  return fileURLToPath(new URL(`../../tests/fixtures/${name}`, import.meta.url));
}

/** A fixture's JSON (every one is written by scripts/make_fixtures.py); a missing file throws (tests that need it fail, they are never skipped). */
export function loadRaw(name: string): unknown {
  const path = fixturePath(name);
  if (!existsSync(path)) {
    throw new Error(
      `missing fixture ${path}: write it with \`.venv/bin/python scripts/make_fixtures.py\` from the repository root`,
    );
  }
  return JSON.parse(readFileSync(path, "utf8"));
}

export function loadGraph(name: string): WireGraph {
  return decodeGraph(loadRaw(name));
}

/** A case of wire_experiments.json (issue 22's traitlets on real runs), the graph decoded with
 * its comparison, intervention and patching; `edit` changes a copy of the raw case first. */
export function experiment(name: "gpt2" | "sigmoid_mlp" | "nan_chain", edit?: (r: Raw) => void): WireGraph {
  const c = structuredClone(must(loadRaw("wire_experiments.json") as Raw, name)) as Raw;
  edit?.(c);
  return decodeGraph(c.graph, c.comparison ?? null, { intervention: c.intervention, patching: c.patching });
}
