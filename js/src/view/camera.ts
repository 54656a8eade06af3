/**
 * Where the view looks: the first view of a graph, the whole graph after each action that
 * changes it (clear of the overlays on the canvas: the legend), centring on a node, keeping a
 * toggled group in place. Pan and zoom themselves are PanZoom's; this decides the transforms.
 */
import type { Box, Direction } from "../layout/layout";
import { MINIMAP_STRIP, READ_K } from "../scene/scene";
import type { Scene } from "../scene/types";
import { marksOf, wiresOf } from "./marks";
import { partView } from "./part";
import { CLEAR_WORTH, chooseShape, placeWhole, union } from "./whole";
import { MIN_K, PanZoom, type Transform } from "./zoom";

const MARGIN = 24;
/** The margin of a whole view that fits only so (Camera.whole): none, its core centred. */
const TIGHT_MARGIN = 0;
/** The largest scale a whole view uses (more when names must be larger: presentation mode). */
const MAX_FIT_K = 1.2;
/** The least scale of a whole view after an action (open, fold, Play, Data, Present, Esc, the
 * inspector closing): names 12 px high. Where the whole, wrapped as far as it goes, does not
 * fit, the camera shows part of it at that scale (showPart), the minimap's note the rest. */
export const LEAST_K = READ_K;
/** A whole view clear of the overlays is taken over a larger one that is not, down to
 * CLEAR_WORTH of its scale (view/whole.ts); in a presentation, where the type's size comes
 * first, down to this. */
const PRESENT_CLEAR_WORTH = 0.99;

/** What a resize keeps in view: the selected node (or the step of playback) and its neighbours. */
type Keep = { box: Box; around: Box[] };

export class Camera {
  readonly zoom: PanZoom;
  /** The next painted scene gets a first view (a new graph, a direction, reset). */
  needsFit = true;
  /** The least scale at which names read (MIN_NAME_PX high); more in presentation mode. */
  readK = READ_K;
  /** The view shows the whole graph because the camera put it there and the user has not
   * moved it since: when the canvas changes size or an overlay grows, it is framed again.
   * Set it to have the next resize frame the whole graph (the inspector closing). */
  framed = false;
  /** The least scale of a whole view after an action. */
  readonly least = LEAST_K;
  /** The legend's shape chosen for a whole view (an index into setLegend's shapes): its
   * owner draws the legend so (view/legend_shapes.ts). */
  onLegendShape: (shape: number) => void = () => {};
  private part: Transform | null = null; // what showPart last showed
  private shapes: Box[] = [];
  private shape = 0; // the shape the last whole view was placed beside

  constructor(
    private readonly surface: HTMLElement,
    onChange: (t: Transform) => void,
    onWheelHint: () => void,
  ) {
    this.zoom = new PanZoom(surface, onChange, onWheelHint);
    this.zoom.onUser = () => (this.framed = false);
  }

  get t(): Transform {
    return this.zoom.t;
  }

  get attached(): boolean {
    return this.zoom.measured || this.surface.clientWidth > 0;
  }

  /** The largest scale of a whole view. */
  get maxK(): number {
    return Math.max(MAX_FIT_K, this.readK);
  }

  viewport(): [number, number, number, number] {
    return this.zoom.viewport();
  }

  /** The legend over the canvas nodes are kept from under: its box (canvas px) in each shape
   * it can take, in order of preference (none: no legend); whether they changed. */
  setLegend(shapes: Box[]): boolean {
    const same =
      shapes.length === this.shapes.length &&
      shapes.every((b, i) => b.every((v, j) => Math.abs(v - this.shapes[i]![j]!) < 0.5)); // same lengths, checked
    this.shapes = shapes;
    if (this.shape >= shapes.length) this.shape = 0;
    return !same;
  }

  /** The transform of the whole graph in view, clear of the legend where it can be (in the
   * legend's shape that leaves it largest and nearest the middle, view/whole.ts chooseShape), at
   * a scale of `least` or more, its core within the margins or, where only so, within
   * the canvas's edges; and that shape; null when it does not fit at `least`. */
  whole(scene: Scene, least = this.least): { t: Transform; shape: number } | null {
    const [w, h] = this.zoom.dims();
    const worth = this.readK > READ_K ? PRESENT_CLEAR_WORTH : CLEAR_WORTH;
    const marks = marksOf(scene);
    const wires = this.shapes.length ? wiresOf(scene) : [];
    const core = scene.core ?? (marks.length ? union(marks) : ([0, 0, scene.width, scene.height] as Box));
    // (within the margins, else to the canvas's edges rather than in part: Stable
    // Diffusion's U with data in Present at 1024 px, 1,017 px wide at names 12 px high)
    for (const margin of [undefined, TIGHT_MARGIN]) {
      const placed = (this.shapes.length ? this.shapes : [null]).map((o) =>
        placeWhole(
          marks,
          scene.width,
          scene.height,
          { w, h, overlays: o ? [o] : [], margin },
          this.maxK,
          least,
          worth,
          scene.core,
          wires,
        ),
      );
      const i = chooseShape(placed, core, w, h, worth, this.shape);
      if (i >= 0) return { t: placed[i]!.t, shape: i };
    }
    return null;
  }

