"""A model whose names are of wide letters ("mmmm…", "WWWW…", a block type "WwMmWwMmWwMmBlock")
in Chromium at a lecture hall's sizes: every node is as wide as its words in the page's own
fonts (js/src/scene/request.ts sizes it by view/graph_view.ts measure), so that no name, type
or group label is cut with "…" on first paint, with its blocks opened, or folded. An average
letter's width (the estimate a layout falls back on) cut these by a third. Screenshots in
test-artifacts/names_whole_<size>_<step>.png."""

from __future__ import annotations

import pathlib

import pytest
import torch
from live import open_offline, settle
from torch import nn

import neural_flow_widget as nfw

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


class WwMmWwMmWwMmBlock(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.mmmmmmmmmmmmmmmmmm = nn.Linear(d, d)
        self.WWWWWWWWWWWWWWW = nn.Linear(d, d)

    def forward(self, x):
        return x + self.WWWWWWWWWWWWWWW(torch.relu(self.mmmmmmmmmmmmmmmmmm(x)))


class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.MMMMMMMMMMMMMMMMMM = nn.Linear(8, 32)
        self.WWWWWWWWWWWWWWWWWW = WwMmWwMmWwMmBlock(32)
        self.wwwwwwwwwwwwwwwwww = nn.Linear(32, 4)

    def forward(self, x):
        return self.wwwwwwwwwwwwwwwwww(self.WWWWWWWWWWWWWWWWWW(self.MMMMMMMMMMMMMMMMMM(x)))


#: every text on the nodes and group headers, and those cut ("…" at their end)
TEXTS = """() => {
  const all = [...document.querySelectorAll(
    ".nfw-node .nfw-t1, .nfw-node .nfw-t2, .nfw-ct, .nfw-ct2")].map((t) => t.textContent);
  return { all, cut: all.filter((t) => t.endsWith("…")) };
}"""
#: open the block (its node's toggle), or fold it (its group's)
TOGGLE = """(id) => {
  const t = document.querySelector(`.nfw-node[data-stage-id='${id}'] [data-action], `
    + `.nfw-cluster[data-cluster-id='${id}'] [data-action]`);
  if (!t) return false;
  t.dispatchEvent(new MouseEvent("click", { bubbles: true }));
  return true;
}"""


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("names") / "wide.html"
    nfw.NeuralFlowWidget(Wide().eval(), torch.randn(2, 8)).to_html(path)
    return path


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1024, 768)])
def test_names_of_wide_letters_are_whole(browser, page_path, width, height):
    context, page, errors = open_offline(browser, page_path, width, height)
    ARTIFACTS.mkdir(exist_ok=True)
    seen: set[str] = set()
    for step in ("first", "toggled", "back"):
        if step != "first":
            assert page.evaluate(TOGGLE, "WWWWWWWWWWWWWWWWWW"), f"{step}: no toggle of the block"
        settle(page)
        page.mouse.move(2, 2)
        page.screenshot(path=str(ARTIFACTS / f"names_whole_{width}x{height}_{step}.png"))
        got = page.evaluate(TEXTS)
        print(step, got)
        assert got["cut"] == [], f"{step}: cut {got['cut']}"
        seen.update(got["all"])
    for name in (
        "MMMMMMMMMMMMMMMMMM",
        "WWWWWWWWWWWWWWWWWW",
        "wwwwwwwwwwwwwwwwww",
        "mmmmmmmmmmmmmmmmmm",
        "WWWWWWWWWWWWWWW",
        "WwMmWwMmWwMmBlock",
    ):
        assert any(t.startswith(name) for t in seen), f"{name} never drawn whole: {sorted(seen)}"
    context.close()
    assert errors == []
