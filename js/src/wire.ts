/**
 * The wire format, mirrored once from `neural_flow_widget/wire.py` (its docstring is the
 * reference). This is the only module that reads wire names; everything after it works on
 * the decoded, validated records below. Bump SCHEMA together with the Python side.
 * The graph is here; the stage replies (`_stage_data`) are decoded in wire_reply.ts, whose
 * names this module re-exports, so that every reader imports the mirror from here.
 */
import { fail, intList, isInt, isObj, requireFields, strList, WireError } from "./wire_check";
import { decodeComparison, decodeEnds, type WireComparison, type WireEnd } from "./wire_compare";

export { WireError };
export { decodeComparison, type RunFailure, type StageDiff, type WireComparison, type WireEnd } from "./wire_compare";
export {
  decodeStageReply,
  type AttentionData,
  type Histogram,
  type StageReply,
  type StageRequest,
  type Summary,
  type SummaryStats,
  type RunName,
  type ViewData,
  type WireBuffer,
} from "./wire_reply";

export const SCHEMA = 5;

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
  args: number[]; // per op of `in`: the argument it came in (a list or tuple argument is one)
  state: number; // the argument that is a state the call continues (an RNN cell's), else -1
}

/** A condensed op: [owner call index (-1 = the model's own forward), parent op ids]. */
export type WireOp = [number, number[]];

/** An op where the data of two or more ops meets, and what it does (add, cat, mul, or the
 * function's name; text, never HTML): the junctions of the drawing (model/junctions.ts). */
export type Join = [op: number, what: string];

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
  joins: Join[]; // ops where data meets, and what they do (missing: none)
  selected: number[]; // call indices trace() selected
  initial: number[] | null; // the stages the first view shows (chosen with stages=); null: a readable depth
  attention: number[]; // call indices that recorded attention maps
  stats: ([number, number] | null)[]; // per call: [mean |x|, std] of its first output
  nonfinite: number[]; // calls whose output held NaN or +/-Inf, in return order (first: where it began)
  nonfinite_origin: WireOrigin | null; // the first of them received NaN/Inf in its input: where it was made
  failure: WireFailure | null; // the forward raised: the graph is what ran before it
  notes: string[]; // what the run could not show (e.g. the meta device: no data)
  ends: Record<string, WireEnd>; // inputs / outputs with captured data: they open like stages
  comparison: WireComparison | null; // from the `comparison` traitlet (decodeGraph's second argument)
}

/**
 * Where the NaN / Inf was made that the first `nonfinite` call received in its input (between
 * stages, in a parent's forward: graph/origin.py's NonfiniteOrigin). Every text is the user's
 * code or names: shown as text, never as HTML.
 */
export interface WireOrigin {
  op: string; // the torch function that made it ("torch.Tensor.div")
  module: string; // qualified name of the module whose forward ran it ("": the model itself)
  type: string; // that module's class name
  function: string; // the user's function that called the op ("ConvNet.forward")
  file: string; // its source file's name (no folders)
  line: number; // the line in it (0: unknown)
  text: string; // the op's expression in the source ("": unknown)
  before: number | null; // call index of the call that returned last in that forward before it
  after: number | null; // call index of the call in that forward that received it next
}

/** Why the traced forward raised; the graph holds what ran before. */
export interface WireFailure {
  message: string; // what raised where, with the input shapes (text, never HTML)
  stage: number | null; // call index of the selected stage that was running
  call: number | null; // call index of the innermost call that raised (its module: calls[call].module)
}

/** A stage edge as the topology walk produces it (node ids on both ends). */
export type EdgeKind = "flow" | "skip" | "merge" | "order";
export interface WireEdge {
  src: string;
  dst: string;
  kind: EdgeKind;
}

/** The fields every graph message carries (nullable ones as null), and every call. */
const GRAPH_FIELDS = [
  "schema",
  "model",
  "topology",
  "inputs",
  "outputs",
  "calls",
  "ops",
  "input_ops",
  "output_ops",
  "joins",
  "selected",
  "initial",
  "attention",
  "stats",
  "nonfinite",
  "nonfinite_origin",
  "failure",
  "notes",
  "ends",
] as const;
const CALL_FIELDS = [
  "id",
  "module",
  "type",
  "call",
  "parent",
  "depth",
  "leaf",
  "params",
  "shapes",
  "dtypes",
  "sig",
  "error",
  "in",
  "args",
  "state",
] as const;

/**
 * Validate the graph traitlet (an object or its JSON text) and return it typed, with the
 * `comparison` traitlet (run A against run B; null: none) decoded against its calls. A field
 * missing or of the wrong type is a WireError naming it: nothing is filled in.
 */
