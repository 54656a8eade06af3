/**
 * Expansion states (view_model.ts's ViewState): the starting one (level by level, the deepest
 * that stays readable, or the stages the user chose), whether a call is drawn in a state,
 * expanding, unfolding and stepping by view key, and revealing a call. Pure and DOM-free.
 */
import { allParts, allUnits, partsOf } from "./parts";
import { counterpart, showMember, stackable, stackedAt, stackedMember, stackedRuns, withKin, wrappers } from "./stack";
import type { CallTree, Run } from "./tree";
import {
  buildView,
  clusterKey,
  foldKey,
  type Item,
  runKey,
  stackKey,
  stageKey,
  type ViewGraph,
  type ViewState,
  viewItems,
} from "./view_model";
import { at } from "../wire_check";

/** Number of drawn stage and fold nodes. */
export function visibleCount(tree: CallTree, state: ViewState): number {
  let n = 0;
  const count = (list: Item[]) => {
    for (const it of list) {
      if (it.kind === "stage" || it.kind === "fold") n++;
      else count(it.items);
    }
  };
  count(viewItems(tree, state));
  return n;
}

function visibleExpandable(tree: CallTree, items: Item[], out: number[]) {
  for (const it of items) {
    if (it.kind === "stage" && at(tree.children, it.call).length > 0) out.push(it.call);
    else if (it.kind === "cluster" || it.kind === "run") visibleExpandable(tree, it.items, out);
  }
}

/** Number of layers a layered layout needs: the longest path of the view's edges, in nodes. */
export function layerCount(view: ViewGraph): number {
  const depth = new Map<string, number>();
  let most = view.nodes.length ? 1 : 0;
  for (const e of view.edges) {
    const d = (depth.get(e.src) ?? 1) + 1;
    if (d > (depth.get(e.dst) ?? 1)) depth.set(e.dst, d);
    most = Math.max(most, d);
  }
  return most;
}

/**
 * The states level by level: nothing open, then every visible stage with children opened at
 * once (preceded by the same with only those opened whose children have children), and so on
 * while at most maxVisible nodes are drawn (and, when given, at most maxLayers layers), runs
 * folded; then the same from the calls around the runs that stack
 * (model/stack.ts) opened, boxless, the runs folded (an encoder and a decoder side by side,
 * each "Layer × 6"), and again with the runs drawn as stacks one level open (inside, only what
 * is asked); then both again with the wrappers' kin opened alike (model/stack.ts withKin: all
 * four stages of a ResNet). Each level is preceded by itself with its residual blocks'
 * sublayers folded, and with their units too (tried where it does not fit). Later is
 * preferred: a stack that fits before any fold, boxless before boxed.
 */
