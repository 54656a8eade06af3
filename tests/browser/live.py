"""A live widget in headless Chromium without Jupyter: the bundle renders in tests/browser/
page.html with an anywidget-like model whose custom messages (the view's stage requests) go to a
real ``NeuralFlowWidget`` in this process (through Playwright's ``expose_function``; buffers
travel as base64 across that bridge only, and arrive in the page as binary DataViews, as from a
comm). Traitlets are pushed with :func:`push` (``widget.update`` then ``push(page, "graph",
widget.graph)``), and what the view sets (``selected``) is read with :func:`state`. The view's
other messages (``intervene``, ``end_comparison``) go to the widget's own handler, and what it
then sets (``comparison``, ``intervention``, ...) and sends (``intervened``) comes back to the
page in that order, as from a kernel.

Exported pages open with :func:`open_offline`. Both return once the first frame is painted and
the view has settled; after an action, :func:`settle` waits for the view to come to rest (no
fixed sleeps: see :data:`SETTLED`).
"""

from __future__ import annotations

import base64
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
ORIGIN = "http://nfw.test"
FILES = {
    "/page.html": ROOT / "tests/browser/page.html",
    "/fake_kernel.js": ROOT / "tests/browser/fake_kernel.js",
    "/widget.js": ROOT / "neural_flow_widget/static/widget.js",
}
TYPES = {".html": "text/html", ".js": "text/javascript"}

#: counts the frames the widgets in a page paint (their ``nfw-painted`` events, js/src/app/app.ts,
#: heard on their way down to the widget's element, which gets ``data-test-painted``, the
#: count), from before the page's own scripts run
COUNT_PAINTS = """window.__nfwPaints = 0;
addEventListener("nfw-painted", (e) => e.target.setAttribute("data-test-painted",
  String(++window.__nfwPaints)), true);"""

#: whether the widget has come to rest (no layout in flight, no camera move, the minimap
#: placed, no CSS transition running): an expression, tests/browser/settled.js called (which
#: harness.mjs reads too)
SETTLED = "({})()".format(
    "\n".join(
        line
        for line in (ROOT / "tests/browser/settled.js").read_text().splitlines()
        if not line.startswith("//")
    )
)

#: two frames: what an action set off in the page (a resize observer, a transition, a
#: layout) has begun by then
TWO_FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


def settle(page, timeout: float = 15_000) -> None:
    """Wait until the view has come to rest after an action (:data:`SETTLED`)."""
    page.evaluate(TWO_FRAMES)
    page.wait_for_function(SETTLED, polling="raf", timeout=timeout)


#: playback has stepped on from step `at` (the transport's "at / steps · stage" says another)
STEPPED = "(at) => !document.querySelector('.nfw-where').textContent.startsWith(at + ' /')"


def walk(page):
    """Playback's walk from its first step, paused (the arrows step): yields each step's
    place (``"15 / 49 · down_blocks.1.attentions.0"``) once the view has settled on it, the
    pointer off the graph, then steps on with the right arrow, up to the last step."""
    page.click(".nfw-play")
    page.keyboard.press(" ")
    page.wait_for_function(
        "() => !document.querySelector('.nfw-play').textContent.includes('Pause')"
    )
    while True:
        settle(page)
        page.mouse.move(2, 2)
        where = page.locator(".nfw-where").text_content() or ""
        yield where
        at, total = where.split(" · ")[0].split(" / ")
        if at == total:
            return
        page.keyboard.press("ArrowRight")
        page.wait_for_function(STEPPED, arg=at)


def shoot(page, name: str, *, pointer_away: bool = False) -> pathlib.Path:
    """A screenshot once the view has settled: test-artifacts/<name>.png; ``pointer_away``
    moves the pointer off the graph first (no hover highlight in it)."""
    if pointer_away:
        page.mouse.move(2, 2)
    settle(page)
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def paints(page) -> int:
    """How many frames the widget has painted since the page loaded."""
    return page.evaluate("() => window.__nfwPaints")


def painted_after(page, before: int, timeout: float = 30_000) -> None:
    """Wait for a frame painted after ``before`` were (a count from :func:`paints`)."""
    page.wait_for_function("(n) => window.__nfwPaints > n", arg=before, timeout=timeout)


_RENDER = """async ([state, height]) => {
  const mod = await import("/widget.js");
  const { FakeModel } = await import("/fake_kernel.js");
  const host = document.getElementById("host");
  host.replaceChildren();
  const el = document.createElement("div");
  el.style.setProperty("--nfw-height", `${height}px`);
  host.append(el);
  const toView = (b64) => { const s = atob(b64); const u = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i); return new DataView(u.buffer); };
  const log = [];
  const kernel = async (message) => {
    if (message?.type !== "stage") {
      const { changes, sent } = JSON.parse(await window.nfwKernel(JSON.stringify(message)));
      for (const [name, value] of changes) model.set(name, value);
      for (const content of sent) model.emit("msg:custom", content, []);
      return null;
    }
    log.push(message.body);
    const answer = JSON.parse(await window.nfwKernel(JSON.stringify(message)));
    return [answer.msg, answer.buffers.map(toView)];
  };
  const model = new FakeModel(state, kernel);
  const painted = new Promise((r) =>
    el.addEventListener("nfw-painted", (e) => r(e.detail), { once: true }));
  const cleanup = mod.default.render({ model, el });
  window.__t = { model, el, cleanup, log };
  return painted;
}"""


