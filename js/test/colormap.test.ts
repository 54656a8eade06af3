import { describe, expect, it } from "vitest";
import { formatParams, formatShape } from "../src/format";
import { applyLut, colorOf, diverging, lut, viridis } from "../src/view/colormap";
import { typeColor, typeHue } from "../src/view/palette";

describe("colormaps", () => {
  it("viridis runs from dark purple to yellow", () => {
    expect(viridis(0)).toEqual([68, 1, 84]);
    expect(viridis(1)).toEqual([253, 231, 37]);
    expect(viridis(-3)).toEqual(viridis(0));
    expect(viridis(NaN)).toEqual(viridis(0));
    const mid = viridis(0.5);
    expect(mid[1]).toBeGreaterThan(mid[0]);
  });

  it("diverging is white at 0, blue below, red above", () => {
    expect(diverging(0)).toEqual([247, 247, 247]);
    const [r1, , b1] = diverging(-1);
    const [r2, , b2] = diverging(1);
    expect(b1).toBeGreaterThan(r1);
    expect(r2).toBeGreaterThan(b2);
  });

  it("signed views centre 0 on white even for an asymmetric range", () => {
    expect(colorOf(0, -1, 3, true)).toEqual([247, 247, 247]);
    // -1 of [-1, 3] is a third of the way to the bluest colour, not the end of the ramp.
    expect(colorOf(-1, -1, 3, true)).not.toEqual(diverging(-1));
    expect(colorOf(3, -1, 3, true)).toEqual(diverging(1));
  });

  it("the lookup table maps byte 0 to vmin and 255 to vmax", () => {
    const t = lut(0, 2, false);
    expect(Array.from(t.slice(0, 4))).toEqual([...viridis(0), 255]);
    expect(Array.from(t.slice(255 * 4))).toEqual([...viridis(1), 255]);
    const signed = lut(-2, 2, true);
    const out = new Uint8ClampedArray(8);
    applyLut(new Uint8Array([0, 255]), signed, out);
    expect(Array.from(out.slice(0, 3))).toEqual(diverging(-1));
    expect(Array.from(out.slice(4, 7))).toEqual(diverging(1));
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
