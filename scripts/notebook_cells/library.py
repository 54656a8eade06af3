"""Notebook 05, trace() as a library, without the widget."""

from __future__ import annotations

from . import code, md

CELLS = [
    md("""
    # `nfw.trace` as a library

    The widget is a thin shell. Everything it shows comes from `nfw.trace(model, inputs)`, a
    plain function that returns a `Flow`: frozen records of stages and edges, plus what was
    captured. It needs no Jupyter, so it works in scripts, tests and CI. This notebook covers:

    1. the graph as text, and as records;
    2. choosing stages: by depth, by name patterns, by a function;
    3. `select()`: the same run, another selection, without running the model again;
    4. summaries as a table;
    5. the three topology modes;
    6. errors: `nfw.TraceError` and the partial graph.
    """),
    code("""
    import warnings

    import numpy as np
    import torch
    from torch import nn

    import neural_flow_widget as nfw
    from neural_flow_widget import demos
    """),
    md("""
    ## A small model

    A stem, one residual block, pooling and a linear head. `forward_calls` counts how often
    the model really runs.
    """),
    code("""
    class Residual(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv = nn.Conv2d(channels, channels, 3, padding=1)
            self.norm = nn.BatchNorm2d(channels)
            self.act = nn.ReLU()

        def forward(self, x):
            return self.act(x + self.norm(self.conv(x)))


    class TinyNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
            self.block = Residual(8)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Linear(8, 10)
            self.forward_calls = 0

        def forward(self, x):
            self.forward_calls += 1
            x = self.block(self.stem(x))
            return self.head(self.pool(x).flatten(1))


    torch.manual_seed(0)
    net = TinyNet()
    x = torch.randn(2, 3, 16, 16)

    flow = nfw.trace(net, x)
    print(flow.to_text())
    """),
    md("""
    `to_text()` has one row per stage (its id, module type, output shape, parameter count, and
    where its inputs come from) and one per model output. The same information as records:
    """),
    code("""
    print(flow.stages[0])
    for edge in flow.edges:
        print(edge)
    flow.lint()   # raises ValueError listing any inconsistency; silent when the graph is sound
    """),
    md("""
    ## Choosing stages

    `stages=` (in `trace`) and `select()` take the same things:

    | `stages=` | selects |
    |---|---|
    | `None` (default) | every leaf module |
    | an `int` d | the modules at depth d (1 = the model's children), plus shallower leaves |
    | a list of names or globs | `*` stays inside one dotted part, `**` crosses dots |
    | a callable `(name, module) -> bool` | the modules it accepts |

    A module called several times gives one stage per call: `name#0`, `name#1`, ...
    """),
    code("""
    unet = demos.load("unet")
    uflow = nfw.trace(unet.model, unet.inputs, capture=False)   # capture=False: graph only, faster

    choices = {
        "depth 1": 1,
        "['enc*', 'dec*']": ["enc*", "dec*"],
        "['**.conv1']": ["**.conv1"],
        "transposed convs": lambda name, module: isinstance(module, nn.ConvTranspose2d),
    }
    for label, stages in choices.items():
        print(f"{label:18}", [s.id for s in uflow.select(stages).stages])
    """),
    code("""
    class Shared(nn.Module):
        \"""One ReLU module used twice.\"""

        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.act = nn.Linear(4, 4), nn.Linear(4, 4), nn.ReLU()

        def forward(self, x):
            return self.act(self.fc2(self.act(self.fc1(x))))


    print(nfw.trace(Shared(), torch.ones(1, 4), capture=False).to_text())
    """),
    md("""
    A pattern that matches nothing fails before the model runs, and says what names exist:
    """),
    code("""
    try:
        nfw.trace(unet.model, unet.inputs, stages=["encoder*"])
    except ValueError as error:
        print("ValueError:", error)
    """),
    md("""
    ## `select()`: another view of the same run

    A `Flow` remembers the run's condensed op graph (integers, no tensors), so `select` computes
    the edges for any other selection without calling the model. Collapsing the block hides its
    skip: seen from outside, `block` receives `stem`'s output once, so the skip now coincides
    with the flow edge `stem → block` (notebook 02 explains).
    """),
    code("""
    calls_before = net.forward_calls
    coarse = flow.select(1)
    select_calls = net.forward_calls - calls_before
    print(coarse.to_text())
    print("forward calls during select():", select_calls)
    """),
    md("""
    ## Summaries as a table

    With `capture=True` (the default) each stage's output is summarised inside its forward hook.
    A table over the U-Net's top-level stages, with a small text histogram per stage:
    """),
    code("""
    def sparkline(counts, width=16):
        \"""A histogram as one line of block characters (square-root scale).\"""
        counts = np.asarray(counts, float)
        counts = counts.reshape(width, -1).sum(1) if counts.size % width == 0 else counts
        levels = np.sqrt(counts / counts.max()) if counts.max() > 0 else counts
        return "".join(" ▁▂▃▄▅▆▇█"[int(round(v * 8))] for v in levels)


    table = nfw.trace(unet.model, unet.inputs, stages=1)
    print(f"{'stage':11}{'shape':>14}{'min':>8}{'max':>8}{'mean':>8}{'std':>8}{'zeros':>7}  histogram")
    for stage in table.stages:
        s = table.summary(stage.id)[0]
        shape = "x".join(map(str, s.shape))
        print(f"{stage.id:11}{shape:>14}{s.min:8.2f}{s.max:8.2f}{s.mean:8.2f}{s.std:8.2f}"
              f"{s.zero_fraction:7.0%}  {sparkline(s.hist_counts)}")
    """),
    md("""
    The ReLU blocks (`enc*`, `dec*`, `bottleneck`) have many exact zeros; the transposed
    convolutions `up*` and the `head` have none, and their histograms straddle zero.
    `flow.view(stage, kind)` turns the same captured data into pictures (see notebooks 01-02);
    asking for a kind that does not exist lists the ones that do:
    """),
    code("""
    try:
        table.view("dec1", "histogram")
    except ValueError as error:
        print("ValueError:", error)
    """),
    md("""
    ## Topology modes

    * `"auto"` (default): records every tensor op during the forward pass and recovers the
      edges from the real dataflow. Works on anything that runs, including data-dependent
      control flow.
    * `"fx"`: `torch.fx.symbolic_trace` with the stages as leaves. Where fx can trace the model
      it agrees with `auto`; where it cannot, it falls back to execution order, with a warning.
    * `"sequential"`: the stages chained in execution order. It cannot see skips or merges.

    On `TinyNet`:
    """),
    code("""
    edges = {}
    for topology in ("auto", "fx", "sequential"):
        traced = nfw.trace(net, x, topology=topology, capture=False)
        edges[topology] = traced.edges
        marks = [f"{e.src} -> {e.dst} ({e.kind})" for e in traced.edges if e.kind != "flow"]
        print(f"{topology:10} -> topology {traced.topology!r:12} non-flow edges: {marks}")
    """),
    md("""
    Now a model whose path depends on the data: `b` runs only when `a`'s output has a positive
    mean. `auto` follows the path that really ran, so two inputs can give two graphs, and it
    sees the residual `+ x`. fx cannot trace a Python `if` on a tensor value: it warns and falls
    back to execution order, which misses the residual.
    """),
    code("""
    class Gated(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            h = self.a(x)
            if h.mean() > 0:
                h = self.b(h)
            return self.c(h) + x


    torch.manual_seed(2)
    gated = Gated()
    paths = {}
    for label, v in (("ones", torch.ones(1, 4)), ("minus ones", -torch.ones(1, 4))):
        paths[label] = nfw.trace(gated, v, capture=False)
        print(f"auto, x = {label:10}: stages {[s.id for s in paths[label].stages]}")
    print(paths["ones"].to_text())

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fx_flow = nfw.trace(gated, torch.ones(1, 4), topology="fx", capture=False)
    print("\\nfx warned:", [str(w.message) for w in caught])
    print(fx_flow.to_text())
    """),
    md("""
    ## Errors: `TraceError` and the partial graph

    If the model raises, `trace` raises `nfw.TraceError`. The message names the stage and the
    module that failed and the input shapes they received; `err.partial` holds the graph up to
    that point, with the failing stage's `error` field set. Two classic mistakes with the U-Net:

    1. an RGB image for a grayscale model (3 channels instead of 1);
    2. a 60×60 image: the U-Net halves the size three times and needs a multiple of 8.
    """),
    code("""
    try:
        nfw.trace(unet.model, torch.randn(1, 3, 64, 64))
    except nfw.TraceError as err:
        wrong_channels = err
        print(err, end="\\n\\n")
        print("err.stage:", err.stage, "  err.module:", err.module)
        print([(s.id, s.error[:40]) for s in err.partial.calls if s.error])
    """),
    code("""
    try:
        nfw.trace(unet.model, torch.randn(1, 1, 60, 60), stages=1)
    except nfw.TraceError as err:
        wrong_size = err
        print(err, end="\\n\\n")
        print(err.partial.to_text())
    """),
    md("""
    The second failure happens in the model's own `forward`, in a `torch.cat` between two
    stages, so there is no stage to blame (`err.stage` is None). The partial graph still shows
    where it stopped: the encoder ran, 60 → 30 → 15 → 7 after `pool3`, `up3` doubled 7 to 14,
    and the concatenation with `enc3`'s 15×15 output failed.

    ## Checks
    """),
    code("""
    assert [tuple(e) for e in flow.edges if e.kind == "skip"] == [("stem.1", "block.act", "skip")]
    assert {e.kind for e in coarse.edges} == {"flow"}
    assert select_calls == 0
    assert edges["fx"] == edges["auto"]
    assert not any(e.kind == "skip" for e in edges["sequential"])
    assert [s.id for s in paths["ones"].stages] == ["a", "b", "c"]
    assert [s.id for s in paths["minus ones"].stages] == ["a", "c"]
    assert ("input:0", "output:0", "skip") in [tuple(e) for e in paths["ones"].edges]
    assert fx_flow.topology == "sequential" and len(caught) == 1
    assert [s.id for s in uflow.select(["enc*", "dec*"]).stages] == ["enc1", "enc2", "enc3", "dec3", "dec2", "dec1"]
    assert isinstance(wrong_channels, nfw.TraceError) and wrong_channels.stage == "enc1.conv1"
    assert wrong_size.stage is None and wrong_size.partial.stages[-1].id == "up3"
    assert table.summary("up1")[0].zero_fraction == 0.0
    print("trace without widget: all checks passed")
    """),
]
