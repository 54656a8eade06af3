/**
 * The inspector's statistics in words: the rows of a summary (statistics of the finite values,
 * "—" where there is none), and a plain sentence of how many values are NaN / ±Inf. DOM-free.
 */
import { formatNumber } from "../model/format";
import type { Summary } from "../wire";

const num = (x: number) => (Number.isFinite(x) ? formatNumber(x) : "—");

function percent(x: number): string {
  return x > 0 && x < 0.001 ? "<0.1%" : `${(x * 100).toFixed(1)}%`;
}

/** [key, value] rows of a summary's statistics; when NaN / Inf are present they say "finite". */
export function statRows(s: Summary): [string, string][] {
  const t = s.stats;
  const bad = t !== null && t.nan + t.posinf + t.neginf > 0;
  if (!t || (!bad && !Number.isFinite(t.min))) return []; // no values at all (the meta device)
  const of = bad ? " (finite)" : "";
  const rows: [string, string][] = [
    [`min / max${of}`, `${num(t.min)} / ${num(t.max)}`],
    [`mean ± std${of}`, `${num(t.mean)} ± ${num(t.std)}`],
    [`mean |x|${of}`, num(t.mean_abs)],
    ["zeros", Number.isFinite(t.zero_fraction) ? `${(t.zero_fraction * 100).toFixed(1)}%` : "—"],
  ];
  if (bad)
    rows.push([
      "NaN / +Inf / −Inf",
      `${t.nan.toLocaleString("en-US")} / ${t.posinf.toLocaleString("en-US")} / ${t.neginf.toLocaleString("en-US")}`,
    ]);
  return rows;
}

/** How many values are not finite, in a sentence; null when all are finite. */
export function nonfiniteNote(s: Summary): string | null {
  const t = s.stats;
  if (!t) return null;
  const bad = t.nan + t.posinf + t.neginf;
  if (!bad) return null;
  const kinds = (
    [
      [t.nan, "NaN"],
      [t.posinf, "+Inf"],
      [t.neginf, "−Inf"],
    ] as const
  ).filter(([n]) => n > 0);
  const what = kinds.map(([n, name]) => `${n.toLocaleString("en-US")} ${name}`).join(", ");
  // On an accelerator the counts come from the summary's sample (the CPU counts exactly).
  const sampled = s.sampled !== null && s.device !== "" && !s.device.startsWith("cpu");
  const total = sampled ? s.sampled : s.numel;
  if (total === null || total <= 0) return `${what} in this output.`;
  const among = sampled
    ? `in a sample of ${total.toLocaleString("en-US")} values`
    : `of ${total.toLocaleString("en-US")} values`;
  if (bad >= total) {
    const [only] = kinds;
    const are = kinds.length === 1 && only ? only[1] : `NaN or ±Inf (${what})`;
    return `All ${total.toLocaleString("en-US")} values are ${are}: there is no finite value to summarise.`;
  }
  return `${what} ${among} (${percent(bad / total)}); the statistics and the histogram are of the finite values.`;
}

/** Why a summary has no histogram to draw, or null when it has one. */
export function emptyNote(s: Summary): string | null {
  const t = s.stats;
  if (!t || Number.isFinite(t.min)) return null;
  if (t.nan + t.posinf + t.neginf > 0) return "No histogram: no finite values.";
  return s.device === "meta" ? "No values: the meta device holds shapes only." : "No values to summarise.";
}
