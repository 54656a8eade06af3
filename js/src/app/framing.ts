/**
 * Framing the first view: the depth, the arrangement and the zoom at which the whole model is
 * on the canvas with names at least MIN_NAME_PX high. Of the starting levels (view_model.ts
 * levelStates) the deepest whose layout, wrapped to the canvas (layout/bands.ts), fits at
 * READ_K is opened: a shallower view rather than smaller text. When none fits, the
 * shallowest, laid out to leave the minimap's strip free (the camera then shows its start at
 * READ_K, the minimap the rest). Later states are wrapped for the same canvas. Presentation
 * mode asks for larger names (PRESENT_K): the same level, wrapped for them where it then
 * fits, else laid out as at READ_K (the camera shows it whole, as large as the canvas allows).
 */
import type { LayoutClient } from "../layout/client";
import { FIT_MARGIN as MARGIN } from "../layout/flow";
import type { Direction, FitTarget, LayoutRequest, LayoutResult } from "../layout/layout";
import { better, shownAt } from "../layout/bands";
import { wrapToFit } from "../layout/wrapping";
import { allParts, partsOf } from "../model/parts";
import type { CallTree } from "../model/tree";
import { buildView, clusterKey, type ViewGraph, type ViewState } from "../model/view_model";
import { focusCalls } from "../model/playback";
import { levelStates, openedSince } from "../model/view_state";
import { estimate, type Measure, MINIMAP_STRIP, type Pictures, READ_K, layoutRequest } from "../scene/scene";
import { at } from "../wire_check";

export type Framed = LayoutResult & { state: ViewState; view: ViewGraph };
/** A state with groups folded (Framing.accordion), laid out; `fits`: whole at the fit's scale. */
type Folded = { lay: LayoutResult; state: ViewState; view: ViewGraph; fits: boolean };
/** How much more of a model a state with its groups folded must show, where none fits. */
const GAIN = 1.1;

/** Whether a layout fits a canvas at the target's scale. */
export function fitsAt(lay: { width: number; height: number }, fit: FitTarget): boolean {
  return (
    Math.min((fit.w - 2 * MARGIN) / Math.max(lay.width, 1), (fit.h - 2 * MARGIN) / Math.max(lay.height, 1)) >=
    fit.k - 1e-6
  );
}

/** How far the canvas may change size before a view laid out for it is laid out again (the
 * inspector opening, the page resized): the camera alone handles less. */
export const RELAY_PX = 48;
/** How many open groups a block that does not fit may fold (Framing.accordion). */
const MAX_FOLDS = 6;

export class Framing {
  private target: FitTarget | null = null;

  constructor(
    private readonly client: LayoutClient,
    private readonly canvas: HTMLElement,
    /** How wide the page draws a text: each node as wide as its words (view/graph_view.ts measure). */
    private readonly measure: Measure = estimate,
  ) {}

  private shown: ViewState | null = null; // the state laid out last
  private dir: Direction = "TB"; // its direction

  /** Data on the graph: nodes with pictures (scene/request.ts layoutRequest), under each
   * node's words or beside them where no level fits so (`look`: as the last layout drew them). */
  thumbs = false;
  private look: Pictures = "none";

  /** Whether the canvas has changed size by RELAY_PX or more since the view was laid out: its
   * wrapping (or its level) was chosen for another canvas. */
  outgrown(): boolean {
    const { target: t, canvas } = this;
    if (!t || !canvas.clientWidth || !canvas.clientHeight) return false;
    return Math.abs(canvas.clientWidth - t.w) >= RELAY_PX || Math.abs(canvas.clientHeight - t.h) >= RELAY_PX;
  }

