/**
 * The stage replies of the wire format (the `_stage_data` command): the request, the decoded
 * records, and decodeStageReply, which checks the message and resolves its binary buffers.
 * Mirrors `neural_flow_widget/wire/reply.py` (its replies: `encode_reply`); read it through wire.ts.
 */
import { fail, intList, isInt, isObj, strList } from "./wire_check";

/** Which run a request asks for: this one ("a"), the compared one ("b"), or A − B ("diff"). */
export type RunName = "a" | "b" | "diff";

/** The request message of `_stage_data`. */
export interface StageRequest {
  stage: string;
  view: string | null;
  channel: number | null;
  head: number | null;
  sample: number | null; // null: the sample the trace captured
  page?: number | null; // grid views: which page of 16 channels (null: 0)
  channels?: number[] | null; // grid views: these channels instead of a page (B at A's tiles)
  window?: number[] | null; // attention: [q0, q1, k0, k1] positions to zoom into (null: all)
  run?: RunName | null; // null / absent: run A
  of?: "grad" | null; // "grad": the gradient of the loss with respect to the stage's output (null / absent: the output)
  readout?: number | null; // the logit lens: the top k tokens of the stage's residual stream (null / absent: none)
  position?: number | null; // the position the readout reads (null: every position)
}

export interface SummaryStats {
  min: number;
  max: number;
  mean: number;
  std: number;
  mean_abs: number;
  zero_fraction: number;
  nan: number;
  posinf: number;
  neginf: number;
}

export interface Histogram {
  lo: number;
  hi: number;
  bins: number;
  counts: Float64Array; // the float64 buffer
}

export interface Summary {
  leaf: string | null; // which tensor leaf of the output ("0", "logits", ...)
  shape: number[];
  dtype: string;
  device: string;
  kind: "float" | "int" | "bool";
  numel: number | null;
  stats: SummaryStats | null;
  sampled: number | null; // elements used when sampled, else null
  norm: number | null; // the L2 norm over every element (exact): a gradient's; else null
  hist: Histogram | null;
  values: [number | boolean, number][] | null; // int / bool tensors: [value, count]
  error: string | null;
  shard: string | null; // a DTensor's: the whole tensor gathered from its ranks, or this rank's shard
}

export interface ViewData {
  kind: string; // "grid" | "top" | "channel" | "mean" | ...
  shape: number[]; // uint8 layout: [tiles, h, w] or [h, w] or [n]
  vmin: number;
  vmax: number;
  signed: boolean; // diverging colormap centred on 0 when true
  axes: string[];
  labels: string[] | null; // one per tile
  channels: number[] | null; // channel index of each tile
  note: string | null; // how the view was made (e.g. "top 16 channels by mean |x|")
  pixels: Uint8Array;
  nonfinite: Uint8Array | null; // per pixel: 0 finite, 1 NaN, 2 +Inf, 3 -Inf; null: all finite
  palette: "rgb" | "categorical" | null; // null: a ramp; rgb: [h, w, 3] colours; categorical: class codes
  page: number | null; // grid views: this page of `pages` (16 channels each)
  pages: number | null;
  clipped: [number, number] | null; // finite values below vmin / above vmax (end colours)
}

export interface AttentionData {
  heads: number;
  q_len: number; // original lengths
  k_len: number;
  pool: [number, number]; // query / key block size of `map`; [1, 1] = exact
  source: string; // "sdpa" | "mha" | "softmax"
  causal: boolean;
  head: number | null; // the head shown in `map`; null = mean over heads
  window: [number, number, number, number]; // q0, q1, k0, k1: the positions `map` covers
  map: Float32Array; // probabilities, mapShape[0] x mapShape[1] (decoded from codes where a page stored them so)
  mapShape: [number, number];
  grid: Float32Array | null; // every head, each pooled to <= 64 x 64
  gridShape: [number, number, number] | null;
}

/** The logit lens of a stage (a request's `readout`): per position read, the top k tokens. */
export interface ReadoutData {
  k: number;
  position: number | null; // the one position read (null: every position, in order)
  ids: number[][]; // per position, the k token ids, most likely first
  probs: number[][]; // per position, their probabilities
  names: string[][] | null; // per position, the tokens' text (with a tokenizer; text, never HTML)
}

