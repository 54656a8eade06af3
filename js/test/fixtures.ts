import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { decodeGraph, type WireGraph } from "../src/wire";

export function fixturePath(name: string): string {
  return fileURLToPath(new URL(`../../tests/fixtures/${name}`, import.meta.url));
}

export function loadRaw(name: string): unknown {
  return JSON.parse(readFileSync(fixturePath(name), "utf8"));
}

export function loadGraph(name: string): WireGraph {
  return decodeGraph(loadRaw(name));
}