  /** Lay out a state (`fresh`: for a first view, with names readable at scale `k`: READ_K,
   * more in presentation mode). Each layout is for the canvas as it is now (the inspector
   * beside it, the transport bar above). A state the user chose has its open groups wrapped
   * as far as that helps (layout/wrapping.ts), at `k` where it then fits, else at READ_K;
   * one that fits at neither while presenting or with data on the graph gives way to the
   * starting levels (Present and Data show the whole model; lecture.ts gives the user's state
   * back at their end). A starting level is the deepest that fits at `k`, else the deepest at
   * READ_K (Present prefers the larger type to a deeper level), else the shallowest at READ_K
   * (the camera shows its start, the minimap the rest). `reason` "canvas": the same view for a
   * canvas that changed size (the inspector opened): a starting level is kept, wrapped as a
   * chosen state is, not chosen afresh (the node clicked, the step of playback are not folded
   * away under the user; so is playback's start, an auto level, given back at its end);
   * "expand": a block opened that does not fit folds others (accordion);
   * "playback" (or "canvas" while playback is on) with a `focus`, the step's node: a step
   * that does not fit folds the groups and stacks farthest from it, so a lecture sees the
   * whole model beside the inspector (Whisper's decoder one node while the walk is in its
   * encoder, and the other way round). */
  async lay(
    state: ViewState,
    view: ViewGraph,
    dir: Direction,
    fresh: boolean,
    k = READ_K,
    reason = "",
    focus?: string,
  ): Promise<Framed> {
    // the same view for a canvas that changed size, or playback's start given back at its end
    // (a starting level kept, not chosen afresh for the canvas beside the inspector)
    const relaid = reason === "canvas" || (reason === "playback" && state.auto === true);
    this.dir = dir;
    const { client, canvas } = this;
    const room = { w: canvas.clientWidth || 960, h: canvas.clientHeight || 600 };
    if (fresh || !this.target) this.target = { ...room, k, reserve: MINIMAP_STRIP };
    else this.target = { ...this.target, ...room };
    const fit = this.target;
    const tries = fresh && fit.k > READ_K ? [fit, { ...fit, k: READ_K }] : [fit];
    // pictures under the words, then beside them for an overview with data that fits no level
    // so; a view laid out again keeps the way it drew them
    const again = !fresh && this.look !== "none";
    const looks: Pictures[] = this.thumbs ? (again ? [this.look] : ["under", "beside"]) : ["none"];
    let look = looks[0]!;
    const trial = (v: ViewGraph, f: FitTarget, wrap: boolean, l = look): Promise<LayoutResult> =>
      wrap ? this.fitted(v, f, l) : client.layout(layoutRequest(v, dir, f, l, this.measure));
    const done = (lay: LayoutResult, f: FitTarget, s: ViewState, v: ViewGraph): Framed => {
      this.target = f;
      this.shown = s;
      this.look = look;
      return { ...lay, state: s, view: v };
    };
    if (!state.auto || relaid) {
      let last: LayoutResult | null = null;
      for (const f of tries) {
        last = await trial(view, f, true);
        if (fitsAt(last, f)) return done(last, f, state, view);
      }
      // a block opened (or playback's step) that does not fit: the others open fold while
      // that makes it fit (unwrapped where that fits, else wrapped: a view that needs no bands
      // reads better); where none fits, for playback every group away from the step folded,
      // where that shows more of the model than the state as asked (Whisper's encoder layer
      // beside the inspector, the decoder one node); the step's starting level too, laid out
      // again for the inspector that opened while the steps ran on (Swin's column at 1280 x
      // 720: its stages away from the step fold; playback gives the level back at its end)
      const around = (reason === "playback" || relaid) && focus !== undefined ? focusCalls(view, focus) : null;
      const accordion = (wrap: boolean) => this.accordion(state, view, (v) => trial(v, fit, wrap), around);
      const tried: Folded[] = [];
      for (const wrap of (reason === "expand" && !state.auto) || around ? [false, true] : []) {
        const f = await accordion(wrap);
        if (f) tried.push(f);
        if (f?.fits) break;
      }
      const shows = (l: LayoutResult) => shownAt(l.width, l.height, fit);
      const most = tried.length ? tried.reduce((a, b) => (better(shows(b.lay), shows(a.lay), 1) ? b : a)) : null;
      let folded = most?.fits || (around && most && better(shows(most.lay), shows(last!), GAIN)) ? most : null;
      // a block opened that nothing makes fit: what is far from it folded where that shows more
      // of the model, the units kept open (the layers the user opened it to click)
      if (!folded && reason === "expand" && !around && !state.auto) {
        const far = await this.accordion(state, view, (v) => trial(v, fit, true), null, false);
        if (far && better(shows(far.lay), shows(last!), GAIN)) folded = far;
        // ... and where the block alone is larger than the canvas at that size, its units
        // too (ResNet-50's Bottleneck opened in a notebook's cell: "conv1 → bn1 → relu" one
        // node, each opening again with a click)
        const within = (c: number) => {
          const box = last!.boxes[clusterKey(at(view.tree.graph.calls, c).id)];
          return !box || fitsAt({ width: box[2], height: box[3] }, fit);
        };
        if (this.shown && !openedSince(view.tree, this.shown, state).every(within)) {
          const least = await this.accordion(state, view, (v) => trial(v, fit, true));
          const best = (folded ?? { lay: last! }).lay;
          if (least && better(shows(least.lay), shows(best), GAIN)) folded = least;
        }
      }
      // playback's step in a group that fits open in no way: drawn on that group folded
      if (!folded?.fits && reason === "playback" && focus !== undefined) {
        const shut = await this.shut(state, view, focus, (v) => trial(v, fit, true));
        // ... or, where nothing fits, that shows more of the model (the demo's U at 1024 px)
        if (shut && (shut.fits || better(shows(shut.lay), shows((folded ?? { lay: last! }).lay), GAIN))) folded = shut;
      }
      // playback's step that fits beside the inspector in no folding of the view's: the
      // deepest starting level that draws it and fits (ResNet-50 in a notebook's cell: its
      // four stages open on the canvas; beside the inspector, folded, its stem is one wide
      // node that keeps the column from wrapping in two)
      if (!folded?.fits && around && focus !== undefined)
        folded = (await this.deepest(view.tree, fit, (v) => trial(v, fit, true), focus)) ?? folded;
      if (folded) return done(folded.lay, fit, folded.state, folded.view);
      // a chosen state (or a level laid out again) gives way to a starting level only for an
      // overview (Present, Data)
      if (!(fresh && (fit.k > READ_K || this.thumbs))) return done(last!, fit, state, view);
    }
    // the deepest level of at most 40 nodes that fits, however many layers (bands wrap them)
    for (look of looks) {
      for (const f of tries) {
        const deepest = await this.deepest(view.tree, f, (v) => trial(v, f, false));
        if (deepest) return done(deepest.lay, f, deepest.state, deepest.view);
      }
    }
    const root = { ...at(levelStates(view.tree), 0), auto: true };
    const v = buildView(view.tree, root);
    const f = at(tries, tries.length - 1);
    // the shallowest, its pictures drawn the way that shows more of it (under the words where
    // it is too wide: CLIP's outputs side by side; beside them where it is too tall)
    const lays = await Promise.all(looks.map((l) => trial(v, f, false, l)));
    const shows = (l: LayoutResult) => shownAt(l.width, l.height, f);
    const i = lays.reduce((b, l, j) => (better(shows(l), shows(at(lays, b)), 1) ? j : b), 0);
    look = at(looks, i);
    return done(at(lays, i), f, root, v);
  }

