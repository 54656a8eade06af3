/**
 * Interventions from the graph: a node's context menu (a right click on a stage or an open
 * block; the context-menu key or Shift+F10 on the focused one) switches the stage off
 * (zero), replaces it by its mean over the batch, or, for a stage with attention maps,
 * switches off some of its heads (their count from its attention reply). The kernel runs
 * the model again with it as run B (the widget's `intervene` message); while it runs, a
 * status over the graph says so, and says why when it fails. The comparison that comes back
 * is drawn by the flow view (the `comparison` and `intervention` traitlets); this module
 * only asks. An offline page has no kernel: its menu says so instead.
 */
import { specPhrase } from "../model/experiments";
import type { CallTree } from "../model/tree";
import type { Scene } from "../scene/types";
import type { Chrome } from "../view/chrome";
import { h, Listeners } from "../view/dom";
import type { FetchStage } from "../view/inspector";
import type { WireCall } from "../wire";
import { at } from "../wire_check";

/** What an intervention does to a stage's output (the `intervene` message's spec). */
export type Spec = "zero" | "mean" | { heads: number[] };
/** The kernel's answer to an `intervene` message. */
export type Intervened = { ok: true } | { ok: false; error: string };

/** A spec in the `intervention` traitlet's words (notebook/experiments.py), said by specPhrase. */
const specWords = (spec: Spec): string =>
  specPhrase(typeof spec === "string" ? spec : `heads ${spec.heads.join(", ")} off`);

export interface InterveneHost {
  readonly ui: Chrome;
  shown(): { tree: CallTree; scene: Scene } | null;
  fetchStage: FetchStage;
  /** Run the model again with an intervention as run B; null: no kernel (an offline page). */
  intervene: ((stage: string, spec: Spec) => Promise<Intervened>) | null;
  /** Run B came: show what changed. */
  done(stage: string): void;
}

export class Interventions {
  readonly status: HTMLElement;
  private menu: HTMLElement | null = null;
  private running: string | null = null;
  private readonly listeners = new Listeners();

  constructor(private readonly host: InterveneHost) {
    this.status = h("div", { class: "nfw-run-status", hidden: true });
    host.ui.canvas.append(this.status);
    this.listeners.on(host.ui.canvas, "contextmenu", (e: MouseEvent) => {
      const call = this.callAt(e.target as Element);
      if (call === null) return;
      e.preventDefault();
      this.open(call, e.clientX, e.clientY);
    });
    this.listeners.on(document, "pointerdown", (e: PointerEvent) => {
      if (this.menu && !this.menu.contains(e.target as Node)) this.close();
    });
  }

  /** The stage a right click is on: a stage's node, or an open block's group (a stack: the member it shows). */
  private callAt(el: Element): number | null {
    const shown = this.host.shown();
    const g = el.closest<SVGGElement>(".nfw-node, .nfw-cluster, .nfw-stacked");
    if (!shown || !g?.dataset.key) return null;
    const key = g.dataset.key;
    const node = shown.scene.nodes.find((n) => n.key === key);
    if (node) return node.kind === "stage" ? node.call : null;
    const c = shown.scene.clusters.find((x) => x.key === key);
    return c && c.kind !== "run" ? c.call : null;
  }

  /** The menu of a drawn node or group by key, under it (the keyboard's way). */
  openFor(key: string | null) {
    const shown = this.host.shown();
    if (!shown || !key) return;
    const el = this.host.ui.canvas.querySelector(`[data-key="${CSS.escape(key)}"]`);
    const call = el ? this.callAt(el) : null;
    if (!el || call === null) return;
    const r = el.getBoundingClientRect();
    this.open(call, r.left + Math.min(r.width / 2, 40), r.bottom);
  }

  /** The menu of a stage at a point of the page. */
  open(call: number, x: number, y: number) {
    const shown = this.host.shown();
    if (!shown) return;
    this.close();
    const c = at(shown.tree.graph.calls, call);
    const menu = h("div", { class: "nfw-menu", role: "menu", "aria-label": `What if: ${c.id}`, "data-menu": c.id });
    menu.append(h("div", { class: "nfw-menu-title" }, c.id, h("span", {}, c.type)));
    if (!this.host.intervene) {
      menu.append(
        h(
          "div",
          { class: "nfw-menu-note", role: "note" },
          "This page has no kernel: interventions run the model again, in the live widget (",
          h("code", {}, `widget.intervene("${c.id}", "zero")`),
          ").",
        ),
      );
    } else {
      this.items(menu, c, shown.tree.graph.attention.includes(call));
    }
    this.place(menu, x, y);
    menu.addEventListener("keydown", (e) => this.key(e));
    menu.querySelector<HTMLElement>("[role=menuitem]")?.focus();
  }

