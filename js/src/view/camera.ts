/**
 * Where the view looks: the first view of a graph, fit, centring on a node, keeping a toggled
 * group in place. Pan and zoom themselves are PanZoom's; this decides the transforms.
 */
import type { Box, Direction } from "../layout/layout";
import { MINIMAP_STRIP, READ_K } from "../scene/scene";
import type { Scene } from "../scene/types";
import { PanZoom, type Transform } from "./zoom";

const MARGIN = 24;

export class Camera {
  readonly zoom: PanZoom;
  /** The next painted scene gets a first view (a new graph, a direction, reset). */
  needsFit = true;
  /** The least scale at which names read (MIN_NAME_PX high); more in presentation mode. */
  readK = READ_K;

  constructor(private readonly surface: HTMLElement, onChange: (t: Transform) => void, onWheelHint: () => void) {
    this.zoom = new PanZoom(surface, onChange, onWheelHint);
  }

  get t(): Transform {
    return this.zoom.t;
  }

  get attached(): boolean {
    return this.zoom.measured || this.surface.clientWidth > 0;
  }

  viewport(): [number, number, number, number] {
    return this.zoom.viewport();
  }

  /** The whole graph in view. */
  fit(scene: Scene, ms = 280) {
    if (!this.attached) return; // not in the page yet: the resize observer fits later
    this.needsFit = false;
    this.zoom.animateTo(this.zoom.fitBox(0, 0, scene.width, scene.height), ms);
  }

  /**
   * The first view: the whole graph when it fits with its names at least MIN_NAME_PX high
   * (READ_K; the layout was wrapped and its depth chosen for this, app/framing.ts); else those
   * names at READ_K from the start of the network (top left), the minimap's strip left free.
   */
  firstView(scene: Scene, dir: Direction) {
    if (!this.attached) return;
    const all = this.zoom.fitBox(0, 0, scene.width, scene.height);
    if (all.k >= this.readK - 1e-6) return this.fit(scene, 0);
    this.needsFit = false;
    const [W, H] = this.zoom.dims();
    const k = this.readK;
    const tb = dir === "TB";
    const x = tb ? Math.max(MARGIN, (W - MINIMAP_STRIP - scene.width * k) / 2) : MARGIN;
    const y = tb ? MARGIN : Math.max(MARGIN, (H - MINIMAP_STRIP * 0.7 - scene.height * k) / 2);
    this.zoom.set({ x, y, k });
  }

  centerOn(x: number, y: number, ms = 250, k = this.zoom.t.k) {
    const [W, H] = this.zoom.dims();
    this.zoom.animateTo({ x: W / 2 - x * k, y: H / 2 - y * k, k }, ms);
  }

  /** Bring a box wholly into view when it is not: the least pan that does it when it fits
   * at this scale (the view does not jump), else centred at a readable scale. */
  ensureVisible(box: Box, minK = 0.6, ms = 250) {
    if (this.inView(box)) return;
    const [x, y, w, h] = box;
    const { k } = this.zoom.t;
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
    this.zoom.animateTo({ x: pan(this.zoom.t.x, x, w, W), y: pan(this.zoom.t.y, y, h, H), k }, ms);
  }

  /**
   * After the canvas changed size (the inspector opened or closed, the page resized): keep
   * the centre; the whole graph again when it was in view and still fits at a readable scale;
   * and `keep` (the selected node) in view.
   */
  resized(scene: Scene, grew: number, wasWhole: boolean, keep: Box | null) {
    const all = this.zoom.fitBox(0, 0, scene.width, scene.height);
    if (wasWhole && all.k >= this.readK - 1e-6) {
      this.zoom.animateTo(all, 200);
      return;
    }
    this.zoom.set({ ...this.zoom.t, x: this.zoom.t.x + grew / 2 });
    if (keep) this.ensureVisible(keep, this.readK, 200);
  }

  /** Whether the whole scene is in view now. */
  showsAll(scene: { width: number; height: number }, width = this.zoom.dims()[0]): boolean {
    const { x, y, k } = this.zoom.t;
    const H = this.zoom.dims()[1];
    return x >= -1 && y >= -1 && x + scene.width * k <= width + 1 && y + scene.height * k <= H + 1;
  }

  /** Several boxes in view at once, no larger than 1:1 (search matches). */
  showBoxes(boxes: Box[]) {
    if (!boxes.length) return;
    const x0 = Math.min(...boxes.map((b) => b[0]));
    const y0 = Math.min(...boxes.map((b) => b[1]));
    const x1 = Math.max(...boxes.map((b) => b[0] + b[2]));
    const y1 = Math.max(...boxes.map((b) => b[1] + b[3]));
    this.zoom.animateTo(this.zoom.fitBox(x0, y0, x1 - x0, y1 - y0, 1));
  }

  /**
   * After expanding or collapsing: move the view so that the toggled thing stays where the
   * user was looking (`before` its box then, `after` now), then into view if it went out of
   * it (zooming out only when it no longer fits); and when the whole graph now fits at this
   * scale, none of it is left outside (a group folded again does not leave the graph half
   * above the canvas).
   */
  keepAnchor(before: Box, after: Box, scene?: { width: number; height: number }) {
    const { k } = this.zoom.t;
    const [W, H] = this.zoom.dims();
    let x = this.zoom.t.x + (before[0] + before[2] / 2 - (after[0] + after[2] / 2)) * k;
    let y = this.zoom.t.y + (before[1] - after[1]) * k;
    const [ax, ay, aw, ah] = after;
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

  private inView([x, y, w, h]: Box): boolean {
    const [vx, vy, vw, vh] = this.zoom.viewport();
    return x >= vx && y >= vy && x + w <= vx + vw && y + h <= vy + vh;
  }

  dispose() {
    this.zoom.dispose();
  }
}
