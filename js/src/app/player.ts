/**
 * Playback of the forward pass, step by step (model/playback.ts makes the steps): the Play
 * button of the toolbar, and a transport bar under it while playback is on (step back and
 * forward, a scrub bar, where it is, the speed, stop). The host draws each step (its groups
 * opened, the current stage marked, its data in the inspector); the player keeps time. Its
 * state can also be set from outside (the widget's `playback` traitlet: `widget.step()`,
 * `widget.play()` in Python). After a backward pass (a run with a loss) the transport offers
 * the walk backwards too: from the outputs to the inputs, the edges out of each stage live
 * (its gradient comes back along them) and the inspector on the gradient.
 */
import type { Box } from "../layout/layout";
import { endTarget, type EndTarget } from "../model/ends";
import { type Asked, drawnOn, playbackSteps, relays, sameState, type Step, stepGroup } from "../model/playback";
import type { CallTree } from "../model/tree";
import type { ViewGraph, ViewState } from "../model/view_model";
import type { Scene } from "../scene/types";
import type { Camera } from "../view/camera";
import { h, Listeners } from "../view/dom";
import type { GraphView } from "../view/graph_view";
import type { WireCall } from "../wire";
import { at } from "../wire_check";

/** What playback is doing, as the widget's traitlet carries it. */
export interface PlaybackState {
  at: number; // the step shown; -1: playback is off
  playing: boolean;
  speed: number; // steps per second, relative: 1 is one step every STEP_MS
  stage: string | null; // the stage (or input / output) of step `at`
  steps: number; // how many steps the walk has
  backward: boolean; // the walk goes backwards, from the outputs: the backward pass
}

export interface PlayerHost {
  readonly graphView: GraphView;
  readonly camera: Camera;
  shown(): { tree: CallTree; view: ViewGraph; scene: Scene } | null;
  /** The expansion state on screen (the walk starts from it). */
  state(): ViewState;
  /** Lay out and draw a state, `anchor` kept where it was, `focus` (the step's node) open
   * where others fold to fit beside the inspector; resolves once it is painted. */
  setState(state: ViewState, anchor?: { key: string; box: Box }, focus?: string): Promise<void>;
  /** Show a stage's (or an input's, an output's) data in the inspector. */
  open(target: WireCall | EndTarget): void;
  /** Where the walk starts from the state on screen: a state that shows more of the model
   * beside the inspector (app/framing.ts playFrom), or the same. */
  playFrom?(state: ViewState): Promise<ViewState>;
  /** Playback changed (not called for changes that came from outside). */
  changed?(p: PlaybackState): void;
  /** The walk turned: the inspector shows the gradient (backward) or the output. */
  turned?(backward: boolean): void;
}

export const STEP_MS = 1400;
export const SPEEDS = [0.5, 1, 2, 4];

export class Player {
  readonly button: HTMLButtonElement; // Play / Pause, in the toolbar
  readonly bar: HTMLElement; // the transport, shown while playback is on
  private readonly scrub: HTMLInputElement;
  private readonly where: HTMLElement;
  private readonly speedSelect: HTMLSelectElement;
  private readonly turn: HTMLButtonElement; // forward / backward, after a backward pass
  private readonly listeners = new Listeners();
  private steps: Step[] = [];
  private start: ViewState | null = null; // the state on screen when playback began: stop() goes back to it
  private from: ViewState | null = null; // the state the walk starts from (host.playFrom)
  private ready: Promise<void> = Promise.resolve(); // the walk's start chosen
  private at = -1;
  private playing = false;
  private speed = 1;
  private timer = 0;
  private seq = 0; // the step being drawn (a newer one drops an older one)
  private backward = false;
  private asked: Asked | null = null; // the state a step laid out last asked for

  constructor(private readonly host: PlayerHost) {
    this.button = h(
      "button",
      {
        class: "nfw-btn nfw-play",
        type: "button",
        "aria-label": "Play",
        title: "Play the forward pass step by step (Space)",
      },
      "▶ Play",
    );
    const button = (label: string, title: string, text: string) =>
      h("button", { class: "nfw-btn", type: "button", "aria-label": label, title }, text);
    const back = button("Step back", "Step back (←)", "◀");
    const forward = button("Step forward", "Step forward (→)", "▶");
    this.scrub = h("input", {
      class: "nfw-scrub",
      type: "range",
      min: "0",
      max: "0",
      step: "1",
      value: "0",
      "aria-label": "playback position",
    });
    this.where = h("span", { class: "nfw-where", "aria-live": "polite" });
    this.speedSelect = h(
      "select",
      { class: "nfw-select", "aria-label": "playback speed", title: "Playback speed" },
      ...SPEEDS.map((v) => h("option", { value: String(v) }, `${v}×`)),
    );
    this.speedSelect.value = "1";
    const stop = button("Stop playback", "Stop playback (Esc)", "✕");
    this.turn = h(
      "button",
      {
        class: "nfw-btn nfw-turn",
        type: "button",
        "aria-pressed": "false",
        title: "Walk the backward pass: from the loss back to the inputs, each stage's gradient (B)",
        hidden: true,
      },
      "⟲ Backward pass",
    );
    this.bar = h(
      "div",
      { class: "nfw-transport", role: "toolbar", "aria-label": "playback", hidden: true },
      back,
      forward,
      this.scrub,
      this.where,
      this.speedSelect,
      this.turn,
      stop,
    );
    const L = this.listeners;
    L.on(this.button, "click", () => this.toggle());
    L.on(back, "click", () => this.step(-1));
    L.on(forward, "click", () => this.step(1));
    L.on(stop, "click", () => this.stop());
    L.on(this.scrub, "input", () => this.seek(Number(this.scrub.value)));
    L.on(this.speedSelect, "change", () => this.setSpeed(Number(this.speedSelect.value)));
    L.on(this.turn, "click", () => this.setBackward(!this.backward));
  }

