/**
 * The logit lens on the graph: each block of a language model's residual stream carries a
 * chip with the token its output predicts next (model/readouts.ts, view/chips.ts), at the
 * last position (the graph's own readouts) or at one the user picks in the legend (each
 * block's readout at every position, asked for once: a stage request with `readout`);
 * during playback the chips appear as the walk passes the blocks, the newest marked, so that
 * a lecture watches the prediction form block by block. An offline page has the last
 * position only (it bakes no readouts).
 */
import type { Step } from "../model/playback";
import { lastInside, lastPosition, percent, readoutBlocks, type Top, tokenText } from "../model/readouts";
import type { CallTree } from "../model/tree";
import type { ViewGraph } from "../model/view_model";
import type { Scene } from "../scene/types";
import { type Chip, chipsOf } from "../view/chips";
import { h, Listeners } from "../view/dom";
import type { GraphView } from "../view/graph_view";
import type { FetchStage } from "../view/inspector";
import type { ReadoutData, StageRequest, WireGraph } from "../wire";
import { at } from "../wire_check";

export interface LensHost {
  readonly graphView: GraphView;
  shown(): { tree: CallTree; view: ViewGraph; scene: Scene } | null;
  fetchStage: FetchStage;
  available: (req: StageRequest) => boolean;
  /** Playback's walk and step (null: off), and whether it walks the backward pass. */
  step(): { steps: readonly Step[]; at: number; backward: boolean } | null;
  /** The legend's entry changed (the positions arrived). */
  changed(): void;
}

/** The request for a block's readout at every position, the top 5 at each. */
export const readoutRequest = (stage: string): StageRequest => ({
  stage,
  view: null,
  channel: null,
  head: null,
  sample: null,
  readout: 5,
  position: null,
});

export class Lens {
  private graph: WireGraph | null = null;
  private blocks = new Set<number>();
  private last: Int32Array = new Int32Array(0);
  private position: number | null = null; // null: the last
  private tokens: string[] | null = null; // the positions' labels, once a readout came
  private tables = new Map<number, ReadoutData>(); // by call: every position's top 5
  private loading: Promise<void> | null = null;
  private readonly picker: HTMLSelectElement;
  private readonly entry: HTMLElement;
  private readonly listeners = new Listeners();

  constructor(private readonly host: LensHost) {
    this.picker = h("select", {
      class: "nfw-select nfw-lens-pick",
      "aria-label": "logit lens position",
      title: "The position whose next token the chips predict",
    });
    const sample = h("span", { class: "nfw-lens-sample", "aria-hidden": "true" }, "→ next token");
    this.entry = h(
      "span",
      {
        class: "nfw-lens",
        "data-legend": "lens",
        title:
          "Logit lens: each block's output read through the model's final norm and unembedding; its chip is the token it predicts next",
      },
      sample,
      "after",
      this.picker,
    );
    this.listeners.on(this.picker, "change", () =>
      this.pick(this.picker.value === "" ? null : Number(this.picker.value)),
    );
  }

  /** A run came (`same`: of the same model, the position kept where it still exists). */
  newRun(graph: WireGraph, tree: CallTree, same: boolean) {
    this.graph = graph;
    this.blocks = new Set(readoutBlocks(graph));
    this.last = lastInside(tree);
    this.tables.clear();
    this.loading = null;
    if (!same) {
      this.position = null;
      this.tokens = null;
    }
    this.fillPicker();
    if (this.blocks.size && this.position !== null) void this.load().then(() => this.draw());
    else if (this.blocks.size && this.tokens === null) void this.labels();
  }

  /** The legend's entry (null: the run has no readouts). */
  legendEntry(): HTMLElement | null {
    return this.blocks.size ? this.entry : null;
  }

  /** The chips of what is drawn now (after a paint, a playback step, a position picked). */
  draw() {
    const shown = this.host.shown();
    const graph = this.graph;
    if (!shown || !graph || !this.blocks.size) return this.host.graphView.setChips(null);
    const tops = this.tops(graph);
    const playing = this.host.step();
    const passed = playing && !playing.backward ? this.passed(playing.steps, playing.at) : undefined;
    const chips = chipsOf(shown.view, shown.scene, this.blocks, tops, this.where(), passed);
    if (passed) {
      this.stacked(shown.scene, shown.tree, chips, tops, passed);
      const newest = Math.max(-1, ...[...this.blocks].filter(passed));
      for (const chip of chips.values()) chip.fresh = chip.call === newest; // the prediction just formed there
    }
    this.host.graphView.setChips(chips);
  }

  /** The top token of each block at the chosen position. */
  private tops(graph: WireGraph): Map<number, Top> {
    if (this.position === null) return lastPosition(graph);
    const out = new Map<number, Top>();
    for (const [call, t] of this.tables) {
      const row = t.ids[this.position];
      const id = row?.[0];
      if (id === undefined) continue;
      const name = t.names?.[this.position]?.[0] ?? graph.readout_names[String(id)] ?? String(id);
      out.set(call, { id, name, p: t.probs[this.position]?.[0] ?? 0 });
    }
    return out;
  }

