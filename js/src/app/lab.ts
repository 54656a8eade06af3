/**
 * The tools for acting on the model from the graph, made and wired together for the flow
 * view (app.ts): what the graph is coloured by and its legend (colouring.ts), the logit
 * lens's chips (lens.ts) and the context menu's interventions (intervene.ts). The flow view tells them what happened (a run came, a scene was drawn,
 * playback moved); they draw on the graph view and ask the kernel.
 */
import type { CallTree } from "../model/tree";
import type { ViewGraph } from "../model/view_model";
import type { Scene } from "../scene/types";
import type { Chrome } from "../view/chrome";
import type { GraphView } from "../view/graph_view";
import type { FetchStage } from "../view/inspector";
import type { StageRequest, WireGraph } from "../wire";
import { Colouring } from "./colouring";
import { type Intervened, Interventions, type Spec } from "./intervene";
import { Lens } from "./lens";
import type { Player } from "./player";

export interface LabHost {
  readonly ui: Chrome;
  readonly graphView: GraphView;
  shown(): { tree: CallTree; view: ViewGraph; scene: Scene } | null;
  player(): Player;
  fetchStage: FetchStage;
  available?: (req: StageRequest) => boolean;
  intervene?: (stage: string, spec: Spec) => Promise<Intervened>;
  /** Select a stage (or a model input, an output) and open its inspector. */
  selectStage(id: string, fromUser: boolean): void;
  graph(): WireGraph | null;
}

export class Lab {
  readonly colouring: Colouring;
  readonly lens: Lens;
  readonly interventions: Interventions;

  constructor(host: LabHost) {
    this.colouring = new Colouring(host.ui, host.graphView, host.shown, () => this.lens.legendEntry());
    this.lens = new Lens({
      graphView: host.graphView,
      shown: host.shown,
      fetchStage: host.fetchStage,
      available: host.available ?? (() => true),
      step: () => host.player().current,
      changed: () => this.colouring.legend(),
    });
    this.interventions = new Interventions({
      ui: host.ui,
      shown: host.shown,
      fetchStage: host.fetchStage,
      intervene: host.intervene ?? null,
      done: () => {
        const out = host.graph()?.outputs[0]; // what changed: the model's output, A | B | A − B
        if (out) host.selectStage(out, true);
      },
    });
  }

  dispose() {
    this.lens.dispose();
    this.interventions.dispose();
  }
}
