/**
 * The inspector's readout tab (the logit lens): the stage's output read through the model's
 * own final norm and unembedding, as next-token predictions. A row per position (its token
 * on the left), the top k tokens with a bar for each probability; the last position (what
 * the model predicts next) marked. HTML; tokens as text, never HTML.
 */
import { visible } from "../model/format";
import { percent } from "../model/readouts";
import type { ReadoutData } from "../wire";
import { h } from "./dom";

/** The readout table of a reply (`tokens`: the positions' labels). */
export function readoutTable(r: ReadoutData, tokens: string[] | null, stage: string): HTMLElement {
  const list = h("div", { class: "nfw-readout", role: "list", "aria-label": `logit lens of ${stage}` });
  const n = r.ids.length;
  for (let i = 0; i < n; i++) {
    const pos = r.position ?? i;
    const last = r.position === null ? i === n - 1 : false;
    const label = tokens?.[pos];
    const cells = (r.ids[i] ?? []).map((id, j) => {
      const p = r.probs[i]?.[j] ?? 0;
      const name = r.names?.[i]?.[j] ?? String(id);
      const bar = h("i", { class: "nfw-readout-bar" });
      bar.style.width = `${Math.max(0, Math.min(1, p)) * 100}%`;
      return h(
        "span",
        { class: "nfw-readout-tok", title: `${visible(name)} (id ${id}): ${(p * 100).toFixed(2)}%`, "data-token": id },
        bar,
        h("span", { class: "nfw-readout-name" }, visible(name)),
        h("span", { class: "nfw-readout-p" }, percent(p)),
      );
    });
    list.append(
      h(
        "div",
        { class: `nfw-readout-row${last ? " nfw-readout-last" : ""}`, role: "listitem", "data-position": pos },
        h(
          "span",
          { class: "nfw-readout-pos", title: `position ${pos}` },
          `${pos}`,
          h("b", {}, label !== undefined ? visible(label) : ""),
        ),
        h("span", { class: "nfw-readout-cells" }, ...cells),
      ),
    );
  }
  const note = h(
    "div",
    { class: "nfw-note" },
    `Logit lens: ${stage}'s output through the model's final norm and unembedding, read as a prediction of the next token: at each position (its token on the left), the ${r.k} most likely and their probabilities. The last row is the prediction after the whole input.`,
  );
  return h("div", { class: "nfw-readout-box" }, note, list);
}