export function levelStates(tree: CallTree, maxVisible = 40, maxLayers = Infinity): ViewState[] {
  const chain = (stacked: Map<string, number> | undefined, around = new Set<number>()): ViewState[] => {
    let state: ViewState = {
      expanded: around,
      unfolded: new Set(),
      stacked,
      inlined: around.size ? around : undefined,
    };
    const levels = [state];
    const within = (s: ViewState) =>
      visibleCount(tree, s) <= maxVisible && (maxLayers === Infinity || layerCount(buildView(tree, s)) <= maxLayers);
    for (;;) {
      const candidates: number[] = [];
      visibleExpandable(tree, viewItems(tree, state), candidates);
      if (candidates.length === 0) return levels;
      const opening = (open: number[]): ViewState => ({
        expanded: new Set([...state.expanded, ...open]),
        unfolded: state.unfolded,
        stacked,
        inlined: state.inlined,
      });
      // (just before it, the same with only the calls that hold blocks opened, those of
      // leaves alone folded: MobileViT's encoder opened to its five stages, its stem and its
      // last 1x1 convolution, conv -> norm -> activation each, folded; a type is opened alike,
      // all or none: ResNet's Bottlenecks, the first holding its downsample's conv and bn)
      const holdsBlocks = (c: number) => at(tree.children, c).some((k) => at(tree.children, k).length > 0);
      const type = (c: number) => at(tree.graph.calls, c).type;
      const shallow = new Set(candidates.filter((c) => !holdsBlocks(c)).map(type));
      const deep = candidates.filter((c) => !shallow.has(type(c)));
      const partial = deep.length > 0 && deep.length < candidates.length ? opening(deep) : null;
      if (partial && within(partial)) levels.push(partial);
      const next = opening(candidates);
      if (!within(next)) return levels;
      state = next;
      levels.push(state);
    }
  };
  const stacks = stackedRuns(tree);
  const drawsStack = (items: Item[]): boolean =>
    items.some((it) => it.kind === "stack" || ("items" in it && drawsStack(it.items)));
  const fits = (s: ViewState) =>
    visibleCount(tree, s) <= maxVisible && (maxLayers === Infinity || layerCount(buildView(tree, s)) <= maxLayers);
  const around = wrappers(tree, stacks); // the calls around the stacks: opened from the first, boxless
  // a plain level that opens only such wrappers draws them boxless too (WhisperModel around
  // its encoder and decoder, folded: the two stand in columns, not in a box)
  const unboxed = (s: ViewState): ViewState =>
    s.expanded.size > 0 && [...s.expanded].every((c) => around.has(c)) ? { ...s, inlined: s.expanded } : s;
  // ... and then with their kin opened alike (model/stack.ts withKin: all four stages of a
  // ResNet, not the two that stack)
  const kin = withKin(tree, around);
  // two stacks of blocks unlike each other (an encoder's and a decoder's) are also tried one
  // open, the other folded, the later preferred: BART's encoder opened beside its decoder's
  // "× 4" where both opened do not fit; two of one kind (CLIP's towers, a ResNet's stages)
  // open alike or not at all
  const [a, b] = [...stacks.keys()].map((k) => tree.runs.get(k)!);
  const kids = (r: Run) => at(tree.children, at(r.members, 0)).length;
  const unlike = stacks.size === 2 && a && b && (a.type !== b.type || kids(a) !== kids(b));
  const alone = unlike ? [...stacks].map((entry) => new Map([entry])) : [];
  const levels = [
    ...chain(undefined).map(unboxed),
    ...[around, ...(kin.size > around.size ? [kin] : [])].flatMap((wrapped) =>
      stacks.size
        ? [
            ...chain(undefined, wrapped).filter(fits),
            ...[...alone, stacks].flatMap((open) =>
              chain(open, wrapped).filter((s) => drawsStack(viewItems(tree, s)) && fits(s)),
            ),
          ]
        : [],
    ),
  ];
  // each level that opens residual blocks is preceded by the same with their sublayers folded
  // (model/parts.ts), and that by the same with its blocks' units folded too (model/units.ts:
  // MobileNetV2's inverted residual as "1×1 expand, 3×3 depthwise, 1×1 project", its stack
  // open beside a 720-line canvas rather than folded away): tried where it does not fit,
  // before a shallower level
  const parts = allParts(tree);
  const units = new Set([...parts, ...allUnits(tree)]);
  return levels.flatMap((s) => {
    const tries = [s];
    for (const folding of [parts, units]) {
      const folded = { ...s, parts: folding };
      if (visibleCount(tree, folded) < visibleCount(tree, tries[0]!)) tries.unshift(folded);
    }
    return tries;
  });
}

/**
 * The starting state. When the graph names its first stages (`graph.initial`, the user's
 * `stages=`), exactly those: see chosenState. Otherwise the deepest level (levelStates) that
 * stays readable: at most maxVisible nodes in at most maxLayers layers, marked `auto` (the
 * view may open a shallower level of levelStates(tree, maxVisible) that fits its canvas).
 */
