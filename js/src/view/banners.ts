/**
 * The banners above the graph, part of the widget's frame (the graph is laid out below them,
 * never under them): the forward raised (where, what; a button selects the failing stage),
 * the first NaN / Inf (or, when that stage received it, where it was made: the forward, the
 * line of code; the banner is a button that goes to that stage), and the run's notes
 * (e.g. the meta device: no data); comparing two runs, where they part (a button that goes
 * there), or that run B raised (where, what; never "A = B" then), run B named when it is
 * this run with an intervention ("Run B: h.1.attn switched off (zero)"), with a way back (end
 * the comparison, live); after a backward pass, where NaN / Inf entered it and where the
 * gradient vanishes or explodes (a button that goes there, coloured by gradient norm). Names
 * and messages come from the user's model: text only.
 */
import {
  divergesHeadline,
  failureHeadline,
  nonfiniteHeadline,
  runFailureHeadline,
  type Problems,
} from "../model/problems";
import type { Phrase } from "../model/problems";
import { interventionLabel } from "../model/experiments";
import { gradientHeadlines } from "../model/gradients";
import type { WireGraph } from "../wire";
import { h } from "./dom";
import { at } from "../wire_check";

/** The pill a marked node carries, also the banners' lead: "NaN/Inf" or "raised". */
export function pill(text: string, kind: "nonfinite" | "failed" | "diverges" | "gradient"): HTMLElement {
  return h("span", { class: `nfw-pill nfw-pill-${kind}`, "aria-hidden": "true" }, text);
}

/** What the banners' buttons do beyond showing a stage. */
export interface BannerActions {
  endComparison?: () => void; // drop run B (a live widget); absent: no such button
  byGradient?: () => void; // colour the graph by gradient norm
  notes?: HTMLButtonElement; // shows or hides the run's notes (absent: always shown)
}

/** Fill the banners for a graph; `show` selects, reveals and inspects a stage by id. */
export function fillBanners(
  el: HTMLElement,
  graph: WireGraph,
  p: Problems,
  show: (id: string) => void,
  actions: BannerActions = {},
) {
  const banners: HTMLElement[] = [];
  const failure = failureHeadline(graph, p);
  if (failure && p.failure) {
    const text = h(
      "span",
      { class: "nfw-banner-text", title: p.failure.message },
      h("b", {}, failure.where ? `The forward raised at ${failure.where}` : "The forward raised"),
      failure.what ? `: ${failure.what}` : "",
    );
    const banner = h(
      "div",
      { class: "nfw-banner nfw-banner-failure", role: "alert", "data-banner": "failure" },
      pill("raised", "failed"),
      text,
    );
    const stage = p.failedStage !== null ? at(graph.calls, p.failedStage).id : null;
    if (stage !== null) {
      const go = h(
        "button",
        {
          class: "nfw-btn nfw-banner-btn",
          type: "button",
          "aria-label": `Show the failing stage ${stage}`,
          title: `Select ${stage} and show its error`,
        },
        "Show stage",
      );
      go.addEventListener("click", () => show(stage));
      banner.append(go);
    }
    banners.push(banner);
  }
  const nonfinite = nonfiniteHeadline(graph, p);
  if (nonfinite) {
    const { stage, origin } = nonfinite;
    // made between stages: where (the user's code; "Produced …" after the pill), then the stage it reached first
    const phrase = (x: Phrase, i: number) => {
      const text = i === 0 ? x.text.charAt(0).toUpperCase() + x.text.slice(1) : x.text;
      return x.kind === "id"
        ? h("b", {}, text)
        : x.kind === "code"
          ? h("span", { class: "nfw-banner-code" }, text)
          : text;
    };
    const words = origin
      ? [...origin.map(phrase), " · ", h("b", {}, stage), ` received it first · ${nonfinite.count}`]
      : ["First NaN/Inf at ", h("b", {}, stage), ` · ${nonfinite.count}`];
    const banner = h(
      "button",
      {
        class: "nfw-banner nfw-banner-nonfinite",
        type: "button",
        "data-banner": "nonfinite",
        "aria-label": origin
          ? `${nonfinite.text}; ${stage} received it first (${nonfinite.count}): show ${stage}`
          : `${nonfinite.text} (${nonfinite.count}): show ${stage}`,
        title: origin
          ? `Select ${stage}, the first stage that holds NaN/Inf (its input already did)`
          : `Select ${stage}, where NaN/Inf first appeared`,
      },
      pill("NaN/Inf", "nonfinite"),
      h("span", { class: "nfw-banner-text" }, ...words),
      h("span", { class: "nfw-banner-go", "aria-hidden": "true" }, "Show ›"),
    );
    banner.addEventListener("click", () => show(nonfinite.stage));
    banners.push(banner);
  }
  const failedB = runFailureHeadline(graph);
  if (failedB) {
    const text = h(
      "span",
      { class: "nfw-banner-text", title: failedB.message },
      h("b", {}, failedB.lead),
      failedB.what ? `: ${failedB.what}` : "",
    );
    const banner = h(
      "div",
      { class: "nfw-banner nfw-banner-failure", role: "alert", "data-banner": "failure-b" },
      pill("B raised", "failed"),
      text,
    );
    const stage = failedB.call !== null ? at(graph.calls, failedB.call).id : null;
    if (stage !== null) {
      const go = h(
        "button",
        {
          class: "nfw-btn nfw-banner-btn",
          type: "button",
          "aria-label": `Show the stage where run B failed, ${stage}`,
          title: `Select ${stage}: run A's output, and run B's error`,
        },
        "Show stage",
      );
      go.addEventListener("click", () => show(stage));
      banner.append(go);
    }
    banners.push(banner);
  }
  const parting = divergesHeadline(graph);
  const runB = interventionLabel(graph);
  if (parting?.stage) {
    const stage = parting.stage;
    const lead = runB ? ["Run B: ", h("b", {}, runB.stage), runB.text.slice(runB.stage.length), " · "] : [];
    const banner = h(
      "button",
      {
        class: "nfw-banner nfw-banner-diverges",
        type: "button",
        "data-banner": "diverges",
        "aria-label": `${runB ? `Run B: ${runB.text}. ` : ""}${parting.text} ${stage} (${parting.detail}): show it`,
        title: `Select ${stage}, the first stage whose output differs between runs A and B`,
      },
      pill(runB ? "what if" : "runs part", "diverges"),
      h("span", { class: "nfw-banner-text" }, ...lead, `${parting.text} `, h("b", {}, stage), ` · ${parting.detail}`),
      h("span", { class: "nfw-banner-go", "aria-hidden": "true" }, "Show ›"),
    );
    banner.addEventListener("click", () => show(stage));
    banners.push(banner);
  } else if (parting) {
    banners.push(
      h(
        "div",
        { class: "nfw-banner nfw-banner-diverges", role: "note", "data-banner": "diverges" },
        pill("A = B", "diverges"),
        h("span", { class: "nfw-banner-text" }, `${parting.text} · ${parting.detail}`),
      ),
    );
  }
  for (const g of gradientHeadlines(graph)) {
    const banner = h(
      "button",
      {
        class: `nfw-banner nfw-banner-gradient nfw-banner-gradient-${g.kind}`,
        type: "button",
        "data-banner": `gradient-${g.kind}`,
        "aria-label": `${g.text} (${g.detail}): show ${g.stage}, coloured by gradient norm`,
        title: `Select ${g.stage} and colour the graph by the gradient's norm`,
      },
      pill(g.lead, g.kind === "nonfinite" ? "nonfinite" : "gradient"),
      h(
        "span",
        { class: "nfw-banner-text" },
        ...(g.kind === "nonfinite" ? [`${g.text} `, h("b", {}, g.stage)] : [g.text]),
        ` · ${g.detail}`,
      ),
      h("span", { class: "nfw-banner-go", "aria-hidden": "true" }, "Show ›"),
    );
    banner.addEventListener("click", () => {
      actions.byGradient?.();
      show(g.stage);
    });
    banners.push(banner);
  }
  const notes = notesBanner(p.notes, actions.notes);
  if (notes) banners.push(notes);
  el.replaceChildren(
    ...(graph.comparison && actions.endComparison ? withEnd(banners, actions.endComparison) : banners),
  );
  el.hidden = banners.every((b) => b.hidden);
}