  /** Show the whole graph when it fits at `least` or more; whether it did. */
  showWhole(scene: Scene, least = this.least, ms = 280): boolean {
    if (!this.attached) return false;
    const placed = this.whole(scene, least);
    if (!placed) return false;
    this.shape = placed.shape;
    this.onLegendShape(placed.shape);
    this.needsFit = false;
    this.framed = true;
    this.zoom.animateTo(placed.t, ms);
    return true;
  }

  /** The whole graph in view, however small (the Fit button, F). */
  fit(scene: Scene, ms = 280) {
    if (!this.attached) return; // not in the page yet: the resize observer fits later
    this.showWhole(scene, MIN_K, ms);
  }

  /**
   * The first view: the whole graph when it fits with its names at scale `least` or more
   * (READ_K: names MIN_NAME_PX high; the layout was wrapped and its depth chosen for this,
   * app/framing.ts); else those names at the readable scale from the start of the network
   * (top left), the minimap's strip left free: READ_K while presenting too (a model that fits
   * at neither size shows more of itself so than a part at the larger type).
   */
  firstView(scene: Scene, dir: Direction, least = READ_K) {
    if (!this.attached) return;
    if (this.showWhole(scene, least, 0)) return;
    this.needsFit = false;
    this.framed = false;
    const [W, H] = this.zoom.dims();
    const k = READ_K;
    const tb = dir === "TB";
    const x = tb ? Math.max(MARGIN, (W - MINIMAP_STRIP - scene.width * k) / 2) : MARGIN;
    const y = tb ? MARGIN : Math.max(MARGIN, (H - MINIMAP_STRIP * 0.7 - scene.height * k) / 2);
    this.part = { x, y, k };
    this.zoom.set(this.part);
  }

  /** Part of the graph at the readable scale (or at `k`), after an action whose result does
   * not fit whole at it, around `focus` (view/part.ts); the view is then `parted` until it
   * moves otherwise. */
  showPart(scene: Scene, focus: Box | null, dir: Direction, ms = 260, k = this.readK) {
    if (!this.attached) return;
    this.needsFit = false;
    this.framed = false;
    this.part = partView(scene, focus, dir, this.zoom.dims(), this.zoom.target, k);
    this.zoom.animateTo(this.part, ms);
  }

  /** Whether the view is the part an action showed (the whole did not fit), not moved since. */
  get parted(): boolean {
    const [p, t] = [this.part, this.zoom.target];
    return p !== null && Math.abs(p.x - t.x) < 0.5 && Math.abs(p.y - t.y) < 0.5 && Math.abs(p.k - t.k) < 1e-6;
  }

  centerOn(x: number, y: number, ms = 250, k = this.zoom.target.k) {
    const [W, H] = this.zoom.dims();
    this.framed = false;
    this.zoom.animateTo({ x: W / 2 - x * k, y: H / 2 - y * k, k }, ms);
  }

  /** Bring a box wholly into view when it is not (where the view is going): the least pan
   * that does it when it fits at this scale (the view does not jump), else centred at a
   * readable scale. */
  ensureVisible(box: Box, minK = 0.6, ms = 250) {
    const to = this.zoom.target;
    if (this.inView(box, to)) return;
    const [x, y, w, h] = box;
    const { k } = to;
    const [W, H] = this.zoom.dims();
    if (k < minK || w * k > W - 2 * MARGIN || h * k > H - 2 * MARGIN) {
      this.centerOn(x + w / 2, y + h / 2, ms, Math.max(k, minK));
      return;
    }
    const pan = (at: number, lo: number, len: number, size: number) => {
      const s0 = at + lo * k;
      if (s0 < MARGIN) return at + MARGIN - s0;
      if (s0 + len * k > size - MARGIN) return at - (s0 + len * k - (size - MARGIN));
      return at;
    };
    this.framed = false;
    this.zoom.animateTo({ x: pan(to.x, x, w, W), y: pan(to.y, y, h, H), k }, ms);
  }

