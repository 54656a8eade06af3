/** Draws a scene as SVG: nodes (cards.ts), cluster boxes, edges (in their source's colour by
 * gradient norm), the logit lens's chips (chips.ts); hover, selection, culling, level of detail. */
import { edgePath, type TextKind } from "../scene/scene";
import type { Scene, SceneCluster, SceneEdge, SceneNode } from "../scene/types";
import { type CardLook, canvasFonts, clusterCard, type FontKind, type NodeFill, nodeCard, tintGroup } from "./cards";
import { type Chip, drawChips } from "./chips";
import { Listeners, s, syncChildren, textWidth } from "./dom";
import { figureLayers, type Thumb } from "./figure";
import type { Transform } from "./zoom";

export interface GraphViewEvents {
  activate(node: SceneNode): void; // click on a node
  open(stage: string): void; // click on an attention's junction: its stage (the maps)
  toggle(key: string): void; // expand / collapse / unfold / refold (node or cluster key)
  background(): void;
}

/** Above this many nodes only what is on screen is kept in the DOM. */
const CULL_MIN = 250;

let instances = 0;

export class GraphView {
  readonly svg: SVGSVGElement;
  private readonly world: SVGGElement;
  private readonly clusterLayer: SVGGElement;
  private readonly edgeLayer: SVGGElement;
  private readonly nodeLayer: SVGGElement;
  private readonly busLayer = s("g", { class: "nfw-buses" }); // under the edges
  private readonly stubLayer = s("g", { class: "nfw-stubs" }); // the junctions' stubs, under the groups
  private readonly joinLayer = s("g", { class: "nfw-joins" }); // junctions, over the groups
  private readonly chipLayer = s("g", { class: "nfw-chips" }); // the logit lens, over the nodes
  private readonly uid = `nfw${++instances}`;
  private readonly defs: SVGDefsElement;
  private scene: Scene | null = null;
  private nodeEls = new Map<string, SVGGElement>();
  private edgeEls = new Map<string, SVGPathElement>();
  private edgesOf = new Map<string, SceneEdge[]>();
  private nodeByKey = new Map<string, SceneNode>();
  private fills: Map<string, NodeFill> | null = null;
  private strokes: Map<string, string> | null = null; // edge key -> colour (by gradient norm)
  private chips: ReadonlyMap<string, Chip> | null = null;
  private selected: string | null = null;
  private focused: string | null = null;
  private current: string | null = null; // the stage playback shows (data-current)
  private part: string | undefined; // ... where inside it the step is (a group folded to fit)
  private backward = false; // playback walks the backward pass: the edges out of the current node carry its gradient
  private thumbOf: ((id: string) => Thumb | null | undefined) | null = null; // data on the graph
  private matches = new Set<string>();
  private viewport: [number, number, number, number] = [0, 0, 1e9, 1e9];
  private listeners = new Listeners();
  private cullFrame = 0;
  private fonts: Record<FontKind, string> | null = null;

  /** Canvas fonts matching the CSS, for measuring labels (kept once the SVG is in the page:
   * a layout may measure before it is, and its family is not known then). */
  private font(kind: FontKind): string {
    if (this.fonts) return this.fonts[kind];
    const fonts = canvasFonts(this.svg);
    if (this.svg.isConnected) this.fonts = fonts;
    return fonts[kind];
  }

  /** How wide a text is drawn at scale 1 (a layout sizes each node by its words: scene/request.ts). */
  measure(text: string, kind: TextKind): number {
    return textWidth(text, this.font(kind));
  }