  /** `v` laid out for `f` as a chosen state is: as it is where it fits, else with every
   * group's sources on its trunk where that shows more (BERT's three embeddings one under the
   * other beside the inspector), or every group's but the root's (its mask then beside the
   * trunk, a row less: BERT's walk at 1024 px), then wrapped as far as that helps
   * (layout/wrapping.ts). */
  private async fitted(v: ViewGraph, f: FitTarget, look: Pictures): Promise<LayoutResult> {
    const { client } = this;
    const layout = (req: LayoutRequest) => client.layout(req);
    const req = layoutRequest(v, this.dir, f, look, this.measure) as LayoutRequest & { fit: FitTarget };
    const lay = await client.layout(req);
    if (fitsAt(lay, f)) return lay;
    const shown = (l: LayoutResult) => shownAt(l.width, l.height, f);
    let best: [typeof req, LayoutResult] = [req, lay];
    for (const inline of [true, "nested"] as const) {
      const narrow = { ...req, inline };
      const lined = await client.layout(narrow);
      if (better(shown(lined), shown(best[1]), 1)) best = [narrow, lined];
      if (fitsAt(lined, f)) break;
    }
    return wrapToFit(best[0], best[1], layout);
  }

  /**
   * Where playback starts, for a canvas `w` wide (beside the inspector at its least): the
   * state on screen where it fits at READ_K (wrapped as a chosen state is), else the same
   * with every sublayer folded (model/parts.ts: "ln_1 → attn" one node) where that fits or
   * shows GAIN more of the model, else the state on screen (the camera follows the step).
   * GPT-2 at 1024x768 shows whole beside the inspector so.
   */
  async playFrom(state: ViewState, tree: CallTree, w: number): Promise<ViewState> {
    const parts = allParts(tree);
    if (parts.size === 0 || [...parts].every((p) => state.parts?.has(p))) return state;
    const fit: FitTarget = { w, h: this.canvas.clientHeight || 600, k: READ_K, reserve: MINIMAP_STRIP };
    const shows = async (s: ViewState) => {
      const { width, height } = await this.fitted(buildView(tree, s), fit, this.look);
      return shownAt(width, height, fit);
    };
    const asIs = await shows(state);
    if (asIs.fits) return state;
    const folded = { ...state, parts };
    return better(await shows(folded), asIs, GAIN) ? folded : state;
  }