  private items(menu: HTMLElement, c: WireCall, attention: boolean) {
    const item = (label: string, hint: string, act: () => void, attrs: Record<string, string> = {}) => {
      const b = h("button", { class: "nfw-menu-item", type: "button", role: "menuitem", title: hint, ...attrs }, label);
      b.addEventListener("click", act);
      menu.append(b);
      return b;
    };
    const busy = this.running !== null;
    const go = (spec: Spec) => () => void this.run(c.id, spec);
    item("Switch off (zero)", `Run the model again with ${c.id}'s output set to zero`, go("zero"), {
      "data-spec": "zero",
    });
    item(
      "Replace by the batch mean",
      `Run the model again with ${c.id}'s output replaced by its mean over the batch`,
      go("mean"),
      {
        "data-spec": "mean",
      },
    );
    if (attention) {
      const heads = item(
        "Switch off heads …",
        `Pick heads of ${c.id} to switch off`,
        () => void this.heads(c.id, heads),
        {
          "data-spec": "heads",
          "aria-haspopup": "true",
        },
      );
    }
    if (busy) for (const b of menu.querySelectorAll<HTMLButtonElement>("button")) b.disabled = true;
    if (busy) menu.append(h("div", { class: "nfw-menu-note" }, `The kernel is still running ${this.running}.`));
  }

  /** The heads of an attention stage, each a toggle, and the button that switches the chosen ones off. */
  private async heads(stage: string, opener: HTMLButtonElement) {
    opener.disabled = true;
    const req = { stage, view: null, channel: null, head: null, sample: null };
    const reply = await this.host.fetchStage(req, new AbortController().signal).catch(() => null);
    const count = reply?.ok ? (reply.attention[0]?.heads ?? 0) : 0;
    if (!count) {
      opener.after(h("div", { class: "nfw-menu-note" }, "Its heads could not be read."));
      return;
    }
    const chosen = new Set<number>();
    const apply = h("button", { class: "nfw-btn nfw-menu-apply", type: "button", disabled: true }, "Switch off");
    const toggles = Array.from({ length: count }, (_, i) => {
      const t = h(
        "button",
        { class: "nfw-head-toggle", type: "button", "aria-pressed": "false", "data-head": i },
        String(i),
      );
      t.addEventListener("click", () => {
        if (chosen.has(i)) chosen.delete(i);
        else chosen.add(i);
        t.setAttribute("aria-pressed", String(chosen.has(i)));
        apply.disabled = chosen.size === 0;
        apply.textContent = chosen.size
          ? `Switch off ${chosen.size} head${chosen.size === 1 ? "" : "s"}`
          : "Switch off";
      });
      return t;
    });
    apply.addEventListener("click", () => void this.run(stage, { heads: [...chosen].sort((a, b) => a - b) }));
    const box = h("div", { class: "nfw-menu-heads", role: "group", "aria-label": `heads of ${stage}` }, ...toggles);
    opener.after(box, apply);
    toggles[0]?.focus();
  }

  /** Ask the kernel; say that it runs, then what it said. */
  private async run(stage: string, spec: Spec) {
    const intervene = this.host.intervene;
    if (!intervene || this.running) return;
    this.close();
    const what = `${stage} ${specWords(spec)}`;
    this.running = what;
    this.say("running", `Running the model again with ${what} …`);
    let answer: Intervened;
    try {
      answer = await intervene(stage, spec);
    } catch (err) {
      answer = { ok: false, error: String((err as Error)?.message ?? err) };
    }
    this.running = null;
    if (answer.ok) {
      this.say(null);
      this.host.done(stage);
    } else this.say("failed", `Could not run the model with ${what}: ${answer.error}`);
  }

  private say(state: "running" | "failed" | null, text = "") {
    const st = this.status;
    st.hidden = state === null;
    st.dataset.state = state ?? "";
    st.setAttribute("role", state === "failed" ? "alert" : "status");
    if (state === null) return st.replaceChildren();
    const parts: (HTMLElement | string)[] = state === "running" ? [h("div", { class: "nfw-spinner" })] : [];
    parts.push(h("span", {}, text));
    if (state === "failed") {
      const close = h("button", { class: "nfw-close", type: "button", "aria-label": "dismiss" }, "×");
      close.addEventListener("click", () => this.say(null));
      parts.push(close);
    }
    st.replaceChildren(...parts);
  }

  private place(menu: HTMLElement, x: number, y: number) {
    const canvas = this.host.ui.canvas;
    canvas.append(menu);
    const r = canvas.getBoundingClientRect();
    const left = Math.max(4, Math.min(x - r.left, r.width - menu.offsetWidth - 4));
    const top = Math.max(4, Math.min(y - r.top, r.height - menu.offsetHeight - 4));
    menu.style.left = `${left}px`;
    menu.style.top = `${top}px`;
    this.menu = menu;
  }

  private key(e: KeyboardEvent) {
    const items = [...(this.menu?.querySelectorAll<HTMLElement>("button:not(:disabled)") ?? [])];
    const i = items.indexOf(document.activeElement as HTMLElement);
    if (e.key === "Escape") this.close(true);
    else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      const next = items[(i + (e.key === "ArrowDown" ? 1 : -1) + items.length) % items.length];
      next?.focus();
    } else return;
    e.preventDefault();
    e.stopPropagation();
  }

  get isOpen(): boolean {
    return this.menu !== null;
  }

  close(refocus = false) {
    this.menu?.remove();
    this.menu = null;
    if (refocus) this.host.ui.canvas.focus({ preventScroll: true });
  }

  dispose() {
    this.close();
    this.listeners.dispose();
  }
}
