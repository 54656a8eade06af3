/**
 * Where a run went wrong, for the view: the stages whose output held NaN or ±Inf (the first is
 * where it appeared), the stage that raised, the notes; which visible node shows each (a
 * collapsed group, a fold or a stack carries the marks of what it hides); the banners' words.
 * Pure and DOM-free; every text here is shown as text, never as HTML.
 */
import type { WireFailure, WireGraph, WireOrigin } from "../wire";
import { located } from "./stack";
import type { CallTree } from "./tree";
import { clusterKey, nodeKeyForCall, type Item, type ViewGraph } from "./view_model";
import { at } from "../wire_check";

export interface Problems {
  nonfinite: number[]; // call indices whose output held NaN / ±Inf, in the order they returned
  origin: WireOrigin | null; // the first of them received it in its input: where it was made
  first: number | null; // where NaN / Inf appeared (the first of them)
  failure: WireFailure | null;
  failedStage: number | null; // the stage the failure names (what its banner selects)
  failedCall: number | null; // the innermost call that raised (what carries the mark)
  notes: string[];
  diverges: number | null; // compared with run B: the first stage whose output differs (graph.comparison)
  failedB?: number | null; // compared with run B: the stage (in run A's graph) where run B's forward raised
  nonfiniteGrad?: number[]; // a backward pass: call indices whose gradient held NaN / Inf (the first: where it entered)
  gradient?: { at: number; kind: "vanishing" | "exploding" } | null; // where the gradient vanished or exploded
}

export function problemsOf(graph: WireGraph): Problems {
  const failure = graph.failure;
  const failedCall = failure ? (failure.call ?? failure.stage) : null;
  return {
    nonfinite: graph.nonfinite,
    origin: graph.nonfinite_origin,
    first: graph.nonfinite[0] ?? null,
    failure,
    failedStage: failure ? (failure.stage ?? failedCall) : null,
    failedCall,
    notes: graph.notes,
    diverges: graph.comparison?.first ?? null,
    failedB: graph.comparison?.failed.find((f) => f.run === "b")?.call ?? null,
    nonfiniteGrad: graph.nonfinite_grad,
    gradient:
      graph.gradient_flow && graph.gradient_flow.kind !== "healthy" && graph.gradient_flow.at !== null
        ? { at: graph.gradient_flow.at, kind: graph.gradient_flow.kind }
        : null,
  };
}

/** What a drawn node or group shows of the problems. */
export interface Mark {
  nonfinite: number; // how many of the calls it shows held NaN / Inf (0: none)
  first: boolean; // it shows the call where NaN / Inf appeared
  received?: boolean; // ... and that call received it in its input (made before it: `origin`)
  failed: boolean; // it shows the call that raised
  diverges?: boolean; // it shows the first stage where runs A and B part (a comparison)
  failedB?: boolean; // it shows the stage where a compared run B raised
  nonfiniteGrad?: number; // how many of the calls it shows had NaN / Inf in their gradient
  firstGrad?: boolean; // ... among them the one where it entered the backward pass
  gradient?: "vanishing" | "exploding"; // it shows the stage where the gradient vanished or exploded
}

/**
 * Marks by view key: a call's mark goes to the node that shows it now (itself, its fold, or
 * the collapsed group around it); a call drawn as an open group marks that group (c: key).
 */
export function viewMarks(tree: CallTree, view: ViewGraph, p: Problems): Map<string, Mark> {
  const marks = new Map<string, Mark>();
  const open = new Set<string>(); // the groups drawn open (clusters)
  const walk = (items: Item[]) => {
    for (const it of items) {
      if (it.kind === "cluster") open.add(it.key);
      if (it.kind === "cluster" || it.kind === "run" || it.kind === "stack") walk(it.items);
    }
  };
  walk(view.items);
  const keyOf = (call: number): string | null => {
    const key = nodeKeyForCall(tree, view, call);
    if (key) return key;
    const group = clusterKey(at(tree.graph.calls, call).id);
    if (open.has(group)) return group;
    // in a stack: the group of member 0 standing for it (the member shown), else the stack
    const st = located(tree, call);
    const stack = st && view.stacks.find((s) => s.run === st.run);
    if (!st || !stack) return null;
    const base = clusterKey(at(tree.graph.calls, st.base).id);
    return stack.shown === st.member && open.has(base) ? base : stack.key;
  };
  const markOf = (key: string) => {
    let m = marks.get(key);
    if (!m) {
      m = { nonfinite: 0, first: false, failed: false };
      marks.set(key, m);
    }
    return m;
  };
  for (const c of p.nonfinite) {
    const key = keyOf(c);
    if (!key) continue;
    const m = markOf(key);
    m.nonfinite++;
    if (c === p.first) m.first = true;
    if (c === p.first && p.origin) m.received = true;
  }
  if (p.failedCall !== null) {
    const key = keyOf(p.failedCall);
    if (key) markOf(key).failed = true;
  }
  if (p.diverges !== null && p.diverges !== undefined) {
    const key = keyOf(p.diverges);
    if (key) markOf(key).diverges = true;
  }
  if (p.failedB !== null && p.failedB !== undefined) {
    const key = keyOf(p.failedB);
    if (key) markOf(key).failedB = true;
  }
  for (const [i, c] of (p.nonfiniteGrad ?? []).entries()) {
    const key = keyOf(c);
    if (!key) continue;
    const m = markOf(key);
    m.nonfiniteGrad = (m.nonfiniteGrad ?? 0) + 1;
    if (i === 0) m.firstGrad = true;
  }
  if (p.gradient) {
    const key = keyOf(p.gradient.at);
    if (key) markOf(key).gradient = p.gradient.kind;
  }
  return marks;
}

