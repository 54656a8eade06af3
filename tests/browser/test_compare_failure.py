"""A comparison whose run B raised, in headless Chromium at 1280x720, live (tests/browser/
live.py: a real ``NeuralFlowWidget`` answers the page) and in an exported page: the banner
says "Run B failed at classifier.0: RuntimeError: ..." and never "A = B"; its button selects
the stage, whose inspector says that run B raised there; coloured by divergence, the stages
that ran equal are "same" (pale), the stage that raised has the raised colour, and the legend
names both. Saves test-artifacts/compare_failed_b_1280x720.png (the banner) and
compare_failed_b_stage_1280x720.png (the stage's inspector: A, and "Run B raised here").

Run B is the model with a head built for another input size (``compare=model_b``): the same
stages up to ``classifier.0``, which raises on the shape."""

from __future__ import annotations

import copy
import os
import pathlib
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(__file__))
import problem_models
from live import open_live, open_offline, shoot, state, tap

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SAME, RAISED = "rgb(226, 238, 232)", "rgb(127, 29, 29)"  # stat_colors.ts SAME_FILL, RAISED_FILL


def _widget():
    import neural_flow_widget as nfw

    model, _ = problem_models.shape_bug()
    x = torch.randn(1, 3, 34, 34, generator=torch.Generator().manual_seed(0))  # A's size
    other = copy.deepcopy(model)
    other.classifier[0] = torch.nn.Linear(8 * 17 * 17, 32)  # a head for 36x36 images
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        widget = nfw.NeuralFlowWidget(model, x, compare=other)
    assert any("run B: stage 'classifier.0'" in str(w.message) for w in caught)
    return widget


def _says_b_failed(page):
    banner = page.locator('[data-banner="failure-b"]')
    text = banner.text_content()
    assert text.startswith("B raised") and "Run B failed at classifier.0: RuntimeError: " in text
    assert "mat1 and mat2 shapes cannot be multiplied (1x2048 and 2312x32)" in text
    banners = page.locator(".nfw-banners").text_content()
    assert "A = B" not in banners and "agree" not in banners
    assert page.locator('[data-banner="failure"]').count() == 0  # run A ran to the end
    assert page.locator('[data-banner="diverges"]').count() == 0  # (the failure says where)
    assert page.locator(".nfw-toolbar select").input_value() == "divergence"
    legend = page.locator(".nfw-legend").text_content()
    assert "same (≤ 0.001)" in legend and "raised" in legend and "run A only" in legend
    fills = dict(
        page.eval_on_selector_all(
            ".nfw-node[data-stage-id] .nfw-card",
            "els => els.map((r) => [r.closest('[data-stage-id]').dataset.stageId, r.style.fill])",
        )
    )
    before = {k: v for k, v in fills.items() if k.startswith(("features", "flatten"))}
    assert before and set(before.values()) == {SAME}, fills  # they ran equal in both runs
    raised = [k for k, v in fills.items() if v == RAISED]
    assert raised in (["classifier"], ["classifier.0"]), fills  # the node that shows it
    flags = page.eval_on_selector_all(
        ".nfw-flag",
        "els => els.map((f) => f.querySelector('text').textContent + ' '"
        " + f.closest('[data-stage-id]').dataset.stageId)",
    )
    assert flags == [f"B raised {raised[0]}"], flags  # (not "runs part": it raised)


def test_a_live_comparison_whose_run_b_raised_says_so_and_never_a_equals_b(browser):
    widget = _widget()
    assert widget.error is not None and widget.error.stage == "classifier.0"
    assert widget.comparison_result.first_divergent().id == "classifier.0"
    log: list = []
    context, page, errors = open_live(browser, widget, width=1280, height=720, log=log)
    page.wait_for_selector('[data-banner="failure-b"]')
    _says_b_failed(page)
    shoot(page, "compare_failed_b_1280x720", pointer_away=True)  # the banner, graph, legend
    page.locator('[data-banner="failure-b"] button').click()
    page.wait_for_selector("[data-versus]")
    assert state(page, "selected") == "classifier.0"
    versus = page.locator("[data-versus]").text_content()
    assert "Run B raised here: there is no output to compare" in versus
    panel_b = page.locator('.nfw-panel[data-run="b"]')
    panel_b.wait_for()
    assert "Run B raised here: RuntimeError: mat1 and mat2" in panel_b.text_content()
    assert "run B has no output here" in page.locator('.nfw-panel[data-run="diff"]').text_content()
    page.screenshot(path=str(ARTIFACTS / "compare_failed_b_stage_1280x720.png"))
    assert ("classifier.0", "b") not in [(q["stage"], q.get("run")) for q, _ in log]
    tap(page, '[data-stage-id="features.1"]')  # a stage run B ran: its partial graph answers
    page.wait_for_selector('.nfw-panel[data-run="b"] canvas')
    b = [r for q, r in log if q["stage"] == "features.1" and q.get("run") == "b"]
    assert b and all(r["ok"] for r in b)
    assert "Agrees" in page.locator("[data-versus]").text_content()
    context.close()
    assert errors == []


def test_an_exported_page_of_that_comparison_says_the_same(browser, tmp_path):
    path = _widget().to_html(tmp_path / "failed_b.html")
    context, page, errors = open_offline(browser, path, 1280, 720)
    page.wait_for_selector('[data-banner="failure-b"]')
    _says_b_failed(page)
    context.close()
    assert errors == []
