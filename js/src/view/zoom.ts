/**
 * Pan and zoom for the graph: drag to pan, ctrl/pinch to zoom (or the plain wheel once the
 * graph was clicked: focus the widget took by itself leaves the wheel to the page), animated
 * moves. `onUser` hears of the moves the user made (a drag, the wheel), not of animations.
 * The surface carries `data-settling` while an animated move runs (tests wait for none).
 */
import { FIT_MARGIN } from "../layout/flow";
import { Listeners } from "./dom";

export interface Transform {
  x: number;
  y: number;
  k: number;
}

export const MIN_K = 0.02;
export const MAX_K = 3;

export class PanZoom {
  t: Transform = { x: 0, y: 0, k: 1 };
  /** Where the view is going: the end of the running animation, else where it is. */
  target: Transform = this.t;
  /** The user pressed on the graph since focus last came into it: the plain wheel zooms. */
  engaged = false;
  /** The user moved the view (a drag, the wheel). */
  onUser: () => void = () => undefined;
  private anim = 0;
  private listeners = new Listeners();
  private drag: { id: number; x: number; y: number; moved: boolean } | null = null;
  /** Set after a drag so the click that ends it is not taken as a node click. */
  suppressClick = false;

  constructor(
    private readonly surface: HTMLElement,
    private readonly onChange: (t: Transform) => void,
    private readonly onWheelHint: () => void,
  ) {
    const L = this.listeners;
    L.on(surface, "wheel", (e: WheelEvent) => this.wheel(e), { passive: false });
    L.on(surface, "pointerdown", (e: PointerEvent) => {
      if (e.button !== 0 || (e.target as Element).closest("input,select,button,.nfw-minimap")) return;
      this.engaged = true;
      this.drag = { id: e.pointerId, x: e.clientX, y: e.clientY, moved: false };
    });
    L.on(surface, "pointermove", (e: PointerEvent) => {
      const d = this.drag;
      if (!d || d.id !== e.pointerId) return;
      const dx = e.clientX - d.x;
      const dy = e.clientY - d.y;
      if (!d.moved && Math.hypot(dx, dy) < 4) return;
      if (!d.moved) {
        d.moved = true;
        surface.setPointerCapture?.(e.pointerId);
        surface.classList.add("nfw-dragging");
      }
      d.x = e.clientX;
      d.y = e.clientY;
      this.set({ x: this.t.x + dx, y: this.t.y + dy, k: this.t.k });
      this.onUser();
    });
    const end = (e: PointerEvent) => {
      const d = this.drag;
      if (!d || d.id !== e.pointerId) return;
      this.drag = null;
      surface.classList.remove("nfw-dragging");
      if (d.moved) {
        this.suppressClick = true;
        setTimeout(() => (this.suppressClick = false), 0);
      }
    };
    L.on(surface, "pointerup", end);
    L.on(surface, "pointercancel", end);
    // Focus that leaves the widget takes the plain wheel back to the page.
    const widget = surface.closest(".nfw-root") ?? surface;
    L.on(widget, "focusout", (e: FocusEvent) => {
      const to = e.relatedTarget as Node | null;
      if (!to || !widget.contains(to)) this.engaged = false;
    });
  }

  private wheel(e: WheelEvent) {
    // Inside a notebook the wheel scrolls the page; zoom needs ctrl (trackpad pinch sends
    // it) or the graph clicked (keyboard focus inside it that the user gave it).
    const focused = this.engaged && this.surface.contains(document.activeElement);
    if (!e.ctrlKey && !e.metaKey && !focused) {
      this.onWheelHint();
      return;
    }
    e.preventDefault();
    const r = this.surface.getBoundingClientRect();
    const scale = Math.exp(-e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0022) * (e.ctrlKey ? 2.5 : 1));
    this.zoomAt(e.clientX - r.left, e.clientY - r.top, this.t.k * scale);
    this.onUser();
  }

  zoomAt(px: number, py: number, k: number) {
    const nk = Math.min(MAX_K, Math.max(MIN_K, k));
    const gx = (px - this.t.x) / this.t.k;
    const gy = (py - this.t.y) / this.t.k;
    this.set({ x: px - gx * nk, y: py - gy * nk, k: nk });
  }

  set(t: Transform) {
    cancelAnimationFrame(this.anim);
    this.t = this.target = t;
    this.surface.removeAttribute("data-settling");
    this.onChange(t);
  }

  /** Whether an animated move is under way. */
  get moving(): boolean {
    return this.target !== this.t;
  }

  /** Animate to a transform (instant when ms = 0). */
  animateTo(target: Transform, ms = 280) {
    cancelAnimationFrame(this.anim);
    if (ms <= 0) return this.set(target);
    const from = { ...this.t };
    if (Math.abs(from.x - target.x) < 0.5 && Math.abs(from.y - target.y) < 0.5 && Math.abs(from.k - target.k) < 1e-4)
      return this.set(target);
    this.target = target;
    this.surface.setAttribute("data-settling", "");
    const t0 = performance.now();
    const step = (now: number) => {
      const u = Math.min(1, (now - t0) / ms);
      const e = u < 0.5 ? 2 * u * u : 1 - (-2 * u + 2) ** 2 / 2;
      this.t =
        u < 1
          ? {
              x: from.x + (target.x - from.x) * e,
              y: from.y + (target.y - from.y) * e,
              k: from.k + (target.k - from.k) * e,
            }
          : target;
      if (u >= 1) this.surface.removeAttribute("data-settling");
      this.onChange(this.t);
      if (u < 1) this.anim = requestAnimationFrame(step);
    };
    this.anim = requestAnimationFrame(step);
  }

  private size: [number, number] | null = null;

  /** The surface's size as its resize observer last saw it: read from here, the view never
   * forces the browser to lay out the page between changing the drawing and painting it. */
  setSize(w: number, h: number) {
    this.size = w > 0 && h > 0 ? [w, h] : null;
  }

  /** Whether the resize observer has seen the surface laid out. */
  get measured(): boolean {
    return this.size !== null;
  }

  /** The surface's width and height (css px). */
  dims(): [number, number] {
    return this.size ?? [this.surface.clientWidth || 800, this.surface.clientHeight || 500];
  }

  /** The transform that shows a box of the graph, with a margin, no larger than maxK. */
  fitBox(x: number, y: number, w: number, h: number, maxK = 1.2, margin = FIT_MARGIN): Transform {
    const [W, H] = this.dims();
    const k = Math.min(
      maxK,
      Math.max(MIN_K, Math.min((W - 2 * margin) / Math.max(w, 1), (H - 2 * margin) / Math.max(h, 1))),
    );
    return { x: W / 2 - (x + w / 2) * k, y: H / 2 - (y + h / 2) * k, k };
  }

  /** The visible part of the graph, in graph coordinates (`at`: where the view is going). */
  viewport(at: Transform = this.t): [number, number, number, number] {
    const { x, y, k } = at;
    const [W, H] = this.dims();
    return [-x / k, -y / k, W / k, H / k];
  }

  dispose() {
    cancelAnimationFrame(this.anim);
    this.listeners.dispose();
  }
}
