/**
 * Element helpers. Text always goes in as text (textContent / SVG text nodes), never as
 * HTML: module names, types and tokens come from user code and may look like markup.
 */

export const SVG_NS = "http://www.w3.org/2000/svg";

type Attrs = Record<string, string | number | boolean | null | undefined>;

function setAttrs(node: Element, attrs: Attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    node.setAttribute(k, v === true ? "" : String(v));
  }
}

/** An HTML element; string children become text nodes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}

/** A section heading: a div, since hosts restyle h1..h6 (sizes, margins, borders). */
export function heading(text: string): HTMLElement {
  return h("div", { class: "nfw-h", role: "heading", "aria-level": 4 }, text);
}

/** An SVG element. */
export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | null)[]
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG_NS, tag) as SVGElementTagNameMap[K];
  setAttrs(node, attrs);
  for (const c of children) if (c) node.append(c);
  return node;
}

/** An SVG <text> holding `text` as a text node. */
export function svgText(text: string, attrs: Attrs = {}): SVGTextElement {
  const t = s("text", attrs);
  t.textContent = text;
  return t;
}

let measureCtx: CanvasRenderingContext2D | null | undefined;
const widths = new Map<string, number>();

/** Width of text in a CSS font, measured once and cached (a rough estimate without canvas). */
export function textWidth(text: string, font: string): number {
  const key = `${font}\u0000${text}`;
  let w = widths.get(key);
  if (w !== undefined) return w;
  if (measureCtx === undefined) measureCtx = document.createElement("canvas").getContext("2d");
  if (measureCtx) {
    measureCtx.font = font;
    w = measureCtx.measureText(text).width;
  } else {
    w = text.length * 7;
  }
  if (widths.size > 20000) widths.clear();
  widths.set(key, w);
  return w;
}

/** Cut text to fit maxPx in a font, with an ellipsis. */
export function fitText(text: string, maxPx: number, font: string): string {
  if (textWidth(text, font) <= maxPx) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (textWidth(`${text.slice(0, mid)}…`, font) <= maxPx) lo = mid;
    else hi = mid - 1;
  }
  return `${text.slice(0, Math.max(1, lo))}…`;
}

/** Listeners that all go away at once (render's cleanup). */
export class Listeners {
  private offs: (() => void)[] = [];
  /** `fn` takes the event of its type (the caller says which: MouseEvent for "click", ...). */
  on<E extends Event = Event>(
    target: EventTarget,
    type: string,
    fn: (e: E) => void,
    opts?: AddEventListenerOptions | boolean,
  ) {
    const listener = fn as EventListener; // the caller's E is the event `type` fires
    target.addEventListener(type, listener, opts);
    this.offs.push(() => target.removeEventListener(type, listener, opts));
  }
  add(off: () => void) {
    this.offs.push(off);
  }
  dispose() {
    for (const off of this.offs.splice(0).reverse()) off();
  }
}

/** Trigger a download of a blob (export buttons). */
export function download(blob: Blob, filename: string) {
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: filename });
  a.style.display = "none";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Make `parent`'s children exactly `want`, touching only what changed. */
export function syncChildren(parent: Element, want: Element[]) {
  const keep = new Set(want);
  for (const c of [...parent.children]) if (!keep.has(c)) c.remove();
  for (const el of want) if (el.parentNode !== parent) parent.append(el);
}
