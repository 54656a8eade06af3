/**
 * The open groups wrapped for the whole: when a view does not fit its canvas at the scale its
 * names read at, the chains inside its open groups (an opened ConvBlock's six layers, a
 * transformer block's sub-layers, cut after its junctions) are wrapped into bands (bands.ts
 * wrapInto) as far as that shows the whole, or more of it (bands.ts shownAt, better):
 * greedily, each round the one group and band count that gains most, until the whole fits or
 * nothing gains (the camera then shows a part of it, app/viewfinder.ts); a wrap that reaches
 * under the minimap's strip is kept over one that leaves it free only where it shows a fifth
 * more of the model (the minimap parks in a free corner); a group a bus taps takes two bands
 * at most. The root wraps itself
 * for the canvas (bands.ts wrapBands), so the model around an opened group rearranges with
 * it. `lay` runs a request (the worker's client, or computeLayout); the request's groups
 * carry the wraps chosen. Pure but for `lay`.
 */
import { FIT_MARGIN, type FitTarget } from "./flow";
import { BESIDE_WORTH, better, type Shown, shownAt } from "./bands";
import type { LayoutGroup, LayoutRequest, LayoutResult } from "./layout";

const MAX_GROUPS = 8; // the largest open groups are tried
const MAX_WRAP = 4; // bands per group
const MAX_TRIES = 48; // layouts per search
const GAIN = 1.05; // a wrap is kept where it shows the whole, or 5 % more of it

/** The scale at which a layout shows whole on the fit's canvas. */
export function scaleOn(lay: { width: number; height: number }, fit: FitTarget): number {
  return Math.min(
    (fit.w - 2 * FIT_MARGIN) / Math.max(lay.width, 1),
    (fit.h - 2 * FIT_MARGIN) / Math.max(lay.height, 1),
  );
}

/** The open groups of a request, the largest first, each with the most bands it may take: two
 * where a bus taps it (its readers are entered from the side the bus comes from, and a band
 * beyond the second would put a reader behind the bands before it; a transformer block's
 * cross-attention is read in its first half), none where it is entered from outside in its
 * second half too (a U-Net's up block, each ResNet tapped by the timestep, each transformer
 * by the text: a reader in the second band would be tapped through the first). */
function openGroups(root: LayoutGroup): { g: LayoutGroup; most: number }[] {
  const out: { g: LayoutGroup; most: number }[] = [];
  const walk = (g: LayoutGroup) => {
    for (const [i, it] of g.items.entries()) {
      if (!("items" in it)) continue;
      const tapped = g.edges.some((e) => e.hidden && e.dst === i);
      const late = (it.entries ?? []).some((k) => k >= it.items.length / 2);
      if (it.items.length >= 2 && !(tapped && late)) out.push({ g: it, most: tapped ? 2 : MAX_WRAP });
      walk(it);
    }
  };
  walk(root);
  return out.sort((a, b) => b.g.items.length - a.g.items.length).slice(0, MAX_GROUPS);
}

/**
 * `first`: the request laid out as it is. Returns the layout with the wraps that show the
 * whole at the fit's scale, else the most of it there (the request's groups keep them);
 * `first` when none shows more.
 */
export async function wrapToFit(
  req: LayoutRequest & { fit: FitTarget },
  first: LayoutResult,
  lay: (req: LayoutRequest) => Promise<LayoutResult>,
): Promise<LayoutResult> {
  const { fit } = req;
  const groups = openGroups(req.root);
  let best = first;
  let bestShown = shownAt(first.width, first.height, fit);
  let tries = 0;
  while (!bestShown.fits && tries < MAX_TRIES) {
    let pick: { g: LayoutGroup; wrap: number; lay: LayoutResult; shown: Shown } | null = null;
    for (const { g, most } of groups) {
      const was = g.wrap;
      for (let wrap = (was ?? 1) + 1; wrap <= most && tries < MAX_TRIES; wrap++) {
        g.wrap = wrap;
        const got = await lay(req);
        tries++;
        const shown = shownAt(got.width, got.height, fit);
        if (pick ? better(shown, pick.shown, 1, BESIDE_WORTH) : better(shown, bestShown, GAIN, BESIDE_WORTH))
          pick = { g, wrap, lay: got, shown };
      }
      g.wrap = was;
    }
    if (!pick) break;
    pick.g.wrap = pick.wrap;
    best = pick.lay;
    bestShown = pick.shown;
  }
  return best;
}