  /** The deepest starting level (levelStates) that fits `f` as `layOut` lays it out (and
   * draws the node `key`). */
  private async deepest(
    tree: CallTree,
    f: FitTarget,
    layOut: (v: ViewGraph) => Promise<LayoutResult>,
    key?: string,
  ): Promise<Folded | null> {
    for (const level of levelStates(tree).reverse()) {
      const state = { ...level, auto: true };
      const view = buildView(tree, state);
      if (key !== undefined && !view.byKey.has(key)) continue;
      const lay = await layOut(view);
      if (fitsAt(lay, f)) return { lay, state, view, fits: true };
    }
    return null;
  }

  /**
   * An accordion: a state that opened blocks the last one laid out did not (or that draws
   * `focus`, the calls of playback's step), and that does not fit the canvas, has the other
   * open groups folded one by one (a stack, one "N x" node; a sublayer drawn open, one node:
   * LLaMA's attention opened fits at 1024x768 with "post_attention_layernorm -> mlp" one
   * node), the farthest from what was opened (in call order) first, never one around it,
   * until it fits as `layOut` lays it out (at most MAX_FOLDS tries, then all of them folded).
   * Where even all of them folded does not fit, that state, marked so (`fits` false: playback
   * may take it, lay); null where nothing can fold. Tried unwrapped, then wrapped: ViT's layer
   * opened with its attention fits only wrapped into two bands, once the embeddings fold.
   * `withUnits` false: no block's units fold.
   */
  private async accordion(
    state: ViewState,
    view: ViewGraph,
    layOut: (v: ViewGraph) => Promise<LayoutResult>,
    focus: number[] | null = null,
    withUnits = true,
  ): Promise<Folded | null> {
    const { tree } = view;
    const before = this.shown;
    const opened = focus ?? (before ? openedSince(tree, before, state) : []);
    if (opened.length === 0) return null;
    const up = (c: number) => at(tree.graph.calls, c).parent;
    const around = new Set<number>();
    for (const o of opened) for (let c = o; c >= 0; c = up(c)) around.add(c);
    const far = (c: number) => Math.min(...opened.map((o) => Math.abs(o - c)));
    // what can fold: the groups open (expanded calls), stacks (one "N x" node) and the
    // sublayers drawn open ("post_attention_layernorm -> mlp" one node: model/parts.ts), each
    // by a call of it (its place in call order) and how it folds
    type Fold = { at: number; fold: (s: ViewState) => ViewState; unit?: true };
    const folds: Fold[] = [...state.expanded].map((c) => ({
      at: c,
      fold: (s) => ({ ...s, expanded: new Set([...s.expanded].filter((x) => x !== c)) }),
    }));
    for (const r of state.stacked?.keys() ?? []) {
      const m0 = tree.runs.get(r)?.members[0];
      if (m0 !== undefined)
        folds.push({
          at: m0,
          fold: (s) => ({ ...s, stacked: new Map([...(s.stacked ?? [])].filter(([k]) => k !== r)) }),
        });
    }
    const drawn = new Set(view.nodes.map((n) => n.base ?? n.call));
    const units = new Map<number, string[]>(); // a block's units (model/units.ts) fold together
    for (const part of partsOf(tree).list)
      if (
        (withUnits || !part.unit) &&
        !state.parts?.has(part.key) &&
        part.members.every((m) => drawn.has(m) && !around.has(m))
      ) {
        const block = up(at(part.members, 0));
        if (part.unit) (units.get(block) ?? units.set(block, []).get(block)!).push(part.key);
        else
          folds.push({
            at: at(part.members, 0),
            fold: (s) => ({ ...s, parts: new Set([...(s.parts ?? []), part.key]) }),
          });
      }
    for (const [block, keys] of units)
      folds.push({ at: block, fold: (s) => ({ ...s, parts: new Set([...(s.parts ?? []), ...keys]) }), unit: true });
    // the farthest first; a block's units last (a block opened reads as its layers where it can)
    const others = folds
      .filter((f) => f.unit || !around.has(f.at))
      .sort((a, b) => Number(a.unit ?? 0) - Number(b.unit ?? 0) || far(b.at) - far(a.at));
    if (others.length === 0) return null;
    const least = others.reduce((s, f) => f.fold(s), state);
    const leastView = buildView(tree, least);
    const leastLay = await layOut(leastView);
    const fits = fitsAt(leastLay, this.target!);
    // (for playback the folds are tried still: all of them folded is not always the smallest,
    // a shorter column no longer wrapping: ResNet-50's stem as one node in a notebook's cell)
    if (!fits && !focus) return { lay: leastLay, state: least, view: leastView, fits };
    let s = state;
    let tries = 0;
    for (const f of others) {
      let hidden = false; // inside a group folded already
      for (let p = f.unit ? f.at : up(f.at); p >= 0 && !hidden; p = up(p))
        hidden = !s.expanded.has(p) && state.expanded.has(p);
      if (hidden) continue;
      if (++tries > MAX_FOLDS) break;
      s = f.fold(s);
      const v = buildView(tree, s);
      const lay = await layOut(v);
      if (fitsAt(lay, this.target!)) return { lay, state: s, view: v, fits: true };
    }
    return { lay: leastLay, state: least, view: leastView, fits };
  }