  /** The walk (its steps in its order), the step shown (null: playback is off), which way it goes. */
  get current(): { steps: readonly Step[]; at: number; backward: boolean } | null {
    return this.active ? { steps: this.steps, at: this.at, backward: this.backward } : null;
  }

  /** Walk the backward pass (from the outputs) or the forward one; the step shown stays. */
  setBackward(on: boolean) {
    const grads = this.host.shown()?.tree.graph.grad != null;
    if (on === this.backward || (on && !grads)) return;
    this.backward = on;
    this.host.turned?.(on);
    if (!this.active) return this.sync();
    this.steps.reverse();
    this.go(this.steps.length - 1 - this.at);
  }

  get active(): boolean {
    return this.at >= 0;
  }

  get state(): PlaybackState {
    return {
      at: this.at,
      playing: this.playing,
      speed: this.speed,
      stage: this.steps[this.at]?.id ?? null,
      steps: this.steps.length,
      backward: this.backward,
    };
  }

  /** Play, or pause while playing; from the end, from the start again. */
  toggle() {
    if (this.playing) this.pause();
    else this.play();
  }

  /** Play on from the step shown (from the start when off or at the end). */
  play() {
    if (!this.begin()) return;
    this.playing = true;
    if (this.at < 0 || this.at >= this.steps.length - 1) return this.go(0);
    this.sync();
    this.schedule();
  }

  pause() {
    this.playing = false;
    clearTimeout(this.timer);
    this.sync();
  }

  /** One step on (or back); playback starts paused when it was off. */
  step(by: number) {
    if (!this.begin()) return;
    this.playing = false;
    clearTimeout(this.timer);
    this.go(Math.min(Math.max(this.at + by, 0), this.steps.length - 1));
  }

  seek(i: number) {
    if (!this.begin()) return;
    clearTimeout(this.timer);
    this.go(Math.min(Math.max(Math.round(i), 0), this.steps.length - 1));
  }

  setSpeed(speed: number) {
    this.speed = speed > 0 ? speed : 1;
    this.speedSelect.value = String(this.speed);
    if (this.playing) {
      clearTimeout(this.timer);
      this.schedule();
    }
    this.sync();
  }

  /** Playback off: the view as it was before it began. */
  stop() {
    if (!this.active) return;
    const { start, asked } = this;
    this.forget();
    if (start) this.end(start, asked !== null);
  }

  /** A graph of another model: playback is off, nothing to go back to. */
  forget() {
    clearTimeout(this.timer);
    this.seq++;
    this.at = -1;
    this.playing = false;
    this.steps = [];
    this.start = this.from = this.asked = null;
    this.sync();
  }

  /** From outside (the traitlet): the step, playing or not, the speed, the way; `at` -1 stops. */
  apply(p: { at?: number; playing?: boolean; speed?: number; backward?: boolean }) {
    if (p.speed !== undefined && p.speed !== this.speed) this.setSpeed(p.speed);
    if (p.backward !== undefined) this.setBackward(p.backward);
    if (p.at !== undefined && p.at < 0) return this.stop();
    if (p.at !== undefined && p.at !== this.at) this.seek(p.at);
    if (p.playing === true && !this.playing) this.play();
    else if (p.playing === false && this.playing) this.pause();
  }

  /** A new graph: the walk of its view (playback goes on at the same step where it can). */
  refresh() {
    if (!this.active) return;
    const tree = this.host.shown()?.tree;
    if (!tree || !this.from) return this.stop();
    this.steps = this.walk(tree, this.from);
    if (!this.steps.length) return this.stop();
    this.go(Math.min(this.at, this.steps.length - 1));
  }

  private begin(): boolean {
    if (this.active) return true;
    const tree = this.host.shown()?.tree;
    if (!tree) return false;
    const start = this.host.state();
    this.start = this.from = start;
    this.steps = this.walk(tree, start);
    if (!this.steps.length) return false;
    this.scrub.max = String(this.steps.length - 1);
    // a start that shows more beside the inspector: the walk again from it (its first steps,
    // the inputs, are the same)
    this.ready = (this.host.playFrom?.(start) ?? Promise.resolve(start))
      .then((from) => {
        if (from === start || this.start !== start) return;
        this.from = from;
        this.steps = this.walk(tree, from);
        this.at = Math.min(this.at, this.steps.length - 1);
        this.sync();
      })
      .catch(() => undefined); // (no layout: the walk from the state on screen)
    return true;
  }

