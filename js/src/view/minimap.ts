/** A small overview of the whole graph with the visible part outlined; drag in it to pan. */
import type { Scene } from "../scene";
import { h, Listeners } from "./dom";
import { typeColor } from "./palette";

export class Minimap {
  readonly canvas: HTMLCanvasElement;
  private scene: Scene | null = null;
  private viewport: [number, number, number, number] = [0, 0, 0, 0];
  private listeners = new Listeners();
  private frame = 0;
  private scale = 1;
  private ox = 0;
  private oy = 0;

  constructor(private readonly centerOn: (x: number, y: number) => void) {
    this.canvas = h("canvas", { class: "nfw-minimap", "aria-label": "minimap", title: "Overview: click or drag to move" });
    let dragging = false;
    const go = (e: PointerEvent) => {
      const r = this.canvas.getBoundingClientRect();
      this.centerOn((e.clientX - r.left - this.ox) / this.scale, (e.clientY - r.top - this.oy) / this.scale);
    };
    this.listeners.on(this.canvas, "pointerdown", (e: PointerEvent) => {
      e.stopPropagation();
      dragging = true;
      this.canvas.setPointerCapture?.(e.pointerId);
      go(e);
    });
    this.listeners.on(this.canvas, "pointermove", (e: PointerEvent) => dragging && go(e));
    this.listeners.on(this.canvas, "pointerup", () => (dragging = false));
    this.listeners.on(this.canvas, "wheel", (e: WheelEvent) => e.stopPropagation());
  }

  setScene(scene: Scene) {
    this.scene = scene;
    // Shown when the graph is big enough to get lost in.
    this.canvas.hidden = scene.nodes.length < 16;
    this.draw();
  }

  setViewport(v: [number, number, number, number]) {
    this.viewport = v;
    if (!this.frame) this.frame = requestAnimationFrame(() => ((this.frame = 0), this.draw()));
  }

  private draw() {
    const scene = this.scene;
    if (!scene || this.canvas.hidden) return;
    const cssW = this.canvas.clientWidth || 180;
    const cssH = this.canvas.clientHeight || 120;
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
    const style = getComputedStyle(this.canvas);
    ctx.strokeStyle = style.getPropertyValue("--nfw-border").trim() || "#ccc";
    ctx.lineWidth = 1;
    for (const c of scene.clusters) {
      const [x, y, w, hh] = c.box;
      ctx.strokeRect(this.ox + x * k, this.oy + y * k, w * k, hh * k);
    }
    for (const n of scene.nodes) {
      const [x, y, w, hh] = n.box;
      ctx.fillStyle = n.kind === "input" || n.kind === "output" ? "#9ca3af" : typeColor(n.type);
      ctx.fillRect(this.ox + x * k, this.oy + y * k, Math.max(1.5, w * k), Math.max(1.5, hh * k));
    }
    const [vx, vy, vw, vh] = this.viewport;
    ctx.strokeStyle = style.getPropertyValue("--nfw-accent").trim() || "#2563eb";
    ctx.lineWidth = 1.5;
    ctx.fillStyle = "rgba(37, 99, 235, 0.08)";
    const rx = this.ox + vx * k, ry = this.oy + vy * k, rw = vw * k, rh = vh * k;
    ctx.fillRect(rx, ry, rw, rh);
    ctx.strokeRect(rx, ry, rw, rh);
  }

  dispose() {
    cancelAnimationFrame(this.frame);
    this.listeners.dispose();
    this.canvas.remove();
  }
}