  /** Playback's step in groups that do not fit open beside the inspector, however the
   * others fold (a block of diffusers' U: the U folded is as tall as the canvas): the state
   * with the groups round the step folded, the innermost first, until it fits; the step is
   * then drawn on the one that holds it (model/playback.ts standIn), the whole model in view.
   * Where none fits, the one that shows most of it (`fits` false); null where none folds. */
  private async shut(
    state: ViewState,
    view: ViewGraph,
    focus: string,
    layOut: (v: ViewGraph) => Promise<LayoutResult>,
  ): Promise<Folded | null> {
    const { tree } = view;
    let s = state;
    let best: Folded | null = null;
    const keep = (f: Folded) => {
      const shows = (l: LayoutResult) => shownAt(l.width, l.height, this.target!);
      if (!best || better(shows(f.lay), shows(best.lay), 1)) best = { ...f, fits: false };
    };
    // the view on screen, where it fits and draws the step inside a folded node (the step
    // before was the node that reads the block: ResNet-50's maxpool, layer1 one node)
    const drawn = this.shown && buildView(tree, this.shown);
    if (drawn && !drawn.byKey.has(focus) && view.byKey.has(focus)) {
      const lay = await layOut(drawn);
      if (fitsAt(lay, this.target!)) return { lay, state: this.shown!, view: drawn, fits: true };
    }
    for (const key of [...(view.byKey.get(focus)?.path ?? [])].reverse()) {
      let holder = key.startsWith("c:") ? tree.byId.get(key.slice(2)) : undefined;
      if (holder !== undefined) s = { ...s, expanded: new Set([...s.expanded].filter((c) => c !== holder)) };
      else if (key.startsWith("r:") || key.startsWith("k:")) {
        // a run unfolded, or drawn as a stack: one "N x" node
        const run = key.slice(2);
        holder = tree.runs.get(run)?.members[0];
        const stacked = new Map([...(s.stacked ?? [])].filter(([r]) => r !== run));
        s = { ...s, stacked, unfolded: new Set([...s.unfolded].filter((r) => r !== run)) };
      }
      if (holder === undefined) break;
      const v = buildView(tree, s);
      const lay = await layOut(v);
      if (fitsAt(lay, this.target!)) return { lay, state: s, view: v, fits: true };
      keep({ lay, state: s, view: v, fits: false });
      // ... with the others folded as a step beside the inspector folds them (the start did)
      const f = await this.accordion(s, v, layOut, [holder]);
      if (f?.fits) return f;
      if (f) keep(f);
    }
    return best;
  }
}
