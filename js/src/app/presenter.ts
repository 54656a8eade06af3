/**
 * Presentation mode, for a lecture hall: the widget fills the window (and the screen, when a
 * click asked for it: browsers allow full screen only from a user's gesture), its type is
 * larger (the graph is framed so that names are at least PRESENT_K times their size at 1:1, the
 * toolbar, inspector and legend are zoomed), its colours have more contrast, the inspector
 * sits beside the graph. The widget's `presenting` traitlet and `widget.present()` drive it
 * too.
 */
import { READ_K } from "../scene/scene";
import type { Camera } from "../view/camera";
import { Listeners } from "../view/dom";

/** The least scale of a presented graph: names at 1.5 times their size at 1:1 (21 px). */
export const PRESENT_K = 1.5;

export class Presenter {
  on = false;
  private listeners = new Listeners();

  constructor(
    private readonly root: HTMLElement,
    private readonly button: HTMLButtonElement,
    private readonly camera: Camera,
    private readonly changed: (on: boolean, fromUser: boolean) => void,
  ) {
    this.listeners.on(button, "click", () => this.set(!this.on, true));
    // The browser's own way out of full screen (Esc, F11) ends the presentation too.
    this.listeners.on(document, "fullscreenchange", () => {
      if (this.on && document.fullscreenElement !== this.root && this.wentFull) this.set(false, true);
    });
  }

  private wentFull = false;

  /** Present (or stop); `fromUser`: a click or key, which may also take the screen. */
  set(on: boolean, fromUser: boolean) {
    if (on === this.on) return;
    this.on = on;
    this.root.classList.toggle("nfw-present", on);
    this.button.setAttribute("aria-pressed", String(on));
    this.button.setAttribute("aria-label", on ? "End presentation" : "Present");
    this.button.title = on ? "End the presentation (Esc)" : "Present: full screen, larger type, more contrast";
    this.camera.readK = on ? PRESENT_K : READ_K;
    this.camera.needsFit = true;
    if (on && fromUser && this.root.requestFullscreen) {
      this.root.requestFullscreen().then(
        () => (this.wentFull = true),
        () => (this.wentFull = false),
      );
    } else if (!on && this.wentFull) {
      this.wentFull = false;
      if (document.fullscreenElement === this.root) void document.exitFullscreen().catch(() => undefined);
    }
    this.changed(on, fromUser);
  }

  dispose() {
    this.listeners.dispose();
  }
}
