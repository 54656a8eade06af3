/**
 * The names on a view's nodes: a module's short name ("attn", "layers.3"), and where that
 * alone does not say which block a node is in, the block around it: Hugging Face's ResNet
 * draws the layers of its four stages with their stages opened boxless (model/stack.ts
 * withKin), so "layers.0" four times; they read "stages.1.layers.0". A block drawn as a box
 * (an expanded call, a stack's member) names its own: inside diffusers' `down_blocks.1`,
 * "resnets.0". Pure and DOM-free.
 */
import type { Run } from "../model/tree";
import type { Item, ViewGraph } from "../model/view_model";
import type { WireCall } from "../wire";
import { at } from "../wire_check";

const INDEX = /^\d+$/;

/** How many trailing parts of a module path its short name shows: the last, and the names of
 * the indices before it ("layers.3", SegFormer's "block.0.1"). */
function shortParts(parts: readonly string[]): number {
  let n = 1;
  while (n < parts.length && INDEX.test(at(parts, parts.length - n))) n++;
  return n;
}

/** The short name of a module: its last part, or with the name an index belongs to ("layers.3"). */
export function lastPart(name: string): string {
  const parts = name.split(".");
  return parts.slice(-shortParts(parts)).join(".") || name;
}

/** A stage's name on its node: `context` (contextOf), the module's short name, and which call
 * of it ("#1"; `again`: another call's, for the widest of them: request.ts stageWidth). */
export function stageTitle(c: WireCall, again = c.call, context = ""): string {
  return context + lastPart(c.module) + (again > 0 ? ` #${again}` : "");
}

const boxedMemo = new WeakMap<ViewGraph, Set<string>>();

/** The modules a view draws as boxes that name them: its expanded calls, its stacks' members. */
function boxedModules(view: ViewGraph): Set<string> {
  let out = boxedMemo.get(view);
  if (!out) {
    const { calls } = view.tree.graph;
    const found = new Set<string>();
    const walk = (items: readonly Item[]) => {
      for (const it of items) {
        if (it.kind === "cluster") found.add(at(calls, it.call).module);
        if (it.kind === "stack") for (const m of it.run.members) found.add(at(calls, m).module);
        if ("items" in it) walk(it.items);
      }
    };
    walk(view.items);
    boxedMemo.set(view, found);
    out = found;
  }
  return out;
}

/** What goes before a module's short name on its node: the indexed block around it
 * ("stages.1.") where no box of the view names that block, else "". */
export function contextOf(view: ViewGraph, module: string): string {
  const parts = module.split(".");
  const rest = parts.slice(0, parts.length - shortParts(parts));
  if (rest.length < 2 || !INDEX.test(at(rest, rest.length - 1)) || boxedModules(view).has(rest.join("."))) return "";
  return `${rest.slice(-shortParts(rest)).join(".")}.`;
}

const calledMemo = new WeakMap<readonly WireCall[], Set<string>>();

/** What goes before a stage's short name on its node: its module's whole path where the call
 * ran outside its module's nearest module that ran (DiT's forward calls block 0's
 * `norm1.emb` again for its last layer: drawn beside the blocks, it reads
 * "transformer_blocks.0.norm1.emb #1", not "emb #1", a module of no such name); else
 * contextOf's. */
export function stageContext(view: ViewGraph, c: WireCall): string {
  const { calls } = view.tree.graph;
  const ran = calledMemo.get(calls) ?? new Set(calls.map((k) => k.module));
  calledMemo.set(calls, ran);
  const parts = c.module.split(".");
  const home = parts.slice(0, parts.length - shortParts(parts));
  for (let n = home.length; n > 0; n--) {
    const owner = home.slice(0, n).join(".");
    if (!ran.has(owner)) continue;
    const caller = c.parent >= 0 ? at(calls, c.parent).module : "";
    return caller === owner || caller.startsWith(`${owner}.`) ? contextOf(view, c.module) : `${home.join(".")}.`;
  }
  return contextOf(view, c.module);
}

/** What a run repeats: "TransformerBlock", or "(Linear → ReLU)" for a pattern. */
export function runType(run: Run): string {
  return run.period > 1 ? `(${run.type})` : run.type;
}

/** An unfolded run's header: its members' range or prefix, and what it repeats how often. */
export function runHeader(calls: readonly WireCall[], run: Run): { label: string; type: string } {
  const first = at(calls, at(run.members, 0)).module;
  const last = at(calls, at(run.members, run.members.length - 1)).module;
  const label = run.period > 1 ? `${first} … ${last}` : `${run.prefix}.* (${run.members.length})`;
  return { label, type: `${runType(run)} × ${run.count}` };
}

/** A stack's header label: "GPT2Block × 12"; where another stack says the same, with where
 * their paths part (T5's two columns: "T5Block × 4 · encoder", "… · decoder"; Swin-T's first
 * and last stages: "SwinLayer × 2 · layers.0", "… · layers.3"), else with the indexed block it
 * is in where no box names that (contextOf: Hugging Face's ResNet, "ResNetBottleNeckLayer × 3
 * · stages.1"). */
export function stackLabel(run: Run, view: ViewGraph): string {
  const label = (r: Run) => `${r.period > 1 ? `(${r.type})` : r.type} × ${r.count}`;
  const twins = view.stacks.filter((st) => st.run !== run && label(st.run) === label(run)).map((st) => st.run.prefix);
  if (run.prefix && twins.length) {
    // where the twins' paths part: "encoder" / "decoder"; an index with its name before it
    // (Swin-T's first and last stages, two blocks each: "layers.0" / "layers.3")
    const parts = run.prefix.split(".");
    const i = parts.findIndex((p, j) => twins.some((t) => t.split(".")[j] !== p));
    if (i >= 0) return `${label(run)} · ${/^\d+$/.test(parts[i]!) && i > 0 ? `${parts[i - 1]}.` : ""}${parts[i]}`;
  }
  const context = contextOf(view, at(view.tree.graph.calls, at(run.members, 0)).module).slice(0, -1);
  return context ? `${label(run)} · ${context}` : label(run);
}
