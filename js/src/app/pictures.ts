/**
 * Data on the graph (the toolbar's "Data" toggle): every stage and port carries its default
 * view as a picture, like a textbook figure of a network at work. On, the layout makes the
 * nodes taller, or wider where the model is too tall for that (app/framing.ts,
 * scene/request.ts), and the pictures are asked for as nodes are drawn (view/thumbnails.ts);
 * off, the nodes are plain again.
 */
import type { Scene } from "../scene/types";
import type { StageRequest } from "../wire";
import type { GraphView } from "../view/graph_view";
import type { FetchStage } from "../view/inspector";
import { Thumbnails } from "../view/thumbnails";
import { Listeners } from "../view/dom";
import type { Framing } from "./framing";

export class Pictures {
  on = false;
  private readonly thumbs: Thumbnails;
  private readonly listeners = new Listeners();

  constructor(
    private readonly button: HTMLButtonElement,
    fetchStage: FetchStage,
    available: (req: StageRequest) => boolean,
    private readonly graphView: GraphView,
    private readonly framing: Framing,
    private readonly relayout: () => void,
  ) {
    this.thumbs = new Thumbnails(fetchStage, available, (id) => graphView.thumbArrived(id));
    this.listeners.on(button, "click", () => this.set(!this.on));
  }

  set(on: boolean) {
    if (on === this.on) return;
    this.on = on;
    this.button.setAttribute("aria-pressed", String(on));
    this.framing.thumbs = on;
    this.graphView.setThumbs(on ? (id) => this.thumbs.get(id) : null);
    this.relayout();
  }

  /** A scene was drawn: ask for the pictures of its stages and ports. */
  painted(scene: Scene) {
    if (this.on) this.thumbs.want(scene.nodes.filter((n) => n.kind !== "fold").map((n) => n.id));
  }

  /** A new run: its pictures are other ones. */
  clear() {
    this.thumbs.clear();
  }

  dispose() {
    this.listeners.dispose();
    this.thumbs.dispose();
  }
}
