"""Interventions from the graph (issue 22), live in headless Chromium (tests/browser/live.py: the
view's ``intervene`` message goes to a real ``NeuralFlowWidget``, whose traitlets and answer
come back): a right click on GPT-2's attention switches it off, the view says the kernel runs,
then shows run B as the comparison, named from the intervention ("transformer.h.0.attn
switched off (zero)"), the stages before it "same", the ones after it moved, the output's
inspector A | B | A - B; heads chosen from the menu; the keyboard's way to the menu; a clear
way back; an offline page says why it has no menu. Screenshots in test-artifacts/:
intervene_menu_*.png, intervene_compared_*.png, intervene_offline_1280x720.png."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import grad_models
from live import open_live, open_offline, settle, shoot, state

SAME = "rgb(226, 238, 232)"  # stat_colors.ts SAME_FILL
FILLS = """() => Object.fromEntries([...document.querySelectorAll('.nfw-node[data-stage-id]')]
  .map((g) => [g.dataset.stageId, g.querySelector('.nfw-card').style.fill]))"""
ATTN = ".nfw-node[data-stage-id='transformer.h.0.attn']"
#: records every text the run status shows (the kernel here may answer before a test reads it)
RECORD_STATUS = """() => { window.__statusSaid = [];
  const el = document.querySelector('.nfw-run-status');
  new MutationObserver(() => el.textContent && window.__statusSaid.push(el.textContent))
    .observe(el, {childList: true, subtree: true, characterData: true}); }"""


def _widget():
    pytest.importorskip("transformers")
    import neural_flow_widget as nfw

    model, ids, _ = grad_models.gpt2()
    return nfw.NeuralFlowWidget(model, ids)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_a_context_menu_switches_a_stage_off_and_shows_what_changed(browser, width, height):
    widget = _widget()
    context, page, errors = open_live(browser, widget, width=width, height=height)
    page.locator(ATTN).click(button="right")
    menu = page.locator(".nfw-menu")
    menu.wait_for()
    items = menu.locator("[role=menuitem]").all_text_contents()
    assert items == ["Switch off (zero)", "Replace by the batch mean", "Switch off heads …"], items
    assert menu.get_attribute("data-menu") == "transformer.h.0.attn"
    shoot(page, f"intervene_menu_{width}x{height}")
    page.evaluate(RECORD_STATUS)
    menu.locator('[data-spec="zero"]').click()
    # the click answered at once: while the kernel ran, the view said so
    said = page.evaluate("() => window.__statusSaid")
    assert "Running the model again with transformer.h.0.attn switched off (zero) …" in said, said
    banner = page.locator('[data-banner="diverges"]')
    banner.wait_for(timeout=60_000)
    settle(page)
    text = banner.text_content()
    assert "Run B: transformer.h.0.attn switched off (zero)" in text, text
    assert "Runs part at transformer.h.0.attn" in text, text
    assert page.locator(".nfw-run-status").is_hidden()
    assert widget.intervention == {"stage": widget.flow.stage("transformer.h.0.attn").index,
                                   "spec": "zero"}  # fmt: skip
    assert page.locator(".nfw-toolbar select").input_value() == "divergence"
    fills = page.evaluate(FILLS)
    for before in (
        "transformer.wte",
        "transformer.wpe",
        "transformer.drop",
        "transformer.h.0.ln_1",
    ):
        assert fills[before] == SAME, (before, fills[before])  # before it: nothing moved
    for after in ("transformer.h.0.attn", "transformer.ln_f", "lm_head"):
        assert fills[after] not in ("", SAME), (after, fills[after])  # after it: moved
    # what changed at the output: its inspector shows A, B (named) and A - B
    assert state(page, "selected") == "output:logits"
    page.wait_for_selector('.nfw-panel[data-run="diff"] [data-view-kind]')
    caption = page.locator('.nfw-panel[data-run="b"] > .nfw-panel-cap').text_content()
    assert caption == "B · transformer.h.0.attn switched off (zero)"
    shoot(page, f"intervene_compared_{width}x{height}", pointer_away=True)
    # the way back
    page.locator("[data-end-comparison]").click()
    page.wait_for_function("() => !document.querySelector('[data-banner=\"diverges\"]')")
    settle(page)
    assert widget.comparison is None and widget.intervention is None
    assert page.locator(".nfw-toolbar select").input_value() == "type"
    context.close()
    assert errors == []


def test_heads_are_chosen_from_the_menu_and_the_keyboard_opens_it(browser):
    widget = _widget()
    context, page, errors = open_live(browser, widget, width=1280, height=720)
    page.locator(ATTN).click()  # selected and focused
    page.wait_for_selector(".nfw-ins-title")
    page.locator(".nfw-canvas").focus()
    page.keyboard.press("Shift+F10")
    menu = page.locator(".nfw-menu")
    menu.wait_for()
    assert page.evaluate("() => document.activeElement.dataset.spec") == "zero"  # focus in the menu
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("() => document.activeElement.dataset.spec") == "heads"
    page.keyboard.press("Enter")
    page.wait_for_selector(".nfw-head-toggle")
    heads = page.eval_on_selector_all(".nfw-head-toggle", "els => els.map((e) => e.textContent)")
    assert heads == ["0", "1", "2", "3"]  # GPT-2's 4 heads, from the stage's attention reply
    page.locator('.nfw-head-toggle[data-head="1"]').click()
    page.locator('.nfw-head-toggle[data-head="3"]').click()
    assert page.locator(".nfw-menu-apply").text_content() == "Switch off 2 heads"
    page.locator(".nfw-menu-apply").click()
    page.wait_for_selector('[data-banner="diverges"]', timeout=60_000)
    assert widget.intervention["spec"] == "heads 1, 3 off"
    assert (
        "transformer.h.0.attn with heads 1, 3 off"
        in page.locator('[data-banner="diverges"]').text_content()
    )
    # a menu closes with Esc, the keys back to the graph (lm_head: beside the output shown)
    page.locator(".nfw-node[data-stage-id='lm_head']").click(button="right")
    menu.wait_for()
    page.keyboard.press("Escape")
    assert page.locator(".nfw-menu").count() == 0
    context.close()
    assert errors == []


def test_an_offline_page_says_why_it_has_no_interventions(browser, tmp_path):
    path = _widget().to_html(tmp_path / "gpt2.html")
    context, page, errors = open_offline(browser, path, 1280, 720)
    page.locator(ATTN).click(button="right")
    menu = page.locator(".nfw-menu")
    menu.wait_for()
    assert menu.locator("[role=menuitem]").count() == 0
    note = menu.locator(".nfw-menu-note").text_content()
    assert "This page has no kernel" in note and 'widget.intervene("transformer.h.0.attn"' in note
    shoot(page, "intervene_offline_1280x720")
    context.close()
    assert errors == []


def test_an_exported_intervention_names_run_b(browser, tmp_path):
    widget = _widget()
    widget.intervene("transformer.h.0.attn", "zero")
    context, page, errors = open_offline(browser, widget.to_html(tmp_path / "b.html"), 1280, 720)
    text = page.locator('[data-banner="diverges"]').text_content()
    assert "Run B: transformer.h.0.attn switched off (zero)" in text, text
    assert page.locator("[data-end-comparison]").count() == 0  # no kernel to drop run B
    context.close()
    assert errors == []