  constructor(
    private readonly events: GraphViewEvents,
    private readonly isDragging: () => boolean,
  ) {
    this.svg = s("svg", { class: "nfw-svg nfw-graph", role: "img", "aria-label": "network flow graph" });
    const defs = s("defs");
    this.defs = defs;
    for (const kind of ["flow", "skip", "merge", "order", "stroke"]) {
      const m = s("marker", {
        id: `${this.uid}-arrow-${kind}`,
        viewBox: "0 0 10 10",
        refX: 9,
        refY: 5,
        markerWidth: 7,
        markerHeight: 7,
        orient: "auto-start-reverse",
        markerUnits: "userSpaceOnUse",
      });
      // "stroke": an edge coloured by its own stroke (context-stroke: the gradient's colour)
      const fill = kind === "stroke" ? { fill: "context-stroke" } : { class: `nfw-arrow-${kind}` };
      m.append(s("path", { d: "M0,1 L10,5 L0,9 z", ...fill }));
      defs.append(m);
    }
    this.world = s("g", { class: "nfw-world" });
    this.clusterLayer = s("g", { class: "nfw-clusters" });
    this.edgeLayer = s("g", { class: "nfw-edges" });
    this.nodeLayer = s("g", { class: "nfw-nodes" });
    // Edges under the (nearly clear) group boxes: a route into a group passes under its
    // header, whose title has a halo and whose badge is opaque, instead of over them.
    this.world.append(this.busLayer, this.edgeLayer, this.stubLayer, this.clusterLayer, this.joinLayer, this.nodeLayer);
    this.world.append(this.chipLayer); // the logit lens's chips, over everything
    this.svg.append(defs, this.world);
    const L = this.listeners;
    L.on(this.svg, "click", (e: MouseEvent) => this.click(e));
    L.on(this.svg, "dblclick", (e: MouseEvent) => {
      const g = (e.target as Element).closest<SVGGElement>(".nfw-node");
      const node = g && this.nodeByKey.get(g.dataset.key!);
      if (node?.expandable && node.kind === "stage") this.events.toggle(node.key);
    });
    L.on(this.nodeLayer, "pointerover", (e: PointerEvent) => {
      const g = (e.target as Element).closest<SVGGElement>(".nfw-node");
      if (g && !this.isDragging()) this.hover(g.dataset.key!);
    });
    L.on(this.nodeLayer, "pointerout", (e: PointerEvent) => {
      const to = e.relatedTarget as Element | null;
      if (!to?.closest?.(".nfw-node")) this.hover(null);
    });
  }

  private click(e: MouseEvent) {
    if (this.isDragging()) return;
    const t = e.target as Element;
    const action = t.closest<SVGElement>("[data-action]");
    if (action) {
      this.events.toggle(action.dataset.key!);
      return;
    }
    const pill = t.closest<SVGGElement>(".nfw-junction[data-stage]");
    if (pill) return this.events.open(pill.dataset.stage!);
    const g = t.closest<SVGGElement>(".nfw-node");
    const node = g && this.nodeByKey.get(g.dataset.key!);
    if (node) this.events.activate(node);
    else this.events.background();
  }

  setScene(scene: Scene, fills: Map<string, NodeFill> | null, strokes: Map<string, string> | null = null) {
    this.scene = scene;
    this.fills = fills;
    this.strokes = strokes;
    this.nodeByKey = new Map(scene.nodes.map((n) => [n.key, n]));
    this.edgesOf = new Map();
    for (const e of scene.edges)
      for (const k of [e.src, e.dst]) (this.edgesOf.get(k) ?? this.edgesOf.set(k, []).get(k)!).push(e);
    this.nodeEls.clear();
    this.edgeEls.clear();
    this.clusterLayer.replaceChildren(...scene.clusters.map((c) => this.clusterEl(c)));
    const fig = figureLayers(scene, `url(#${this.uid}-arrow-flow)`);
    this.busLayer.replaceChildren(...fig.buses);
    this.stubLayer.replaceChildren(...fig.stubs);
    this.joinLayer.replaceChildren(...fig.joins);
    this.edgeLayer.replaceChildren();
    this.nodeLayer.replaceChildren();
    this.chipLayer.replaceChildren();
    this.hover(null);
    this.cull();
    if (this.current !== null) this.setCurrent(this.current, this.backward, this.part);
  }

  setFills(fills: Map<string, NodeFill> | null, strokes: Map<string, string> | null = this.strokes) {
    if (!this.scene) return;
    this.fills = fills;
    this.nodeEls.clear();
    this.nodeLayer.replaceChildren();
    this.clusterLayer.replaceChildren(...this.scene.clusters.map((c) => this.clusterEl(c)));
    if (strokes !== this.strokes) {
      this.strokes = strokes;
      this.edgeEls.clear();
      this.edgeLayer.replaceChildren();
    }
    this.cull();
  }

  /** The logit lens's chips by node or group key (null: none). */
  setChips(chips: ReadonlyMap<string, Chip> | null) {
    this.chips = chips;
    this.chipLayer.replaceChildren(...(this.scene && chips ? drawChips(this.scene, chips, this.font("chip")) : []));
  }

  get nodes(): readonly SceneNode[] {
    return this.scene?.nodes ?? [];
  }

  node(key: string): SceneNode | undefined {
    return this.nodeByKey.get(key);
  }

  edgesAt(key: string): readonly SceneEdge[] {
    return this.edgesOf.get(key) ?? [];
  }

