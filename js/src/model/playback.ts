/**
 * Step-by-step playback of the forward pass: the steps of a walk through the view in
 * execution order. The walk starts at the model's inputs and ends at its outputs; between
 * them it visits what the view draws, in call order, one level deeper than drawn: a collapsed
 * stage with children opens and its children are visited (then it closes again), a folded run
 * unfolds and each of its members is visited; a stack (a run drawn as one block) is walked
 * once per member, the stack showing that member's data. Each step carries the state that
 * draws it, so the view opens and closes groups as the walk passes through them. Pure and
 * DOM-free.
 */
import { portOf } from "./ports";
import { counterpart, showMember } from "./stack";
import type { CallTree } from "./tree";
import {
  clusterKey,
  inputKey,
  outputKey,
  runKey,
  stageKey,
  viewItems,
  type Item,
  type ViewGraph,
  type ViewState,
} from "./view_model";
import { at } from "../wire_check";

export interface Step {
  key: string; // the node the step shows, in the view of `state`
  id: string; // its stage id (a fold's, a sublayer's: its last stage's), or the input / output name
  call: number; // its call index (a fold's, a sublayer's: its last stage's); -1 for an input or output
  state: ViewState; // the expansion state that draws it
  depth: number; // 0: drawn in the starting view; 1: inside a group the walk opened
  part?: true; // a folded sublayer (model/parts.ts): `call` is its last stage, whose data it shows
}

function withExpanded(state: ViewState, call: number): ViewState {
  return {
    expanded: new Set([...state.expanded, call]),
    unfolded: state.unfolded,
    stacked: state.stacked,
    inlined: state.inlined,
    parts: state.parts,
  };
}

function withUnfolded(state: ViewState, run: string): ViewState {
  return {
    expanded: state.expanded,
    unfolded: new Set([...state.unfolded, run]),
    stacked: state.stacked,
    inlined: state.inlined,
    parts: state.parts,
  };
}

/** The steps of a walk through the view of `start`, in execution order (the states are
 * exact: none is `auto`, which the view may open less deep). */
export function playbackSteps(tree: CallTree, start: ViewState): Step[] {
  const { calls, inputs, outputs } = tree.graph;
  const state: ViewState = {
    expanded: start.expanded,
    unfolded: start.unfolded,
    stacked: start.stacked,
    inlined: start.inlined,
    parts: start.parts,
  };
  // the items of the container `key` (an expanded call's cluster, an unfolded run) in a state
  const containerItems = (inState: ViewState, key: string): Item[] => {
    const find = (items: Item[]): Item[] | null => {
      for (const it of items) {
        if ((it.kind === "cluster" || it.kind === "run") && it.key === key) return it.items;
        const hit = it.kind === "cluster" || it.kind === "run" ? find(it.items) : null;
        if (hit) return hit;
      }
      return null;
    };
    return find(viewItems(tree, inState)) ?? [];
  };
  const steps: Step[] = inputs.map((name) => ({ key: inputKey(name), id: name, call: -1, state, depth: 0 }));
  // `items` as drawn in `inState`; `open`: the walk may open what they hide (one level deep);
  // `map`: in a stack, member 0's calls -> those of the member shown
  const walk = (items: Item[], inState: ViewState, open: boolean, map: Map<number, number> | null = null) => {
    const depth = open ? 0 : 1;
    for (const it of items) {
      if (it.kind === "cluster" || it.kind === "run") {
        walk(it.items, inState, open, map);
      } else if (it.kind === "stack") {
        for (let k = 0; k < it.run.members.length; k++) {
          const part = counterpart(tree, it.run, k);
          if (!part) break; // a member whose tree differs: only those before it are shown
          walk(it.items, { ...inState, ...showMember(inState, it.run.key, k) }, false, k > 0 ? part : null);
        }
      } else if (it.kind === "fold" && open && !it.run.part) {
        const inner = withUnfolded(inState, it.run.key);
        walk(containerItems(inner, runKey(it.run.key)), inner, false);
      } else if (it.kind === "fold" && it.run.part) {
        // a folded sublayer: its last stage's data (the attention, fc2), of the member shown
        const last = at(it.run.members, it.run.members.length - 1);
        const call = map?.get(last) ?? last;
        steps.push({ key: it.key, id: at(calls, call).id, call, state: inState, depth, part: true });
      } else if (it.kind === "fold") {
        // a fold the walk does not open (inside a group it opened): its last member's data,
        // what leaves it
        const call = at(it.run.members, it.run.members.length - 1);
        steps.push({ key: it.key, id: at(calls, call).id, call, state: inState, depth });
      } else if (open && at(tree.children, it.call).length > 0) {
        const inner = withExpanded(inState, it.call);
        walk(containerItems(inner, clusterKey(at(calls, it.call).id)), inner, false);
      } else {
        const call = map?.get(it.call) ?? it.call;
        steps.push({ key: it.key, id: at(calls, call).id, call, state: inState, depth });
      }
    }
  };
  walk(viewItems(tree, state), state, true);
  // the items of a tuple returned one by one on their port (model/ports.ts)
  for (const name of outputs)
    steps.push({ key: outputKey(portOf(tree.graph, name)), id: name, call: -1, state, depth: 0 });
  return steps;
}

