/**
 * A side panel's left edge as a handle: drag it (or use the arrow keys on it) to make the
 * panel wider or narrower, between 300 px and all but 200 px of its container. The width
 * stays for the panel's life; `done` runs after each change (to redraw what scales with it).
 */
import { h, Listeners } from "./dom";

const MIN = 300;
const ROOM = 200; // what the graph keeps at least

export class Resizer {
  readonly grip: HTMLElement;
  dragging = false;
  private listeners = new Listeners();

  constructor(
    private readonly panel: HTMLElement,
    private readonly done: () => void,
  ) {
    this.grip = h("div", {
      class: "nfw-grip",
      role: "separator",
      "aria-orientation": "vertical",
      "aria-label": "resize the inspector",
      tabindex: "0",
      title: "Drag to resize",
    });
    panel.prepend(this.grip);
    const L = this.listeners;
    L.on(this.grip, "pointerdown", (e: PointerEvent) => {
      e.preventDefault();
      e.stopPropagation();
      this.grip.setPointerCapture?.(e.pointerId);
      this.dragging = true;
      const x0 = e.clientX;
      const w0 = panel.getBoundingClientRect().width;
      const move = (m: PointerEvent) => this.set(w0 + (x0 - m.clientX));
      const up = () => {
        this.dragging = false;
        this.grip.removeEventListener("pointermove", move);
        this.grip.removeEventListener("pointerup", up);
        this.grip.removeEventListener("pointercancel", up);
        this.done();
      };
      this.grip.addEventListener("pointermove", move);
      this.grip.addEventListener("pointerup", up);
      this.grip.addEventListener("pointercancel", up);
    });
    L.on(this.grip, "keydown", (e: KeyboardEvent) => {
      if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
      e.preventDefault();
      e.stopPropagation();
      this.set(panel.getBoundingClientRect().width + (e.key === "ArrowLeft" ? 40 : -40));
      this.done();
    });
  }

  /** Set the panel's width (css px), within its bounds. */
  set(width: number) {
    const room = (this.panel.parentElement?.getBoundingClientRect().width ?? 1e9) - ROOM;
    const w = Math.round(Math.max(MIN, Math.min(room, width)));
    this.panel.style.width = `${w}px`;
    this.panel.style.maxWidth = "none";
  }

  dispose() {
    this.listeners.dispose();
  }
}