def open_live(browser, widget, *, width=1280, height=720, widget_height=None, log=None):
    """A page showing ``widget`` live; returns (context, page, errors). Each exchange goes
    to ``log`` (a list) as (request, reply) when one is given."""
    context = browser.new_context(viewport={"width": width, "height": height})

    def route(r):
        path = r.request.url.removeprefix(ORIGIN)
        file = FILES.get(path)
        if not r.request.url.startswith(ORIGIN) or file is None:
            return r.abort()
        return r.fulfill(body=file.read_bytes(), content_type=TYPES[file.suffix])

    context.route("**/*", route)
    context.add_init_script(COUNT_PAINTS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))

    def kernel(text: str) -> str:
        message = json.loads(text)
        if message.get("type") != "stage":
            return _other(widget, message)
        msg, buffers = widget._stage_message(message)  # the widget's own answer to the message
        if log is not None:
            log.append((message["body"], msg["reply"]))
        encoded = [base64.b64encode(bytes(b)).decode("ascii") for b in buffers]
        return json.dumps({"msg": msg, "buffers": encoded})

    page.expose_function("nfwKernel", kernel)
    page.goto(f"{ORIGIN}/page.html")
    state = {
        "graph": widget.graph,
        "comparison": widget.comparison,
        "intervention": widget.intervention,
        "patching": widget.patching,
        "selected": widget.selected,
        "direction": widget.direction,
        "height": widget.height,
    }
    page.evaluate(_RENDER, [state, widget_height or height - 40])
    settle(page)
    return context, page, errors


#: the traitlets a kernel message may change, which the page hears of
SYNCED = ("graph", "comparison", "intervention", "patching", "selected", "playback")


def _other(widget, message: dict) -> str:
    """The widget's own handling of a view's message other than a stage request: the
    traitlets it changed (in the order they changed) and the messages it sent."""
    changes: list = []
    sent: list = []

    def heard(change):
        changes.append([change["name"], change["new"]])

    widget.observe(heard, names=list(SYNCED))
    send = widget.send
    widget.send = lambda content, buffers=None: sent.append(content)
    try:
        widget._on_message(widget, message, [])
    finally:
        widget.send = send
        widget.unobserve(heard, names=list(SYNCED))
    return json.dumps({"changes": changes, "sent": sent})


def push(page, name: str, value) -> None:
    """Set a traitlet in the page, as a kernel-side change would, and wait for the view to
    settle (a change that draws anew: until it is painted)."""
    page.evaluate("([name, value]) => window.__t.model.set(name, value)", [name, value])
    settle(page)


def state(page, name: str):
    """A traitlet's value as the view left it."""
    return page.evaluate("(name) => window.__t.model.get(name)", name)


def tap(page, selector: str) -> None:
    """A click on an element, wherever it is (off screen included)."""
    page.evaluate(
        "(s) => document.querySelector(s).dispatchEvent(new MouseEvent('click', {bubbles: true}))",
        selector,
    )


def search_and_open(page, stage: str) -> None:
    """Find ``stage`` with the search box and open it (Enter): its name in the inspector."""
    page.fill(".nfw-search", stage)
    page.wait_for_function(
        "() => document.querySelector('.nfw-search-count').textContent.includes('match')"
    )
    page.press(".nfw-search", "Enter")
    page.wait_for_function(
        f"() => document.querySelector('.nfw-ins-title b')?.textContent === {stage!r}"
    )


def write_pages(folder: pathlib.Path, builders) -> pathlib.Path:
    """One offline page per model, `<name>.html` in `folder`, from `builders` (name ->
    a function returning the model and its input), with no download (HF_HUB_OFFLINE)."""
    import os

    import neural_flow_widget as nfw

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for name, build in builders.items():
        model, x = build()
        nfw.NeuralFlowWidget(model, x).to_html(folder / f"{name}.html")
    return folder


def open_first(browser, path, width, height, shot: pathlib.Path):
    """An offline page's first view with the pointer away from it, its screenshot saved as
    `shot`: (context, page, errors), as open_offline."""
    context, page, errors = open_offline(browser, path, width, height)
    settle(page)
    page.mouse.move(2, 2)
    shot.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(shot))
    return context, page, errors


def open_offline(browser, path, width, height):
    """An exported page opened from disk with the network refused; returns (context, page,
    errors) once its graph is painted and the view has settled."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.route("http*://**", lambda route: route.abort())  # offline
    context.add_init_script(COUNT_PAINTS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector(".nfw-node[data-stage-id]", timeout=30_000)
    painted_after(page, 0)
    settle(page)
    return context, page, errors
