/**
 * The wire format, mirrored from `neural_flow_widget/wire/` (its docstring describes the
 * messages). This is the only module that reads wire names; everything after it works on the
 * decoded, validated records below. The graph message's types and the table of what each of
 * its fields must be are generated from the Python definitions (wire/schema.py) into
 * wire_schema.ts; this module checks a message against that table, then what a table cannot
 * say (call indices in range, parents before children, op ids). Bump SCHEMA with Python's.
 * The stage replies (`_stage_data`) are decoded in wire_reply.ts, whose names this module
 * re-exports, so that every reader imports the mirror from here.
 */
import { checkFields, fail, isObj, WireError } from "./wire_check";
import { decodeComparison, type WireComparison } from "./wire_compare";
import { decodeIntervention, decodePatching, type WireIntervention, type WirePatching } from "./wire_experiments";
import { ENUMS, FIELDS, type GraphMessage, SCHEMA, type WireCall, type WireOrigin } from "./wire_schema";

export { WireError };
export { decodeComparison, type RunFailure, type StageDiff, type WireComparison } from "./wire_compare";
export type { WireIntervention, WirePatching } from "./wire_experiments";
export type { WireCall, WireEnd, WireFailure, WireGradientFlow, WireOrigin } from "./wire_schema";
export {
  decodeStageReply,
  type AttentionData,
  type Histogram,
  type ReadoutData,
  type StageReply,
  type StageRequest,
  type Summary,
  type SummaryStats,
  type RunName,
  type ViewData,
  type WireBuffer,
} from "./wire_reply";

export { SCHEMA };

export type Topology = GraphMessage["topology"];

/** A condensed op: [owner call index (-1 = the model's own forward), parent op ids]. */
export type WireOp = GraphMessage["ops"][number];

/** An op where the data of two or more ops meets, and what it does (add, cat, mul, or the
 * function's name; text, never HTML): the junctions of the drawing (model/junctions.ts). */
export type Join = GraphMessage["joins"][number];

/** The join kinds of an attention: by its function, or written out (softmax(q kᵀ / √d) v,
 * tracing/joins.py join_kinds). */
const ATTENTION_JOINS = new Set(["scaled_dot_product_attention", "attention", "multi_head_attention_forward"]);
export const isAttentionJoin = (what: string) => ATTENTION_JOINS.has(what);

/** The `graph` traitlet, decoded: the message (wire_schema.ts), each call's stats either both
 * finite or null, and the `comparison`, `intervention` and `patching` traitlets decoded
 * against its calls. */
export interface WireGraph extends Omit<GraphMessage, "stats"> {
  stats: ([number, number] | null)[]; // per call: [mean |x|, std] of its first output, or null
  comparison: WireComparison | null; // from the `comparison` traitlet (decodeGraph's second argument)
  intervention: WireIntervention | null; // run B is this run with it (the `intervention` traitlet)
  patching: WirePatching | null; // activation patching of this run (the `patching` traitlet)
}

/** The traitlets read beside `graph` and `comparison` (absent: none). */
export interface Experiments {
  intervention?: unknown;
  patching?: unknown;
}

/** A stage edge as the topology walk produces it (node ids on both ends). */
export type EdgeKind = "flow" | "skip" | "merge" | "order";
export interface WireEdge {
  src: string;
  dst: string;
  kind: EdgeKind;
}

/**
 * Validate the graph traitlet (an object or its JSON text) and return it typed, with the
 * `comparison` traitlet (run A against run B; null: none) and the `intervention` and
 * `patching` traitlets decoded against its calls. A field missing or of the wrong kind is a
 * WireError naming it: nothing is filled in.
 */
