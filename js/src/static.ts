/**
 * Static mode for exported HTML files: the same view, with stage data read from replies
 * baked into the file instead of asking a kernel. See js/README.md for the page recipe.
 * A page of a comparison carries it, and run B's replies and A − B for the stages its
 * budget allowed. What was not baked says so, with no Retry: asking again cannot help.
 */
import { FlowApp } from "./app/app";
import {
  type AttentionData,
  decodeStageReply,
  type RunName,
  type StageReply,
  type StageRequest,
  type WireBuffer,
} from "./wire";

/** One baked `_stage_data` exchange; buffers are [offset, length] slices of the blob. */
export interface BakedEntry {
  request: Partial<StageRequest> & { stage: string };
  reply: unknown; // the reply message exactly as the kernel sends it
  buffers: [number, number][];
}

export interface Baked {
  entries: BakedEntry[];
  blob?: ArrayBuffer | Uint8Array | string; // all buffers back to back; a string is base64
}

/** The simpler form: each stage's default reply, buffers already sliced (what notebook/export.py writes). */
export type BakedByStage = Record<string, { msg: unknown; buffers: WireBuffer[] }>;

/** What a page of a comparison carries beside run A's replies: the comparison traitlet, run B's replies and A − B (each by stage). */
export interface BakedRuns {
  comparison: unknown;
  intervention?: unknown; // run B is run A with it (the widget's traitlet)
  patching?: unknown; // activation patching of run A (the widget's traitlet)
  runs?: { b?: BakedByStage; diff?: BakedByStage };
}

/** A source of baked replies: answers, and says beforehand whether it can. */
interface Source {
  fetch(req: StageRequest): Promise<StageReply>;
  has(req: StageRequest): boolean;
}

