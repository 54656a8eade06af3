/**
 * anywidget entry: `export default { initialize, render }`. Glue only: traitlets in (`graph`,
 * `comparison`, `intervention`, `patching`, `selected`, `direction`, `height`, `playback`,
 * `presenting`), stage data over the widget's custom messages (`StageChannel`; `run: "b"` /
 * `"diff"` for the compared run and A − B), interventions asked for as custom messages too
 * (`{type: "intervene"}`, answered `{type: "intervened"}`; `{type: "end_comparison"}`),
 * `selected`, `direction`, `playback` and `presenting` out. Static pages use `renderStatic`.
 */
import { FlowApp } from "./app/app";
import type { Intervened, Spec } from "./app/intervene";
import { decodeStageReply, type StageRequest, type WireBuffer } from "./wire";

export { renderStatic, bakedSource, type Baked, type BakedByStage, type BakedEntry, type StaticHandle } from "./static";
export { SCHEMA } from "./wire";

/** How long the inspector waits for the kernel before it shows an error; for a window of an
 * attention map (a zoom, which the kernel may answer by running the model again), longer. */
export const STAGE_TIMEOUT_MS = 10_000;
export const ZOOM_TIMEOUT_MS = 120_000;
/** How long the view waits for the kernel to run the model again with an intervention. */
export const INTERVENE_TIMEOUT_MS = 600_000;

type Callback = (...args: never[]) => void;

/** The part of anywidget's model this widget uses. */
export interface AnyModel {
  get(name: string): unknown;
  set(name: string, value: unknown): void;
  save_changes(): void;
  on(event: string, cb: Callback): void;
  off(event?: string | null, cb?: Callback | null): void;
  send(content: unknown, callbacks?: unknown, buffers?: (ArrayBuffer | ArrayBufferView)[]): void;
}

export interface RenderProps {
  model: AnyModel;
  el: HTMLElement;
}

/**
 * Stage data over the widget's custom messages, which every anywidget host carries (JupyterLab,
 * Notebook, VS Code, Colab, marimo; anywidget's `invoke` is not in all of them): the view sends
 * `{type: "stage", request, body}` (`body`: the StageRequest), the kernel answers
 * `{type: "stage", request, reply}` with the reply's binary buffers. Request ids carry this
 * view's prefix, so two views of one widget never take each other's replies; a reply after its
 * request was cancelled or timed out is dropped.
 */
export class StageChannel {
  private pending = new Map<string, (answer: [unknown, WireBuffer[]]) => void>();
  private count = 0;
  private readonly prefix = Math.random().toString(36).slice(2, 10);
  constructor(private readonly model: AnyModel) {}

  request(body: StageRequest, signal: AbortSignal): Promise<[unknown, WireBuffer[]]> {
    const id = `${this.prefix}:${++this.count}`;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const abort = () => {
        this.pending.delete(id);
        reject(signal.reason);
      };
      signal.addEventListener("abort", abort, { once: true });
      this.pending.set(id, (answer) => {
        signal.removeEventListener("abort", abort);
        resolve(answer);
      });
      this.model.send({ type: "stage", request: id, body });
    });
  }

  /** A custom message from the kernel: resolves the request it answers; false if it is not a stage reply. */
  receive(
    msg: { type?: unknown; request?: unknown; reply?: unknown } | null,
    buffers: WireBuffer[] | undefined,
  ): boolean {
    if (!msg || typeof msg !== "object" || msg.type !== "stage") return false;
    const id = String(msg.request);
    const answer = this.pending.get(id);
    this.pending.delete(id);
    answer?.([msg.reply, buffers ?? []]);
    return true;
  }
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

function withTimeout(signal: AbortSignal, ms: number): AbortSignal {
  const timeout = AbortSignal.timeout(ms);
  if (typeof AbortSignal.any === "function") return AbortSignal.any([signal, timeout]);
  const c = new AbortController();
  for (const s of [signal, timeout]) s.addEventListener("abort", () => c.abort(s.reason), { once: true });
  return c.signal;
}

/**
 * NeuralFlowWidget.save_svg / save_png send {type: "export", request, format: "svg" | "png"};
 * the answer is {type: "export", request, format, ok, error} with the file's bytes as buffer 0.
 */
async function answerExport(app: FlowApp, model: AnyModel, msg: { request?: unknown; format?: string }) {
  const reply = {
    type: "export",
    request: msg.request ?? null,
    format: msg.format,
    ok: true,
    error: null as string | null,
  };
  try {
    const bytes =
      msg.format === "png"
        ? new Uint8Array(await (await app.exportPng()).arrayBuffer())
        : new TextEncoder().encode(app.exportSvg());
    model.send(reply, undefined, [bytes]);
  } catch (err) {
    model.send({ ...reply, ok: false, error: String((err as Error)?.message ?? err) }, undefined, []);
  }
}

/**
 * An intervention asked of the kernel: `{type: "intervene", stage, spec}`, answered by
 * `{type: "intervened", ok, error}` once run B is made (its comparison and intervention
 * traitlets set before). One at a time.
 */
