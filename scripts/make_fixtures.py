"""Write every golden fixture under ``tests/fixtures/`` (pytest and the JS tests read them).

    .venv/bin/python scripts/make_fixtures.py

- ``wire_golden.json``: the graph message of ``tests/zoo.py``'s U-Net (capture on).
- ``edges_golden.json``: the differential test of the two stage-edge walks (``graph/edges.py``
  and its JS twin ``js/src/model/topology.ts``, held to it by ``js/test/golden.test.ts``). Per
  case (the zoo, the demos, the graph fixtures' models, transformers' GPT-2, a padded BERT and
  T5, ViT, diffusers' UNet2DConditionModel, torchvision-style ResNet and DenseNet and recurrent
  cells over an embedding (``tests/written_out.py``), seeded random architectures from
  ``tests/random_models.py``; a few in the sequential topology): the graph, the runs of
  repeated blocks the front end folds, and one record per distinct selection with the edges of
  ``flow.select(selection)`` (stages named by call index). The selections are those of view
  states (expansions level by level and at random, runs folded or not; the states are kept,
  and the JS test checks its view model draws the same selection for each) and arbitrary ones
  (any subset of calls, calls together with their ancestors, none, all).
- ``wire_unet.json``, ``wire_transformer12.json``: graph messages of real traces of the
  models in ``tests/fixture_models.py`` (a U-Net with a residual bottleneck, a 12-block
  TinyGPT), which the JS unit tests and the browser tests draw.
- ``wire_experiments.json``: issue 22's traitlets on real runs of ``tests/grad_models.py``:
  GPT-2 with a next-token loss (gradients, readouts named by ``grad_models.names``), its
  blocks patched position by position against a corrupted input (the ``patching`` traitlet),
  and run B with one block's attention zeroed (``intervention`` and ``comparison``); a deep
  sigmoid MLP whose gradient vanishes, and a chain whose backward pass makes NaN.
- ``stage_replies.json``: real ``_stage_data`` replies of ``notebook.replies.stage_reply``
  (buffers base64 here only because a JSON file cannot hold bytes; on the wire they are binary).
- ``colors.json``: views rendered by Python, their uint8 codes and the RGB ``View.to_png()``
  gives each code; the front end's lookup tables must colour them the same.

Files are written one record per line (a call, an op, a selection, an exchange, a view) by
:func:`dumps`; the output is deterministic. ``tests/test_wire.py`` checks that the files on
disk are what this script makes now.
"""

from __future__ import annotations

import base64
import io
import json
import pathlib
import random
import re
import sys
from collections.abc import Callable, Iterable

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import fixture_models  # noqa: E402
import grad_models  # noqa: E402
import random_models  # noqa: E402
import written_out  # noqa: E402
import zoo  # noqa: E402

import neural_flow_widget as nfw  # noqa: E402
from neural_flow_widget import wire  # noqa: E402
from neural_flow_widget.notebook import replies  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"

# Lists written one item per line, under these keys (everything else stays inline).
GRAPH_LINES = frozenset({"calls", "ops", "stats"})


# ------------------------------------------------------------------------------ writer


def dumps(value, lines: Iterable[str] = GRAPH_LINES) -> str:
    """JSON text, inline except the non-empty lists under a key in ``lines``: those have one
    item per line (indented one space per level). Ends with a newline.

    >>> print(dumps({"a": 1, "calls": [{"id": "x"}, {"id": "y"}], "b": [1, 2]}), end="")
    {"a": 1, "calls": [
     {"id": "x"},
     {"id": "y"}
    ], "b": [1, 2]}
    """
    return _dumps(value, frozenset(lines), 0) + "\n"


def _dumps(value, lines: frozenset, level: int) -> str:
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"JSON keys are strings, got {key!r}")
            head = json.dumps(key) + ": "
            if key in lines and isinstance(item, list) and item:
                pad = " " * (level + 1)
                body = ",\n".join(pad + _dumps(x, lines, level + 1) for x in item)
                parts.append(f"{head}[\n{body}\n{' ' * level}]")
            else:
                parts.append(head + _dumps(item, lines, level))
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_dumps(x, lines, level) for x in value) + "]"
    return json.dumps(value, allow_nan=False)


# ------------------------------------------------------------------------ edges golden


