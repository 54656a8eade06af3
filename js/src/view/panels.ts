/**
 * The panels of a view compared across two runs, A | B | A − B: what a panel of run B or of
 * A − B holds (its reply, or why not yet / not at all), a panel with its caption, and the
 * short notes under a view. Shared by the Output section (inspector_output.ts) and its
 * attention tab (attention_section.ts).
 */
import type { StageReply, ViewData } from "../wire";
import { h } from "./dom";

export type OkReply = Extract<StageReply, { ok: true }>;
/** What a panel of run B or A − B holds: its reply, or why not yet / not at all. */
export type PanelState = { state: "loading" } | { state: "error"; message: string } | { state: "ok"; reply: OkReply };

const CAPTIONS = { a: "A · this run", b: "B · compared run", diff: "A − B" } as const;

export function panel(run: "a" | "b" | "diff", content: HTMLElement): HTMLElement {
  return h(
    "div",
    { class: "nfw-panel", "data-run": run },
    h("div", { class: "nfw-panel-cap" }, CAPTIONS[run]),
    content,
  );
}

export function note(text: string): HTMLElement {
  return h("div", { class: "nfw-note" }, text);
}

/** A panel's content: a spinner, the reason it has none, or `ok` of its reply's view. */
export function stateInto(s: PanelState, ok: (v: ViewData) => HTMLElement): HTMLElement {
  if (s.state === "loading")
    return h(
      "div",
      { class: "nfw-state nfw-state-small", role: "status" },
      h("div", { class: "nfw-spinner" }),
      "Loading …",
    );
  if (s.state === "error") return h("div", { class: "nfw-note nfw-panel-error" }, s.message);
  return s.reply.view ? ok(s.reply.view) : note("No view.");
}