  /** Whether the walk at step `at` has passed a call: no step after it is inside the call and
   * one up to it is (at a model output, every call has been). */
  private passed(steps: readonly Step[], at: number): (call: number) => boolean {
    const range = (s: Step): [number, number] => {
      if (s.call < 0) return [-1, -1];
      // a folded sublayer's step is its last stage, of the layer a stack shows (its members
      // are the first layer's)
      if (s.part) return [s.call, this.last[s.call] ?? s.call];
      const members = s.key.startsWith("f:") ? this.host.shown()?.view.byKey.get(s.key)?.run?.members : null;
      const [first, end] = members?.length ? [members[0]!, members[members.length - 1]!] : [s.call, s.call];
      return [first, this.last[end] ?? end];
    };
    const ranges = steps.map(range);
    const atEnd = this.graph!.outputs.includes(steps[at]?.id ?? "");
    return (call) => {
      if (atEnd) return true;
      const last = this.last[call] ?? call;
      const inside = (j: number) => ranges[j]![0] <= last && ranges[j]![1] >= call;
      let seen = false;
      for (let j = 0; j < steps.length; j++) {
        if (j <= at && inside(j)) seen = true;
        if (j > at && inside(j)) return false;
      }
      return seen;
    };
  }

  /** A stack whose member shown has not been passed yet shows the last member passed, said so. */
  private stacked(
    scene: Scene,
    tree: CallTree,
    chips: Map<string, Chip>,
    tops: ReadonlyMap<number, Top>,
    passed: (call: number) => boolean,
  ) {
    for (const c of scene.clusters) {
      if (c.kind !== "stack" || chips.has(c.key) || !c.stack) continue;
      const run = tree.runList.find((r) => r.members.includes(c.call));
      const before = run?.members.slice(0, c.stack.shown).filter((m) => this.blocks.has(m) && passed(m));
      const m = before?.[before.length - 1];
      const top = m === undefined ? undefined : tops.get(m);
      if (m === undefined || !top) continue;
      const id = at(tree.graph.calls, m).id;
      chips.set(c.key, {
        call: m,
        top,
        text: `${id.split(".").slice(-2).join(".")}: ${tokenText(top.name)}`,
        p: percent(top.p),
        title: `Logit lens so far: ${id}, the last block the forward pass has finished, predicts ${tokenText(top.name)} next ${this.where()}`,
      });
    }
  }

  private where(): string {
    if (this.position === null) return "after the last position";
    const label = this.tokens?.[this.position];
    return `after position ${this.position}${label !== undefined ? ` (${tokenText(label)})` : ""}`;
  }

  private pick(position: number | null) {
    this.position = position;
    if (position === null) return this.draw();
    void this.load().then(() => this.draw());
  }

  /** The positions' labels: one block's readout at every position (its reply's tokens). */
  private async labels() {
    await this.load([...this.blocks].slice(-1));
  }

  /** Every block's readout at every position (once per run). */
  private load(calls: number[] = [...this.blocks]): Promise<void> {
    const graph = this.graph;
    if (!graph) return Promise.resolve();
    const want = calls.filter((c) => !this.tables.has(c));
    const all = want.length === this.blocks.size;
    if (all && this.loading) return this.loading;
    const signal = new AbortController().signal;
    const task = Promise.all(
      want.map(async (c) => {
        const req = readoutRequest(at(graph.calls, c).id);
        if (!this.host.available(req)) return;
        const reply = await this.host.fetchStage(req, signal).catch(() => null);
        if (graph !== this.graph || !reply?.ok || !reply.readout) return;
        this.tables.set(c, reply.readout);
        if (this.tokens === null) {
          this.tokens = reply.tokens ?? reply.readout.ids.map((_, i) => `position ${i}`);
          this.fillPicker();
          this.host.changed();
        }
      }),
    ).then(() => undefined);
    if (all) this.loading = task;
    return task;
  }

  private fillPicker() {
    const n = this.tokens?.length ?? 0;
    const lastLabel = n ? ` · ${tokenText(this.tokens![n - 1]!)}` : "";
    const options = [h("option", { value: "" }, `the last position${lastLabel}`)];
    for (let i = 0; i < n - 1; i++)
      options.push(h("option", { value: String(i) }, `${i} · ${tokenText(this.tokens![i]!)}`));
    this.picker.replaceChildren(...options);
    this.picker.value = this.position === null ? "" : String(this.position);
    this.picker.disabled = n < 2;
    if (n < 2) this.picker.title = "Only the last position's readouts are in this page (the live widget reads any)";
  }

  dispose() {
    this.listeners.dispose();
  }
}
