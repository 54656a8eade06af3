/** Small text formatters shared by the scene, the inspector and the export. */

/** 1234 -> "1.2K", 1234567 -> "1.2M"; 0 -> "". */
export function formatParams(n: number): string {
  if (!n) return "";
  const units: [number, string][] = [
    [1e12, "T"],
    [1e9, "B"],
    [1e6, "M"],
    [1e3, "K"],
  ];
  for (const [v, u] of units) {
    if (Math.abs(n) >= v) {
      const x = n / v;
      return `${x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1).replace(/\.0$/, "") : x.toFixed(2).replace(/\.?0+$/, "")}${u}`;
    }
  }
  return String(n);
}

/** [1, 16, 64, 64] -> "1×16×64×64"; missing -> "". */
export function formatShape(shape: number[] | undefined): string {
  return shape ? (shape.length ? shape.join("×") : "scalar") : "";
}

/** A statistic for a table cell: 4 significant digits, exponent when very small or large. */
export function formatNumber(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e5 || a < 1e-3) return x.toExponential(2);
  return Number(x.toPrecision(4)).toString();
}

/** A token's text with its spaces made visible (a leading space matters) and newlines shown. */
export function visible(token: string): string {
  return token.replace(/^ +| +$/g, (m) => "␣".repeat(m.length)).replace(/\n/g, "↵");
}
