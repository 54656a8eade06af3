"""Notebook 01, quickstart: the widget in five minutes."""

from __future__ import annotations

from . import code, md

CELLS = [
    md("""
    # Quickstart: a U-Net as a live flow graph

    `neural_flow_widget` draws the flow graph of a PyTorch network from one real forward pass.
    Every module call becomes a **stage** (a node), the tensors passed between stages become
    **edges**, and clicking a stage shows what flowed through it.

    In this notebook you will

    1. open the widget on a small trained U-Net,
    2. learn to read its nodes and its three edge kinds,
    3. select stages from Python and react to clicks,
    4. export the view as a self-contained HTML page.

    Everything runs on the CPU in seconds. Nothing is downloaded: the demo models' weights ship
    inside the package.
    """),
    code("""
    import re
    import tempfile
    from collections import Counter
    from pathlib import Path

    import neural_flow_widget as nfw
    from neural_flow_widget import demos

    demo = demos.load("unet")
    model, x = demo.model, demo.inputs
    print(demo.description)
    print("input:", tuple(x.shape))
    """),
    md("""
    ## One line

    `NeuralFlowWidget(model, x)` runs `model(x)` once, watches it, and draws what it saw. The
    model runs in eval mode under `torch.no_grad()`; afterwards its training flags, parameters
    and buffers are exactly as before, and `x` is untouched.
    """),
    code("""
    widget = nfw.NeuralFlowWidget(model, x)
    widget
    """),
    md("""
    ## Reading the graph

    **Nodes are stages.** A stage is one call of a module. Leaf modules (`Conv2d`,
    `BatchNorm2d`, `ReLU`, ...) are the finest stages; modules that contain others are *groups*:
    `enc1` is a `ConvBlock` (convolution, batch norm, ReLU, twice). The view opens groups until
    it holds about 40 nodes; a group's **+** badge, or a double-click, opens it further, so you
    can zoom from the whole U-Net down to a single convolution. Hovering a node highlights its
    edges; the colour menu in the toolbar colours nodes by type, or by the mean |x| or the std
    of their output.

    **Edges come in three kinds** (the legend at the bottom left of the graph):

    | kind | drawn as | meaning | in this U-Net |
    |---|---|---|---|
    | `flow` | solid grey | the stage's main input: the one that arrives along the deepest path | `enc1 → pool1 → enc2 → ...` |
    | `skip` | dashed orange | another input that is an *ancestor* of the main one: the same data, taken earlier, jumping over stages | `enc1 → dec1` (through `torch.cat`) |
    | `merge` | purple | another input from an independent branch | none here; see notebook 04 |

    Nothing is read from the source code: the widget records every tensor op of the forward
    pass and walks back from each stage's inputs to the stages that produced them.

    `widget.flow` is the traced `Flow`, the same graph as plain records. `select(1)` looks at the
    same run at module depth 1 (one stage per child of the model), and `to_text()` prints it;
    the last column lists where each stage's inputs come from.
    """),
    code("""
    overview = widget.flow.select(1)
    print(overview.to_text())
    """),
    code("""
    print(Counter(edge.kind for edge in overview.edges))
    skips = [(edge.src, edge.dst) for edge in overview.edges if edge.kind == "skip"]
    skips
    """),
    md("""
    Three skip edges, one per resolution: each encoder block hands its features to the decoder
    block of the same size. In the full graph (`widget.flow`, every leaf a stage) the same skips
    run from `enc1.relu2` to `dec1.conv1`, the first layer that reads the concatenation.

    ## Selecting a stage from Python

    `widget.selected` is two-way. Set it from Python and the view reveals that stage and opens
    its inspector; click a stage in the view and `widget.selected` changes in the kernel.
    `widget.on_select(callback)` calls `callback(stage_id)` on every change and returns a
    function that unsubscribes.
    """),
    code("""
    visited = []


    def describe(stage_id):
        \"""Print what flowed out of a stage, from the statistics captured during the run.\"""
        visited.append(stage_id)
        if not stage_id:  # closing the inspector in the view clears the selection
            return
        s = widget.flow.summary(stage_id)[0]
        shape = "x".join(map(str, s.shape))
        print(f"{stage_id:5} {shape:12} mean {s.mean:6.3f}  std {s.std:6.3f}  "
              f"zeros {s.zero_fraction:6.1%}")


    unsubscribe = widget.on_select(describe)
    widget.selected = "dec1"
    """),
    md("""
    Nothing was recomputed for that line. During the run each stage's output was reduced inside
    its forward hook (min, max, mean, std, a histogram, and a small pooled copy for pictures),
    and the whole activations were dropped. Clicks read these reductions.

    ## Clicking through the skip edges

    In the live view above, try this walk. It is a good way to show a class what a U-Net's
    skips carry:

    1. **Click `enc1`.** The inspector opens on the right: the stage's output shape
       (`1×8×64×64`) and parameters; an **Output** panel with tabs `grid` (the most active
       channels), `first`, `channel` (one channel, with a picker) and `mean`; and its
       **Statistics** with a histogram. After the ReLU about 60% of the values are exactly
       zero: the tall first bar of the histogram.
    2. **Follow the dashed orange skip edge** from `enc1` to **`dec1`** and click it. Same
       resolution, different content: the encoder's grid shows local edges and noise, the
       decoder's shows clean, filled shapes.
    3. **Click `up1`**, the other input of `dec1`'s concatenation: coarse, blocky maps upsampled
       from 32×32. `dec1` needs both: *where exactly* (the skip) and *what* (from below).
    4. **Press Esc** to close the inspector; that clears the selection.

    Every click sets `widget.selected`, so `describe` prints one line per click. The next cell
    plays the same walk from Python: it selects both ends of each skip edge.
    """),
    code("""
    for src, dst in skips:
        widget.selected = src
        widget.selected = dst
    """),
    md("""
    Unsubscribe when you are done; selecting keeps working, without the printing.
    """),
    code("""
    unsubscribe()
    widget.selected = "dec1"
    print("selected:", widget.selected)
    print("visited: ", visited)
    """),
    md("""
    ## Export a self-contained page

    `widget.to_html(path)` writes one offline HTML file: the graph, the front end, and each
    stage's default view baked in (within a size budget). Put it on a course page or send it to
    someone without Python; it needs no server and no network. Here it goes into a temporary
    directory, so the notebook leaves nothing behind.
    """),
    code("""
    with tempfile.TemporaryDirectory() as tmp:
        page = widget.to_html(Path(tmp) / "unet.html", title="A small U-Net")
        html = page.read_text(encoding="utf-8")

    external = re.findall(r"<(?:script|link|img)[^>]*(?:src|href)=", html)
    print(f"{page.name}: {len(html) / 1e6:.1f} MB, external resources: {len(external)}")
    """),
    md("""
    ## Checks

    The last cell states what this notebook showed, as assertions. `tests/test_notebooks.py`
    runs the notebook headless and fails if one of them fails.
    """),
    code("""
    edges = [tuple(edge) for edge in widget.flow.edges]
    assert widget.selected == "dec1"
    assert set(skips) == {("enc1", "dec1"), ("enc2", "dec2"), ("enc3", "dec3")}
    assert ("enc1.relu2", "dec1.conv1", "skip") in edges
    assert not any(kind == "merge" for _, _, kind in edges)
    assert visited == ["dec1"] + [stage for edge in skips for stage in edge]
    assert "dec1" in [call["id"] for call in widget.graph["calls"]]
    assert len(html) > 100_000 and not external
    print("quickstart: all checks passed")
    """),
]
