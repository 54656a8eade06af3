/**
 * The wire format, mirrored once from `neural_flow_widget/wire.py` (its docstring is the
 * reference). This is the only module that reads wire names; everything after it works on
 * the decoded, validated records below. Bump SCHEMA together with the Python side.
 */

export const SCHEMA = 1;

export type Topology = "dataflow" | "fx" | "sequential";
const TOPOLOGIES: readonly Topology[] = ["dataflow", "fx", "sequential"];

/** One module call of the traced run; its index in `calls` is its "call index". */
export interface WireCall {
  id: string; // stage id: qualified name, or "name#k" for a reused module
  module: string; // qualified module name
  type: string; // class name (text, never HTML)
  call: number; // which call of this module (0-based)
  parent: number; // call index of the enclosing call; -1 = the model itself
  depth: number; // module-tree depth (1 = a child of the model)
  leaf: boolean; // the module has no children
  params: number; // parameters of the module (recursive)
  shapes: number[][]; // output tensor shapes, one per tensor leaf
  dtypes: string[]; // output dtypes, torch names without "torch."
  sig: string; // structure signature: equal for blocks of equal structure
  error: string | null; // why the call (or its summary) failed, else null
  in: number[]; // op ids that produced this call's input tensors
}

/** A condensed op: [owner call index (-1 = the model's own forward), parent op ids]. */
export type WireOp = [number, number[]];

/** The `graph` traitlet. */
export interface WireGraph {
  schema: number;
  model: string; // class name of the traced model
  topology: Topology; // what made the edges
  inputs: string[]; // model input node ids, in argument order
  outputs: string[]; // model output node ids, in output order
  calls: WireCall[];
  ops: WireOp[];
  input_ops: [string, number][]; // which op is each model input
  output_ops: [string, number[]][]; // which ops produced each model output
  selected: number[]; // call indices trace() selected
  initial: number[] | null; // the stages the first view shows (chosen with stages=); null: a readable depth
  attention: number[]; // call indices that recorded attention maps
  stats: ([number, number] | null)[]; // per call: [mean |x|, std] of its first output
}

/** A stage edge as the topology walk produces it (node ids on both ends). */
export type EdgeKind = "flow" | "skip" | "merge";
export interface WireEdge {
  src: string;
  dst: string;
  kind: EdgeKind;
}

export class WireError extends Error {
  override name = "WireError";
}

function fail(where: string, what: string, fix = "re-trace with the matching neural_flow_widget version"): never {
  throw new WireError(`${where}: ${what}; ${fix}`);
}

function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function isInt(x: unknown): x is number {
  return typeof x === "number" && Number.isInteger(x);
}

function intList(x: unknown, where: string): number[] {
  if (!Array.isArray(x) || !x.every(isInt)) fail(where, "expected a list of integers");
  return x as number[];
}

function strList(x: unknown, where: string): string[] {
  if (!Array.isArray(x) || !x.every((s) => typeof s === "string")) fail(where, "expected a list of strings");
  return x as string[];
}

