"""The toolbar and the search at a lecture hall's sizes, on models people bring (a ResNet-50
written out as torchvision has it, Whisper built from its config; offline pages in Chromium):
the model's name and its counts are whole in the toolbar at 1024x768 (a long class name at
1280x720 and 1024x768 too; a short one in a notebook's narrow cell), "/" takes the keys to the
search box, a search whose matches are on screen leaves a whole view whole, and a block opened
where its parent is not drawn as a group is headed by its whole name ("layer2.0", not "0");
BERT's mask line, data on the graph, passes behind no node. Screenshots in
test-artifacts/toolbar_*.png."""

from __future__ import annotations

import pathlib
import sys

import pytest
import torch
from live import open_offline, settle, shoot
from test_unet_u import SEEN, assert_buses_pass_behind_no_node
from test_view_whole import COVERED
from test_zoo_in_view import TOGGLE

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import fixture_models
import written_out

import neural_flow_widget as nfw

#: whether each part of the toolbar's title is whole (its text not cut by an ellipsis)
#: (its text's own width against its box's, to the sub-pixel: a box a fraction of a pixel too
#: narrow draws "ResN...", where scrollWidth and clientWidth round to the same)
#: (the parts shown: the notes' toggle is hidden where the run has none)
TITLE_WHOLE = """() => [...document.querySelectorAll(".nfw-title > *")]
  .filter((e) => e.getClientRects().length).map((e) => {
  const text = document.createRange();
  text.selectNodeContents(e);
  const box = e.getBoundingClientRect().width;
  return [e.textContent, box > 0 && text.getBoundingClientRect().width <= box + 0.01];
})"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("toolbar")
    torch.manual_seed(0)
    resnet = written_out.resnet50(classes=10).eval()
    nfw.NeuralFlowWidget(resnet, torch.randn(1, 3, 64, 64)).to_html(out / "resnet50.html")
    pytest.importorskip("transformers")
    model, x = fixture_models.whisper()
    nfw.NeuralFlowWidget(model, x).to_html(out / "whisper.html")
    return out


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
@pytest.mark.parametrize("model", ["resnet50", "whisper"])
def test_the_model_s_name_and_counts_are_whole_in_the_toolbar(browser, pages, model, width, height):
    context, page, errors = open_offline(browser, pages / f"{model}.html", width, height)
    title = page.evaluate(TITLE_WHOLE)
    shoot(page, f"toolbar_{model}_{width}x{height}")
    assert title[0][0] == ("ResNet" if model == "resnet50" else "WhisperForConditionalGeneration")
    assert all(whole for _, whole in title), title
    assert page.get_attribute(".nfw-title b", "title") == title[0][0]
    context.close()
    assert errors == []


def test_a_short_name_is_whole_in_a_notebook_s_narrow_cell(browser, pages):
    # a JupyterLab cell beside the file browser at 1024x768 is about 590 px wide (its type
    # wider than a bare page's, where 545 px is as tight): the search box gives way before the
    # model's name does
    context, page, errors = open_offline(browser, pages / "resnet50.html", 545, 500)
    title = page.evaluate(TITLE_WHOLE)
    shoot(page, "toolbar_resnet50_545x500")
    assert title[0] == ["ResNet", True], title
    bar = page.evaluate(
        "() => { const t = document.querySelector('.nfw-toolbar');"
        " return [t.scrollWidth, t.clientWidth]; }"
    )
    assert bar[0] <= bar[1], f"the toolbar overflows: {bar}"
    context.close()
    assert errors == []


def test_slash_finds_and_a_search_on_screen_keeps_the_whole_view(browser, pages):
    context, page, errors = open_offline(browser, pages / "resnet50.html", 1024, 768)
    assert page.evaluate(COVERED)["out"] == []
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.classList.contains('nfw-search')")
    page.keyboard.type("relu")
    page.wait_for_function(
        "document.querySelector('.nfw-search-count').textContent.includes('match')"
    )
    settle(page)
    got = page.evaluate(COVERED)
    shoot(page, "toolbar_search_resnet50_1024x768")
    assert got["out"] == [], f"a search moved {got['out']} out of view"
    context.close()
    assert errors == []


def test_a_block_opened_alone_is_headed_by_its_whole_name(browser, pages):
    context, page, errors = open_offline(browser, pages / "resnet50.html", 1024, 768)
    opened = page.evaluate("""() => {
      const t = [...document.querySelectorAll(".nfw-node[data-kind='stage'] [data-action]")]
        .find((t) => t.closest(".nfw-node").dataset.stageId === "layer2.0");
      if (!t) return false;
      t.dispatchEvent(new MouseEvent("click", { bubbles: true }));
      return true;
    }""")
    assert opened, "layer2.0 is not drawn as a stage that opens"
    settle(page)
    headers = page.evaluate(
        "() => [...document.querySelectorAll('.nfw-cluster .nfw-ct')].map((e) => e.textContent)"
    )
    shoot(page, "toolbar_resnet50_layer2.0_open")
    assert "layer2.0" in headers, headers
    context.close()
    assert errors == []


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_bert_s_mask_line_passes_behind_no_node_with_data_on(browser, tmp_path, width, height):
    """The mask reaches the attention of a layer earlier in the flow than its own bottom (with
    data on the graph its port is level with the embeddings): its line leaves from below
    rather than across the embeddings."""
    pytest.importorskip("transformers")
    model, x = fixture_models.bert()
    path = nfw.NeuralFlowWidget(model, x).to_html(tmp_path / "bert.html")
    context, page, errors = open_offline(browser, path, width, height)
    page.evaluate(TOGGLE, "encoder.layer.0.attention")
    settle(page)
    page.click("button[aria-label='Data on the graph']")
    settle(page)
    got = page.evaluate(SEEN)
    shoot(page, f"toolbar_bert_mask_data_{width}x{height}")
    assert any(kind == "bus" for kind, *_ in got["lines"]), "no mask line drawn"
    assert_buses_pass_behind_no_node(got)
    context.close()
    assert errors == []