#: Random architectures (tests/random_models.py) in the edges golden file, and their most steps.
RANDOM_CASES = 48
RANDOM_STEPS = 10


def _trace(model, inputs=(), topology: str = "auto", **kwargs):
    return nfw.trace(model, inputs, capture=False, topology=topology, kwargs=kwargs or None)


def flat_mlp() -> torch.nn.Module:
    """A flat nn.Sequential: (Linear -> ReLU) x 5, a Linear of another width, then three equal
    Linears in a row (too few calls for a pattern; indexed ``11``..``13``, a run of three) and
    a head: what the pattern runs and the indexed runs at a model's top fold."""
    torch.manual_seed(0)
    nn = torch.nn
    layers: list[nn.Module] = []
    for _ in range(5):
        layers += [nn.Linear(4, 4), nn.ReLU()]
    layers += [nn.Linear(4, 6), nn.Linear(6, 6), nn.Linear(6, 6), nn.Linear(6, 6), nn.Linear(6, 1)]
    return nn.Sequential(*layers)


def flows():
    """(name, flow) of every edges-golden case: the zoo, the demos, the front end's graph
    fixtures, transformers' GPT-2, BERT (padded) and T5, diffusers' UNet2DConditionModel, and
    seeded random architectures; a few in the sequential topology."""
    from neural_flow_widget import demos

    torch.manual_seed(0)
    yield "unet", _trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    yield "resnet", _trace(zoo.seeded(zoo.ResNet), torch.randn(1, 3, 8, 8))
    multimodal = (torch.randn(2, 1, 8, 8), torch.randn(2, 6))
    yield "multimodal", _trace(zoo.seeded(zoo.Multimodal), multimodal)
    yield "reused", _trace(zoo.seeded(zoo.Reused), torch.randn(2, 4))
    yield "attention", _trace(zoo.seeded(zoo.Attention), torch.randn(2, 5, 6))
    yield "heads", _trace(zoo.seeded(zoo.ThreeHeads), torch.randn(2, 4))
    yield "prenorm", _trace(zoo.seeded(zoo.PreNorm), torch.randn(2, 4))
    yield "dense", _trace(zoo.seeded(zoo.Dense), torch.randn(2, 4))
    for sign, taken in ((1.0, "pos"), (-1.0, "neg")):
        branchy = zoo.seeded(zoo.Branchy)
        with torch.no_grad():
            branchy.pre.weight.copy_(torch.eye(4))
            branchy.pre.bias.zero_()
        yield f"branchy_{taken}", _trace(branchy, torch.full((2, 4), sign))
    yield "inplace", _trace(zoo.seeded(zoo.InPlace), torch.randn(2, 4))
    keyword = {"mask": torch.randn(2, 4), "scale": 2.0, "note": "hi"}
    yield "keyword", _trace(zoo.seeded(zoo.Keyword), torch.randn(2, 4), **keyword)
    batch = {"x": torch.randn(2, 3), "pair": [torch.randn(2, 3), torch.randn(2, 3)]}
    yield "nested", _trace(zoo.seeded(zoo.Nested), {"batch": batch, "k": 3})
    try:
        _trace(zoo.seeded(zoo.Broken), torch.randn(2, 4))
    except nfw.TraceError as err:  # the graph up to the failing stage
        yield "broken", err.partial
    yield "cell_loop", _trace(zoo.seeded(zoo.CellLoop), torch.randn(4, 2, 3))
    for kind in ("gru", "lstm"):  # a state continued: the chain of cells is the trunk
        loop = zoo.seeded(lambda kind=kind: written_out.EmbeddedLoop(kind))
        yield f"embedded_{kind}", _trace(loop, torch.randint(0, 10, (2, 4)))
    yield (
        "torchvision_resnet",
        _trace(zoo.seeded(written_out.ResNet).eval(), torch.randn(1, 3, 32, 32)),
    )
    # a list argument: each layer continues the newest feature
    yield (
        "torchvision_densenet",
        _trace(zoo.seeded(written_out.DenseNet).eval(), torch.randn(1, 3, 16, 16)),
    )
    yield "flat_mlp", _trace(flat_mlp(), torch.randn(2, 4))
    yield "unet_sequential", _trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16), "sequential")
    for name in demos.DEMOS:
        demo = demos.load(name, pretrained=False)
        yield f"demo_{name}", _trace(demo.model, demo.inputs)
    yield "fixture_unet", _trace(*fixture_models.unet())
    yield "fixture_transformer12", _trace(*fixture_models.transformer12())
    model, ids = fixture_models.gpt2()
    yield "gpt2", _trace(model, ids)
    yield "gpt2_sequential", _trace(model, ids, "sequential")
    yield "bert_padded", _trace(*fixture_models.bert())
    yield "t5", _trace(*fixture_models.t5())
    yield "unet2d_condition", _trace(*fixture_models.unet2d())
    rng = random.Random(0)
    for k in range(RANDOM_CASES):
        arch = random_models.sample(rng, RANDOM_STEPS)
        model, args, kwargs = random_models.model_and_inputs(arch, seed=k)
        yield f"random_{k}", _trace(model, args, **kwargs)
    # encoder-decoders with runs of blocks (T5's first block holds more than the others)
    yield "t5_3", _trace(*fixture_models.t5(layers=3))
    yield "whisper", _trace(*fixture_models.whisper())
    # a post-norm encoder-decoder (its sublayers' norms after their adds)
    yield "bart", _trace(*fixture_models.bart())
    # blocks that each add their own residual once (a stack hands the sum to the next block)
    yield "mamba", _trace(*fixture_models.mamba())
    # AdaLN-Zero norms (a modulation's add that is no residual)
    yield "dit", _trace(*fixture_models.dit())
    # one layer called again and again, the same weights (a stack of passes)
    yield "albert", _trace(*fixture_models.albert())
    # PyTorch's nn.Transformer: the encoder's output reaches the decoder only as its memory
    yield "nn_transformer", _trace(*fixture_models.nn_transformer())
    # positions counted from the input ids, their embedding added to the words' (no residual)
    yield "roberta", _trace(*fixture_models.roberta())
    # every layer's hidden state returned: a tuple of outputs, one port (js/src/model/ports.ts)
    model, ids = fixture_models.gpt2()
    yield "gpt2_hidden_states", _trace(model, (), input_ids=ids, output_hidden_states=True)
    model.config._attn_implementation = "eager"  # (the sdpa kernel returns no weights)
    yield "gpt2_attentions", _trace(model, (), input_ids=ids, output_attentions=True)
    # attention and MLP side by side, one sum with the residual: its skip round the whole layer
    model, kwargs = fixture_models.phi()
    yield "phi", _trace(model, (), **kwargs)
    # a UNet whose conditioning merges before its blocks read it (SDXL's, Kandinsky's)
    for kind in ("text_time", "image"):
        model, kwargs = fixture_models.unet2d_added(kind)
        yield f"unet2d_{kind}", _trace(model, (), **kwargs)
    # a UNet whose mid block alone reads the text: its one edge into the U's bottom
    model, kwargs = fixture_models.unet2d(cross=False)
    yield "unet2d_mid", _trace(model, (), **kwargs)
    # identical blocks each reading a source of its own (DPT's fusion): no stack
    yield "fusion_scales", _trace(*fixture_models.fusion())
    # token ids read again as an index (CLIP's pooling at the end token): a skip on the wire
    model, kwargs = fixture_models.clip_text()
    yield "clip_text", _trace(model, (), **kwargs)
    # parameters joined in where a module's own forward runs (ViT's [CLS] token, its position
    # embedding): named operands of a cat and an add
    yield "vit", _trace(*fixture_models.vit())


