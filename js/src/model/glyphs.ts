/**
 * The glyphs of junctions (model/junctions.ts): a sign for the arithmetic joins, else the
 * function's name, short; and what each sign says in a legend.
 */
import { isAttentionJoin } from "../wire";

const GLYPHS: Record<string, string> = {
  add: "+",
  sub: "−",
  mul: "×",
  div: "÷",
  cat: "⧺",
  concatenate: "⧺",
  concat: "⧺",
  stack: "⧺",
  matmul: "@",
};
/** What a junction's sign says in a legend. */
const SIGN_WORDS: Record<string, string> = {
  "+": "added",
  "−": "subtracted",
  "×": "multiplied",
  "÷": "divided",
  "⧺": "concatenated",
  "@": "matrix product",
};

/** The legend's entries for the junctions drawn: [sign, what it does], each sign once, in the
 * order above; a junction named by its function (no sign) explains itself. */
export function signsDrawn(junctions: Iterable<{ glyph: string }>): [string, string][] {
  const drawn = new Set([...junctions].map((j) => j.glyph));
  return Object.entries(SIGN_WORDS).filter(([sign]) => drawn.has(sign));
}

/** The glyph of a join: a sign for the arithmetic ones, else the function's name, short. */
export function glyphOf(what: string): string {
  if (isAttentionJoin(what)) return "attention";
  return GLYPHS[what] ?? (what.length > 7 ? `${what.slice(0, 6)}…` : what);
}
