import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { decodeGraph, type WireGraph } from "../src/wire";

export function fixturePath(name: string): string {
  return fileURLToPath(new URL(`../../tests/fixtures/${name}`, import.meta.url));
}

/** A fixture's JSON; a missing file throws (tests that need it fail, they are never skipped). */
export function loadRaw(name: string): unknown {
  const path = fixturePath(name);
  if (!existsSync(path)) {
    const maker = name.endsWith("_golden.json") ? ".venv/bin/python scripts/make_fixtures.py" : "node js/scripts/make_fixtures.mjs";
    throw new Error(`missing fixture ${path}: write it with \`${maker}\` from the repository root`);
  }
  return JSON.parse(readFileSync(path, "utf8"));
}

export function loadGraph(name: string): WireGraph {
  return decodeGraph(loadRaw(name));
}