export function decodeGraph(raw: unknown, comparison: unknown = null): WireGraph {
  const g = typeof raw === "string" ? (JSON.parse(raw) as unknown) : raw;
  if (!isObj(g)) fail("graph", "expected an object");
  requireFields(g, ["schema"], "graph");
  if (g.schema !== SCHEMA) {
    fail(
      "graph",
      `schema ${String(g.schema)} but this front end reads schema ${SCHEMA}`,
      "rebuild the JS bundle (cd js && npm run build) so that it matches neural_flow_widget/wire.py",
    );
  }
  requireFields(g, GRAPH_FIELDS, "graph");
  if (typeof g.model !== "string") fail("graph.model", "expected a string");
  if (!TOPOLOGIES.includes(g.topology as Topology))
    fail("graph.topology", `unknown topology ${JSON.stringify(g.topology)}`);
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
    requireFields(c, CALL_FIELDS, where);
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
    const args = intList(c.args, `${where}.args`);
    if (args.length !== inOps.length || args.some((a) => a < 0)) {
      fail(`${where}.args`, "expected one argument index (>= 0) per op of `in`");
    }
    if (!isInt(c.state) || c.state < -1) fail(`${where}.state`, "expected an argument index or -1");
    if (!Array.isArray(c.shapes) || !c.shapes.every((s) => Array.isArray(s) && s.every(isInt))) {
      fail(`${where}.shapes`, "expected a list of integer lists");
    }
    if (!isInt(c.call) || c.call < 0) fail(`${where}.call`, "expected an integer >= 0");
    if (!isInt(c.depth) || c.depth < 1) fail(`${where}.depth`, "expected an integer >= 1");
    if (typeof c.leaf !== "boolean") fail(`${where}.leaf`, "expected true or false");
    if (typeof c.params !== "number") fail(`${where}.params`, "expected a number");
    if (typeof c.sig !== "string") fail(`${where}.sig`, "expected a string");
    if (c.error !== null && typeof c.error !== "string") fail(`${where}.error`, "expected a string or null");
    return {
      id: c.id,
      module: c.module,
      type: c.type,
      call: c.call,
      parent: c.parent,
      depth: c.depth,
      leaf: c.leaf,
      params: c.params,
      shapes: c.shapes as number[][],
      dtypes: strList(c.dtypes, `${where}.dtypes`),
      sig: c.sig,
      error: c.error,
      in: inOps,
      args,
      state: c.state,
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
  if (!Array.isArray(g.joins)) fail("graph.joins", "expected a list of [op id, what]");
  const joinList = g.joins.map((j: unknown, i: number): Join => {
    if (!Array.isArray(j) || !isInt(j[0]) || j[0] < 0 || j[0] >= nOps || typeof j[1] !== "string") {
      fail(`graph.joins[${i}]`, `expected [op id, what] with an op id in 0..${nOps - 1}`);
    }
    return [j[0], j[1]];
  });
  if (!Array.isArray(g.stats) || g.stats.length !== nCalls)
    fail("graph.stats", `expected one entry per call (${nCalls})`);
  const stats: unknown[] = g.stats;
  let initial: number[] | null = null;
  if (g.initial !== null) {
    initial = intList(g.initial, "graph.initial");
    const bad = initial.find((c) => c < 0 || c >= nCalls);
    if (bad !== undefined) fail("graph.initial", `call index ${bad} is out of range (0..${nCalls - 1})`);
  }
  const nonfinite = intList(g.nonfinite, "graph.nonfinite");
  if (nonfinite.some((c) => c < 0 || c >= nCalls)) fail("graph.nonfinite", "call index out of range");
  const nonfinite_origin = decodeOrigin(g.nonfinite_origin, nCalls);
  let failure: WireFailure | null = null;
  if (g.failure !== null) {
    const f = g.failure;
    if (!isObj(f)) fail("graph.failure", "expected {message, stage, call} or null");
    requireFields(f, ["message", "stage", "call"], "graph.failure");
    if (typeof f.message !== "string") fail("graph.failure.message", "expected a string");
    const index = (k: "stage" | "call"): number | null => {
      const v = f[k];
      if (v !== null && (!isInt(v) || v < 0 || v >= nCalls)) fail(`graph.failure.${k}`, "call index out of range");
      return v as number | null;
    };
    failure = { message: f.message, stage: index("stage"), call: index("call") };
  }
  return {
    schema: SCHEMA,
    model: g.model,
    topology: g.topology as Topology,
    inputs,
    outputs,
    calls,
    ops,
    input_ops,
    output_ops,
    joins: joinList,
    selected: intList(g.selected, "graph.selected"),
    initial,
    attention: intList(g.attention, "graph.attention"),
    stats: calls.map((_, i) => {
      const s = stats[i];
      return Array.isArray(s) && typeof s[0] === "number" && typeof s[1] === "number" ? [s[0], s[1]] : null;
    }),
    nonfinite,
    nonfinite_origin,
    failure,
    notes: strList(g.notes, "graph.notes"),
    ends: decodeEnds(g.ends, [...inputs, ...outputs]),
    comparison: decodeComparison(comparison, nCalls),
  };
}

/** `graph.nonfinite_origin`: null when there is none. */
function decodeOrigin(o: unknown, nCalls: number): WireOrigin | null {
  if (o === null) return null;
  const where = "graph.nonfinite_origin";
  if (!isObj(o)) fail(where, "expected an object or null");
  requireFields(o, ["op", "module", "type", "function", "file", "line", "text", "before", "after"], where);
  const text = (k: string) => {
    const v = o[k];
    if (typeof v !== "string") fail(`${where}.${k}`, "expected a string");
    return v;
  };
  const call = (k: string) => {
    const v = o[k];
    if (v === null) return null;
    if (!isInt(v) || v < 0 || v >= nCalls) fail(`${where}.${k}`, "call index out of range");
    return v;
  };
  if (!isInt(o.line) || o.line < 0) fail(`${where}.line`, "expected a line number (0: unknown)");
  const line = o.line;
  return {
    op: text("op"),
    module: text("module"),
    type: text("type"),
    function: text("function"),
    file: text("file"),
    line,
    text: text("text"),
    before: call("before"),
    after: call("after"),
  };
}
