/**
 * Static mode for exported HTML files: the same view, with stage data read from replies
 * baked into the file instead of asking a kernel. See js/README.md for the page recipe.
 */
import { FlowApp } from "./app/app";
import { decodeStageReply, type StageReply, type StageRequest, type WireBuffer } from "./wire";

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

const keyOf = (r: Partial<StageRequest>) => `${r.stage}|${r.view ?? ""}|${r.channel ?? ""}|${r.head ?? ""}|${r.sample ?? ""}`;

/** A fetchStage that answers from baked replies (exact request first, then looser matches). */
export function bakedSource(input: Baked | BakedByStage | null | undefined): (req: StageRequest) => Promise<StageReply> {
  if (input && !Array.isArray((input as Baked).entries)) return byStageSource(input as BakedByStage);
  const baked = input as Baked | null | undefined;
  const bytes = blobBytes(baked?.blob);
  const byKey = new Map<string, BakedEntry>();
  for (const e of baked?.entries ?? []) {
    const k = keyOf(e.request);
    if (!byKey.has(k)) byKey.set(k, e);
    const stageDefault = `${e.request.stage}|default`;
    if ((e.request.view ?? null) === null && !byKey.has(stageDefault)) byKey.set(stageDefault, e);
  }
  return async (req) => {
    const entry =
      byKey.get(keyOf(req)) ??
      byKey.get(keyOf({ stage: req.stage, view: req.view, sample: req.sample })) ??
      (req.view === null ? byKey.get(`${req.stage}|default`) : undefined);
    if (!entry) return notSaved(req);
    const buffers: WireBuffer[] = entry.buffers.map(([off, len]) => bytes.subarray(off, off + len));
    return decodeStageReply(entry.reply, buffers);
  };
}

function notSaved(req: StageRequest): StageReply {
  const what = req.view === null && req.head === null ? "this stage" : req.view !== null ? `the ${req.view} view${req.channel !== null ? ` of channel ${req.channel}` : ""}` : `head ${req.head}`;
  return { ok: false, stage: req.stage, error: `${what} was not saved in this exported file; export again with it included, or open the live widget.` };
}

function byStageSource(replies: BakedByStage): (req: StageRequest) => Promise<StageReply> {
  return async (req) => {
    const r = Object.prototype.hasOwnProperty.call(replies, req.stage) ? replies[req.stage] : undefined;
    if (!r || req.view !== null || req.channel !== null || req.head !== null) return notSaved(req);
    return decodeStageReply(r.msg, r.buffers);
  };
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
 * (default replies) or {entries, blob} (any requests, buffers as slices of one blob).
 * The view fills `el` when `el` has a height of its own.
 */
export function renderStatic(el: HTMLElement, graph: unknown, baked?: Baked | BakedByStage | null): StaticHandle {
  const fetch = bakedSource(baked);
  const fill = el.clientHeight > 0; // measured before the view adds its own height
  const app = new FlowApp(el, { fetchStage: (req) => fetch(req) });
  if (fill) app.root.style.setProperty("--nfw-height", "100%");
  app.setGraph(graph);
  return {
    dispose: () => app.dispose(),
    exportSvg: () => app.exportSvg(),
    exportPng: () => app.exportPng(),
    select: (id) => app.selectStage(id, false),
  };
}