  /** The steps in the walk's order: the forward pass's, or reversed (the backward pass). */
  private walk(tree: CallTree, start: ViewState): Step[] {
    if (tree.graph.grad === null) this.backward = false;
    const steps = playbackSteps(tree, start);
    return this.backward ? steps.reverse() : steps;
  }

  private go(i: number) {
    this.at = i;
    const seq = ++this.seq;
    this.sync();
    void this.ready
      .then(() => (seq === this.seq ? this.show(at(this.steps, this.at), seq) : undefined))
      .then(() => {
        if (seq !== this.seq || !this.playing) return;
        this.schedule();
      });
  }

  private schedule() {
    clearTimeout(this.timer);
    this.timer = window.setTimeout(() => {
      if (!this.playing) return;
      if (this.at >= this.steps.length - 1) {
        this.playing = false;
        this.sync();
        return;
      }
      this.go(this.at + 1);
    }, STEP_MS / this.speed);
  }

  /** Draw a step: the groups it opens (the node current so far kept in place), the current
   * node and the edges bringing it data, its data in the inspector, the node in view. */
  private async show(step: Step, seq: number) {
    const { host } = this;
    const shown = host.shown();
    if (!shown) return;
    if (relays(step, { state: host.state(), view: shown.view, whole: host.camera.showsAll(shown.scene) }, this.asked)) {
      await host.setState(step.state, this.anchor(), step.key);
      const drawn = host.shown();
      if (seq !== this.seq || !drawn) return; // a later step is drawn meanwhile
      const on = drawnOn(drawn.view, step);
      const holder = on.part === undefined ? undefined : on.key;
      this.asked = { state: step.state, drew: host.state(), group: stepGroup(drawn.view, step.key), holder };
    }
    // its own node, or the group that holds it, folded to fit: its part line names the step
    const { key, part } = drawnOn(host.shown()?.view ?? shown.view, step);
    host.graphView.setCurrent(key, this.backward, part);
    const { graph } = shown.tree;
    const target = step.call < 0 ? endTarget(graph, step.id) : graph.calls[step.call];
    if (target) host.open(target);
    // in view with the edges bringing its data, or backwards its gradient: the nodes they come
    // from (a no-op while the whole graph is)
    const n = host.graphView.node(key);
    const around = host.graphView
      .edgesAt(key)
      .filter((e) => (this.backward ? e.src : e.dst) === key)
      .map((e) => host.graphView.node(this.backward ? e.dst : e.src)?.box);
    if (n)
      host.camera.keepInView(
        n.box,
        around.filter((b): b is Box => b !== undefined),
        host.camera.readK,
        220,
      );
  }

  /** What stays in place when a step opens or closes a group: the node current so far, or
   * the group it is drawn in (which may close). */
  private anchor(): { key: string; box: Box } | undefined {
    const { graphView } = this.host;
    const shown = this.host.shown();
    const key = graphView.currentKey;
    const n = key ? graphView.node(key) : undefined;
    if (!key || !n || !shown) return undefined;
    const container = shown.view.byKey.get(key)?.path.at(-1);
    const box = container ? shown.scene.clusters.find((c) => c.key === container)?.box : undefined;
    if (!container || !box) return { key, box: n.box };
    if (container.startsWith("k:")) return { key: container, box }; // a stack stays one while it steps
    return { key: `${container.startsWith("c:") ? "s" : "f"}:${container.slice(2)}`, box };
  }

  /** Back to the view playback began from, the whole graph in view where it fits; laid out
   * again where a step was (`relaid`: a layout of one may be in flight, folding groups). */
  private end(start: ViewState, relaid: boolean) {
    const { host } = this;
    host.graphView.setCurrent(null, false);
    if (relaid || !sameState(start, host.state())) return void host.setState(start);
    const scene = host.shown()?.scene;
    if (scene) host.camera.showWhole(scene);
  }

  /** The controls say what playback does; the host hears of it. */
  private sync() {
    const on = this.active;
    this.bar.hidden = !on;
    this.button.textContent = this.playing ? "❚❚ Pause" : "▶ Play";
    this.button.setAttribute("aria-label", this.playing ? "Pause" : "Play");
    this.button.setAttribute("aria-pressed", String(this.playing));
    this.turn.hidden = this.host.shown()?.tree.graph.grad == null;
    this.turn.setAttribute("aria-pressed", String(this.backward));
    if (on) {
      const step = this.steps[this.at];
      this.scrub.max = String(this.steps.length - 1);
      this.scrub.value = String(this.at);
      this.where.textContent = `${this.at + 1} / ${this.steps.length} · ${step?.id ?? ""}`;
    }
    this.host.changed?.(this.state);
  }

  dispose() {
    clearTimeout(this.timer);
    this.seq++;
    this.listeners.dispose();
  }
}
