/**
 * The checks both halves of the wire mirror use (wire.ts for the graph, wire_reply.ts for
 * stage replies): a failed check throws a WireError that says where, what and how to fix it.
 * Also at(), the checked index read the whole front end uses (this is its lowest layer).
 */

export class WireError extends Error {
  override name = "WireError";
}

export function fail(
  where: string,
  what: string,
  fix = "re-trace with the matching neural_flow_widget version",
): never {
  throw new WireError(`${where}: ${what}; ${fix}`);
}

/** What a field must be (wire_schema.ts's FIELDS, generated from the Python definitions):
 * a JSON kind, "|null" when it may be null. */
export type FieldKind = string;

const KIND_WORDS: Record<string, string> = {
  string: "a string",
  int: "an integer",
  number: "a number",
  boolean: "true or false",
  "int[]": "a list of integers",
  "string[]": "a list of strings",
  "int[][]": "a list of integer lists",
  list: "a list",
  object: "an object",
};

function isKind(v: unknown, kind: string, values: readonly string[] | undefined): boolean {
  switch (kind) {
    case "string":
      return typeof v === "string";
    case "int":
      return isInt(v);
    case "number":
      return typeof v === "number";
    case "boolean":
      return typeof v === "boolean";
    case "enum":
      return typeof v === "string" && (values ?? []).includes(v);
    case "int[]":
      return Array.isArray(v) && v.every(isInt);
    case "string[]":
      return Array.isArray(v) && v.every((x) => typeof x === "string");
    case "int[][]":
      return Array.isArray(v) && v.every((x) => Array.isArray(x) && x.every(isInt));
    case "list":
      return Array.isArray(v);
    case "object":
      return isObj(v);
    default:
      throw new Error(`wire_check: unknown field kind ${kind}`);
  }
}

/**
 * Check that `obj` carries every field of `fields` (null is a value: a field that may be null
 * is still sent), each of its kind; fail naming the first that does not. Messages are exact: a
 * missing field is a mismatch, never filled in. `enums`: the values an "enum" field may take.
 */
export function checkFields(
  obj: Record<string, unknown>,
  fields: Readonly<Record<string, FieldKind>>,
  where: string,
  enums: Readonly<Record<string, readonly string[]>> = {},
): void {
  for (const [key, spec] of Object.entries(fields)) {
    if (!(key in obj)) fail(`${where}.${key}`, "missing");
    const v = obj[key];
    const nullable = spec.endsWith("|null");
    const kind = nullable ? spec.slice(0, -"|null".length) : spec;
    if (v === null && nullable) continue;
    if (!isKind(v, kind, enums[key])) {
      const want = kind === "enum" ? `one of ${JSON.stringify(enums[key])}` : KIND_WORDS[kind];
      fail(`${where}.${key}`, `expected ${want}${nullable ? " or null" : ""}, got ${JSON.stringify(v)?.slice(0, 40)}`);
    }
  }
}

export function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

export function isInt(x: unknown): x is number {
  return typeof x === "number" && Number.isInteger(x);
}

export function intList(x: unknown, where: string): number[] {
  if (!Array.isArray(x) || !x.every(isInt)) fail(where, "expected a list of integers");
  return x as number[];
}

export function strList(x: unknown, where: string): string[] {
  if (!Array.isArray(x) || !x.every((s) => typeof s === "string")) fail(where, "expected a list of strings");
  return x as string[];
}

/**
 * `list[i]`, which must be there (noUncheckedIndexedAccess types every index read as maybe
 * undefined): a read out of range is a bug in the caller, and throws saying so instead of
 * handing on undefined.
 */
export function at<T>(list: ArrayLike<T>, i: number): T {
  const x = list[i];
  if (x === undefined) throw new RangeError(`index ${i} out of range (length ${list.length})`);
  return x;
}