function blobBytes(blob: Baked["blob"]): Uint8Array {
  if (!blob) return new Uint8Array(0);
  if (typeof blob === "string") {
    const bin = atob(blob);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  return blob instanceof Uint8Array ? blob : new Uint8Array(blob);
}

const keyOf = (r: Partial<StageRequest>) =>
  `${r.stage}|${r.view ?? ""}|${r.channel ?? ""}|${r.head ?? ""}|${r.sample ?? ""}|${r.page ?? ""}${more(r) ? `|${r.of ?? ""}|${r.readout ?? ""}|${r.position ?? ""}` : ""}`;
/** Whether a request asks for more than a stage's output: its gradient, its readout (baked only as asked). */
const more = (r: Partial<StageRequest>) => r.of === "grad" || !!r.readout;
const RUNS: Record<RunName, string> = { a: "This stage's data", b: "Run B of this stage", diff: "A − B of this stage" };

/** The answer for what the page does not carry: plainly why, and no Retry. */
function notSaved(req: StageRequest): StageReply {
  const run = req.run ?? "a";
  const what =
    req.of === "grad"
      ? "This stage's gradient"
      : req.readout
        ? "This stage's readout (the logit lens) at every position"
        : req.view === null && req.head === null && !req.page
          ? RUNS[run]
          : `${run === "a" ? "The" : `${RUNS[run]}: the`} ${req.head !== null ? `map of head ${req.head}` : `${req.view ?? "default"} view${req.channel !== null ? ` of channel ${req.channel}` : ""}${req.page ? ` (page ${req.page + 1})` : ""}`}`;
  return {
    ok: false,
    stage: req.stage,
    retry: false,
    error: `${what} is not in this page: it was over the page's budget, or the page keeps only each stage's first view. Export again with a larger budget_bytes, or open the live widget.`,
  };
}

function entriesSource(baked: Baked | null | undefined): Source {
  const bytes = blobBytes(baked?.blob);
  const byKey = new Map<string, BakedEntry>();
  for (const e of baked?.entries ?? []) {
    const k = keyOf(e.request);
    if (!byKey.has(k)) byKey.set(k, e);
    const stageDefault = `${e.request.stage}|default`;
    if ((e.request.view ?? null) === null && !byKey.has(stageDefault)) byKey.set(stageDefault, e);
  }
  const find = (req: StageRequest) =>
    more(req)
      ? byKey.get(keyOf(req))
      : (byKey.get(keyOf(req)) ??
        byKey.get(keyOf({ stage: req.stage, view: req.view, sample: req.sample, page: req.page })) ??
        (req.view === null ? byKey.get(`${req.stage}|default`) : undefined));
  return {
    has: (req) => (req.run ?? "a") === "a" && find(req) !== undefined,
    async fetch(req) {
      const entry = (req.run ?? "a") === "a" ? find(req) : undefined;
      if (!entry) return notSaved(req);
      const buffers: WireBuffer[] = entry.buffers.map(([off, len]) => bytes.subarray(off, off + len));
      return decodeStageReply(entry.reply, buffers);
    },
  };
}

function sameList(a: unknown, b: readonly number[] | null | undefined): boolean {
  return Array.isArray(a) && !!b && a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Default replies by stage: a request matches the stage's reply when it asks for nothing
 * else (its view kind, channel, the tiles it shows; no other head, no other page).
 */
function byStageSource(replies: BakedByStage | undefined): Source {
  const find = (req: StageRequest) => {
    const r = replies && Object.hasOwn(replies, req.stage) ? replies[req.stage] : undefined;
    if (!r || req.head !== null || req.page || more(req)) return undefined;
    const view = (r.msg as { view?: { kind?: string; channels?: number[] | null } | null }).view ?? null;
    if (req.view !== null && req.view !== view?.kind) return undefined;
    if (req.channel !== null && !(view?.kind === "channel" && view.channels?.[0] === req.channel)) return undefined;
    if (req.channels && !sameList(view?.channels, req.channels)) return undefined;
    return r;
  };
  return {
    has: (req) => find(req) !== undefined,
    async fetch(req) {
      const r = find(req);
      const reply = r ? decodeStageReply(r.msg, r.buffers) : notSaved(req);
      return reply.ok ? reply : { ...reply, retry: false };
    },
  };
}

/** A fetchStage that answers from baked replies (exact request first, then looser matches). */
export function bakedSource(
  input: Baked | BakedByStage | null | undefined,
  runs?: BakedRuns["runs"],
): (req: StageRequest) => Promise<StageReply> {
  const source = sourceOf(input, runs);
  return (req) => source.fetch(req);
}

/**
 * One head's map from a reply of the mean map (head null): each attention call's `grid`
 * holds every head's map, block-mean pooled to at most 64 × 64. Where those blocks are equal
 * runs of the map's positions (a sequence of at most 64 positions: exact; 128: pairs), that
 * is the head's map at the grid's grain, said so by its pool; where they are not (197
 * positions in 64 blocks), null: the page says plainly that this head's map is not in it.
 */
export function headFromGrid(reply: StageReply, head: number): StageReply | null {
  if (!reply.ok || reply.attention.length === 0) return null;
  const attention: AttentionData[] = [];
  for (const a of reply.attention) {
    const [q, k] = a.mapShape;
    const whole = a.window[0] === 0 && a.window[1] === a.q_len && a.window[2] === 0 && a.window[3] === a.k_len;
    if (!a.grid || !a.gridShape || a.head !== null || !whole || head < 0 || head >= a.gridShape[0]) return null;
    const [, gq, gk] = a.gridShape;
    if (q % gq !== 0 || k % gk !== 0) return null;
    const pool: [number, number] = [a.pool[0] * (q / gq), a.pool[1] * (k / gk)];
    attention.push({
      ...a,
      head,
      pool,
      mapShape: [gq, gk],
      map: a.grid.subarray(head * gq * gk, (head + 1) * gq * gk),
    });
  }
  return { ...reply, attention };
}

/** A source that answers a head's map it was not given from the mean map's `grid` it was. */
function withHeads(source: Source): Source {
  const memo = new Map<string, Promise<StageReply | null>>();
  const base = (req: StageRequest): StageRequest | null =>
    req.head === null || source.has(req) || (req.run ?? "a") !== "a" || req.window ? null : { ...req, head: null };
  const derived = (req: StageRequest, from: StageRequest) => {
    const k = `${keyOf(req)}|${req.stage}`;
    let p = memo.get(k);
    if (!p) {
      p = source.fetch(from).then((r) => headFromGrid(r, req.head!));
      memo.set(k, p);
    }
    return p;
  };
  return {
    has: (req) => {
      const from = base(req);
      return from === null ? source.has(req) : source.has(from);
    },
    async fetch(req) {
      const from = base(req);
      if (from === null || !source.has(from)) return source.fetch(req);
      return (
        (await derived(req, from)) ?? {
          ok: false,
          stage: req.stage,
          retry: false,
          error: `The map of head ${req.head} is not in this page on its own. The page keeps the mean over heads, and every head's map pooled to at most 64 × 64 (under "Heads"), whose blocks do not divide this map's positions evenly. The live widget shows head ${req.head}'s full map.`,
        }
      );
    },
  };
}

function sourceOf(input: Baked | BakedByStage | null | undefined, runs?: BakedRuns["runs"]): Source {
  const a = withHeads(
    input && !Array.isArray((input as Baked).entries)
      ? byStageSource(input as BakedByStage)
      : entriesSource(input as Baked | null | undefined),
  );
  const compared = { b: byStageSource(runs?.b), diff: byStageSource(runs?.diff) };
  const pick = (req: StageRequest): Source => (req.run === "b" || req.run === "diff" ? compared[req.run] : a);
  return { has: (req) => pick(req).has(req), fetch: (req) => pick(req).fetch(req) };
}

export interface StaticHandle {
  /** Remove the view and everything it holds. */
  dispose(): void;
  /** The graph as SVG text / PNG, like the toolbar buttons. */
  exportSvg(): string;
  exportPng(): Promise<Blob>;
  /** Select (and inspect) a stage by id. */
  select(id: string | null): void;
}

/**
 * Render the flow view into `el` without a kernel. `baked` is either {stage id: {msg, buffers}}
 * (default replies) or {entries, blob} (any requests, buffers as slices of one blob); `compared`
 * the comparison and run B's and A − B's replies of a page made from a widget with a comparison.
 * The view fills `el` when `el` has a height of its own.
 */
export function renderStatic(
  el: HTMLElement,
  graph: unknown,
  baked?: Baked | BakedByStage | null,
  compared?: BakedRuns | null,
): StaticHandle {
  const source = sourceOf(baked, compared?.runs);
  const fill = el.clientHeight > 0; // measured before the view adds its own height
  const app = new FlowApp(el, { fetchStage: (req) => source.fetch(req), available: (req) => source.has(req) });
  if (fill) app.root.style.setProperty("--nfw-height", "100%");
  app.setGraph(graph, compared?.comparison ?? null, {
    intervention: compared?.intervention,
    patching: compared?.patching,
  });
  return {
    dispose: () => app.dispose(),
    exportSvg: () => app.exportSvg(),
    exportPng: () => app.exportPng(),
    select: (id) => app.selectStage(id, false),
  };
}