/** The first line of a text. */
function firstLine(text: string): string {
  const line = text.split("\n").find((l) => l.trim()) ?? "";
  return line.trim();
}

/** The failure banner's words: where, then what (the message without its own "stage '…' raised"). */
export function failureHeadline(graph: WireGraph, p: Problems): { where: string; what: string } | null {
  const f = p.failure;
  if (!f) return null;
  const stage = f.stage !== null ? at(graph.calls, f.stage).id : null;
  let what = firstLine(f.message);
  if (stage !== null && what.startsWith(`stage '${stage}'`)) {
    const cut = what.indexOf(" raised ", stage.length + 8);
    if (cut >= 0) what = what.slice(cut + 8);
  }
  const inner = f.call !== null && f.call !== f.stage ? at(graph.calls, f.call).module : null;
  const where = stage !== null ? (inner ? `${stage} (${inner})` : stage) : (inner ?? "");
  return { where, what };
}

/**
 * The comparison banner's words: where runs A and B part, or that they agree everywhere; null
 * where the failure banners say it all (a run raised at the first divergent stage). Never
 * "agree" when a run raised: a run that stopped cannot equal one that ran on.
 */
export function divergesHeadline(graph: WireGraph): { stage: string | null; text: string; detail: string } | null {
  const c = graph.comparison;
  if (!c) return null;
  const parting = [...c.stages.values()].filter((d) => d.diverges).length;
  const only = c.onlyA.length + c.onlyB.length;
  const ran = only ? ` · ${only} stage${only === 1 ? "" : "s"} ran in one run only` : "";
  const raised = c.failed.length > 0 || graph.failure !== null || [...c.stages.values()].some((d) => d.raised);
  if (c.first === null && raised) return null;
  if (c.first !== null && c.failed.some((f) => f.call === c.first)) return null;
  if (c.first === null)
    return { stage: null, text: "Runs A and B agree at every stage", detail: `relative L2 ≤ ${c.rtol}${ran}` };
  return {
    stage: at(graph.calls, c.first).id,
    text: "Runs part at",
    detail: `${parting} of ${c.stages.size} stages differ (relative L2 > ${c.rtol})${ran}`,
  };
}

/** A piece of a sentence: plain words, a stage id, or the user's code (all shown as text). */
export interface Phrase {
  text: string;
  kind?: "id" | "code";
}

/**
 * Where the first NaN / Inf was made (it came into the first stage that holds it with its
 * input), in the words of graph/origin.py's `NonfiniteOrigin.describe()`, which `flow.to_text()`
 * prints: "produced between block3 and block4, in ConvNet.forward (line 12: x / (x - x))".
 */
export function originPhrases(graph: WireGraph, o: WireOrigin): Phrase[] {
  const id = (c: number | null) => (c === null ? null : at(graph.calls, c).id);
  const before = id(o.before);
  const after = id(o.after);
  const out: Phrase[] = [{ text: "produced" }];
  if (!o.text) out.push({ text: ` by ${o.op}` });
  if (before && after)
    out.push({ text: " between " }, { text: before, kind: "id" }, { text: " and " }, { text: after, kind: "id" });
  else if (after) out.push({ text: " before " }, { text: after, kind: "id" });
  else if (before) out.push({ text: " after " }, { text: before, kind: "id" });
  const fn = o.function || `${o.type}.forward`;
  out.push({ text: ", in " }, { text: fn, kind: "code" });
  if (o.line && o.text) out.push({ text: ` (line ${o.line}: ` }, { text: o.text, kind: "code" }, { text: ")" });
  else if (o.line) out.push({ text: ` (line ${o.line})` });
  if (!fn.startsWith(`${o.type}.`))
    out.push({ text: `, run by ${o.module ? `${o.module} (${o.type})` : o.type}'s forward` });
  return out;
}

/**
 * The NaN / Inf banner's words: "First NaN/Inf at <id>", and how many stages hold any; when
 * that stage received it with its input, where it was made instead ("NaN/Inf produced between
 * …", `origin` its phrases).
 */
export function nonfiniteHeadline(
  graph: WireGraph,
  p: Problems,
): { stage: string; text: string; count: string; origin: Phrase[] | null } | null {
  if (p.first === null) return null;
  const stage = at(graph.calls, p.first).id;
  const n = p.nonfinite.length;
  const count = n > 1 ? `${n} stages hold NaN/Inf` : "the only stage with NaN/Inf";
  if (!p.origin) return { stage, text: `First NaN/Inf at ${stage}`, count, origin: null };
  const origin = originPhrases(graph, p.origin);
  return { stage, text: `NaN/Inf ${origin.map((x) => x.text).join("")}`, count, origin };
}

/**
 * The banner's words for a compared run B whose forward raised: "Run B failed at <stage>"
 * (or "in the model's own forward (…)") and what it raised; `call` is the stage in run A's
 * graph (what the banner's button selects), `message` the whole text. Null: run B ran to the end.
 */
export function runFailureHeadline(
  graph: WireGraph,
): { lead: string; what: string; call: number | null; message: string } | null {
  const f = graph.comparison?.failed.find((r) => r.run === "b");
  if (!f) return null;
  const line = firstLine(f.message);
  const cut = line.indexOf(" raised ");
  const what = cut >= 0 ? line.slice(cut + 8) : line;
  const inner = f.module !== null && f.module !== f.stage ? ` (${f.module})` : "";
  const lead =
    f.stage !== null
      ? `Run B failed at ${f.stage}${inner}`
      : cut >= 0
        ? `Run B failed in ${line.slice(0, cut)}`
        : "Run B failed";
  return { lead, what, call: f.call, message: f.message };
}