export function decodeGraph(raw: unknown, comparison: unknown = null, more: Experiments = {}): WireGraph {
  const g = typeof raw === "string" ? (JSON.parse(raw) as unknown) : raw;
  if (!isObj(g)) fail("graph", "expected an object");
  if (!("schema" in g)) fail("graph.schema", "missing");
  if (g.schema !== SCHEMA) {
    fail(
      "graph",
      `schema ${String(g.schema)} but this front end reads schema ${SCHEMA}`,
      "rebuild the JS bundle (cd js && npm run build) so that it matches neural_flow_widget/wire.py",
    );
  }
  checkFields(g, FIELDS.GraphMessage, "graph", ENUMS);
  const m = g as unknown as GraphMessage; // every field present and of its kind; below, what a table cannot say
  const nCalls = m.calls.length;
  const nOps = m.ops.length;
  const callIndex = (c: number | null, where: string) => {
    if (c !== null && (c < 0 || c >= nCalls)) fail(where, `call index ${c} is out of range (0..${nCalls - 1})`);
  };
  const ids = new Set<string>();
  for (const [i, c] of (m.calls as unknown[]).entries()) {
    const where = `graph.calls[${i}]`;
    if (!isObj(c)) fail(where, "expected an object");
    checkFields(c, FIELDS.WireCall, where);
    const call = c as unknown as WireCall;
    if (ids.has(call.id)) fail(where, `duplicate stage id ${JSON.stringify(call.id)}`);
    ids.add(call.id);
    if (call.parent < -1 || call.parent >= i) {
      fail(`${where} (${call.id})`, `parent ${call.parent} must be -1 or an earlier call index`);
    }
    if (call.in.some((o) => o < 0 || o >= nOps)) fail(`${where}.in`, "op id out of range");
    if (call.args.length !== call.in.length || call.args.some((a) => a < 0)) {
      fail(`${where}.args`, "expected one argument index (>= 0) per op of `in`");
    }
    if (call.state < -1) fail(`${where}.state`, "expected an argument index or -1");
    if (call.call < 0) fail(`${where}.call`, "expected an integer >= 0");
    if (call.depth < 1) fail(`${where}.depth`, "expected an integer >= 1");
  }
  const isOp = (o: unknown) => Number.isInteger(o) && (o as number) >= 0 && (o as number) < nOps;
  for (const [i, o] of (m.ops as unknown[]).entries()) {
    if (!Array.isArray(o) || o.length !== 2 || !Number.isInteger(o[0]) || o[0] < -1 || o[0] >= nCalls) {
      fail(`graph.ops[${i}]`, "expected [owner call index, [parent op ids]]");
    }
    if (!Array.isArray(o[1]) || !o[1].every(isOp)) fail(`graph.ops[${i}]`, "parent op id out of range");
  }
  for (const [i, p] of (m.input_ops as unknown[]).entries()) {
    if (!Array.isArray(p) || typeof p[0] !== "string" || !isOp(p[1]))
      fail(`graph.input_ops[${i}]`, "expected [input id, op id]");
  }
  for (const [i, p] of (m.output_ops as unknown[]).entries()) {
    if (!Array.isArray(p) || typeof p[0] !== "string" || !Array.isArray(p[1])) {
      fail(`graph.output_ops[${i}]`, "expected [output id, [op ids]]");
    }
    if (!p[1].every(isOp)) fail(`graph.output_ops[${i}]`, "op id out of range");
  }
  for (const [i, j] of (m.joins as unknown[]).entries()) {
    if (!Array.isArray(j) || !isOp(j[0]) || typeof j[1] !== "string") {
      fail(`graph.joins[${i}]`, `expected [op id, what] with an op id in 0..${nOps - 1}`);
    }
  }
  for (const [i, o] of (m.operands as unknown[]).entries()) {
    if (!Array.isArray(o) || !isOp(o[0]) || typeof o[1] !== "string") {
      fail(`graph.operands[${i}]`, `expected [op id, parameter name] with an op id in 0..${nOps - 1}`);
    }
  }
  const joinOps = new Set(m.joins.map((j) => j[0]));
  for (const [i, o] of m.leads.entries()) {
    if (!isOp(o) || !joinOps.has(o)) {
      fail(`graph.leads[${i}]`, `expected the op id of a join in 0..${nOps - 1}`);
    }
  }
  if (m.stats.length !== nCalls) fail("graph.stats", `expected one entry per call (${nCalls})`);
  for (const c of m.initial ?? []) callIndex(c, "graph.initial");
  for (const c of m.selected) callIndex(c, "graph.selected");
  for (const c of m.attention) callIndex(c, "graph.attention");
  for (const c of m.nonfinite) callIndex(c, "graph.nonfinite");
  if (m.nonfinite_origin !== null) {
    const where = "graph.nonfinite_origin";
    checkFields(m.nonfinite_origin as unknown as Record<string, unknown>, FIELDS.WireOrigin, where);
    const o: WireOrigin = m.nonfinite_origin;
    if (o.line < 0) fail(`${where}.line`, "expected a line number (0: unknown)");
    callIndex(o.before, `${where}.before`);
    callIndex(o.after, `${where}.after`);
  }
  if (m.failure !== null) {
    checkFields(m.failure as unknown as Record<string, unknown>, FIELDS.WireFailure, "graph.failure");
    callIndex(m.failure.stage, "graph.failure.stage");
    callIndex(m.failure.call, "graph.failure.call");
  }
  checkGradients(m, callIndex);
  const nodes = [...m.inputs, ...m.outputs];
  for (const [node, e] of Object.entries(m.ends as Record<string, unknown>)) {
    const where = `graph.ends.${node}`;
    if (!nodes.includes(node)) fail(where, "is not a model input or output");
    if (!isObj(e)) fail(where, "expected {shape, dtype, reading}");
    checkFields(e, FIELDS.WireEnd, where);
  }
  return {
    ...m,
    schema: SCHEMA,
    stats: m.stats.map((s) =>
      Array.isArray(s) && typeof s[0] === "number" && typeof s[1] === "number" ? [s[0], s[1]] : null,
    ),
    comparison: decodeComparison(comparison, nCalls),
    intervention: decodeIntervention(more.intervention, nCalls),
    patching: decodePatching(more.patching, nCalls),
  };
}