/** Validate the graph traitlet (an object or its JSON text) and return it typed. */
export function decodeGraph(raw: unknown): WireGraph {
  const g = typeof raw === "string" ? (JSON.parse(raw) as unknown) : raw;
  if (!isObj(g)) fail("graph", "expected an object");
  if (g.schema !== SCHEMA) {
    fail(
      "graph",
      `schema ${String(g.schema)} but this front end reads schema ${SCHEMA}`,
      "rebuild the JS bundle (cd js && npm run build) so that it matches neural_flow_widget/wire.py",
    );
  }
  if (!TOPOLOGIES.includes(g.topology as Topology)) fail("graph.topology", `unknown topology ${JSON.stringify(g.topology)}`);
  const inputs = strList(g.inputs, "graph.inputs");
  const outputs = strList(g.outputs, "graph.outputs");
  if (!Array.isArray(g.calls)) fail("graph.calls", "expected a list");
  if (!Array.isArray(g.ops)) fail("graph.ops", "expected a list");
  const nCalls = g.calls.length;
  const nOps = g.ops.length;
  const ids = new Set<string>();
  const calls = g.calls.map((c: unknown, i: number): WireCall => {
    const where = `graph.calls[${i}]`;
    if (!isObj(c)) fail(where, "expected an object");
    if (typeof c.id !== "string" || typeof c.module !== "string" || typeof c.type !== "string") {
      fail(where, "id, module and type must be strings");
    }
    if (ids.has(c.id)) fail(where, `duplicate stage id ${JSON.stringify(c.id)}`);
    ids.add(c.id);
    if (!isInt(c.parent) || c.parent < -1 || c.parent >= i) {
      fail(`${where} (${c.id})`, `parent ${String(c.parent)} must be -1 or an earlier call index`);
    }
    const inOps = intList(c.in, `${where}.in`);
    if (inOps.some((o) => o < 0 || o >= nOps)) fail(`${where}.in`, "op id out of range");
    if (!Array.isArray(c.shapes) || !c.shapes.every((s) => Array.isArray(s) && s.every(isInt))) {
      fail(`${where}.shapes`, "expected a list of integer lists");
    }
    return {
      id: c.id,
      module: c.module,
      type: c.type,
      call: isInt(c.call) ? c.call : 0,
      parent: c.parent,
      depth: isInt(c.depth) ? c.depth : 1,
      leaf: c.leaf === true,
      params: typeof c.params === "number" ? c.params : 0,
      shapes: c.shapes as number[][],
      dtypes: Array.isArray(c.dtypes) ? strList(c.dtypes, `${where}.dtypes`) : [],
      sig: typeof c.sig === "string" ? c.sig : "",
      error: typeof c.error === "string" ? c.error : null,
      in: inOps,
    };
  });
  const ops = g.ops.map((o: unknown, i: number): WireOp => {
    if (!Array.isArray(o) || o.length !== 2 || !isInt(o[0]) || o[0] < -1 || o[0] >= nCalls) {
      fail(`graph.ops[${i}]`, "expected [owner call index, [parent op ids]]");
    }
    const parents = intList(o[1], `graph.ops[${i}][1]`);
    if (parents.some((p) => p < 0 || p >= nOps)) fail(`graph.ops[${i}]`, "parent op id out of range");
    return [o[0], parents];
  });
  if (!Array.isArray(g.input_ops)) fail("graph.input_ops", "expected a list");
  const input_ops = g.input_ops.map((p: unknown, i: number): [string, number] => {
    if (!Array.isArray(p) || typeof p[0] !== "string" || !isInt(p[1]) || p[1] < 0 || p[1] >= nOps) {
      fail(`graph.input_ops[${i}]`, "expected [input id, op id]");
    }
    return [p[0], p[1]];
  });
  if (!Array.isArray(g.output_ops)) fail("graph.output_ops", "expected a list");
  const output_ops = g.output_ops.map((p: unknown, i: number): [string, number[]] => {
    if (!Array.isArray(p) || typeof p[0] !== "string") fail(`graph.output_ops[${i}]`, "expected [output id, [op ids]]");
    const opsOut = intList(p[1], `graph.output_ops[${i}][1]`);
    if (opsOut.some((o) => o < 0 || o >= nOps)) fail(`graph.output_ops[${i}]`, "op id out of range");
    return [p[0], opsOut];
  });
  const stats = Array.isArray(g.stats) ? g.stats : [];
  let initial: number[] | null = null;
  if (g.initial !== null && g.initial !== undefined) {
    initial = intList(g.initial, "graph.initial");
    const bad = initial.find((c) => c < 0 || c >= nCalls);
    if (bad !== undefined) fail("graph.initial", `call index ${bad} is out of range (0..${nCalls - 1})`);
  }
  return {
    schema: SCHEMA,
    model: typeof g.model === "string" ? g.model : "model",
    topology: g.topology as Topology,
    inputs,
    outputs,
    calls,
    ops,
    input_ops,
    output_ops,
    selected: Array.isArray(g.selected) ? intList(g.selected, "graph.selected") : [],
    initial,
    attention: Array.isArray(g.attention) ? intList(g.attention, "graph.attention") : [],
    stats: calls.map((_, i) => {
      const s = stats[i];
      return Array.isArray(s) && typeof s[0] === "number" && typeof s[1] === "number" ? [s[0], s[1]] : null;
    }),
  };
}

// ---------------------------------------------------------------------------------------
// Stage replies (the `_stage_data` command)

/** The request message of `_stage_data`. */
export interface StageRequest {
  stage: string;
  view: string | null;
  channel: number | null;
  head: number | null;
  sample: number | null; // null: the sample the trace captured
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
  hist: Histogram | null;
  values: [number | boolean, number][] | null; // int / bool tensors: [value, count]
  error: string | null;
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
}

export interface AttentionData {
  heads: number;
  q_len: number; // original lengths
  k_len: number;
  pool: [number, number]; // query / key block size of `map`; [1, 1] = exact
  source: string; // "sdpa" | "mha" | "softmax"
  causal: boolean;
  head: number | null; // the head shown in `map`; null = mean over heads
  map: Float32Array; // probabilities, mapShape[0] x mapShape[1]
  mapShape: [number, number];
  grid: Float32Array | null; // every head, each pooled to <= 64 x 64
  gridShape: [number, number, number] | null;
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
    }
  | { ok: false; stage: string; error: string };