export function initialState(tree: CallTree, maxVisible = 40, maxLayers = 14): ViewState {
  if (tree.graph.initial) return chosenState(tree, tree.graph.initial);
  const levels = levelStates(tree, maxVisible, maxLayers);
  return { ...at(levels, levels.length - 1), auto: true }; // levelStates has the closed state at least
}

/**
 * A state that draws the chosen calls: their ancestors expanded, the calls themselves
 * collapsed. Runs fold as usual; only a run that holds an ancestor of a chosen call unfolds
 * (a fold cannot show what is inside its members).
 */
export function chosenState(tree: CallTree, chosen: Iterable<number>): ViewState {
  const expanded = new Set<number>();
  const unfolded = new Set<string>();
  for (const call of chosen) {
    for (let c = at(tree.graph.calls, call).parent; c >= 0; c = at(tree.graph.calls, c).parent) {
      expanded.add(c);
      const r = tree.runOf[c]!;
      if (r >= 0) unfolded.add(at(tree.runList, r).key);
    }
  }
  return { expanded, unfolded };
}

/** Whether a call is drawn as its own node in a state (no collapsed ancestor, no fold around
 * it; in a stack, in the member shown), or as the folded sublayer it is the last stage of. */
export function isShown(tree: CallTree, state: ViewState, call: number): boolean {
  const loc = stackedAt(tree, state, call);
  if (loc) {
    if (loc.member !== loc.shown || loc.base === loc.run.members[0]) return false;
    call = loc.base;
  }
  if (state.expanded.has(call) && at(tree.children, call).length > 0) return false; // drawn as a cluster
  for (let c = call; c >= 0; c = at(tree.graph.calls, c).parent) {
    const r = tree.runOf[c]!;
    const run = r >= 0 ? at(tree.runList, r) : null;
    const stacked = run !== null && at(run.members, 0) === c && stackedMember(tree, state, run) >= 0;
    if (c !== call && !state.expanded.has(c) && !stacked) return false;
    if (run && !state.unfolded.has(run.key) && !stacked) return false;
    // a folded sublayer stands for its last stage (its id), hides the others
    const part = partAround(tree, state, c);
    if (part !== null && !(c === call && at(tree.graph.calls, call).id === part)) return false;
  }
  return true;
}

/** The key of the folded part (model/parts.ts) a call is a member of in a state, else null. */
function partAround(tree: CallTree, state: ViewState, call: number): string | null {
  if (!state.parts?.size) return null;
  const parts = partsOf(tree);
  const p = parts.of[call]!;
  const key = p >= 0 ? at(parts.list, p).key : null;
  return key !== null && state.parts.has(key) ? key : null;
}

export function toggleExpanded(tree: CallTree, state: ViewState, call: number): ViewState {
  if (at(tree.children, call).length === 0) return state;
  const expanded = new Set(state.expanded);
  if (expanded.has(call)) expanded.delete(call);
  else expanded.add(call);
  return { expanded, unfolded: state.unfolded, stacked: state.stacked, inlined: state.inlined, parts: state.parts };
}

export function toggleUnfolded(state: ViewState, run: string): ViewState {
  const unfolded = new Set(state.unfolded);
  if (unfolded.has(run)) unfolded.delete(run);
  else unfolded.add(run);
  return { expanded: state.expanded, unfolded, stacked: state.stacked, inlined: state.inlined, parts: state.parts };
}

/**
 * Expand or collapse (a stage "s:" / its cluster "c:"), open a fold "f:" (as a stack "k:" when
 * its run stacks, else unfolded "r:"), fold a stack or a run again, unfold a stack's members
 * ("u:"), show a stack's next or previous member ("n:" / "p:"), by view key: the next state, and
 * the key that then draws the same thing (the cluster of an expanded stage, the stage of a
 * collapsed cluster, ...); null: nothing to do.
 */