class InterveneChannel {
  private pending: ((answer: Intervened) => void) | null = null;
  constructor(private readonly model: AnyModel) {}

  ask(stage: string, spec: Spec): Promise<Intervened> {
    return new Promise((resolve) => {
      const timer = setTimeout(
        () =>
          this.answer({
            ok: false,
            error: "the kernel did not answer within 10 minutes (is it busy, or was it restarted?)",
          }),
        INTERVENE_TIMEOUT_MS,
      );
      this.pending = (a) => {
        clearTimeout(timer);
        resolve(a);
      };
      this.model.send({ type: "intervene", stage, spec });
    });
  }

  /** A kernel message: true if it answered an intervention. */
  receive(msg: { type?: unknown; ok?: unknown; error?: unknown } | null): boolean {
    if (!msg || typeof msg !== "object" || msg.type !== "intervened") return false;
    this.answer(
      msg.ok === true ? { ok: true } : { ok: false, error: String(msg.error ?? "the kernel reported an error") },
    );
    return true;
  }

  private answer(a: Intervened) {
    const resolve = this.pending;
    this.pending = null;
    resolve?.(a);
  }
}

function render({ model, el }: RenderProps): () => void {
  const channel = new StageChannel(model);
  const interventions = new InterveneChannel(model);
  const app = new FlowApp(el, {
    fetchStage: async (req: StageRequest, signal: AbortSignal) => {
      const timeout = req.window ? ZOOM_TIMEOUT_MS : STAGE_TIMEOUT_MS;
      const [msg, buffers] = await channel.request(req, withTimeout(signal, timeout));
      return decodeStageReply(msg, buffers);
    },
    onSelect: (id) => {
      model.set("selected", id);
      model.save_changes();
    },
    onDirection: (dir) => {
      model.set("direction", dir);
      model.save_changes();
    },
    onPlayback: (p) => {
      model.set("playback", { ...p });
      model.save_changes();
    },
    onPresent: (on) => {
      model.set("presenting", on);
      model.save_changes();
    },
    intervene: (stage, spec) => interventions.ask(stage, spec),
    endComparison: () => model.send({ type: "end_comparison" }),
  });
  const onDirection = () => {
    const dir = model.get("direction");
    if (dir === "TB" || dir === "LR") app.setDirection(dir);
  };
  const onHeight = () => {
    const px = model.get("height");
    if (typeof px === "number" && px > 0) app.root.style.setProperty("--nfw-height", `${px}px`);
  };
  // A comparison made (or dropped) redraws the same graph: the view keeps its state.
  const onGraph = () =>
    app.setGraph(model.get("graph"), model.get("comparison") ?? null, {
      intervention: model.get("intervention"),
      patching: model.get("patching"),
    });
  const onComparison = onGraph;
  const onSelected = () => {
    const id = model.get("selected");
    app.selectStage(typeof id === "string" && id ? id : null, false);
  };
  // widget.step() / play() / pause() / stop() in Python; applied once the graph is drawn
  const onPlayback = () => {
    const p = model.get("playback") as { at?: unknown; playing?: unknown; speed?: unknown; backward?: unknown } | null;
    if (p && typeof p === "object")
      app.lecture.player.apply({
        at: num(p.at),
        playing: typeof p.playing === "boolean" ? p.playing : undefined,
        speed: num(p.speed),
        backward: typeof p.backward === "boolean" ? p.backward : undefined,
      });
  };
  const onPresenting = () => app.lecture.presenter.set(model.get("presenting") === true, false);
  const onCustom = (
    msg: { type?: unknown; request?: unknown; reply?: unknown; format?: string } | null,
    buffers?: WireBuffer[],
  ) => {
    if (channel.receive(msg, buffers) || interventions.receive(msg as { type?: unknown })) return;
    if (msg && typeof msg === "object" && msg.type === "export") void answerExport(app, model, msg);
  };
  model.on("change:graph", onGraph);
  model.on("change:comparison", onComparison);
  model.on("change:intervention", onComparison);
  model.on("change:patching", onComparison);
  model.on("change:selected", onSelected);
  model.on("change:direction", onDirection);
  model.on("change:height", onHeight);
  model.on("msg:custom", onCustom);
  model.on("change:playback", onPlayback);
  model.on("change:presenting", onPresenting);
  onHeight();
  onDirection();
  onGraph();
  if (model.get("selected")) onSelected();
  el.addEventListener("nfw-painted", onPlayback, { once: true });
  if (model.get("presenting") === true) onPresenting();
  return () => {
    model.off("change:graph", onGraph);
    model.off("change:comparison", onComparison);
    model.off("change:intervention", onComparison);
    model.off("change:patching", onComparison);
    model.off("change:selected", onSelected);
    model.off("change:direction", onDirection);
    model.off("change:height", onHeight);
    model.off("msg:custom", onCustom);
    model.off("change:playback", onPlayback);
    model.off("change:presenting", onPresenting);
    el.removeEventListener("nfw-painted", onPlayback);
    app.dispose();
  };
}

export default {
  initialize() {},
  render,
};
