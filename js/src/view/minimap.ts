/**
 * A small overview of the whole graph with the visible part outlined; click or drag in it to
 * pan. Faint until hovered, collapsible to a button, hidden while the whole graph is in view,
 * and parked in the corner of the canvas that covers the fewest nodes; folded to its button
 * while every corner would cover one (unless the user opened it). The legend, which keeps its
 * corner (the camera places whole views clear of it), hides while it covers a node.
 */
import type { Box } from "../layout/layout";
import type { Scene } from "../scene/types";
import { h, Listeners } from "./dom";
import { marksOn } from "./marks";
import { typeColor } from "./palette";

export type Corner = "top-right" | "bottom-right" | "top-left";
/** In order of preference; bottom-left is the legend's. */
const CORNERS: Corner[] = ["top-right", "bottom-right", "top-left"];
const W = 148;
const H = 98;
const MARGIN = 10;
const FOLDED_W = 200; // the folded minimap's button and the note beside it
const FOLDED_H = 28;

/** Overlap area of screen boxes with a rectangle. */
function covered(boxes: Box[], x: number, y: number, w: number, hh: number): number {
  let area = 0;
  for (const [bx, by, bw, bh] of boxes) {
    const ox = Math.min(bx + bw, x + w) - Math.max(bx, x);
    const oy = Math.min(by + bh, y + hh) - Math.max(by, y);
    if (ox > 0 && oy > 0) area += ox * oy;
  }
  return area;
}

/**
 * The corner for the minimap: the one its rectangle covers the least node area in, keeping
 * the current corner unless another is clearly better (so it does not hop while panning).
 */
export function pickCorner(nodes: Box[], width: number, height: number, current: Corner, w = W, h = H): Corner {
  const rect = (c: Corner): [number, number] => [
    c.endsWith("right") ? width - MARGIN - w : MARGIN,
    c.startsWith("top") ? MARGIN : height - MARGIN - h,
  ];
  const cost = (c: Corner) => covered(nodes, ...rect(c), w, h);
  const now = cost(current);
  if (now === 0) return current;
  let best = current;
  let bestCost = now;
  for (const c of CORNERS) {
    const v = cost(c);
    if (v < bestCost) {
      best = c;
      bestCost = v;
    }
  }
  return bestCost < now * 0.6 ? best : current;
}

export class Minimap {
  readonly el: HTMLElement;
  /** "7 out of view" (nodes): on the minimap while nodes are out of the canvas, in the toolbar while the minimap is folded; a click fits the whole. */
  readonly note: HTMLButtonElement;
  readonly canvas: HTMLCanvasElement;
  private readonly toggleBtn: HTMLButtonElement;
  private scene: Scene | null = null;
  private viewport: [number, number, number, number] = [0, 0, 0, 0];
  private transform = { x: 0, y: 0, k: 1 };
  private listeners = new Listeners();
  private frame = 0;
  private settle = 0;
  private scale = 1;
  private ox = 0;
  private oy = 0;
  private collapsed = false;
  private chosen: boolean | null = null; // the user's toggle: folded or open whatever it covers
  private corner: Corner = "top-right";

  constructor(
    private readonly centerOn: (x: number, y: number) => void,
    private readonly legend: HTMLElement | null = null,
    private readonly hostSize: () => [number, number] = () => [
      this.el.parentElement?.clientWidth ?? 0,
      this.el.parentElement?.clientHeight ?? 0,
    ],
    showAll: () => void = () => undefined,
    private readonly foldedHome: HTMLElement | null = null, // where the note goes while folded
  ) {
    this.note = h("button", {
      class: "nfw-offview",
      type: "button",
      hidden: true,
      "data-corner": this.corner,
    });
    this.canvas = h("canvas", {
      class: "nfw-minimap-map",
      "aria-label": "minimap",
      title: "Overview: click or drag to move",
    });
    this.toggleBtn = h("button", { class: "nfw-minimap-toggle", type: "button" });
    this.el = h("div", { class: "nfw-minimap", hidden: true, "data-corner": this.corner }, this.canvas, this.toggleBtn);
    this.setCollapsed(false);
    let dragging = false;
    const go = (e: PointerEvent) => {
      const r = this.canvas.getBoundingClientRect();
      this.centerOn((e.clientX - r.left - this.ox) / this.scale, (e.clientY - r.top - this.oy) / this.scale);
    };
    const L = this.listeners;
    L.on(this.note, "click", (e: MouseEvent) => {
      e.stopPropagation();
      showAll();
    });
    L.on(this.el, "pointerdown", (e: PointerEvent) => e.stopPropagation());
    L.on(this.el, "wheel", (e: WheelEvent) => e.stopPropagation());
    L.on(this.el, "click", (e: MouseEvent) => e.stopPropagation());
    L.on(this.canvas, "pointerdown", (e: PointerEvent) => {
      dragging = true;
      this.canvas.setPointerCapture?.(e.pointerId);
      go(e);
    });
    L.on(this.canvas, "pointermove", (e: PointerEvent) => dragging && go(e));
    L.on(this.canvas, "pointerup", () => (dragging = false));
    L.on(this.toggleBtn, "click", () => {
      this.chosen = !this.collapsed;
      this.setCollapsed(this.chosen);
    });
  }