def visible(flow, expanded: set[int]) -> list[int]:
    """Calls shown when ``expanded`` calls are open: all ancestors open, itself closed."""
    parents = flow.graph.call_parents
    shown = []
    for call in flow.calls:
        if call.index in expanded:
            continue
        p = parents[call.index]
        while p >= 0 and p in expanded:
            p = parents[p]
        if p < 0:
            shown.append(call.index)
    return shown


class Folds:
    """The front end's call tree and the runs it folds (``js/src/model/tree.ts``): one module
    called again and again (consecutive sibling calls of one module, type and signature, at
    least 3: ALBERT's shared layer); sibling calls ``prefix.N`` (or ``N``, the children of a
    model that is an nn.Sequential), N consecutive, of equal type and signature (the first may
    hold the others' structure and more: :meth:`holds`), at least 3, or 2 where an attention
    runs in the first (a 2-layer transformer's layers); and, among the siblings no such run
    holds, a pattern of up to 8 calls (by type and signature) repeated back to back at least 3
    times and 6 calls in all (the shortest period that covers the most calls, left to right).
    Also the calls a view state draws (``view_model.ts``: a folded run stands for all its
    members). The JS test checks that it finds the same runs and selections."""

    MIN_RUN = 3
    MIN_LAYERS = 2  # an indexed run of layers that attend
    ATTENTION = frozenset(
        {"scaled_dot_product_attention", "attention", "multi_head_attention_forward"}
    )
    MIN_PATTERN_CALLS = 6
    MAX_PERIOD = 8
    INDEXED = re.compile(r"^(?:(.*)\.)?(\d+)$")  # "layers.3", or "3" (a model that is a Sequential)

    def __init__(self, flow) -> None:
        calls = flow.calls
        self.children: list[list[int]] = [[] for _ in calls]
        self.roots: list[int] = []
        for c, parent in enumerate(flow.graph.call_parents):
            (self.children[parent] if parent >= 0 else self.roots).append(c)
        self.attends: set[int] = set()  # the calls an attention runs in
        graph = flow.graph
        for op, kind in graph.joins:
            c = graph.owners[op]
            while kind in self.ATTENTION and c >= 0 and c not in self.attends:
                self.attends.add(c)
                c = graph.call_parents[c]
        self.runs: list[list[int]] = []
        for siblings in [self.roots, *self.children]:
            if len(siblings) >= self.MIN_LAYERS:
                self.runs.extend(self._runs(calls, siblings))
        self.run_of = {c: r for r, run in enumerate(self.runs) for c in run}

    def holds(self, calls, a: int, b: int) -> bool:
        """Block ``a`` has block ``b``'s structure, and perhaps more (tree.ts ``holds``): calls
        of equal type, module name and call ordinal relative to the block's, children in
        order; ``a`` may have extra leaf calls; a pair with nothing extra below it has one
        signature."""
        base_a, base_b = len(calls[a].module), len(calls[b].module)
        ord_a, ord_b = calls[a].call, calls[b].call  # (one module called again: pass k's are k-th)

        def match(x: int, y: int) -> bool | None:  # None: no match; else whether a had more
            cx, cy = calls[x], calls[y]
            # (of two types, one signature: both hand their input on, an Identity and a DropPath)
            if (cx.type == cy.type or cx.sig == cy.sig, cx.call - ord_a, cx.module[base_a:]) != (
                True,
                cy.call - ord_b,
                cy.module[base_b:],
            ):
                return None
            kx, ky = self.children[x], self.children[y]
            extra, q = False, 0
            for kid in kx:
                sub = match(kid, ky[q]) if q < len(ky) else None
                if sub is not None:
                    extra, q = extra or sub, q + 1
                elif not self.children[kid]:
                    extra = True
                else:
                    return None
            if q < len(ky) or not (extra or cx.sig == cy.sig):
                return None
            return extra

        return match(a, b) is not None

    def _runs(self, calls, siblings: list[int]) -> list[list[int]]:
        runs: list[list[int]] = []
        i = 0
        while i < len(siblings):
            first = calls[siblings[i]]
            again = i + 1  # one module called again and again (ALBERT's layer): its calls
            while again < len(siblings) and (
                calls[siblings[again]].module,
                calls[siblings[again]].type,
                calls[siblings[again]].sig,
            ) == (first.module, first.type, first.sig):
                again += 1
            if again - i >= self.MIN_RUN:
                runs.append(siblings[i:again])
                i = again
                continue
            m = self.INDEXED.match(first.module)
            j = i + 1
            if m:
                n = int(m[2])
                sig = first.sig  # the second's where the first holds it and more (T5)
                if i + 1 < len(siblings):
                    second = calls[siblings[i + 1]]
                    if second.sig != sig and self.holds(calls, siblings[i], siblings[i + 1]):
                        sig = second.sig
                while j < len(siblings):
                    c = calls[siblings[j]]
                    mj = self.INDEXED.match(c.module)
                    if not mj or mj[1] != m[1] or int(mj[2]) != n + 1:
                        break
                    if c.type != first.type or c.sig != sig:
                        break
                    n, j = n + 1, j + 1
            least = self.MIN_LAYERS if siblings[i] in self.attends else self.MIN_RUN
            if m and j - i >= least:
                runs.append(siblings[i:j])
                i = j
            else:
                i += 1
        taken = {c for run in runs for c in run}
        stretch: list[int] = []
        for c in [*siblings, None]:
            if c is None or c in taken:
                if len(stretch) >= self.MIN_PATTERN_CALLS:
                    runs.extend(self._patterns(calls, stretch))
                stretch = []
            else:
                stretch.append(c)
        position = {c: i for i, c in enumerate(siblings)}
        return sorted(runs, key=lambda run: position[run[0]])

    def _patterns(self, calls, stretch: list[int]) -> list[list[int]]:
        key = [(calls[c].type, calls[c].sig) for c in stretch]
        runs: list[list[int]] = []
        i = 0
        while i < len(stretch):
            best = period = 0
            p = 1
            while p <= self.MAX_PERIOD and i + p * self.MIN_RUN <= len(stretch):
                j = i + p
                while j < len(stretch) and key[j] == key[j - p]:
                    j += 1
                reps = (j - i) // p
                if reps >= self.MIN_RUN and reps * p >= self.MIN_PATTERN_CALLS and reps * p > best:
                    best, period = reps * p, p
                p += 1
            if not period:
                i += 1
                continue
            runs.append(stretch[i : i + best])
            i += best
        return runs

    def selection(self, expanded: set[int], folded: set[int]) -> list[int]:
        """The calls drawn (as stages or inside folds) with ``expanded`` calls open and the
        runs whose first member is in ``folded`` folded."""
        out: list[int] = []

        def items(siblings: list[int], in_run: bool) -> None:
            i = 0
            while i < len(siblings):
                c = siblings[i]
                r = -1 if in_run else self.run_of.get(c, -1)
                if r >= 0 and self.runs[r][0] == c:
                    if c in folded:
                        out.extend(self.runs[r])
                    else:
                        items(self.runs[r], True)
                    i += len(self.runs[r])
                    continue
                if c in expanded and self.children[c]:
                    items(self.children[c], False)
                else:
                    out.append(c)
                i += 1

        items(self.roots, False)
        return sorted(out)

    def expandable(self, expanded: set[int], folded: set[int]) -> list[int]:
        """Drawn stages that have children (what the next level of the front end opens)."""
        return [c for c in self.selection(expanded, folded) if self.children[c] and not (
            self.run_of.get(c, -1) >= 0 and self.runs[self.run_of[c]][0] in folded)]  # fmt: skip


