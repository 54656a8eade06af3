import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { formatParams, formatShape } from "../src/model/format";
import {
  applyLut,
  applyNonfinite,
  colorOf,
  cssColor,
  diverging,
  gradientStops,
  lut,
  markCounts,
  NONFINITE_NAMES,
  nonfiniteColor,
  viridis,
  type RGB,
} from "../src/view/colormap";
import { typeColor, typeHue } from "../src/view/palette";
import { loadRaw } from "./fixtures";

const TABLE = JSON.parse(
  readFileSync(fileURLToPath(new URL("../../neural_flow_widget/capture/colormaps.json", import.meta.url)), "utf8"),
) as Record<string, unknown>;
const VIRIDIS = TABLE.viridis as number[][];
const DIVERGING = TABLE.diverging as number[][];

describe("the colormap table shared with Python", () => {
  it("has 256 entries of 3 integers 0..255 per map", () => {
    for (const name of ["viridis", "diverging"]) {
      const map = TABLE[name];
      expect(Array.isArray(map), name).toBe(true);
      expect((map as unknown[]).length, name).toBe(256);
      for (const entry of map as unknown[]) {
        expect(Array.isArray(entry) && entry.length === 3, `${name}: ${JSON.stringify(entry)}`).toBe(true);
        for (const v of entry as unknown[])
          expect(
            Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 255,
            `${name}: ${JSON.stringify(entry)}`,
          ).toBe(true);
      }
    }
  });

  it("is what the bundle's colormaps read (code 0 first)", () => {
    for (let b = 0; b < 256; b++) {
      expect(viridis(b / 255)).toEqual(VIRIDIS[b]);
      expect(diverging((b / 255) * 2 - 1)).toEqual(DIVERGING[b]);
    }
  });
});

interface PythonView {
  name: string;
  kind: string;
  shape: number[];
  vmin: number;
  vmax: number;
  signed: boolean;
  codes: number[];
  rgb: RGB[];
}

describe("colors.json: views coloured by Python's View.to_png()", () => {
  const { views } = loadRaw("colors.json") as { views: PythonView[] };

  it("has a signed (diverging) and an unsigned (viridis) view of a few dozen codes each", () => {
    expect(views.map((v) => v.signed)).toContain(true);
    expect(views.map((v) => v.signed)).toContain(false);
    for (const v of views) {
      expect(v.codes.length, v.name).toBe(v.shape.reduce((a, b) => a * b, 1));
      expect(v.rgb.length, v.name).toBe(v.codes.length);
      expect(new Set(v.codes).size, v.name).toBeGreaterThan(20);
    }
  });

  it.each(views.map((v) => [v.name, v] as const))("%s: lut + applyLut give Python's RGB for every code", (_, v) => {
    const out = new Uint8ClampedArray(v.codes.length * 4);
    applyLut(new Uint8Array(v.codes), lut(v.vmin, v.vmax, v.signed), out);
    const got: number[][] = [];
    for (let i = 0; i < v.codes.length; i++) {
      expect(out[i * 4 + 3]).toBe(255);
      got.push(Array.from(out.slice(i * 4, i * 4 + 3)));
    }
    expect(got).toEqual(v.rgb);
  });
});

