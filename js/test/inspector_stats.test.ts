// The inspector's statistics say plainly how many values are NaN / ±Inf, and show "—" (not
// "NaN") where a statistic has no finite value to come from.
import { describe, expect, it } from "vitest";
import { emptyNote, nonfiniteNote, statRows } from "../src/view/inspector_stats";
import type { Summary, SummaryStats } from "../src/wire";

function summary(stats: Partial<SummaryStats>, extra: Partial<Summary> = {}): Summary {
  return {
    leaf: "0",
    shape: [1, 4, 8, 8],
    dtype: "float32",
    device: "cpu",
    kind: "float",
    numel: 256,
    sampled: null,
    norm: null,
    hist: null,
    values: null,
    error: null,
    shard: null,
    stats: {
      min: -1,
      max: 2,
      mean: 0.1,
      std: 0.5,
      mean_abs: 0.4,
      zero_fraction: 0,
      nan: 0,
      posinf: 0,
      neginf: 0,
      ...stats,
    },
    ...extra,
  };
}

describe("NaN / Inf in the statistics", () => {
  it("all finite: no sentence, no NaN row", () => {
    expect(nonfiniteNote(summary({}))).toBeNull();
    expect(statRows(summary({})).map(([k]) => k)).toEqual(["min / max", "mean ± std", "mean |x|", "zeros"]);
  });

  it("some NaN: how many, of how many, and that the rest are of the finite values", () => {
    const s = summary({ nan: 119 });
    expect(nonfiniteNote(s)).toBe(
      "119 NaN of 256 values (46.5%); the statistics and the histogram are of the finite values.",
    );
    const rows = Object.fromEntries(statRows(s));
    expect(rows["min / max (finite)"]).toBe("-1 / 2");
    expect(rows["NaN / +Inf / −Inf"]).toBe("119 / 0 / 0");
  });

  it("every value NaN: says so, and shows no made-up statistics", () => {
    const s = summary({ min: NaN, max: NaN, mean: NaN, std: NaN, mean_abs: NaN, zero_fraction: NaN, nan: 256 });
    expect(nonfiniteNote(s)).toBe("All 256 values are NaN: there is no finite value to summarise.");
    const rows = Object.fromEntries(statRows(s));
    expect(rows["min / max (finite)"]).toBe("— / —");
    expect(rows["mean |x| (finite)"]).toBe("—");
    expect(rows.zeros).toBe("—");
    expect(JSON.stringify(rows)).not.toMatch(/NaN \/ NaN|"NaN"/);
    expect(emptyNote(s)).toBe("No histogram: no finite values.");
  });

  it("no values at all (the meta device): no rows of dashes, and says why", () => {
    const none = { min: NaN, max: NaN, mean: NaN, std: NaN, mean_abs: NaN, zero_fraction: NaN };
    const meta = summary(none, { device: "meta" });
    expect(statRows(meta)).toEqual([]);
    expect(nonfiniteNote(meta)).toBeNull();
    expect(emptyNote(meta)).toBe("No values: the meta device holds shapes only.");
    expect(emptyNote(summary({}))).toBeNull();
  });

  it("mixed kinds; on an accelerator, counted in the sample", () => {
    expect(nonfiniteNote(summary({ nan: 2, posinf: 1, neginf: 1 }, { numel: 4 }))).toBe(
      "All 4 values are NaN or ±Inf (2 NaN, 1 +Inf, 1 −Inf): there is no finite value to summarise.",
    );
    expect(nonfiniteNote(summary({ posinf: 3 }, { device: "cuda:0", numel: 1_000_000, sampled: 8192 }))).toBe(
      "3 +Inf in a sample of 8,192 values (<0.1%); the statistics and the histogram are of the finite values.",
    );
  });
});
