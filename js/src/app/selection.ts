/**
 * What the user points at in the flow view: the selected stage (or model input / output,
 * with its inspector open), the node holding the keyboard focus, and the search's matches;
 * marked on the drawing (on the node that shows them: itself, its fold or the group around
 * it) and kept in step with the inspector and the kernel's `selected`.
 */
import { endKey, endTarget, type EndTarget } from "../model/ends";
import type { CallTree } from "../model/tree";
import { nodeKeyForCall, stageKey, type ViewGraph, type ViewState } from "../model/view_model";
import { isShown } from "../model/view_state";
import type { Camera } from "../view/camera";
import type { GraphView } from "../view/graph_view";
import type { Inspector } from "../view/inspector";
import type { WireCall } from "../wire";
import type { Viewfinder } from "./viewfinder";
import { at } from "../wire_check";

/** What the selection reads of the flow view (app.ts) and drives. */
export interface SelectionHost {
  tree(): CallTree | null;
  view(): ViewGraph | null; // the view painted last (null before the first paint)
  state(): ViewState;
  graphView: GraphView;
  camera: Camera;
  inspector: () => Inspector;
  finder: () => Viewfinder;
  canvas: HTMLElement;
  onSelect?: (stage: string | null) => void; // the user picked a stage, or closed the inspector (null)
  /** Expand and unfold what hides a call; resolves once it is painted. */
  reveal(call: number): Promise<void>;
  /** Select a stage, drawn and centred (controls.ts); `shown`: whether it is drawn now. */
  showStage(id: string, shown: boolean): void;
}

export class Selection {
  id: string | null = null; // the selected stage, input or output
  focusKey: string | null = null;
  private matches: number[] = [];

  constructor(private readonly host: SelectionHost) {}

  /**
   * Select a stage (by id) and open the inspector on it; from Python (fromUser false) also
   * expand the groups and unfold the runs that hide it, and bring it into view. null clears.
   */
  select(id: string | null, fromUser: boolean) {
    // our own choice echoed back (the widget's traitlet): the view stays as it is (an
    // attention's pill clicked keeps the attention open as a group: inspect)
    if (!fromUser && id !== null && id === this.id && this.host.inspector().stage === id) return this.sync();
    const tree = this.host.tree();
    this.id = id;
    if (id === null) {
      this.host.inspector().close();
      this.sync();
      return;
    }
    const call = tree?.byId.get(id);
    const end = tree && call === undefined ? endTarget(tree.graph, id) : null;
    if (end) {
      if (fromUser) this.host.onSelect?.(id);
      else this.focus(endKey(tree!.graph, id));
      this.openInspector(end);
      return this.sync();
    }
    if (!tree || call === undefined) return; // kept: revealed when its graph arrives
    if (fromUser) this.host.onSelect?.(id);
    this.openInspector(at(tree.graph.calls, call));
    const key = stageKey(id);
    if (!isShown(tree, this.host.state(), call)) {
      void this.host.reveal(call).then(() => {
        if (this.id === id) this.focus(key);
      });
      return;
    }
    this.sync();
    // Shown in the state, but maybe not painted yet (a layout in flight): focus after it.
    if (!fromUser && this.host.view()?.byKey.has(key)) this.focus(key);
  }

  /** Select a stage and open the inspector on it, the view as it is: an attention's junction
   * clicked (the stage whose forward ran it stays open as a group, its maps in the inspector). */
  inspect(id: string) {
    const tree = this.host.tree();
    const call = tree?.byId.get(id);
    if (!tree || call === undefined) return;
    this.id = id;
    this.openInspector(at(tree.graph.calls, call));
    this.host.onSelect?.(id); // (after: its echo finds the inspector open on it, select)
    this.sync();
  }

  /** Select a stage, drawn and centred, with its inspector open (the banners' buttons). */
  show(id: string) {
    const tree = this.host.tree();
    const call = tree?.byId.get(id);
    if (tree && call !== undefined) this.host.showStage(id, isShown(tree, this.host.state(), call));
  }

  /** The inspector moved to another stage by itself (a map of the model view clicked). */
  opened(id: string) {
    this.id = id;
    this.host.onSelect?.(id);
    this.sync();
  }

  /** Open the inspector on a stage (or an input, an output), as wide as leaves the graph legible. */
  openInspector(target: WireCall | EndTarget) {
    this.host.finder().openInspector(() => this.host.inspector().open(target));
  }

  closeInspector(): boolean {
    if (!this.host.inspector().stage) return false;
    this.host.inspector().close();
    return true;
  }

  inspectorClosed() {
    if (this.id !== null) {
      this.id = null;
      this.host.onSelect?.(null);
    }
    this.sync();
    this.host.finder().inspectorClosed();
    this.host.canvas.focus({ preventScroll: true });
  }

  setMatches(calls: number[]) {
    this.matches = calls;
    this.sync();
  }

  /** The key of the node that shows the selected stage (itself, or the fold or group around it). */
  key(): string | null {
    const tree = this.host.tree();
    const view = this.host.view();
    const call = this.id === null ? undefined : tree?.byId.get(this.id);
    if (!tree || !view) return null;
    return call === undefined ? endKey(tree.graph, this.id) : nodeKeyForCall(tree, view, call);
  }

  /** Mark the selection, the focus and the matches on the nodes drawn now. */
  sync() {
    const tree = this.host.tree();
    const view = this.host.view();
    if (!tree || !view) return;
    const g = this.host.graphView;
    g.setSelected(this.key(), this.id);
    g.setFocused(this.focusKey && view.byKey.has(this.focusKey) ? this.focusKey : null);
    g.setMatches(this.matches.map((c) => nodeKeyForCall(tree, view, c)).filter((k): k is string => k !== null));
  }

  focus(key: string | null, scroll = true) {
    this.focusKey = key;
    this.host.graphView.setFocused(key);
    const n = key && scroll ? this.host.graphView.node(key) : undefined;
    if (n) this.host.camera.ensureVisible(n.box);
  }
}