/** Buffers as anywidget hands them over (DataView), or as tests and static pages make them. */
export type WireBuffer = ArrayBuffer | ArrayBufferView;

function bytesOf(b: WireBuffer): Uint8Array {
  if (b instanceof ArrayBuffer) return new Uint8Array(b);
  return new Uint8Array(b.buffer as ArrayBuffer, b.byteOffset, b.byteLength);
}

function bufferAt(buffers: WireBuffer[], index: unknown, where: string): Uint8Array {
  if (!isInt(index) || index < 0 || index >= buffers.length) {
    fail(where, `buffer index ${String(index)} but the reply carries ${buffers.length} buffers`, "check encode_stage_reply");
  }
  return bytesOf(buffers[index]);
}

function float64s(bytes: Uint8Array, count: number, where: string): Float64Array {
  if (bytes.byteLength !== count * 8) fail(where, `expected ${count} float64 counts, got ${bytes.byteLength} bytes`, "check encode_stage_reply");
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
  if (!isObj(s)) fail(where, "expected an object", "check encode_stage_reply");
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
    hist,
    values: Array.isArray(s.values) ? (s.values as [number | boolean, number][]) : null,
    error: typeof s.error === "string" ? s.error : null,
  };
}

function decodeView(v: unknown, buffers: WireBuffer[]): ViewData | null {
  if (v === null || v === undefined) return null;
  if (!isObj(v) || typeof v.kind !== "string") fail("reply.view", "expected an object with a kind", "check encode_stage_reply");
  const shape = intList(v.shape, "reply.view.shape");
  const pixels = bufferAt(buffers, v.buffer, "reply.view");
  const expected = shape.reduce((a, b) => a * b, 1);
  if (pixels.byteLength !== expected) {
    fail("reply.view", `shape ${JSON.stringify(shape)} needs ${expected} bytes, buffer has ${pixels.byteLength}`, "check encode_stage_reply");
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
  };
}

function floatsOfShape(spec: unknown, buffers: WireBuffer[], rank: number, where: string): [Float32Array, number[]] {
  if (!isObj(spec)) fail(where, "expected {shape, buffer}", "check encode_stage_reply");
  const shape = intList(spec.shape, `${where}.shape`);
  if (shape.length !== rank) fail(where, `expected a shape of ${rank} sides, got ${JSON.stringify(shape)}`, "check encode_stage_reply");
  const values = float32s(bufferAt(buffers, spec.buffer, where));
  const n = shape.reduce((a, b) => a * b, 1);
  if (values.length !== n) fail(where, `shape ${JSON.stringify(shape)} needs ${n} float32 values, buffer has ${values.length}`, "check encode_stage_reply");
  return [values, shape];
}

function decodeAttention(a: unknown, buffers: WireBuffer[], where: string): AttentionData {
  if (!isObj(a) || !isInt(a.heads) || !isInt(a.q_len) || !isInt(a.k_len)) {
    fail(where, "expected {heads, q_len, k_len, map, grid}", "check encode_stage_reply");
  }
  const [map, mapShape] = floatsOfShape(a.map, buffers, 2, `${where}.map`);
  const grid = a.grid === null || a.grid === undefined ? null : floatsOfShape(a.grid, buffers, 3, `${where}.grid`);
  const pool = Array.isArray(a.pool) && a.pool.length === 2 ? (intList(a.pool, `${where}.pool`) as [number, number]) : ([1, 1] as [number, number]);
  return {
    heads: a.heads,
    q_len: a.q_len,
    k_len: a.k_len,
    pool,
    source: typeof a.source === "string" ? a.source : "",
    causal: a.causal === true,
    head: isInt(a.head) ? a.head : null,
    map,
    mapShape: mapShape as [number, number],
    grid: grid ? grid[0] : null,
    gridShape: grid ? (grid[1] as [number, number, number]) : null,
  };
}

/** Decode a `_stage_data` reply message and its binary buffers. */
export function decodeStageReply(msg: unknown, buffers: WireBuffer[] = []): StageReply {
  if (!isObj(msg)) fail("reply", "expected an object", "check encode_stage_reply");
  const stage = typeof msg.stage === "string" ? msg.stage : "";
  if (msg.ok !== true) {
    return { ok: false, stage, error: typeof msg.error === "string" ? msg.error : "the kernel reported an unknown error" };
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
  };
}