  /** Apply the pan/zoom transform: the world group, level of detail, culling. */
  transform(t: Transform, viewport: [number, number, number, number]) {
    this.world.setAttribute("transform", `translate(${t.x.toFixed(2)},${t.y.toFixed(2)}) scale(${t.k.toFixed(4)})`);
    this.svg.classList.toggle("nfw-lod-low", t.k < 0.3);
    this.svg.classList.toggle("nfw-lod-mid", t.k >= 0.3 && t.k < 0.55);
    this.viewport = viewport;
    if ((this.scene?.nodes.length ?? 0) > CULL_MIN && !this.cullFrame) {
      this.cullFrame = requestAnimationFrame(() => {
        this.cullFrame = 0;
        this.cull();
      });
    }
  }

  private cull() {
    const scene = this.scene;
    if (!scene) return;
    const all = scene.nodes.length <= CULL_MIN;
    const [vx, vy, vw, vh] = this.viewport;
    const mx = vw * 0.25;
    const my = vh * 0.25;
    const inView = (x: number, y: number, w: number, h: number) =>
      all || (x + w >= vx - mx && x <= vx + vw + mx && y + h >= vy - my && y <= vy + vh + my);
    const wantNodes: SVGGElement[] = [];
    for (const n of scene.nodes) {
      const [x, y, w, h] = n.box;
      if (!inView(x, y, w, h)) continue;
      let el = this.nodeEls.get(n.key);
      if (!el) {
        el = this.nodeEl(n);
        this.nodeEls.set(n.key, el);
      }
      wantNodes.push(el);
    }
    const wantEdges: SVGPathElement[] = [];
    for (const e of scene.edges) {
      if (!all) {
        let x0 = Infinity,
          y0 = Infinity,
          x1 = -Infinity,
          y1 = -Infinity;
        for (let i = 0; i + 1 < e.points.length; i += 2) {
          const [x, y] = [e.points[i]!, e.points[i + 1]!];
          x0 = Math.min(x0, x);
          x1 = Math.max(x1, x);
          y0 = Math.min(y0, y);
          y1 = Math.max(y1, y);
        }
        if (!inView(x0, y0, x1 - x0, y1 - y0)) continue;
      }
      let el = this.edgeEls.get(e.key);
      if (!el) {
        el = this.edgeEl(e);
        this.edgeEls.set(e.key, el);
      }
      wantEdges.push(el);
    }
    syncChildren(this.nodeLayer, wantNodes);
    syncChildren(this.edgeLayer, wantEdges);
  }

  private edgeEl(e: SceneEdge): SVGPathElement {
    const stroke = this.strokes?.get(e.key);
    const el = s("path", {
      class: `nfw-edge${stroke ? " nfw-edge-stroked" : ""}${this.current !== null && this.live(e, this.current) ? " nfw-live" : ""}`,
      d: edgePath(e.points),
      "data-edge-kind": e.kind,
      "data-src": e.srcId,
      "data-dst": e.dstId,
      "data-key": e.key,
      "marker-end": e.to === e.dst ? `url(#${this.uid}-arrow-${stroke ? "stroke" : e.kind})` : null,
    });
    if (stroke) el.style.stroke = stroke;
    return el;
  }

  private clusterEl(c: SceneCluster): SVGGElement {
    const g = clusterCard(c, (k) => this.font(k));
    tintGroup(g, this.fills?.get(c.key));
    return g;
  }

  private nodeEl(n: SceneNode): SVGGElement {
    const look: CardLook = {
      selected: n.key === this.selected,
      focused: n.key === this.focused,
      current: n.key === this.current,
      part: n.key === this.current ? this.part : undefined,
      match: this.matches.has(n.key),
      fill: this.fills?.get(n.key),
      thumb: this.thumbOf,
      dir: this.scene?.dir ?? "TB",
    };
    return nodeCard(n, look, (k) => this.font(k));
  }

  /** The whole graph (nothing culled, the live layers in order) for `figure` (export.ts) to make a file of; "" without one. */
  exportSvg(figure: (scene: Scene, drawing: SVGGElement, defs: SVGDefsElement, id: string) => string): string {
    const scene = this.scene;
    if (!scene) return "";
    const fig = figureLayers(scene, `url(#${this.uid}-arrow-flow)`);
    const layers = [
      fig.buses,
      scene.edges.map((e) => this.edgeEl(e)),
      fig.stubs,
      scene.clusters.map((c) => this.clusterEl(c)),
      fig.joins,
      scene.nodes.map((n) => this.nodeEl(n)),
      this.chips ? drawChips(scene, this.chips, this.font("chip")) : [],
    ];
    const drawing = s("g", { class: "nfw-world" }, ...layers.map((els) => s("g", {}, ...els)));
    return figure(scene, drawing, this.defs.cloneNode(true) as SVGDefsElement, this.uid);
  }

