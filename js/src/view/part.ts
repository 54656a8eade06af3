/**
 * Part of a graph at a readable scale, for when an action's result does not fit whole at it
 * (view/camera.ts showPart): the transform that shows `focus` (the toggled group, the step of
 * playback, the selection) where it is on screen, else moved the least that brings it in (its
 * top left first where it is larger than the canvas), with no more empty canvas beyond the
 * graph's ends than that needs; without a focus, the start of the network. Pure.
 */
import type { Box, Direction } from "../layout/layout";
import type { Transform } from "./zoom";

const MARGIN = 24;

export function partView(
  scene: { width: number; height: number },
  focus: Box | null,
  dir: Direction,
  [W, H]: readonly [number, number],
  from: Transform,
  k: number,
): Transform {
  if (!focus) {
    const tb = dir === "TB";
    const x = tb ? Math.max(MARGIN, (W - scene.width * k) / 2) : MARGIN;
    const y = tb ? MARGIN : Math.max(MARGIN, (H - scene.height * k) / 2);
    return { x, y, k };
  }
  const [fx, fy, fw, fh] = focus;
  // the focus' centre where it is on screen, at the new scale
  let x = from.x + (fx + fw / 2) * (from.k - k);
  let y = from.y + (fy + fh / 2) * (from.k - k);
  // the graph's ends no further in than the margin where it is larger than the canvas
  const ends = (at: number, len: number, size: number) =>
    len * k <= size - 2 * MARGIN ? (size - len * k) / 2 : Math.min(MARGIN, Math.max(size - MARGIN - len * k, at));
  x = ends(x, scene.width, W);
  y = ends(y, scene.height, H);
  // the focus in: the least pan, its top left first where it is larger than the canvas
  const into = (at: number, lo: number, len: number, size: number) => {
    if (at + (lo + len) * k > size - MARGIN) at = size - MARGIN - (lo + len) * k;
    if (at + lo * k < MARGIN) at = MARGIN - lo * k;
    return at;
  };
  return { x: into(x, fx, fw, W), y: into(y, fy, fh, H), k };
}