export type StageReply =
  | {
      ok: true;
      stage: string;
      summaries: Summary[];
      views: string[];
      view: ViewData | null;
      attention: AttentionData[];
      tokens: string[] | null; // labels of the query / key positions
      error: string | null;
      run: RunName; // "diff": signed A − B, no summaries
      of: "output" | "grad"; // what the summaries and views are of: the output, or its gradient
      readout: ReadoutData | null; // the logit lens, when asked for
    }
  | { ok: false; stage: string; error: string; retry?: boolean }; // retry false: asking again cannot help

/** Buffers as anywidget hands them over (DataView), or as tests and static pages make them. */
export type WireBuffer = ArrayBuffer | ArrayBufferView;

function bytesOf(b: WireBuffer): Uint8Array {
  if (b instanceof ArrayBuffer) return new Uint8Array(b);
  return new Uint8Array(b.buffer as ArrayBuffer, b.byteOffset, b.byteLength);
}

function bufferAt(buffers: WireBuffer[], index: unknown, where: string): Uint8Array {
  if (!isInt(index) || index < 0 || index >= buffers.length) {
    fail(where, `buffer index ${String(index)} but the reply carries ${buffers.length} buffers`, "check wire/reply.py");
  }
  return bytesOf(buffers[index]!); // in range, checked above
}

function float64s(bytes: Uint8Array, count: number, where: string): Float64Array {
  if (bytes.byteLength !== count * 8)
    fail(where, `expected ${count} float64 counts, got ${bytes.byteLength} bytes`, "check wire/reply.py");
  if (bytes.byteOffset % 8 === 0) return new Float64Array(bytes.buffer, bytes.byteOffset, count);
  return new Float64Array(bytes.slice().buffer);
}

function float32s(bytes: Uint8Array): Float32Array {
  if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
  return new Float32Array(bytes.slice().buffer);
}

function num(x: unknown, fallback = NaN): number {
  return typeof x === "number" ? x : fallback;
}

function decodeSummary(s: unknown, buffers: WireBuffer[], where: string): Summary {
  if (!isObj(s)) fail(where, "expected an object", "check wire/reply.py");
  let hist: Histogram | null = null;
  if (isObj(s.hist)) {
    const bins = isInt(s.hist.bins) ? s.hist.bins : 0;
    hist = {
      lo: num(s.hist.lo),
      hi: num(s.hist.hi),
      bins,
      counts: float64s(bufferAt(buffers, s.hist.buffer, `${where}.hist`), bins, `${where}.hist`),
    };
  }
  let stats: SummaryStats | null = null;
  if (isObj(s.stats)) {
    const t = s.stats;
    stats = {
      min: num(t.min),
      max: num(t.max),
      mean: num(t.mean),
      std: num(t.std),
      mean_abs: num(t.mean_abs),
      zero_fraction: num(t.zero_fraction),
      nan: num(t.nan, 0),
      posinf: num(t.posinf, 0),
      neginf: num(t.neginf, 0),
    };
  }
  const kind = s.kind === "int" || s.kind === "bool" ? s.kind : "float";
  return {
    leaf: typeof s.leaf === "string" ? s.leaf : null,
    shape: Array.isArray(s.shape) ? intList(s.shape, `${where}.shape`) : [],
    dtype: typeof s.dtype === "string" ? s.dtype : "",
    device: typeof s.device === "string" ? s.device : "",
    kind,
    numel: isInt(s.numel) ? s.numel : null,
    stats,
    sampled: isInt(s.sampled) ? s.sampled : null,
    norm: typeof s.norm === "number" ? s.norm : null,
    hist,
    values: Array.isArray(s.values) ? (s.values as [number | boolean, number][]) : null,
    error: typeof s.error === "string" ? s.error : null,
    shard: typeof s.shard === "string" ? s.shard : null,
  };
}

