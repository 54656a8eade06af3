/**
 * The lecture tools around the flow view: playback of the forward pass (player.ts),
 * presentation mode (presenter.ts) and data on the graph (pictures.ts), made and wired
 * together here so the flow view only tells them what happened (a scene drawn, a new run).
 */
import type { Box } from "../layout/layout";
import type { EndTarget } from "../model/ends";
import type { ViewState } from "../model/view_model";
import type { Camera } from "../view/camera";
import type { Chrome } from "../view/chrome";
import type { GraphView } from "../view/graph_view";
import type { Scene } from "../scene/types";
import type { FetchStage } from "../view/inspector";
import type { StageRequest, WireCall } from "../wire";
import type { Framing } from "./framing";
import { Pictures } from "./pictures";
import { Player, type PlayerHost, type PlaybackState } from "./player";
import { Presenter } from "./presenter";
import { INSPECTOR_MIN } from "./viewfinder";

export interface LectureHost {
  readonly ui: Chrome;
  readonly inspector: HTMLElement; // the transport docks on its top while it is open
  readonly graphView: GraphView;
  readonly camera: Camera;
  readonly framing: Framing;
  shown: PlayerHost["shown"];
  state(): ViewState;
  /** Lay out and draw a state (the reason names why, for the painted event; `focus`: the
   * node it is about, kept open where others fold to fit: app/framing.ts lay). */
  setState(state: ViewState, reason: string, anchor?: { key: string; box: Box }, focus?: string): Promise<void>;
  open(target: WireCall | EndTarget): void;
  fetchStage: FetchStage;
  available?: (req: StageRequest) => boolean;
  onPlayback?: (p: PlaybackState) => void;
  onPresent?: (on: boolean) => void;
  onTurn?: (backward: boolean) => void; // playback turned to walk the backward pass, or back
}

export class Lecture {
  readonly player: Player;
  readonly presenter: Presenter;
  readonly pictures: Pictures;

  constructor(host: LectureHost) {
    const { ui } = host;
    this.player = new Player({
      graphView: host.graphView,
      camera: host.camera,
      shown: host.shown,
      state: host.state,
      setState: (state, anchor, focus) => host.setState(state, "playback", anchor, focus),
      open: host.open,
      playFrom: (state) => {
        // the canvas beside the inspector at its least width (app/viewfinder.ts narrows it so)
        const tree = host.shown()?.tree;
        const el = host.inspector;
        const total = host.ui.canvas.clientWidth + (el.hidden ? 0 : el.getBoundingClientRect().width);
        return tree ? host.framing.playFrom(state, tree, total - INSPECTOR_MIN) : Promise.resolve(state);
      },
      changed: (p) => {
        this.dock();
        host.onPlayback?.(p);
      },
      turned: host.onTurn,
    });
    // the state Present or Data on the graph began on: a user's open blocks that it had to fold
    // to show the whole model at its larger type or with its pictures come back when it ends
    const before = new Map<string, ViewState | null>();
    const framed = (reason: "present" | "pictures", on: boolean) => {
      const now = host.state();
      const was = before.get(reason);
      before.set(reason, on ? now : null);
      void host.setState(!on && was && !was.auto && now.auto ? was : now, reason);
    };
    this.presenter = new Presenter(ui.root, ui.present, host.camera, (on, fromUser) => {
      if (fromUser) host.onPresent?.(on);
      framed("present", on); // framed again for the type's new size
    });
    const relayout = () => {
      host.camera.needsFit = true; // every node changes size: framed again
      framed("pictures", this.pictures.on);
    };
    this.pictures = new Pictures(
      ui.data,
      host.fetchStage,
      host.available ?? (() => true),
      host.graphView,
      host.framing,
      relayout,
    );
    ui.dirTB.parentElement!.before(this.player.button);
    ui.banners.after(this.player.bar);
    this.dock = () => {
      // on top of the inspector while both show (the step's data under its controls: the
      // canvas keeps its height), else above the canvas
      const { bar } = this.player;
      const on = !bar.hidden && !host.inspector.hidden;
      if (on && bar.parentElement !== host.inspector) host.inspector.prepend(bar);
      if (!on && bar.previousElementSibling !== ui.banners) ui.banners.after(bar);
    };
  }

  /** Put the transport where it belongs now: on top of the inspector while it is open. */
  readonly dock: () => void;

  /** A scene was drawn. */
  painted(scene: Scene) {
    this.pictures.painted(scene);
  }

  /** A new run: of the same model (`same`: playback goes on), or of another. */
  newRun(same: boolean) {
    this.pictures.clear();
    if (same) this.player.refresh();
    else this.player.forget();
  }

  dispose() {
    this.player.dispose();
    this.presenter.dispose();
    this.pictures.dispose();
  }
}