def view_states(flow, folds: Folds, rng: random.Random) -> list[tuple[set[int], set[int]]]:
    """(expanded, folded) states: level by level with every run folded (the front end opens a
    graph at one of these, or at one between two levels, where only the calls holding blocks
    open) and unfolded; nothing / everything open; each of the first groups
    alone; random expansions with random runs folded."""
    groups = [c for c, kids in enumerate(folds.children) if kids]
    firsts = [run[0] for run in folds.runs]
    states: list[tuple[set[int], set[int]]] = []
    for folded in (set(firsts), set()):
        expanded: set[int] = set()
        while True:
            states.append((set(expanded), folded))
            more = set(folds.expandable(expanded, folded)) - expanded
            if not more:
                break
            # (and with only those opened whose children have children, a type all or none:
            # view_state.ts)
            calls = flow.calls
            shallow = {
                calls[c].type for c in more if not any(folds.children[k] for k in folds.children[c])
            }
            deep = {c for c in more if calls[c].type not in shallow}
            if deep and deep != more:
                states.append((expanded | deep, folded))
            expanded |= more
    states += [(set(groups), set()), (set(groups), set(firsts))]
    states += [({g}, set()) for g in groups[:8]]
    for _ in range(24):
        p = rng.random()
        expanded = {g for g in groups if rng.random() < p}
        states.append((expanded, {f for f in firsts if rng.random() < 0.5}))
    return states


