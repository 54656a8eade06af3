// Attention maps stored as codes (an offline page's "codes": notebook/export.py): decoded to
// the values they stand for, within one step of the code; malformed codes fail by name.
import { describe, expect, it } from "vitest";
import { decodeStageReply } from "../src/wire";

function reply(map: unknown, grid: unknown) {
  return {
    ok: true,
    stage: "h.0.attn",
    summaries: [],
    views: [],
    view: null,
    tokens: null,
    error: null,
    attention: [{ heads: 2, q_len: 2, k_len: 2, pool: [1, 1], source: "sdpa", causal: true, head: null, map, grid }],
  };
}

describe("attention maps as codes", () => {
  it("decodes 16-bit map codes and 8-bit grid codes over [lo, hi], at any byte offset", () => {
    const map = new Uint16Array([65535, 0, 32768, 32767]); // hi, lo, about the middle
    const padded = new Uint8Array(1 + map.byteLength);
    padded.set(new Uint8Array(map.buffer), 1); // an odd offset: no Uint16Array view fits
    const grid = new Uint8Array([255, 0, 51, 204, 255, 0, 0, 255]);
    const r = decodeStageReply(
      reply(
        { shape: [2, 2], buffer: 0, codes: { bits: 16, lo: 0, hi: 0.8 } },
        { shape: [2, 2, 2], buffer: 1, codes: { bits: 8, lo: 0, hi: 1 } },
      ),
      [new DataView(padded.buffer, 1), grid],
    );
    if (!r.ok) throw new Error(r.error);
    const a = r.attention[0]!;
    expect(Array.from(a.map).map((v) => Math.round(v * 1e5) / 1e5)).toEqual([0.8, 0, 0.40001, 0.39999]);
    expect(Array.from(a.grid!).map((v) => Math.round(v * 100) / 100)).toEqual([1, 0, 0.2, 0.8, 1, 0, 0, 1]);
    expect(a.gridShape).toEqual([2, 2, 2]);
  });

  it("decodes signed ranges (A − B) and a range of one value", () => {
    const r = decodeStageReply(
      reply(
        { shape: [2, 2], buffer: 0, codes: { bits: 16, lo: -0.5, hi: 0.5 } },
        { shape: [2, 1, 2], buffer: 1, codes: { bits: 16, lo: 0, hi: 0 } },
      ),
      [
        new Uint8Array(new Uint16Array([0, 65535, 0, 65535]).buffer),
        new Uint8Array(new Uint16Array([0, 0, 0, 0]).buffer),
      ],
    );
    if (!r.ok) throw new Error(r.error);
    expect(Array.from(r.attention[0]!.map)).toEqual([-0.5, 0.5, -0.5, 0.5]);
    expect(Array.from(r.attention[0]!.grid!)).toEqual([0, 0, 0, 0]);
  });

  it("still reads float32 maps without codes, and names what is wrong with bad codes", () => {
    const f32 = new Uint8Array(new Float32Array([0.25, 0.75, 1, 0]).buffer);
    const plain = decodeStageReply(reply({ shape: [2, 2], buffer: 0 }, null), [f32]);
    expect(plain.ok && Array.from(plain.attention[0]!.map)).toEqual([0.25, 0.75, 1, 0]);
    expect(() =>
      decodeStageReply(reply({ shape: [2, 2], buffer: 0, codes: { bits: 12, lo: 0, hi: 1 } }, null), [f32]),
    ).toThrow(/map\.codes: bits=12/);
    expect(() =>
      decodeStageReply(reply({ shape: [2, 2], buffer: 0, codes: { bits: 16, lo: 0, hi: 1 } }, null), [
        new Uint8Array(7),
      ]),
    ).toThrow(/map\.codes: 7 bytes/);
    expect(() =>
      decodeStageReply(reply({ shape: [2, 2], buffer: 0, codes: { bits: 16, lo: 0, hi: 1 } }, null), [
        new Uint8Array(6),
      ]),
    ).toThrow(/map: shape \[2,2\] needs 4 values, buffer has 3/);
  });
});
