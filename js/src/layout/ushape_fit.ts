/**
 * Which arrangement of a U (ushape.ts) the root takes on the canvas: the conditioning's chains
 * side by side beside the encoder (a lower U), one under the other (a narrower one), or above
 * the encoder (narrower still, taller: diffusers' U beside the inspector at 1024 px), a part
 * of it that branches or merges with its sources on its trunk (narrower) or not (aside.ts);
 * without conditioning, the tail risen (narrower, taller). The first that fits the canvas;
 * else one that shows 95 % of itself at the fit's scale, the most (SDXL's U at 1280 px: the
 * rest a few pixels off the edge, not a column of blocks; of those within half a percent of
 * it, the narrowest, clear of the minimap's strip); else of those as high as the
 * canvas, the largest (the inspector beside it gives way: app/viewfinder.ts); else the
 * largest. Flow coordinates; pure, no DOM.
 */
import { FIT_MARGIN, type FitTarget, type FlowGroup, type FlowPlacement } from "./flow";
import { placeU } from "./ushape";

/** The share of a placement a fit shows at its scale: of its width, of its height. */
function shares(p: FlowPlacement, fit: FitTarget, tb: boolean): [number, number] {
  const [w, h] = tb ? [p.ac, p.al] : [p.al, p.ac];
  return [Math.min(1, (fit.w - 2 * FIT_MARGIN) / (w * fit.k)), Math.min(1, (fit.h - 2 * FIT_MARGIN) / (h * fit.k))];
}

/** The U of `g` for a root on the canvas of `fit` (ushape.ts placeU's variants); `u` is
 * placeU(g) (not null). */
export function fittedU(g: FlowGroup, u: FlowPlacement, fit: FitTarget, tb: boolean): FlowPlacement {
  const [st, ab] = ["stacked", "above"] as const;
  const more = [st, ab].flatMap((w) => [placeU(g, w, false, true), placeU(g, w)]);
  const us = [u, ...more, placeU(g, "beside", true)].filter((p): p is FlowPlacement => p !== null);
  const shown = (p: FlowPlacement) => shares(p, fit, tb)[0] * shares(p, fit, tb)[1];
  const scale = (p: FlowPlacement) => fit.k * Math.min(...shares(p, fit, tb));
  const most = (ps: FlowPlacement[], by: (p: FlowPlacement) => number) =>
    ps.reduce((a, b) => (by(b) > by(a) + 1e-9 ? b : a));
  const fits = us.find((p) => shown(p) >= 1 - 1e-9);
  if (fits) return fits;
  // (of those that show as much within a pixel or two, the narrowest: clear of the minimap)
  const best = shown(most(us, shown));
  const near = most(
    us.filter((p) => shown(p) >= best - 0.005),
    (p) => -(tb ? p.ac : p.al),
  );
  if (shown(near) >= 0.95) return near;
  const low = us.filter((p) => shares(p, fit, tb)[1] >= 1 - 1e-9);
  return most(low.length ? low : us, scale);
}