function decodeView(v: unknown, buffers: WireBuffer[]): ViewData | null {
  if (v === null || v === undefined) return null;
  if (!isObj(v) || typeof v.kind !== "string")
    fail("reply.view", "expected an object with a kind", "check wire/reply.py");
  const shape = intList(v.shape, "reply.view.shape");
  const pixels = bufferAt(buffers, v.buffer, "reply.view");
  const expected = shape.reduce((a, b) => a * b, 1);
  if (pixels.byteLength !== expected) {
    fail(
      "reply.view",
      `shape ${JSON.stringify(shape)} needs ${expected} bytes, buffer has ${pixels.byteLength}`,
      "check wire/reply.py",
    );
  }
  let nonfinite: Uint8Array | null = null;
  if (v.nonfinite !== null && v.nonfinite !== undefined) {
    nonfinite = bufferAt(buffers, v.nonfinite, "reply.view.nonfinite");
    if (nonfinite.byteLength !== expected) {
      fail(
        "reply.view.nonfinite",
        `needs ${expected} bytes, buffer has ${nonfinite.byteLength}`,
        "check wire/reply.py",
      );
    }
  }
  return {
    kind: v.kind,
    shape,
    vmin: num(v.vmin, 0),
    vmax: num(v.vmax, 1),
    signed: v.signed === true,
    axes: Array.isArray(v.axes) ? strList(v.axes, "reply.view.axes") : [],
    labels: Array.isArray(v.labels) ? strList(v.labels, "reply.view.labels") : null,
    channels: Array.isArray(v.channels) ? intList(v.channels, "reply.view.channels") : null,
    note: typeof v.note === "string" ? v.note : null,
    pixels,
    nonfinite,
    palette: v.palette === "rgb" || v.palette === "categorical" ? v.palette : null,
    page: isInt(v.page) ? v.page : null,
    pages: isInt(v.pages) ? v.pages : null,
    clipped:
      Array.isArray(v.clipped) && v.clipped.length === 2 && v.clipped.every(isInt)
        ? [v.clipped[0]!, v.clipped[1]!]
        : null,
  };
}

/**
 * The values of a buffer of codes ({"bits": 8 | 16, "lo", "hi"}: little-endian unsigned
 * integers, value = lo + (hi - lo) * code / (2^bits - 1)), as an offline page stores its
 * attention maps (notebook/export.py).
 */
function decodeCodes(bytes: Uint8Array, codes: Record<string, unknown>, where: string): Float32Array {
  const bits = codes.bits;
  if (bits !== 8 && bits !== 16)
    fail(`${where}.codes`, `bits=${String(bits)}: expected 8 or 16`, "check notebook/export.py");
  const lo = num(codes.lo, 0);
  const step = (num(codes.hi, 1) - lo) / (bits === 8 ? 255 : 65535);
  const size = bits / 8;
  if (bytes.byteLength % size)
    fail(
      `${where}.codes`,
      `${bytes.byteLength} bytes is not a whole number of ${bits}-bit codes`,
      "check notebook/export.py",
    );
  const out = new Float32Array(bytes.byteLength / size);
  const data = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < out.length; i++) out[i] = lo + step * (size === 1 ? bytes[i]! : data.getUint16(2 * i, true));
  return out;
}

function floatsOfShape(spec: unknown, buffers: WireBuffer[], rank: number, where: string): [Float32Array, number[]] {
  if (!isObj(spec)) fail(where, "expected {shape, buffer}", "check wire/reply.py");
  const shape = intList(spec.shape, `${where}.shape`);
  if (shape.length !== rank)
    fail(where, `expected a shape of ${rank} sides, got ${JSON.stringify(shape)}`, "check wire/reply.py");
  const bytes = bufferAt(buffers, spec.buffer, where);
  const values = isObj(spec.codes) ? decodeCodes(bytes, spec.codes, where) : float32s(bytes);
  const n = shape.reduce((a, b) => a * b, 1);
  if (values.length !== n)
    fail(where, `shape ${JSON.stringify(shape)} needs ${n} values, buffer has ${values.length}`, "check wire/reply.py");
  return [values, shape];
}

