"""Notebook 04, a multimodal debugging story."""

from __future__ import annotations

from . import code, md

CELLS = [
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