/** What the table cannot say of the gradients and the readouts: one norm per call, call
 * indices in range, a gradient flow's norms one per call, readouts [call, token id, p]. */
function checkGradients(m: GraphMessage, callIndex: (c: number | null, where: string) => void) {
  const nCalls = m.calls.length;
  if (m.grad !== null) {
    if (m.grad.length !== nCalls) fail("graph.grad", `expected one entry per call (${nCalls}) or null`);
    if (!m.grad.every((v) => v === null || typeof v === "number")) fail("graph.grad", "expected numbers or null");
  }
  for (const c of m.nonfinite_grad) callIndex(c, "graph.nonfinite_grad");
  const flow = m.gradient_flow;
  if (flow !== null) {
    checkFields(flow as unknown as Record<string, unknown>, FIELDS.WireGradientFlow, "graph.gradient_flow", ENUMS);
    callIndex(flow.at, "graph.gradient_flow.at");
    for (const c of flow.calls) callIndex(c, "graph.gradient_flow.calls");
    if (flow.norms.length !== flow.calls.length || !flow.norms.every((v) => v === null || typeof v === "number"))
      fail("graph.gradient_flow.norms", "expected one norm (or null) per call of `calls`");
  }
  for (const [i, r] of (m.readouts as unknown[]).entries()) {
    const where = `graph.readouts[${i}]`;
    if (!Array.isArray(r) || r.length !== 3 || !Number.isInteger(r[0]) || !Number.isInteger(r[1]))
      fail(where, "expected [call index, token id, probability]");
    if (typeof r[2] !== "number") fail(where, "expected a probability");
    callIndex(r[0], where);
  }
  for (const [id, name] of Object.entries(m.readout_names as Record<string, unknown>))
    if (typeof name !== "string") fail(`graph.readout_names.${id}`, "expected the token's text");
}
