/**
 * Where the view looks: the first view of a graph, fit, centring on a node, keeping a toggled
 * group in place. Pan and zoom themselves are PanZoom's; this decides the transforms.
 */
import type { Box, Direction } from "../layout/layout";
import type { Scene } from "../scene/types";
import { PanZoom, type Transform } from "./zoom";

/** Scale at which labels read well: the first view never starts smaller than needed. */
const READABLE = 0.8;

export class Camera {
  readonly zoom: PanZoom;
  /** The next painted scene gets a first view (a new graph, a direction, reset). */
  needsFit = true;

  constructor(private readonly surface: HTMLElement, onChange: (t: Transform) => void, onWheelHint: () => void) {
    this.zoom = new PanZoom(surface, onChange, onWheelHint);
  }

  get t(): Transform {
    return this.zoom.t;
  }

  get attached(): boolean {
    return this.surface.clientWidth > 0;
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
   * The first view: the whole graph when it fits at a readable scale; else readable text
   * from the start of the network (top in TB, left in LR), the rest a pan away.
   */
  firstView(scene: Scene, dir: Direction) {
    if (!this.attached) return;
    const all = this.zoom.fitBox(0, 0, scene.width, scene.height);
    if (all.k >= READABLE) return this.fit(scene, 0);
    this.needsFit = false;
    const W = this.surface.clientWidth;
    const H = this.surface.clientHeight;
    const m = 24;
    const tb = dir === "TB";
    const across = tb ? scene.width : scene.height;
    const room = tb ? W : H;
    const k = Math.max(0.45, Math.min(READABLE, (room - 2 * m) / Math.max(across, 1)));
    const offAcross = (room - across * k) / 2;
    this.zoom.set(tb ? { x: offAcross, y: m, k } : { x: m, y: offAcross, k });
  }

  centerOn(x: number, y: number, ms = 250, k = this.zoom.t.k) {
    const W = this.surface.clientWidth || 800;
    const H = this.surface.clientHeight || 500;
    this.zoom.animateTo({ x: W / 2 - x * k, y: H / 2 - y * k, k }, ms);
  }

  /** Centre a box, at a readable scale, when it is not wholly in view. */
  ensureVisible(box: Box, minK = 0.6) {
    if (this.inView(box)) return;
    const [x, y, w, h] = box;
    this.centerOn(x + w / 2, y + h / 2, 250, Math.max(this.zoom.t.k, minK));
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
   * user was looking (`before` its box then, `after` now); zoom out when it no longer fits.
   */
  keepAnchor(before: Box, after: Box) {
    const { k } = this.zoom.t;
    const dx = (before[0] + before[2] / 2 - (after[0] + after[2] / 2)) * k;
    const dy = (before[1] - after[1]) * k;
    this.zoom.set({ x: this.zoom.t.x + dx, y: this.zoom.t.y + dy, k });
    if (this.inView(after)) return;
    const [x, y, w, h] = after;
    const fitK = this.zoom.fitBox(x, y, w, h, k).k;
    this.zoom.animateTo(this.zoom.fitBox(x, y, w, h, Math.min(k, Math.max(fitK, 0.35))), 260);
  }

  private inView([x, y, w, h]: Box): boolean {
    const [vx, vy, vw, vh] = this.zoom.viewport();
    return x >= vx && y >= vy && x + w <= vx + vw && y + h <= vy + vh;
  }

  dispose() {
    this.zoom.dispose();
  }
}