/** The run's notes: a banner shown while the title's toggle is pressed (the data an exported
 * page left out, the meta device: what the nodes and the inspector say too, so the graph keeps
 * the canvas's height: SD 1.5's U at 1280 x 720 is whole with the note folded, not with it
 * open). The toggle says them all in its tip. */
function notesBanner(notes: string[], toggle: HTMLButtonElement | undefined): HTMLElement | null {
  const lines = notes.map((n) => n.charAt(0).toUpperCase() + n.slice(1));
  if (toggle) {
    toggle.hidden = lines.length === 0;
    toggle.title = lines.join("\n");
    toggle.setAttribute("aria-label", `Notes on this run (${lines.length}): show or hide them`);
  }
  if (!lines.length) return null;
  const banner = h(
    "div",
    { class: "nfw-banner nfw-banner-notes", role: "note", "data-banner": "notes" },
    h("span", { class: "nfw-banner-icon", "aria-hidden": "true" }, "i"),
    h("span", { class: "nfw-banner-text" }, ...lines.map((n) => h("span", { class: "nfw-note-line" }, n))),
  );
  if (!toggle) return banner;
  const show = (open: boolean) => {
    toggle.setAttribute("aria-expanded", String(open));
    banner.hidden = !open;
    const all = banner.parentElement;
    if (all) all.hidden = [...all.querySelectorAll<HTMLElement>(".nfw-banner")].every((b) => b.hidden);
  };
  show(toggle.getAttribute("aria-expanded") === "true");
  toggle.onclick = () => show(toggle.getAttribute("aria-expanded") !== "true");
  return banner;
}

/** The way back from a comparison: an "End comparison" button beside the banner that says
 * where the runs part (or that run B raised, or that they agree), in the same row. */
function withEnd(banners: HTMLElement[], end: () => void): HTMLElement[] {
  const button = h(
    "button",
    {
      class: "nfw-btn nfw-banner-end",
      type: "button",
      "data-end-comparison": "",
      title: "Drop run B: back to this run alone",
    },
    "End comparison",
  );
  button.addEventListener("click", end);
  const i = banners.findIndex((b) => ["diverges", "failure-b"].includes(b.dataset.banner ?? ""));
  if (i < 0)
    return [
      ...banners,
      h(
        "div",
        { class: "nfw-banner-row" },
        h("div", { class: "nfw-banner nfw-banner-diverges" }, "Comparing with run B"),
        button,
      ),
    ];
  return banners.map((b, j) => (j === i ? h("div", { class: "nfw-banner-row" }, b, button) : b));
}