def arbitrary_selections(flow, rng: random.Random) -> list[list[int]]:
    """Selections no view state gives: none, every call, random subsets of every size, and
    drawn stages together with some of their ancestors."""
    n = len(flow.calls)
    parents = flow.graph.call_parents
    picks: list[list[int]] = [[], list(range(n))]
    for _ in range(12):
        picks.append(sorted(rng.sample(range(n), rng.randint(1, n))) if n else [])
    for _ in range(4):
        chosen = set(rng.sample(range(n), min(n, rng.randint(1, 4))))
        picks.append(sorted(chosen))
    for _ in range(6):
        shown = set(visible(flow, {c for c in range(n) if rng.random() < 0.5}))
        for c in sorted(shown):
            p = parents[c]
            if p >= 0 and rng.random() < 0.3:
                shown.add(p)  # a call and its ancestor, both selected
        picks.append(sorted(shown))
    return picks


#: At most this many states are kept per distinct selection (the rest repeat it).
STATES_PER_SELECTION = 3


def _edges(name: str, flow, selected: list[int]) -> list[list]:
    """``flow.select(selected).edges``, a stage named by its call index (inputs and outputs
    by name) to keep the file small."""
    ids = [flow.calls[i].id for i in selected]
    again = flow.select(ids)
    if again.selected != tuple(selected):
        raise ValueError(f"{name}: select({ids}) picked {again.selected}")
    index = {c.id: c.index for c in flow.calls}
    return [[index.get(e.src, e.src), index.get(e.dst, e.dst), e.kind] for e in again.edges]


