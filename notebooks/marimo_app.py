"""The quickstart as a marimo app: the widget in a cell, and cells that react to what you click.

    marimo run notebooks/marimo_app.py      # or: marimo edit notebooks/marimo_app.py
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App()


@app.cell
def _():
    import marimo as mo

    import neural_flow_widget as nfw
    from neural_flow_widget import demos

    return demos, mo, nfw


@app.cell
def _(mo):
    mo.md(
        """
        # A U-Net, stage by stage

        The demo U-Net (trained to outline the bright shapes in a noisy image) traced once.
        Click a stage: the inspector shows what flowed through it, and the cells below
        react to the selection through `flow.value["selected"]`.
        """
    )
    return


@app.cell
def _(demos, mo, nfw):
    demo = demos.load("unet")
    flow = mo.ui.anywidget(nfw.NeuralFlowWidget(demo.model, demo.inputs, stages=1))
    flow
    return (flow,)


@app.cell
def _(flow, mo):
    # marimo re-runs this cell whenever the widget's value (its traitlets) changes
    stage = flow.value.get("selected")
    if stage is None:
        note = mo.md("*Click a stage in the graph.*")
    else:
        s = flow.widget.flow.summary(stage)[0]
        note = mo.md(
            f"**Selected:** `{stage}`, output {' × '.join(map(str, s.shape))}: "
            f"min {s.min:.4g}, max {s.max:.4g}, mean {s.mean:.4g}, std {s.std:.4g}"
        )
    note
    return


if __name__ == "__main__":
    app.run()
