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

/** Fail naming the first of `keys` that `obj` lacks (null is a value: a field that may be null
 * is still sent). Messages are exact: a missing field is a mismatch, never filled in. */
export function requireFields(obj: Record<string, unknown>, keys: readonly string[], where: string): void {
  for (const k of keys) if (!(k in obj)) fail(`${where}.${k}`, "missing");
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
