"""Write the teaching notebooks in ``notebooks/`` from the cells below, without outputs.

    python scripts/make_notebooks.py           # (re)write notebooks/*.ipynb
    python scripts/make_notebooks.py --check   # exit 1 if a notebook differs from this file

The notebooks are generated so that a change to one is a readable diff of this file; cell ids
are fixed, so regenerating an unchanged notebook rewrites the same bytes.
``tests/test_notebooks.py`` runs every notebook headless and checks what it shows.
"""

from __future__ import annotations

import pathlib
import sys
import textwrap

import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def md(text: str) -> tuple[str, str]:
    return ("markdown", textwrap.dedent(text).strip("\n"))


def code(*parts: str) -> tuple[str, str]:
    """A code cell; parts are dedented one by one and separated by two blank lines."""
    return ("code", "\n\n\n".join(textwrap.dedent(p).strip("\n") for p in parts))


# Small helpers several notebooks define in their first cell (kept visible on purpose: a reader
# should see that a picture is just PNG bytes in an <img> tag).
SHOW_HELPER = '''
def show(images, width=200):
    """Show PNG images side by side with captions; ``images`` maps caption -> PNG bytes."""
    figures = "".join(
        '<figure style="display:inline-block; margin:0 14px 10px 0; text-align:center">'
        f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}" '
        f'style="width:{width}px; image-rendering:pixelated"><figcaption>{caption}</figcaption>'
        "</figure>"
        for caption, png in images.items()
    )
    display(HTML(figures))
'''

# ---------------------------------------------------------------------------------------------
# 01 quickstart

