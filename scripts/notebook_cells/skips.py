"""Notebook 02, skip connections and residuals."""

from __future__ import annotations

from . import SHOW_HELPER, code, md

CELLS = [
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
