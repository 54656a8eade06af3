// The widget has come to rest: no layout in flight, no camera move, the minimap placed after
// the last move (those elements carry data-settling meanwhile: js/src/app/viewfinder.ts,
// js/src/view/zoom.ts, js/src/view/minimap.ts; looked for in open shadow roots too, where
// marimo puts the widget) and no CSS transition or finite animation running (the live edges'
// flow never ends and does not count). The one definition that tests/browser/live.py
// (settle) and harness.mjs (settle) wait for; the comment lines are dropped, the rest is the
// expression.
() => {
  const settling = (root) => !!root.querySelector("[data-settling]")
    || [...root.querySelectorAll("*")].some((e) => e.shadowRoot && settling(e.shadowRoot));
  return !settling(document) && !document.getAnimations().some(
    (a) => a.playState === "running" && a.effect?.getComputedTiming().endTime !== Infinity);
}
