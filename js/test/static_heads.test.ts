// An exported page answers a head's map it did not bake from the baked mean map's grid (every
// head, pooled to at most 64 × 64), checked against the head maps Python computes
// (tests/fixtures/stage_replies.json: the mean and head 1 of zoo.Attention, 5 tokens).
import { describe, expect, it } from "vitest";
import { bakedSource, headFromGrid } from "../src/static";
import { decodeStageReply, type StageReply } from "../src/wire";
import { loadRaw } from "./fixtures";

const data = loadRaw("stage_replies.json") as {
  cases: { request: { stage: string; head: number | null }; reply: unknown; buffers: string[] }[];
};
const buffers = (c: (typeof data.cases)[number]) => c.buffers.map((b) => new Uint8Array(Buffer.from(b, "base64")));
const [meanCase, head1Case] = data.cases.filter((c) => (c.reply as { attention?: unknown[] }).attention?.length);
const decode = (c: (typeof data.cases)[number]): StageReply => decodeStageReply(c.reply, buffers(c));
const ok = (r: StageReply | null) => {
  if (!r?.ok) throw new Error(`expected a reply: ${r && !r.ok ? r.error : "null"}`);
  return r;
};

describe("a head's map from the page's grid", () => {
  it("equals the head's own map where the grid is exact (5 tokens)", () => {
    const mean = ok(decode(meanCase!));
    const want = ok(decode(head1Case!)).attention[0]!;
    const got = ok(headFromGrid(mean, 1)).attention[0]!;
    expect([got.head, got.pool, got.mapShape, got.window]).toEqual([1, [1, 1], want.mapShape, want.window]);
    expect(got.map.length).toBe(want.map.length);
    for (let i = 0; i < want.map.length; i++) expect(got.map[i]).toBeCloseTo(want.map[i]!, 3);
  });

  it("pools in equal blocks or not at all: 128 positions in 64 pairs, not 197 in 64", () => {
    const mean = ok(decode(meanCase!));
    const a = mean.attention[0]!;
    const [heads] = a.gridShape!;
    const fake = (n: number, g: number): StageReply => ({
      ...mean,
      attention: [
        {
          ...a,
          q_len: n,
          k_len: n,
          window: [0, n, 0, n],
          mapShape: [n, n],
          map: new Float32Array(n * n),
          grid: new Float32Array(heads * g * g).map((_, i) => i),
          gridShape: [heads, g, g],
        },
      ],
    });
    const pairs = ok(headFromGrid(fake(128, 64), 1)).attention[0]!;
    expect([pairs.pool, pairs.mapShape, pairs.map[0]]).toEqual([[2, 2], [64, 64], 64 * 64]);
    expect(headFromGrid(fake(197, 64), 1)).toBeNull();
    expect(headFromGrid(mean, heads)).toBeNull(); // no such head
  });

  it("the page's source says it has the head, and answers it; a head it cannot derive, plainly", async () => {
    const stage = meanCase!.request.stage;
    const fetch = bakedSource({ [stage]: { msg: meanCase!.reply, buffers: buffers(meanCase!) } });
    const req = { stage, view: null, channel: null, head: 1, sample: null };
    const got = ok(await fetch(req)).attention[0]!;
    expect(got.head).toBe(1);
    const none = await fetch({ ...req, head: 99 });
    expect(none.ok).toBe(false);
    if (!none.ok) expect(none.error).toMatch(/head 99 is not in this page/);
  });
});