QUICKSTART = [
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

# ---------------------------------------------------------------------------------------------
# 02 skip connections

SKIPS = [
    md("""
    # Skip connections and residuals

    A lecture in two models. Both reuse an earlier activation further down the network, in
    different ways:

    * a **U-Net** *concatenates*: `dec1(torch.cat([up1(x), enc1_out], dim=1))`; the decoder sees
      the encoder's features next to its own;
    * a **ResNet** *adds*: `relu(x + f(x))`; a block only learns a correction `f(x)` to what it
      receives.

    The flow graph marks both as **skip** edges: an input of a stage that is also an *ancestor*
    of that stage's main input, so the data jumps over the stages in between. We will see where
    the skips are, what they carry, and why they vanish when you zoom out.
    """),
    code("""
    import base64
    import io
    from collections import Counter

    import numpy as np
    import torch
    from IPython.display import HTML, display
    from PIL import Image

    import neural_flow_widget as nfw
    from neural_flow_widget import demos
    """, SHOW_HELPER),
    md("""
    ## 1. U-Net: skips by concatenation

    `stages=1` makes one stage per child of the model (`enc1`, `pool1`, ...) instead of one per
    leaf module.
    """),
    code("""
    unet = demos.load("unet")
    flow = nfw.trace(unet.model, unet.inputs, stages=1)
    print(flow.to_text())
    """),
    md("""
    Read the `from` column: `dec3` gets `up3` and `enc3 (skip)`. Why a *skip* and not a
    *merge*? Everything `up3` sees went through `enc3` first (`enc3 → pool3 → bottleneck →
    up3`): `enc3` is an ancestor of `dec3`'s main input. The second input is the same data,
    taken earlier, jumping over `pool3`, `bottleneck` and `up3`. A merge is an input that is
    *not* upstream of the main one, such as a second modality (notebook 04).
    """),
    code("""
    [(edge.src, edge.dst) for edge in flow.edges if edge.kind == "skip"]
    """),
    md("""
    In the live view the three skips are the dashed orange arcs across the U, each from an
    encoder block to the decoder block of the same resolution. `dec1` is selected, so its
    inspector is open.
    """),
    code("""
    widget = nfw.NeuralFlowWidget(unet.model, unet.inputs)
    widget.selected = "dec1"
    widget
    """),
    md("""
    ## What travels along a skip

    `flow.view(stage, kind)` renders what the run kept of a stage's output. The `grid` view
    tiles the most active channels; bright is large (a blue-white-red map instead means the
    values straddle zero). Below: the input image, the encoder's `enc1`, the upsampled decoder
    path `up1`, and `dec1`, which reads `cat([up1, enc1])`. All are 64×64.
    """),
    code("""
    pixels = unet.inputs[0, 0].numpy()
    pixels = (255 * (pixels - pixels.min()) / (pixels.max() - pixels.min())).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")

    show({
        "input image": buffer.getvalue(),
        "enc1: the skip's source": flow.view("enc1", "grid").to_png(),
        "up1: from below": flow.view("up1", "grid").to_png(),
        "dec1 = f(cat[up1, enc1])": flow.view("dec1", "grid").to_png(),
    })
    for stage in ("enc1", "up1", "dec1"):
        s = flow.summary(stage)[0]
        print(f"{stage:5} mean|x| {s.mean_abs:.3f}   std {s.std:.3f}   zeros {s.zero_fraction:4.0%}")
    """),
    md("""
    What to point out:

    * **`enc1`** has seen only a 5×5 neighbourhood of each pixel (two 3×3 convolutions). Its
      channels respond to local contrast: the edges of the shapes, but also the noise and the
      wavy background, everywhere in the image.
    * **`up1`** comes up from the 8×8 bottleneck, whose receptive field spans the whole image.
      It knows *which* regions are shapes, but it is coarse, with the checkerboard pattern of a
      stride-2 transposed convolution. It has no ReLU, so its values straddle zero.
    * **`dec1`** combines the two: filled shapes with sharp outlines. Neither input has both
      properties; that is the case for skip connections in a segmentation network.

    ## An experiment: cut a skip

    A forward pre-hook on a decoder block replaces the skip half of its concatenated input
    with zeros. We measure the intersection-over-union on 16 fresh images, and trace the model
    with the `dec1` skip cut to see its prediction. One caveat for the lecture: the network was
    *trained* with its skips, so this measures how much it relies on them, not how well a U-Net
    without skips could do.
    """),
    code("""
    def cut_skip(module, args):
        \"""Zero the second half of the channels of cat([upsampled, skip]): the skip.\"""
        (x,) = args
        half = x.shape[1] // 2
        return (torch.cat([x[:, :half], torch.zeros_like(x[:, half:])], dim=1),)


    model = unet.model
    iou = {"intact": demos.evaluate("unet", model, n=16)["iou"]}
    for name in ("dec1", "dec2", "dec3"):
        hook = getattr(model, name).register_forward_pre_hook(cut_skip)
        try:
            iou[f"{name} skip cut"] = demos.evaluate("unet", model, n=16)["iou"]
            if name == "dec1":
                cut = nfw.trace(model, unet.inputs, stages=1)
        finally:
            hook.remove()
    for run, value in iou.items():
        print(f"{run:14} IoU {value:.3f}")

    show({"prediction, intact": flow.view("head").to_png(),
          "prediction, enc1 skip cut": cut.view("head").to_png()})
    """),
    md("""
    Every cut costs accuracy; in this model the coarsest skip, into `dec3`, costs the most.
    Without the `enc1` skip the shapes are still found (the decoder path knows *what* is
    where), but their outlines go soft and the triangles' corners round off: the 64×64 detail
    came through the skip. The graph of the cut run is unchanged, by the way: zeros are still
    data, and `cut.edges == flow.edges`. Only the statistics and the pictures differ.

    ## 2. ResNet: skips by addition

    The demo ResNet has a stem, three stages of one `BasicBlock` each, and a linear head. Here
    every leaf module is a stage.
    """),
    code("""
    resnet = demos.load("resnet")
    rflow = nfw.trace(resnet.model, resnet.inputs)
    print(rflow.to_text())
    """),
    code("""
    [tuple(edge) for edge in rflow.edges if edge.kind != "flow"]
    """),
    md("""
    Two kinds of shortcut, two kinds of edge:

    * In `layer1.0` the shortcut is the **identity**: `relu2(x + bn2(conv2(...(x))))` with `x` the
      stem's output. `stem.relu` is an ancestor of `layer1.0.bn2` (the residual branch starts
      from it), so `stem.relu → layer1.0.relu2` is a **skip** jumping over the two
      convolutions. The `+` is not a module, so the edge ends at the first stage that reads the
      sum: `relu2`.
    * `layer2.0` and `layer3.0` halve the resolution and double the width, so their shortcut is a
      **projection**, `downsample` (a 1×1 convolution and batch norm). Now the two operands of
      the sum come from two parallel branches that split at the block's input; neither is
      upstream of the other, so the graph draws a **merge** from `downsample.bn`.

    Identity shortcut: a skip. Projection shortcut: a branch that merges back.

    ## Zooming out hides the residuals
    """),
    code("""
    blocks = rflow.select(1)
    print(blocks.to_text())
    print(Counter(edge.kind for edge in blocks.edges))
    """),
    md("""
    Only `flow` edges remain. At depth 1 the whole residual happens inside the stage `layer1`:
    the fork (`x` goes into `conv1` *and* around it) and the join (the `+`). Seen from outside,
    `layer1` receives `x` once, from `stem`, and that is its main input, a `flow` edge. The
    skip ran from `stem.relu` to `layer1.0.relu2`; at this depth its two ends are `stem` and
    `layer1`, exactly the ends of that flow edge, so it adds nothing to draw. A skip stays
    visible only while its destination is a different stage from the one that takes the
    main path, as with `dec1`, whose main input is `up1` and not `enc1`.

    `trace(..., stages=1)` gives the same edges; `select` only re-projects the recorded run, it
    does not run the model again.

    Open one block and its skip is back:
    """),
    code("""
    assert nfw.trace(resnet.model, resnet.inputs, stages=1).edges == blocks.edges
    opened = rflow.select(["stem", "layer1.0.*", "layer2", "layer3", "avgpool", "fc"])
    print(opened.to_text())
    """),
    md("""
    The widget does the same when you open or close a group: its front end runs this walk on the
    recorded op graph, without asking the kernel. In the view below, open the block `layer1.0`
    with its **+** badge (open `layer1` first if it is closed) to make the dashed skip appear,
    and open `layer2.0` to see the purple merge from `downsample`.
    """),
    code("""
    rwidget = nfw.NeuralFlowWidget(resnet.model, resnet.inputs)
    rwidget
    """),
    md("""
    ## What the residual adds

    The shortcut `x` (the stem's output), the residual branch `f(x)` (`layer1.0.bn2`) and
    their sum after the ReLU (`layer1.0.relu2`), each as the mean over its 16 channels. The
    input is an image of (nearly) horizontal stripes. A view stores 8-bit codes that stand
    linearly for `vmin ... vmax`, so `values()` below recovers the numbers to correlate the
    three maps.
    """),
    code("""
    def values(view):
        \"""Undo a view's 8-bit quantisation: codes 0..255 stand for vmin..vmax, linearly.\"""
        return view.vmin + view.data.astype(float) / 255 * (view.vmax - view.vmin)


    maps = {
        "x: stem.relu": rflow.view("stem.relu", "mean"),
        "f(x): layer1.0.bn2": rflow.view("layer1.0.bn2", "mean"),
        "relu(x + f(x)): layer1.0.relu2": rflow.view("layer1.0.relu2", "mean"),
    }
    show({caption: view.to_png() for caption, view in maps.items()}, width=170)

    x_map, f_map, sum_map = (values(view).ravel() for view in maps.values())
    corr = {"x and f(x)": np.corrcoef(x_map, f_map)[0, 1],
            "x and the sum": np.corrcoef(x_map, sum_map)[0, 1],
            "f(x) and the sum": np.corrcoef(f_map, sum_map)[0, 1]}
    for pair, r in corr.items():
        print(f"correlation of {pair:17} {r:+.2f}")
    for stage in ("stem.relu", "layer1.0.bn2", "layer1.0.relu2"):
        s = rflow.summary(stage)[0]
        print(f"{stage:15} min {s.min:+.2f}  max {s.max:+.2f}  mean|x| {s.mean_abs:.3f}  "
              f"zeros {s.zero_fraction:4.0%}")
    """),
    md("""
    `f(x)` is signed (batch norm, no ReLU): it raises some positions and lowers others. Its
    map is uncorrelated with `x`, so the branch adds something new rather than an echo of its
    input; the sum resembles both. That is the residual idea in one picture: the block does not
    have to reproduce its input, only to learn an edit, because the identity path carries `x`
    past the convolutions unchanged (and, during training, carries the gradient back the same
    way).

    ## Checks
    """),
    code("""
    skip_pairs = {(e.src, e.dst) for e in flow.edges if e.kind == "skip"}
    assert skip_pairs == {("enc1", "dec1"), ("enc2", "dec2"), ("enc3", "dec3")}
    assert cut.edges == flow.edges
    assert all(iou[f"{name} skip cut"] < iou["intact"] for name in ("dec1", "dec2", "dec3"))
    assert iou["dec3 skip cut"] < min(iou["dec1 skip cut"], iou["dec2 skip cut"])
    residual = {tuple(e) for e in rflow.edges if e.kind != "flow"}
    assert ("stem.relu", "layer1.0.relu2", "skip") in residual
    assert ("layer2.0.downsample.bn", "layer2.0.relu2", "merge") in residual
    assert {e.kind for e in blocks.edges} == {"flow"}
    assert ("stem", "layer1.0.relu2", "skip") in [tuple(e) for e in opened.edges]
    assert widget.selected == "dec1" and any(e.kind == "skip" for e in widget.flow.edges)
    assert rflow.summary("layer1.0.bn2")[0].min < 0 < rflow.summary("layer1.0.bn2")[0].max
    assert abs(corr["x and f(x)"]) < 0.3 < min(corr["x and the sum"], corr["f(x) and the sum"])
    print("skip connections: all checks passed")
    """),
]

# ---------------------------------------------------------------------------------------------
# 03 attention

ATTENTION = [
    md("""
    # Attention maps, per head

    An attention head decides, for every query position, how much to read from every key
    position: a `(queries × keys)` matrix of probabilities, one per head. `flow.attention(stage)`
    returns these maps for everything a stage computed, recorded during the one forward pass
    from `F.scaled_dot_product_attention`, `F.multi_head_attention_forward` or a hand-written
    `softmax(q @ kᵀ) @ v`.

    Two models:

    1. the demo transformer, trained to **reverse** a sequence of digits: its heads show the
       task as an anti-diagonal;
    2. a tiny **GPT-2** built from a `transformers` config with random weights, to check that the
       captured maps are exactly the model's own `output_attentions`.
    """),
    code("""
    import base64
    import io

    import numpy as np
    import torch
    from IPython.display import HTML, display
    from PIL import Image

    import neural_flow_widget as nfw
    from neural_flow_widget import demos
    from neural_flow_widget.demos import data
    """, SHOW_HELPER, '''
def heatmap(weights, scale=10):
    """A (queries, keys) map of probabilities as PNG bytes: white = 0, dark blue = 1."""
    w = np.clip(np.asarray(weights, np.float32), 0.0, 1.0)[..., None]
    white, blue = np.array([255.0, 255.0, 255.0]), np.array([8.0, 48.0, 107.0])
    rgb = (white + w * (blue - white)).astype(np.uint8)
    image = Image.fromarray(rgb).resize((rgb.shape[1] * scale, rgb.shape[0] * scale), Image.NEAREST)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
'''),
    md("""
    ## 1. A transformer that reverses digits

    A sequence reads `d1 ... d8 SEP d8 ... d2` (16 tokens; `d1` would come next). The model
    predicts each next token under a causal mask, so the query at position *i* decides token
    *i + 1*. From the separator on,
    the next token to write is the digit mirrored around the middle, so a head that does the
    job should read key `15 - i` from query `i`: the **anti-diagonal** of the map.
    """),
    code("""
    demo = demos.load("transformer")
    model, tokens = demo.model, demo.inputs
    labels = ["SEP" if t == data.SEP else str(t) for t in tokens[0].tolist()]
    print(demo.description)
    print(" ".join(labels))

    flow = nfw.trace(model, tokens)
    maps = {block: flow.attention(f"blocks.{block}.attn")[0] for block in (0, 1)}
    m = maps[1]
    print(f"blocks.1.attn: weights {m.weights.shape} (heads, queries, keys), source {m.source!r}")
    """),
    md("""
    Each map below is one head: rows are queries (top = first token), columns are keys, dark =
    high probability. The upper-right triangle is empty because of the causal mask.
    """),
    code("""
    for block, m in maps.items():
        show({f"block {block}, head {h}": heatmap(m.weights[h]) for h in range(m.weights.shape[0])},
             width=150)
    """),
    md("""
    In the lower half of the maps (queries from `SEP` on) the mass sits on a line running from
    the bottom-left corner up to the middle: query 8 (`SEP`) reads key 7, query 9 reads key 6,
    and so on. That is the anti-diagonal `i + j = 15`: each position looks up the digit it must
    write next. (The upper half, while the digits are still being read, has no such task and no
    such line.) Measured per head: the share of the reversed half whose strongest key is
    `15 - i`, and the mean probability placed there.
    """),
    code("""
    queries = np.arange(data.REVERSAL_DIGITS, 2 * data.REVERSAL_DIGITS)   # SEP and after
    mirror = 2 * data.REVERSAL_DIGITS - 1 - queries
    hits = {}
    for block, m in maps.items():
        for h, w in enumerate(m.weights):
            hits[block, h] = float(np.mean(w[queries].argmax(axis=1) == mirror))
            mass = float(w[queries, mirror].mean())
            print(f"block {block} head {h}: argmax on the anti-diagonal {hits[block, h]:4.0%}, "
                  f"mean probability there {mass:.2f}")

    predicted = demo.run().argmax(-1)[0, 8:15].tolist()   # run(): the model's output, no autograd
    print("reversed digits written:", predicted, " expected:", tokens[0, 9:16].tolist())
    """),
    md("""
    Every head of both blocks has learned the mirror lookup, and the model writes the reversed
    digits correctly.

    In the widget, click `blocks.1.attn` (inside `blocks.1`; use **+** to open it) and pick the
    **attention** tab: a head menu, the head-average map, and a grid of all heads. `tokens=`
    labels the positions with the digits instead of the raw token ids.
    """),
    code("""
    widget = nfw.NeuralFlowWidget(model, tokens, tokens=labels)
    widget.selected = "blocks.1.attn"
    widget
    """),
    md("""
    ## 2. GPT-2 from a `transformers` config

    A 2-layer, 4-head GPT-2 with a 100-token vocabulary, built from its config: the weights are
    **random**, nothing is downloaded. Its maps mean nothing linguistically; the point here is
    that the tool records exactly what the model computes. By default `transformers` runs
    attention through PyTorch's fused `scaled_dot_product_attention` (SDPA), which never forms
    the probability matrix; the tool recomputes it from the same queries, keys and mask. The
    model's own `output_attentions=True` needs the "eager" implementation, so the reference is
    an eager copy with the same weights.
    """),
    code("""
    from transformers import GPT2Config, GPT2LMHeadModel


    def tiny_gpt2(attn_implementation):
        config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100,
                            bos_token_id=0, eos_token_id=0,   # special tokens inside the vocabulary
                            attn_implementation=attn_implementation)
        return GPT2LMHeadModel(config).eval()


    torch.manual_seed(0)
    gpt2 = tiny_gpt2("sdpa")
    reference = tiny_gpt2("eager")
    reference.load_state_dict(gpt2.state_dict())

    ids = torch.randint(0, 100, (1, 12), generator=torch.Generator().manual_seed(0))
    gflow = nfw.trace(gpt2, ids)
    with torch.no_grad():
        expected = reference(ids, output_attentions=True).attentions   # one (1, heads, q, k) per layer

    same = []
    for layer in range(2):
        (got,) = gflow.attention(f"transformer.h.{layer}")
        same.append(np.allclose(got.weights, expected[layer][0].numpy(), atol=1e-6))
        print(f"transformer.h.{layer}: source {got.source!r}, weights {got.weights.shape}, "
              f"allclose to output_attentions: {same[-1]}")
    """),
    code("""
    (first,) = gflow.attention("transformer.h.0")
    show({f"layer 0, head {h}": heatmap(first.weights[h], scale=12) for h in range(4)}, width=150)
    """),
    md("""
    Random weights give diffuse maps; only the causal triangle is structure. The widget works
    the same on a Hugging Face model: `transformer.h.0` and `transformer.h.1` are `GPT2Block`
    groups, and their `attn` stages carry the maps.
    """),
    code("""
    gwidget = nfw.NeuralFlowWidget(gpt2, ids)
    gwidget.selected = "transformer.h.0.attn"
    gwidget
    """),
    md("""
    ## Checks
    """),
    code("""
    assert all(m.weights.shape == (4, 16, 16) for m in maps.values())
    assert min(hits.values()) >= 0.75          # every head reads the mirror position
    assert predicted == tokens[0, 9:16].tolist()
    assert all(same) and len(same) == 2
    assert widget.selected == "blocks.1.attn" and widget.flow.attention("blocks.1.attn")
    assert gwidget.selected == "transformer.h.0.attn"
    print("attention: all checks passed")
    """),
]

# ---------------------------------------------------------------------------------------------
# 04 multimodal

MULTIMODAL = [
    md("""
    # A multimodal model, and a debugging story

    The fusion demo reads a patient as two modalities:

    * a 32×32 **lesion image**, through a small CNN (`image_encoder`);
    * 8 **clinical features** (age, a blood marker, inflammation, ...), through an MLP
      (`clinical_mlp`).

    `fusion` concatenates the two feature vectors, and two heads read the fused vector: a 4-way
    `diagnosis` (lesion shape × marker level) and a `severity` score. The data are built so that
    neither modality alone can solve the task: the shape is only in the image, the marker only
    in the table.
    """),
    code("""
    import torch

    import neural_flow_widget as nfw
    from neural_flow_widget import demos
    from neural_flow_widget.demos import data

    demo = demos.load("fusion")
    model = demo.model
    image, clinical = demo.inputs
    print(demo.description)
    print("image", tuple(image.shape), " clinical", tuple(clinical.shape))
    for name, value in zip(data.CLINICAL_FEATURES, clinical[0].tolist()):
        print(f"  {name:15} {value:+.2f}")
    """),
    md("""
    Two inputs: a tuple calls `model(*inputs)`. The input nodes are `input:0` (the image) and
    `input:1` (the table); the model returns a dict, so the outputs are `output:diagnosis` and
    `output:severity`.
    """),
    code("""
    flow = nfw.trace(model, (image, clinical), stages=1)
    print(flow.to_text())
    """),
    md("""
    ## Merge and branch

    * **Merge.** `fusion` has two inputs. `image_encoder` arrives along the deeper path, so it
      is the `flow` edge; `clinical_mlp` comes from an independent branch (it is not upstream of
      the image features), so it is a **merge**. Compare notebook 02: there the second input
      was an ancestor of the first, a *skip*.
    * **Branch.** `fusion`'s output feeds two stages, the two heads. A branch is not an edge kind
      of its own: it is a stage with several outgoing edges, here two `flow` edges.
    """),
    code("""
    merges = [(e.src, e.dst) for e in flow.edges if e.kind == "merge"]
    branch = [e.dst for e in flow.edges if e.src == "fusion"]
    print("merge edges:   ", merges)
    print("fusion feeds:  ", branch)
    print("outputs:       ", flow.outputs)
    """),
    md("""
    In the live view the purple merge edge joins the two columns at `fusion`, and the graph
    splits again below it. `fusion` is selected: its inspector shows the fused 32-vector (the
    `values` and `topk` tabs) and its statistics.
    """),
    code("""
    widget = nfw.NeuralFlowWidget(model, (image, clinical))
    widget.selected = "fusion"
    widget
    """),
    md("""
    ## A stage's statistics

    `flow.summary(stage)` is what the inspector's **Statistics** panel shows: one `Summary` per
    output tensor, with min, max, mean, std, mean |x|, the fraction of exact zeros, NaN and Inf
    counts, and a histogram (`hist_counts` over `[hist_lo, hist_hi]`).
    """),
    code("""
    s = flow.summary("fusion")[0]
    print(f"shape {s.shape}  mean {s.mean:.3f}  std {s.std:.3f}  mean|x| {s.mean_abs:.3f}  "
          f"zeros {s.zero_fraction:.0%}  nan {s.nan}")
    print(f"histogram: {len(s.hist_counts)} bins over [{s.hist_lo:.2f}, {s.hist_hi:.2f}]; the first "
          f"bin holds {s.hist_counts[0]} of {s.hist_counts.sum()} values (the ReLU's zeros)")
    """),
    md("""
    ## The debugging story: a modality goes missing

    A colleague changes the data pipeline. The model still runs, there is no error and no NaN,
    but its diagnoses look odd. The bug (we know it, they don't): a broken join sends an
    all-zero clinical vector.

    Tracing the healthy and the broken input and comparing statistics stage by stage localises
    the problem without reading any pipeline code. Same model, same image, two runs.
    """),
    code("""
    runs = {
        "healthy": nfw.trace(model, (image, clinical)),
        "clinical zeroed": nfw.trace(model, (image, torch.zeros_like(clinical))),
    }

    print(f"{'stage':22} {'healthy mean|x|':>16} {'broken mean|x|':>15}  changed")
    changed = []
    for stage in runs["healthy"].stages:
        a = runs["healthy"].summary(stage.id)[0]
        b = runs["clinical zeroed"].summary(stage.id)[0]
        differs = (a.mean, a.std, a.zero_fraction) != (b.mean, b.std, b.zero_fraction)
        if differs:
            changed.append(stage.id)
        print(f"{stage.id:22} {a.mean_abs:16.3f} {b.mean_abs:15.3f}  {'<--' if differs else ''}")
    """),
    md("""
    Read it top to bottom. The image branch is identical in both runs. The first stages that
    differ are `clinical_mlp.fc1`, fed by `input:1`: the trouble enters with the clinical
    input, and from there it flows through the **merge** edge into `fusion` and down both
    heads. The graph itself is the same in both runs (zeros are still data); only the
    statistics tell.

    One more test nails it. If the clinical branch no longer carries information, its output
    should not depend on the patient. Zero the clinical vector of a *different* patient and
    compare:
    """),
    code("""
    other_image, other_clinical, _, _ = data.clinical_batch(1, seed=1)
    other = nfw.trace(model, (other_image, torch.zeros_like(other_clinical)))
    broken = runs["clinical zeroed"]
    for stage in ("image_encoder", "clinical_mlp"):
        a, b = broken.summary(stage)[0], other.summary(stage)[0]
        print(f"{stage:14} patient A mean {a.mean:.4f}   patient B mean {b.mean:.4f}")
    """),
    md("""
    The image features differ between the two patients, as they should; the clinical branch
    gives the same vector for both: with a zero input only its biases remain. What does that do
    to the answer?
    """),
    code("""
    with torch.no_grad():
        outputs = {name: model(image, c) for name, c in
                   (("healthy", clinical), ("clinical zeroed", torch.zeros_like(clinical)))}
    best = {}
    for name, out in outputs.items():
        probs = out["diagnosis"].softmax(-1)[0]
        best[name] = int(probs.argmax())
        print(f"{name:16} diagnosis: {data.DIAGNOSES[best[name]]!r} ({probs[best[name]]:.0%})   "
              f"severity {out['severity'].item():+.2f}")
    """),
    md("""
    The image still says *angular lesion*: that half of the diagnosis survives. The marker
    level, which only the table carries, is lost: the model now guesses *low marker*, with far
    less confidence, and the severity (which depends on the inflammation value) jumps. No
    error, no NaN: a plausible but wrong answer.

    The checklist this story teaches: when a multimodal model misbehaves, trace it on a good
    and a bad input, find the first stage whose statistics change, and follow the merge edges
    from there. In the widget the same comparison is two widgets side by side, or the colour
    menu set to *mean |x|*.

    ## Checks
    """),
    code("""
    assert merges == [("clinical_mlp", "fusion")]
    assert ("image_encoder", "fusion", "flow") in [tuple(e) for e in flow.edges]
    assert sorted(branch) == ["diagnosis_head", "severity_head"]
    assert flow.outputs == ("output:diagnosis", "output:severity")
    assert runs["healthy"].edges == runs["clinical zeroed"].edges
    assert not any(stage.startswith("image_encoder") for stage in changed)
    assert changed[0] == "clinical_mlp.fc1" and "fusion.fc1" in changed
    assert broken.summary("clinical_mlp")[0].mean == other.summary("clinical_mlp")[0].mean
    assert broken.summary("image_encoder")[0].mean != other.summary("image_encoder")[0].mean
    assert best == {"healthy": 3, "clinical zeroed": 2}   # angular lesion; high -> low marker
    assert widget.selected == "fusion"
    assert any(e.kind == "merge" for e in widget.flow.edges)
    print("multimodal: all checks passed")
    """),
]

# ---------------------------------------------------------------------------------------------
# 05 trace without the widget

LIBRARY = [
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


NOTEBOOK_CELLS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_skip_connections.ipynb": SKIPS,
    "03_attention.ipynb": ATTENTION,
    "04_multimodal.ipynb": MULTIMODAL,
    "05_trace_without_widget.ipynb": LIBRARY,
}


def build(name: str) -> nbformat.NotebookNode:
    """The notebook ``name`` (a key of NOTEBOOK_CELLS), without outputs, with fixed cell ids."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                       "language": "python"},
        "language_info": {"name": "python"},
    }
    stem = name.split("_")[0]
    for i, (kind, source) in enumerate(NOTEBOOK_CELLS[name]):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = make(source)
        cell.id = f"nb{stem}-{i:02d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(name: str) -> str:
    return nbformat.writes(build(name)) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    NOTEBOOKS.mkdir(exist_ok=True)
    for name in NOTEBOOK_CELLS:
        path = NOTEBOOKS / name
        text = render(name)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"out of date (run python scripts/make_notebooks.py): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