function decodeAttention(a: unknown, buffers: WireBuffer[], where: string): AttentionData {
  if (!isObj(a) || !isInt(a.heads) || !isInt(a.q_len) || !isInt(a.k_len)) {
    fail(where, "expected {heads, q_len, k_len, map, grid}", "check wire/reply.py");
  }
  const [map, mapShape] = floatsOfShape(a.map, buffers, 2, `${where}.map`);
  const grid = a.grid === null || a.grid === undefined ? null : floatsOfShape(a.grid, buffers, 3, `${where}.grid`);
  const pool =
    Array.isArray(a.pool) && a.pool.length === 2
      ? (intList(a.pool, `${where}.pool`) as [number, number])
      : ([1, 1] as [number, number]);
  const window =
    Array.isArray(a.window) && a.window.length === 4
      ? (intList(a.window, `${where}.window`) as [number, number, number, number])
      : ([0, a.q_len, 0, a.k_len] as [number, number, number, number]);
  return {
    heads: a.heads,
    q_len: a.q_len,
    k_len: a.k_len,
    pool,
    source: typeof a.source === "string" ? a.source : "",
    causal: a.causal === true,
    head: isInt(a.head) ? a.head : null,
    window,
    map,
    mapShape: mapShape as [number, number],
    grid: grid ? grid[0] : null,
    gridShape: grid ? (grid[1] as [number, number, number]) : null,
  };
}

function rows<T>(x: unknown, where: string, item: (v: unknown) => v is T): T[][] {
  if (!Array.isArray(x) || !x.every((r) => Array.isArray(r) && r.every(item)))
    fail(where, "expected a list per position", "check wire/reply.py");
  return x as T[][];
}

function decodeReadout(r: unknown): ReadoutData | null {
  if (r === null || r === undefined) return null;
  if (!isObj(r) || !isInt(r.k))
    fail("reply.readout", "expected {k, position, ids, probs, names}", "check wire/reply.py");
  const ids = rows(r.ids, "reply.readout.ids", isInt);
  const probs = rows(r.probs, "reply.readout.probs", (v): v is number => typeof v === "number");
  const names =
    r.names === null || r.names === undefined
      ? null
      : rows(r.names, "reply.readout.names", (v): v is string => typeof v === "string");
  const same = (a: unknown[][]) => a.length === ids.length && a.every((row, i) => row.length === ids[i]!.length);
  if (!same(probs) || (names && !same(names)))
    fail("reply.readout", "ids, probs and names must have the same shape", "check wire/reply.py");
  return { k: r.k, position: isInt(r.position) ? r.position : null, ids, probs, names };
}

/** Decode a `_stage_data` reply message and its binary buffers. */
export function decodeStageReply(msg: unknown, buffers: WireBuffer[] = []): StageReply {
  if (!isObj(msg)) fail("reply", "expected an object", "check wire/reply.py");
  const stage = typeof msg.stage === "string" ? msg.stage : "";
  if (msg.ok !== true) {
    return {
      ok: false,
      stage,
      error: typeof msg.error === "string" ? msg.error : "the kernel reported an unknown error",
    };
  }
  const summaries = Array.isArray(msg.summaries)
    ? msg.summaries.map((s: unknown, i: number) => decodeSummary(s, buffers, `reply.summaries[${i}]`))
    : [];
  return {
    ok: true,
    stage,
    summaries,
    views: Array.isArray(msg.views) ? strList(msg.views, "reply.views") : [],
    view: decodeView(msg.view, buffers),
    attention: Array.isArray(msg.attention)
      ? msg.attention.map((a: unknown, i: number) => decodeAttention(a, buffers, `reply.attention[${i}]`))
      : [],
    tokens: Array.isArray(msg.tokens) ? msg.tokens.map((t) => String(t)) : null,
    error: typeof msg.error === "string" ? msg.error : null,
    run: msg.run === "diff" ? "diff" : msg.run === "b" ? "b" : "a",
    of: msg.of === "grad" ? "grad" : "output",
    readout: decodeReadout(msg.readout),
  };
}