def edges_case(name: str, flow, rng: random.Random) -> dict:
    """A case of the edges golden file: the graph, the runs that fold, and one record per
    distinct selection (the view states that draw it, at most STATES_PER_SELECTION; none for
    an arbitrary selection) with its edges."""
    folds = Folds(flow)
    records: dict[tuple[int, ...], dict] = {}

    def record(selected: list[int]) -> dict:
        key = tuple(selected)
        if key not in records:
            edges = _edges(name, flow, selected)
            records[key] = {"selected": selected, "states": [], "edges": edges}
        return records[key]

    for expanded, folded in view_states(flow, folds, rng):
        states = record(folds.selection(expanded, folded))["states"]
        state = {"expanded": sorted(expanded), "folded": sorted(folded)}
        if len(states) < STATES_PER_SELECTION and state not in states:
            states.append(state)
    for selected in arbitrary_selections(flow, rng):
        record(selected)
    graph = wire.encode_graph(flow)
    return {"name": name, "graph": graph, "runs": folds.runs, "selections": [*records.values()]}


def edges_golden() -> dict:
    rng = random.Random(0)
    return {"schema": wire.SCHEMA, "cases": [edges_case(n, f, rng) for n, f in flows()]}


# ---------------------------------------------------------------------- graph messages


def wire_golden() -> dict:
    torch.manual_seed(0)
    flow = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    return wire.encode_graph(flow)


def wire_unet() -> dict:
    model, x = fixture_models.unet()
    return wire.encode_graph(nfw.trace(model, x))


def wire_transformer12() -> dict:
    model, inputs = fixture_models.transformer12()
    return wire.encode_graph(nfw.trace(model, inputs))  # a dict: model(input_ids=...)


def wire_experiments() -> dict:
    """The ``graph`` traitlet with ``loss=`` and readouts, and the ``patching``,
    ``intervention`` and ``comparison`` traitlets of a GPT-2 (see the module docstring)."""
    from neural_flow_widget.compare import compare

    model, ids, loss = grad_models.gpt2()
    flow = nfw.trace(model, ids, loss=loss)
    corrupted = ids.clone()
    corrupted[0, :3] = (ids[0, :3] + 11) % 64
    top = int(model(ids).logits[0, -1].argmax())
    found = nfw.patch(
        model, ids, corrupted, [f"transformer.h.{i}" for i in range(4)],
        lambda out: float(out.logits[0, -1, top]),
    )  # fmt: skip
    stage = "transformer.h.1.attn"
    flow_b = nfw.trace(model, ids, loss=loss, replace={stage: "zero"})
    gpt2 = {
        "graph": wire.encode_graph(flow, grad_models.names),
        "patching": wire.encode_patching(found, flow),
        "intervention": {"stage": flow.stage(stage).index, "spec": "zero"},
        "comparison": wire.encode_comparison(compare(flow, flow_b), flow, 1e-3),
    }
    graphs = {"schema": wire.SCHEMA, "gpt2": gpt2}
    for name, make in (
        ("sigmoid_mlp", grad_models.sigmoid_mlp),
        ("nan_chain", grad_models.nan_chain),
    ):
        model, x, loss = make()
        graphs[name] = {"graph": wire.encode_graph(nfw.trace(model, x, loss=loss))}
    return graphs


