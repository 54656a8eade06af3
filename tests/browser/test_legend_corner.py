"""The legend takes the shape that leaves a whole view nearest the middle (view/legend_shapes.ts,
view/whole.ts chooseShape). A language model's legend (flow, skip, merge, runs after, added, next
token after a position) is one row 770 to 830 px wide at the bottom left; a first view as tall as
the canvas, its output at the bottom, slid right to clear it: GPT-J, XLNet and BLOOM at 1280x720
stood 570 to 780 px from the left edge and 30 to 90 px from the right. The legend now wraps into
rows, or moves to the bottom-right corner, where that leaves such a view in the middle; a wide
one (Mistral's, in two columns) stays in the middle. Where a shape leaves no line behind the
legend at the same size, it takes that one: GPT-2's way from its twelve blocks up to ln_f runs
along the bottom and up the middle at 1024x768, under the wrapped legend; a column in the
corner right of it leaves it whole. Built from their configs (no download). Screenshots in
test-artifacts/legend_<model>_<size>.png."""

from __future__ import annotations

import pytest
import torch
from live import open_first, write_pages
from test_view_whole import COVERED, check_view
from test_zoo_in_view import ARTIFACTS

#: the canvas' left and width, the nodes' least left and most right, the legend's shape and
#: opacity (it hides while it covers a node)
SPAN = """() => { const c = document.querySelector(".nfw-canvas").getBoundingClientRect();
  const rs = [...document.querySelectorAll(".nfw-node")].map((n) => n.getBoundingClientRect());
  const l = document.querySelector(".nfw-legend");
  return [c.left, c.width, Math.min(...rs.map((r) => r.left)), Math.max(...rs.map((r) => r.right)),
    l.dataset.shape, Number(getComputedStyle(l).opacity)]; }"""


def _ids():
    torch.manual_seed(0)
    return torch.randint(0, 100, (1, 8))


def _gptj():
    from transformers import GPTJConfig, GPTJForCausalLM

    config = GPTJConfig(vocab_size=100, n_embd=64, n_layer=2, n_head=4, rotary_dim=8)
    return GPTJForCausalLM(config).eval(), _ids()


def _xlnet():
    from transformers import XLNetConfig, XLNetLMHeadModel

    config = XLNetConfig(vocab_size=100, d_model=64, n_layer=2, n_head=4, d_inner=128)
    return XLNetLMHeadModel(config).eval(), _ids()


def _bloom():
    from transformers import BloomConfig, BloomForCausalLM

    return BloomForCausalLM(
        BloomConfig(vocab_size=100, hidden_size=64, n_layer=3, n_head=4)
    ).eval(), _ids()


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=100, n_embd=64, n_layer=12, n_head=4, n_positions=32)
    return GPT2LMHeadModel(config).eval(), _ids()


def _mistral():
    from transformers import MistralConfig, MistralForCausalLM

    config = MistralConfig(
        vocab_size=100,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
    )
    return MistralForCausalLM(config).eval(), _ids()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    pytest.importorskip("transformers")
    builders = {"gptj": _gptj, "xlnet": _xlnet, "bloom": _bloom, "mistral": _mistral, "gpt2": _gpt2}
    return write_pages(tmp_path_factory.mktemp("legend"), builders)


def _first(browser, pages, name, width, height):
    shot = ARTIFACTS / f"legend_{name}_{width}x{height}.png"
    context, page, errors = open_first(browser, pages / f"{name}.html", width, height, shot)
    check_view(page.evaluate(COVERED), "first", whole=True)  # no node under the legend
    left, canvas, x0, x1, shape, opacity = page.evaluate(SPAN)
    lines = page.evaluate(UNDER_LEGEND)
    context.close()
    assert errors == []
    assert opacity > 0.5, "the legend hid: it covered a node"
    return x0 - left, left + canvas - x1, canvas, shape, lines


#: the points of the drawn lines (every 4 px along each) that lie under the legend
UNDER_LEGEND = """() => { const r = document.querySelector(".nfw-legend").getBoundingClientRect();
  let n = 0;
  for (const p of document.querySelectorAll(".nfw-edges path, .nfw-stubs path, .nfw-bus path")) {
    const m = p.getScreenCTM();
    for (let s = 0; m && s <= p.getTotalLength(); s += 4) {
      const q = p.getPointAtLength(s);
      const [x, y] = [m.a * q.x + m.c * q.y + m.e, m.b * q.x + m.d * q.y + m.f];
      if (x > r.left + 2 && x < r.right - 2 && y > r.top + 2 && y < r.bottom - 2) n++;
    }
  }
  return n; }"""


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
@pytest.mark.parametrize("name", ["gptj", "xlnet", "bloom"])
def test_a_tall_first_view_stands_in_the_middle_clear_of_the_legend(
    browser, pages, name, width, height
):
    before, after, canvas, _, _ = _first(browser, pages, name, width, height)
    assert abs(before - after) < 0.4 * canvas, (
        f"{before:.0f} px left of the nodes, {after:.0f} right"
    )


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_a_wide_first_view_stays_in_the_middle(browser, pages, width, height):
    before, after, _, _, _ = _first(browser, pages, "mistral", width, height)
    assert abs(before - after) < 24, f"{before:.0f} px left of the nodes, {after:.0f} right"


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_no_line_runs_behind_the_legend_where_a_shape_of_it_leaves_them_all(
    browser, pages, width, height
):
    before, after, canvas, shape, lines = _first(browser, pages, "gpt2", width, height)
    assert lines == 0, f"{lines} points of the lines under the legend ({shape})"
    assert abs(before - after) < 0.4 * canvas, (
        f"{before:.0f} px left of the nodes, {after:.0f} right"
    )