describe("colormaps", () => {
  it("viridis runs from dark purple to yellow", () => {
    expect(viridis(0)).toEqual([68, 1, 84]);
    expect(viridis(1)).toEqual([253, 231, 37]);
    expect(viridis(0.5)).toEqual(VIRIDIS[128]);
    expect(viridis(-3)).toEqual(viridis(0));
    expect(viridis(7)).toEqual(viridis(1));
    expect(viridis(NaN)).toEqual(viridis(0));
    const mid = viridis(0.5);
    expect(mid[1]).toBeGreaterThan(mid[0]);
  });

  it("diverging is white at 0, blue below, red above", () => {
    expect(diverging(0)).toEqual(DIVERGING[128]);
    expect(Math.min(...diverging(0))).toBeGreaterThan(240);
    expect(diverging(-1)).toEqual(DIVERGING[0]);
    expect(diverging(1)).toEqual(DIVERGING[255]);
    expect(diverging(-5)).toEqual(diverging(-1));
    const [r1, , b1] = diverging(-1);
    const [r2, , b2] = diverging(1);
    expect(b1).toBeGreaterThan(r1);
    expect(r2).toBeGreaterThan(b2);
  });

  it("returns a fresh colour each call (the table is never handed out)", () => {
    const c = viridis(0);
    c[0] = 0;
    expect(viridis(0)).toEqual([68, 1, 84]);
  });

  it("signed views centre 0 on white even for an asymmetric range", () => {
    expect(colorOf(0, -1, 3, true)).toEqual(diverging(0));
    // -1 of [-1, 3] is a third of the way to the bluest colour, not the end of the ramp.
    expect(colorOf(-1, -1, 3, true)).not.toEqual(diverging(-1));
    expect(colorOf(-1, -1, 3, true)).toEqual(DIVERGING[Math.round(((-1 / 3 + 1) / 2) * 255)]);
    expect(colorOf(3, -1, 3, true)).toEqual(diverging(1));
  });

  it("the lookup table maps byte b to table entry b", () => {
    const t = lut(0, 2, false);
    for (let b = 0; b < 256; b++)
      expect(Array.from(t.slice(b * 4, b * 4 + 4)), `byte ${b}`).toEqual([...VIRIDIS[b]!, 255]);
    const signed = lut(-2, 2, true);
    for (let b = 0; b < 256; b++)
      expect(Array.from(signed.slice(b * 4, b * 4 + 4)), `signed byte ${b}`).toEqual([...DIVERGING[b]!, 255]);
    const out = new Uint8ClampedArray(8);
    applyLut(new Uint8Array([0, 255]), signed, out);
    expect(Array.from(out.slice(0, 4))).toEqual([...diverging(-1), 255]);
    expect(Array.from(out.slice(4, 8))).toEqual([...diverging(1), 255]);
  });

  it("colour bar stops come from the table", () => {
    expect(gradientStops(false, 0, 1, 2)).toBe(
      `${cssColor(VIRIDIS[0] as RGB)} 0%, ${cssColor(VIRIDIS[255] as RGB)} 100%`,
    );
    expect(gradientStops(true, -1, 1, 3)).toBe(
      `${cssColor(DIVERGING[0] as RGB)} 0%, ${cssColor(DIVERGING[128] as RGB)} 50%, ${cssColor(DIVERGING[255] as RGB)} 100%`,
    );
  });

  it("type colours are stable, by family first", () => {
    expect(typeHue("Conv2d")).toBe(typeHue("ConvTranspose2d"));
    expect(typeHue("MultiheadAttention")).not.toBe(typeHue("Linear"));
    expect(typeColor("SomethingCustom")).toBe(typeColor("SomethingCustom"));
  });

  it("formats parameters and shapes", () => {
    expect(formatParams(0)).toBe("");
    expect(formatParams(999)).toBe("999");
    expect(formatParams(1234)).toBe("1.23K");
    expect(formatParams(1_200_000)).toBe("1.2M");
    expect(formatParams(124_439_808)).toBe("124M");
    expect(formatShape([1, 16, 64, 64])).toBe("1×16×64×64");
    expect(formatShape([])).toBe("scalar");
  });
});

describe("NaN and ±Inf: their own colours from the shared table", () => {
  const NF = TABLE.nonfinite as Record<"nan" | "posinf" | "neginf", number[]>;

  it("mark 1 is NaN, 2 +Inf, 3 −Inf, in the colours Python's View.to_png uses", () => {
    expect(nonfiniteColor(1)).toEqual(NF.nan);
    expect(nonfiniteColor(2)).toEqual(NF.posinf);
    expect(nonfiniteColor(3)).toEqual(NF.neginf);
    expect(NONFINITE_NAMES.slice(1)).toEqual(["NaN", "+Inf", "−Inf"]);
    // Outside both ramps: no view colour is mistaken for one of them.
    for (const c of [NF.nan, NF.posinf, NF.neginf]) {
      expect(VIRIDIS.some((v) => v.every((x, i) => Math.abs(x - c[i]!) < 24))).toBe(false);
      expect(DIVERGING.some((v) => v.every((x, i) => Math.abs(x - c[i]!) < 24))).toBe(false);
    }
  });

  it("applyNonfinite paints exactly the marked pixels over the ramp", () => {
    const codes = new Uint8Array([0, 128, 255, 10, 20]);
    const marks = new Uint8Array([0, 1, 0, 2, 3]);
    const out = new Uint8ClampedArray(codes.length * 4);
    const table = lut(0, 1, false);
    applyLut(codes, table, out);
    applyNonfinite(marks, out);
    const px = (i: number) => Array.from(out.slice(i * 4, i * 4 + 4));
    expect(px(0)).toEqual([...VIRIDIS[0]!, 255]);
    expect(px(1)).toEqual([...NF.nan, 255]);
    expect(px(2)).toEqual([...VIRIDIS[255]!, 255]);
    expect(px(3)).toEqual([...NF.posinf, 255]);
    expect(px(4)).toEqual([...NF.neginf, 255]);
    // A tile of a strip: offset into the marks, from the start of dst.
    const tile = new Uint8ClampedArray(8);
    applyNonfinite(marks, tile, 3, 2);
    expect(Array.from(tile)).toEqual([...NF.posinf, 255, ...NF.neginf, 255]);
  });

  it("markCounts: finite, NaN, +Inf, −Inf pixels", () => {
    expect(markCounts(null, 6)).toEqual([6, 0, 0, 0]);
    expect(markCounts(new Uint8Array([0, 1, 1, 3, 0, 0]), 6)).toEqual([3, 2, 0, 1]);
  });
});