  /** A node in view with its neighbours (`around`) when they fit beside it at this scale,
   * else the node alone (see ensureVisible). */
  keepInView(box: Box, around: readonly Box[], minK = this.readK, ms = 250) {
    const all = union([box, ...around]);
    const { k } = this.zoom.target;
    const [W, H] = this.zoom.dims();
    const fits = all[2] * k <= W - 2 * MARGIN && all[3] * k <= H - 2 * MARGIN && k >= minK - 1e-6;
    this.ensureVisible(fits ? all : box, minK, ms);
  }

  /** After the canvas changed size (the inspector, the transport bar, the page) or an overlay
   * did: the whole graph again when the camera had framed it (or it was in view, or the part
   * an action showed) and it fits at `least`, else the part around `keep` (the selection) at
   * the readable scale; else
   * the centre kept, and `keep` (the selected node and its neighbours) in view. */
  resized(scene: Scene, grew: number, wasWhole: boolean, keep: Keep | null, dir: Direction, ms = 200) {
    const whole = this.framed || wasWhole || this.parted;
    if (whole && this.showWhole(scene, this.least, ms)) return;
    this.framed = false;
    // the whole no longer fits: as much of it as the readable scale shows, the selection in it
    if (whole) return this.showPart(scene, keep?.box ?? null, dir, ms, Math.min(this.zoom.target.k, this.readK));
    if (grew) this.zoom.set({ ...this.zoom.target, x: this.zoom.target.x + grew / 2 });
    if (keep) this.keepInView(keep.box, keep.around, this.readK, ms);
  }

  /** Whether the whole scene is in view now. */
  showsAll(scene: { width: number; height: number }, width = this.zoom.dims()[0]): boolean {
    const { x, y, k } = this.zoom.target;
    const H = this.zoom.dims()[1];
    return x >= -1 && y >= -1 && x + scene.width * k <= width + 1 && y + scene.height * k <= H + 1;
  }

  /** Several boxes in view at once, no larger than 1:1 (search matches); the view stays as it
   * is where they are all in it already at a readable scale (a graph shown whole stays whole). */
  showBoxes(boxes: Box[]) {
    if (!boxes.length) return;
    const [x, y, w, h] = union(boxes);
    const t = this.zoom.target;
    const [W, H] = this.zoom.dims();
    const inView = t.x + x * t.k >= 0 && t.y + y * t.k >= 0 && t.x + (x + w) * t.k <= W && t.y + (y + h) * t.k <= H;
    if (inView && t.k >= READ_K - 1e-6) return;
    this.framed = false;
    this.zoom.animateTo(this.zoom.fitBox(x, y, w, h, 1));
  }

  /**
   * After expanding or collapsing: move the view so that the toggled thing stays where the
   * user was looking (`before` its box then, `after` now), then into view if it went out of
   * it (zooming out only when it no longer fits); and when the whole graph now fits at this
   * scale, none of it is left outside (a group folded again does not leave the graph half
   * above the canvas). The caller then shows the whole graph where it fits (showWhole).
   */
  keepAnchor(before: Box, after: Box, scene?: { width: number; height: number }) {
    const { k } = this.zoom.t;
    const [W, H] = this.zoom.dims();
    let x = this.zoom.t.x + (before[0] + before[2] / 2 - (after[0] + after[2] / 2)) * k;
    let y = this.zoom.t.y + (before[1] - after[1]) * k;
    const [ax, ay, aw, ah] = after;
    this.framed = false;
    const fitK = this.zoom.fitBox(ax, ay, aw, ah, k).k;
    if (fitK < k - 1e-6) {
      this.zoom.set({ x, y, k });
      this.zoom.animateTo(this.zoom.fitBox(ax, ay, aw, ah, Math.max(fitK, 0.35)), 260);
      return;
    }
    // [lo, hi) on screen into [MARGIN, size - MARGIN]
    const clamp = (at: number, lo: number, len: number, size: number) => {
      const s0 = at + lo * k;
      if (s0 < MARGIN) return at + MARGIN - s0;
      if (s0 + len * k > size - MARGIN) return at - Math.min(s0 + len * k - (size - MARGIN), s0 - MARGIN);
      return at;
    };
    x = clamp(x, ax, aw, W);
    y = clamp(y, ay, ah, H);
    if (scene && scene.width * k <= W - 2 * MARGIN && scene.height * k <= H - 2 * MARGIN) {
      x = clamp(x, 0, scene.width, W);
      y = clamp(y, 0, scene.height, H);
    }
    this.zoom.set({ x, y, k });
  }

  private inView([x, y, w, h]: Box, at: Transform = this.zoom.t): boolean {
    const [vx, vy, vw, vh] = this.zoom.viewport(at);
    return x >= vx && y >= vy && x + w <= vx + vw && y + h <= vy + vh;
  }

  dispose() {
    this.zoom.dispose();
  }
}