  /** Data on the graph: each stage's and port's picture by id (undefined: coming; null:
   * none), or null to draw none. The layout must have made room (layoutRequest's thumbs). */
  setThumbs(get: ((id: string) => Thumb | null | undefined) | null) {
    this.thumbOf = get;
    if (this.scene) this.setFills(this.fills);
  }

  /** A picture came: redraw the nodes of that id. */
  thumbArrived(id: string) {
    for (const [key, el] of this.nodeEls) {
      const n = this.nodeByKey.get(key);
      if (n?.id === id) el.replaceWith(this.nodeEls.set(key, this.nodeEl(n)).get(key)!);
    }
  }

  /** Highlight a node's inputs and outputs (null clears). */
  hover(key: string | null) {
    this.svg.classList.toggle("nfw-hovering", key !== null);
    for (const el of this.svg.querySelectorAll(".nfw-hl")) el.classList.remove("nfw-hl");
    if (key === null) return;
    this.nodeEls.get(key)?.classList.add("nfw-hl");
    for (const e of this.edgesOf.get(key) ?? []) {
      this.edgeEls.get(e.key)?.classList.add("nfw-hl");
      this.nodeEls.get(e.src === key ? e.dst : e.src)?.classList.add("nfw-hl");
    }
  }

  private mark(old: string | null, next: string | null, cls: string) {
    if (old) this.nodeEls.get(old)?.classList.remove(cls);
    if (next) this.nodeEls.get(next)?.classList.add(cls);
  }

  setSelected(key: string | null, stage: string | null = null) {
    this.mark(this.selected, key, "nfw-selected");
    this.selected = key;
    for (const j of this.joinLayer.querySelectorAll<SVGGElement>(".nfw-junction[data-stage]"))
      j.classList.toggle("nfw-selected", j.dataset.stage === stage); // an attention's pill: its stage
  }

  setFocused(key: string | null) {
    this.mark(this.focused, key, "nfw-focus");
    this.focused = key;
  }

  /** Whether an edge brings data to a node: into it, or into the junction that feeds it. */
  private feeds(e: SceneEdge, key: string): boolean {
    if (e.to === key) return true;
    return this.scene?.junctions.some((j) => j.key === e.to && j.outs.includes(key)) ?? false;
  }

  get currentKey(): string | null {
    return this.current;
  }

  /** Whether an edge is live while playback is at a node: it brings the node its data, or
   * (backward) the gradient comes back to the node along it: an edge out of it. */
  private live(e: SceneEdge, key: string): boolean {
    return this.backward ? e.src === key : this.feeds(e, key);
  }

  /**
   * The node playback is at (null: none): it carries data-current, the live edges flow
   * (nfw-live: into it, or into the junction whose stub feeds it; walking backwards, out of
   * it), the rest dims. `part`: where in the node the step is, where it stands for a group
   * folded to fit (its part line reads "▸ resnets.1").
   */
  setCurrent(key: string | null, backward = this.backward, part?: string) {
    this.backward = backward;
    this.svg.classList.toggle("nfw-backward", backward && key !== null);
    // the node current so far and the new one drawn again (data-current, the part line)
    const was = this.current;
    [this.current, this.part] = [key, part];
    for (const k of [was, key]) if (k !== null) this.nodeEls.delete(k);
    this.cull();
    this.svg.classList.toggle("nfw-stepping", key !== null);
    for (const el of this.svg.querySelectorAll(".nfw-live")) el.classList.remove("nfw-live");
    if (key === null) return;
    for (const e of this.scene?.edges ?? []) if (this.live(e, key)) this.edgeEls.get(e.key)?.classList.add("nfw-live");
    for (const stub of this.stubLayer.querySelectorAll<SVGElement>(".nfw-stub"))
      if (stub.dataset.stub === key && !backward) stub.classList.add("nfw-live");
  }

  setMatches(keys: Iterable<string>) {
    for (const k of this.matches) this.nodeEls.get(k)?.classList.remove("nfw-match");
    this.matches = new Set(keys);
    for (const k of this.matches) this.nodeEls.get(k)?.classList.add("nfw-match");
  }

  dispose() {
    cancelAnimationFrame(this.cullFrame);
    this.listeners.dispose();
    this.svg.remove();
  }
}