export function toggleKey(tree: CallTree, state: ViewState, key: string): { state: ViewState; key: string } | null {
  const id = key.slice(2);
  if (key.startsWith("f:") && state.parts?.has(id) && partsOf(tree).byKey.has(id)) {
    // a folded sublayer opens: its members drawn in the block as ever
    const parts = new Set([...state.parts].filter((p) => p !== id));
    const { expanded, unfolded, stacked, inlined } = state;
    return { state: { expanded, unfolded, stacked, inlined, parts }, key: stageKey(id) };
  }
  const run = tree.runs.get(id);
  const stacks = run !== undefined && stackable(tree, run);
  let next = state;
  let other = key;
  if (key.startsWith("s:") || key.startsWith("c:")) {
    const call = tree.byId.get(id);
    if (call === undefined) return null;
    next = toggleExpanded(tree, state, call);
    other = key.startsWith("s:") ? clusterKey(id) : stageKey(id);
  } else if (key.startsWith("f:") && stacks) {
    next = showMember(state, id, state.stacked?.get(id) ?? 0);
    other = stackKey(id);
  } else if (key.startsWith("f:") || key.startsWith("r:")) {
    next = toggleUnfolded(state, id);
    other = key.startsWith("f:") ? runKey(id) : stacks && state.stacked?.has(id) ? stackKey(id) : foldKey(id);
  } else if (key.startsWith("k:") && run) {
    next = showMember(state, id, null);
    other = foldKey(id);
  } else if (key.startsWith("u:") && run) {
    next = toggleUnfolded(state, id);
    other = runKey(id);
  } else if ((key.startsWith("n:") || key.startsWith("p:")) && run && stacks) {
    const k = stackedMember(tree, state, run);
    if (k < 0) return null;
    const to = Math.min(Math.max(k + (key.startsWith("n:") ? 1 : -1), 0), run.members.length - 1);
    if (to === k || !counterpart(tree, run, to)) return null;
    next = showMember(state, id, to);
    other = stackKey(id);
  }
  return next === state ? null : { state: next, key: other };
}

/** Expand every ancestor of a call and unfold the runs around it, so that it is drawn; in a
 * run drawn as a stack, the stack shows the call's member instead. */
export function revealCall(tree: CallTree, state: ViewState, call: number): ViewState {
  const expanded = new Set(state.expanded);
  const unfolded = new Set(state.unfolded);
  const stacked = new Map(state.stacked ?? []);
  const loc = stackedAt(tree, state, call);
  const first = loc ? at(loc.run.members, 0) : -1;
  const m0 = loc && loc.base !== first ? first : -1; // a block itself: its run unfolds
  if (loc && m0 >= 0) {
    stacked.set(loc.run.key, loc.member);
    call = loc.base;
  }
  const parts = new Set(state.parts ?? []);
  for (let c = call; c >= 0; c = at(tree.graph.calls, c).parent) {
    if (c === m0) continue; // the stack opens member 0
    if (c !== call) expanded.add(c);
    const r = tree.runOf[c]!;
    if (r >= 0) unfolded.add(at(tree.runList, r).key);
    const p = partAround(tree, state, c);
    if (p !== null) parts.delete(p);
  }
  expanded.delete(call);
  return { expanded, unfolded, stacked, inlined: state.inlined, ...(state.parts ? { parts } : {}) };
}

/** The calls `state` opens that `before` did not: groups, stacks (their first member), the
 * sublayers and units drawn open again (their first member). */
export function openedSince(tree: CallTree, before: ViewState, state: ViewState): number[] {
  const groups = [...state.expanded].filter((c) => !before.expanded.has(c));
  const stacks = [...(state.stacked?.keys() ?? [])].filter((r) => !before.stacked?.has(r));
  const parts = [...(before.parts ?? [])].filter((p) => !state.parts?.has(p));
  const first = (run: Run | undefined) => (run ? [at(run.members, 0)] : []);
  return [
    ...groups,
    ...stacks.flatMap((r) => first(tree.runs.get(r))),
    ...parts.flatMap((p) => first(partsOf(tree).byKey.get(p))),
  ];
}