# ----------------------------------------------------------------------- stage replies


def _exchanges(flow, requests: list[dict], tokens: list[str] | None = None) -> list[dict]:
    out = []
    for request in requests:
        msg, buffers = replies.stage_reply(flow, request, tokens)
        out.append(
            {
                "request": request,
                "reply": msg,
                "buffers": [base64.b64encode(bytes(b)).decode("ascii") for b in buffers],
            }
        )
    return out


def _request(stage: str, **fields) -> dict:
    return {"stage": stage, "view": None, "channel": None, "head": None, "sample": None, **fields}


def stage_replies() -> dict:
    torch.manual_seed(0)
    unet = nfw.trace(zoo.seeded(zoo.UNet), torch.randn(1, 1, 16, 16))
    first = unet.calls[0].id
    cases = _exchanges(
        unet,
        [_request(first), _request(first, view="channel", channel=1), _request("no.such.stage")],
    )
    torch.manual_seed(0)
    att = nfw.trace(zoo.seeded(zoo.Attention), torch.randn(2, 5, 6))
    stage = next(att.calls[i].id for i in sorted(att.capture.maps) if i >= 0)
    cases += _exchanges(
        att, [_request(stage), _request(stage, head=1)], tokens=[f"t{i}" for i in range(5)]
    )
    return {"schema": wire.SCHEMA, "cases": cases}


# ----------------------------------------------------------------------------- colours


def _png_rgb(png: bytes) -> np.ndarray:
    """The (h * w, 3) RGB of a one-tile view's PNG, row-major (every pixel opaque)."""
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))
    if not (pixels[..., 3] == 255).all():
        raise ValueError("a one-tile view's PNG has transparent pixels")
    return pixels[..., :3].reshape(-1, 3)


def colors() -> dict:
    from neural_flow_widget.capture.retained import retain
    from neural_flow_widget.capture.views import render_view

    g = torch.Generator().manual_seed(0)
    cases = [  # (name, tensor, view kind): one tile each, a few dozen codes
        ("image mean, signed", torch.randn(1, 3, 6, 8, generator=g), "mean"),
        ("vector values, unsigned from 0", torch.rand(1, 40, generator=g), "values"),
        ("sequence tokens, unsigned above 0", torch.rand(1, 6, 8, generator=g) + 0.5, "tokens"),
    ]
    views = []
    for name, tensor, kind in cases:
        view = render_view(retain(tensor), kind)
        codes = np.asarray(view.data, np.uint8)
        rgb = _png_rgb(view.to_png())
        if rgb.shape[0] != codes.size:
            raise ValueError(f"{name}: {rgb.shape[0]} pixels for {codes.size} codes")
        views.append(
            {
                "name": name,
                "kind": view.kind,
                "shape": list(codes.shape),
                "vmin": float(view.vmin),
                "vmax": float(view.vmax),
                "signed": bool(view.signed),
                "codes": codes.ravel().tolist(),
                "rgb": rgb.tolist(),
            }
        )
    return {"schema": wire.SCHEMA, "views": views}


# -------------------------------------------------------------------------------- main

#: file name -> (maker, the keys whose lists are written one item per line)
FILES: dict[str, tuple[Callable[[], dict], frozenset]] = {
    "wire_golden.json": (wire_golden, GRAPH_LINES),
    "edges_golden.json": (edges_golden, frozenset({"cases", "calls", "ops", "selections"})),
    "wire_unet.json": (wire_unet, GRAPH_LINES),
    "wire_transformer12.json": (wire_transformer12, GRAPH_LINES),
    "wire_experiments.json": (wire_experiments, GRAPH_LINES),
    "stage_replies.json": (stage_replies, frozenset({"cases"})),
    "colors.json": (colors, frozenset({"views"})),
}


def text(name: str, value: dict | None = None) -> str:
    """The text of fixture ``name``: of ``value``, or of what its maker makes now."""
    make, lines = FILES[name]
    return dumps(make() if value is None else value, lines)


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        path = FIXTURES / name
        path.write_text(text(name), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