/** Whether two states draw the same view. */
export function sameState(a: ViewState, b: ViewState): boolean {
  const same = (x: ReadonlySet<unknown>, y: ReadonlySet<unknown>) => x.size === y.size && [...x].every((v) => y.has(v));
  const stacks = (x: ViewState) => new Set([...(x.stacked ?? [])].map(([r, k]) => `${r}\u0000${k}`));
  return (
    same(a.expanded, b.expanded) &&
    same(a.unfolded, b.unfolded) &&
    same(stacks(a), stacks(b)) &&
    same(a.inlined ?? new Set(), b.inlined ?? new Set()) &&
    same(a.parts ?? new Set(), b.parts ?? new Set())
  );
}

/** The state a step of playback asked for, the state drawn for it (app/framing.ts may fold
 * groups away from the step to fit it beside the inspector), the group its node is drawn in. */
export interface Asked {
  state: ViewState;
  drew: ViewState;
  group: string;
  holder?: string; // the node the step was drawn on, where not its own (its group folded: standIn)
}

/** The group a step's node is drawn in (its containers' keys), a model's input or output
 * its own. */
export function stepGroup(view: ViewGraph, key: string): string {
  const n = view.byKey.get(key);
  return n && n.call >= 0 ? n.path.join("/") : key;
}

/** Whether a step wants the view laid out again: its node is not drawn, or its state is
 * neither the one drawn nor the one the last step laid out asked for (drawn as it was then),
 * or the view does not show the whole model (`whole`: the camera shows it all) and the step
 * is in another group than that step (the groups folded to fit are folded around it); a
 * step drawn on the group that holds it (standIn) is not while the one before was too. */
export function relays(step: Step, drawn: { state: ViewState; view: ViewGraph; whole: boolean }, asked: Asked | null) {
  const own = drawn.view.byKey.has(step.key);
  if (own && sameState(step.state, drawn.state) && drawn.whole) return false;
  const kept = asked !== null && sameState(step.state, asked.state) && sameState(drawn.state, asked.drew);
  // a step drawn on the group that holds it (folded to fit: standIn), as the one before it was
  if (!own) return !(kept && asked.holder !== undefined && standIn(drawn.view, step) === asked.holder);
  return !(kept && (drawn.whole || asked.group === stepGroup(drawn.view, step.key)));
}

/** The node a step is drawn on (standIn) and, where that is not its own, the step's name in
 * it: its id past the dotted prefix the two share ("resnets.1" in down_blocks.0), in a fold
 * past its members' parent ("layers.1.self_attn" in model.decoder.layers.0's fold). */
export function drawnOn(view: ViewGraph, step: Step): { key: string; part?: string } {
  const key = standIn(view, step);
  const holder = key === step.key ? undefined : view.byKey.get(key);
  if (!holder) return { key };
  const a = holder.id.split(".").slice(0, holder.kind === "fold" ? -2 : undefined);
  const b = step.id.split(".");
  let k = 0;
  while (k < a.length && k < b.length - 1 && a[k] === b[k]) k++;
  return { key, part: b.slice(k).join(".") };
}

/** The node a step is drawn on: its own, else (the groups round it folded to fit beside the
 * inspector: app/framing.ts shut) the nearest drawn that holds it: a group's stage, a fold. */
export function standIn(view: ViewGraph, step: Step): string {
  if (view.byKey.has(step.key) || step.call < 0) return step.key;
  const { calls } = view.tree.graph;
  for (let c = step.call; c >= 0; c = at(calls, c).parent) {
    const key = stageKey(at(calls, c).id);
    if (view.byKey.has(key)) return key;
    const fold = view.nodes.find((n) => n.kind === "fold" && n.run?.members.includes(c));
    if (fold) return fold.key;
  }
  return step.key;
}

/** The calls a node of the view stands for, to keep open around it: its own (in a stack,
 * member 0's, whose groups the state opens), or for a model's input or output the call of the
 * first node beside it (T5's attention mask, read by both stacks, beside the encoder's open
 * and the decoder one node, as the step before it and the step after it draw them). */
export function focusCalls(view: ViewGraph, key: string): number[] {
  const of = (k: string) => {
    const n = view.byKey.get(k);
    return n && n.call >= 0 ? [n.base ?? n.call] : [];
  };
  const own = of(key);
  if (own.length || !view.byKey.has(key)) return own;
  const beside = view.edges
    .filter((e) => e.src === key || e.dst === key)
    .flatMap((e) => of(e.src === key ? e.dst : e.src));
  return beside.length ? [Math.min(...beside)] : [];
}