  get isCollapsed(): boolean {
    return this.collapsed;
  }

  /** Fold the overview down to its button, or open it again. */
  setCollapsed(collapsed: boolean) {
    this.collapsed = collapsed;
    this.el.dataset.collapsed = this.note.dataset.collapsed = String(collapsed);
    // folded, the note leaves the canvas (in the toolbar it covers nothing); open, it lies
    // along the overview's bottom
    const home = collapsed ? this.foldedHome : this.el.parentElement;
    if (home && this.note.parentElement !== home) home.append(this.note);
    this.canvas.hidden = collapsed;
    this.toggleBtn.textContent = collapsed ? "▣" : "−";
    this.toggleBtn.title = collapsed ? "Show the overview" : "Hide the overview";
    this.toggleBtn.setAttribute("aria-label", this.toggleBtn.title);
    this.toggleBtn.setAttribute("aria-expanded", String(!collapsed));
    this.draw();
  }

  setScene(scene: Scene) {
    this.scene = scene;
    this.schedule();
  }

  /** Update on the next frame (once, however many changes come before it). */
  private schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.update();
    });
  }

  /** The visible part of the graph (graph coordinates) and the transform that shows it. */
  setViewport(v: [number, number, number, number], t: { x: number; y: number; k: number }) {
    this.viewport = v;
    this.transform = t;
    this.schedule();
    clearTimeout(this.settle);
    this.el.setAttribute("data-settling", ""); // until it has placed itself (tests wait for none)
    this.settle = window.setTimeout(() => {
      this.el.removeAttribute("data-settling");
      this.place();
      this.fadeLegend();
    }, 250);
  }

  /** Fade the legend while a mark lies under it (a label, a ⊕, a chip it would hide). */
  private fadeLegend() {
    const scene = this.scene;
    const host = this.el.parentElement;
    const legend = this.legend;
    if (!scene || !host || !legend) return;
    const h0 = host.getBoundingClientRect();
    const r = legend.getBoundingClientRect();
    const boxes = marksOn(scene, this.transform);
    legend.style.opacity = covered(boxes, r.left - h0.left, r.top - h0.top, r.width, r.height) > 0 ? "0" : "";
  }

  private update() {
    const scene = this.scene;
    if (!scene) return;
    // Nothing to find when the whole graph is in view.
    const [vx, vy, vw, vh] = this.viewport;
    const fits = vx <= 1 && vy <= 1 && vx + vw >= scene.width - 1 && vy + vh >= scene.height - 1;
    const wasHidden = this.el.hidden;
    this.el.hidden = fits;
    const out = scene.nodes.filter(
      ({ box: [x, y, w, hh] }) => x < vx - 0.5 || y < vy - 0.5 || x + w > vx + vw + 0.5 || y + hh > vy + vh + 0.5,
    ).length;
    this.note.hidden = out === 0;
    this.note.dataset.out = String(out);
    this.note.textContent = `${out} out of view`;
    this.note.title = `${out} of ${scene.nodes.length} nodes are out of view: click (or press F) to see the whole graph`;
    if (wasHidden && !fits) this.place();
    this.draw();
  }

  /** Park in the corner that hides the fewest marks (view/marks.ts: nodes, junctions, the
   * headers and bottom edges of groups) and the least of the legend (two rows across the
   * bottom of a canvas narrowed by the inspector). */
  private place() {
    const scene = this.scene;
    const host = this.el.parentElement;
    if (!scene || !host || this.el.hidden) return;
    const boxes = marksOn(scene, this.transform);
    const legend = this.legend?.childElementCount ? this.legend.getBoundingClientRect() : null;
    if (legend && legend.width > 0) {
      const h0 = host.getBoundingClientRect();
      boxes.push([legend.left - h0.left, legend.top - h0.top, legend.width, legend.height]);
    }
    const [hw, hh] = this.hostSize();
    const corner = pickCorner(boxes, hw, hh, this.corner);
    if (corner !== this.corner) {
      this.corner = corner;
      this.el.dataset.corner = this.note.dataset.corner = corner;
    }
    const covers =
      covered(
        boxes,
        corner.endsWith("right") ? hw - MARGIN - W : MARGIN,
        corner.startsWith("top") ? MARGIN : hh - MARGIN - H,
        W,
        H,
      ) > 0;
    if ((this.chosen ?? covers) !== this.collapsed) this.setCollapsed(this.chosen ?? covers);
    if (this.collapsed) {
      // folded to its button (with the note beside it, where it has no home outside the
      // canvas): the corner where they cover least
      const folded = this.foldedHome
        ? pickCorner(boxes, hw, hh, this.corner, FOLDED_H, FOLDED_H)
        : pickCorner(boxes, hw, hh, this.corner, FOLDED_W, FOLDED_H);
      if (folded !== this.corner) {
        this.corner = folded;
        this.el.dataset.corner = this.note.dataset.corner = folded;
      }
    }
  }

  private draw() {
    const scene = this.scene;
    if (!scene || this.el.hidden || this.collapsed) return;
    const cssW = W; // its size in the CSS: read, it would make the browser lay out the page
    const cssH = H;
    const dpr = globalThis.devicePixelRatio || 1;
    if (this.canvas.width !== Math.round(cssW * dpr)) this.canvas.width = Math.round(cssW * dpr);
    if (this.canvas.height !== Math.round(cssH * dpr)) this.canvas.height = Math.round(cssH * dpr);
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    const pad = 6;
    this.scale = Math.min((cssW - 2 * pad) / Math.max(scene.width, 1), (cssH - 2 * pad) / Math.max(scene.height, 1));
    this.ox = (cssW - scene.width * this.scale) / 2;
    this.oy = (cssH - scene.height * this.scale) / 2;
    const k = this.scale;
    const style = getComputedStyle(this.el);
    ctx.strokeStyle = style.getPropertyValue("--nfw-border").trim() || "#ccc";
    ctx.lineWidth = 1;
    for (const c of scene.clusters) {
      const [x, y, w, hh] = c.box;
      ctx.strokeRect(this.ox + x * k, this.oy + y * k, w * k, hh * k);
    }
    const bad = style.getPropertyValue("--nfw-error").trim() || "#dc2626";
    for (const n of scene.nodes) {
      const [x, y, w, hh] = n.box;
      // Where the run went wrong stands out on the overview: NaN / Inf, or the stage that raised.
      ctx.fillStyle = n.mark ? bad : n.kind === "input" || n.kind === "output" ? "#9ca3af" : typeColor(n.type);
      ctx.fillRect(this.ox + x * k, this.oy + y * k, Math.max(1.5, w * k), Math.max(1.5, hh * k));
    }
    const [vx, vy, vw, vh] = this.viewport;
    ctx.strokeStyle = style.getPropertyValue("--nfw-accent").trim() || "#2563eb";
    ctx.lineWidth = 1.5;
    ctx.fillStyle = "rgba(37, 99, 235, 0.08)";
    const rx = this.ox + vx * k,
      ry = this.oy + vy * k,
      rw = vw * k,
      rh = vh * k;
    ctx.fillRect(rx, ry, rw, rh);
    ctx.strokeRect(rx, ry, rw, rh);
  }

  dispose() {
    cancelAnimationFrame(this.frame);
    clearTimeout(this.settle);
    this.listeners.dispose();
    this.el.remove();
    this.note.remove();
  }
}
