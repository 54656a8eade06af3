"""The dataflow tracer's compiled core (``_native/tracer.c``) against its Python core.

The rest of the suite runs on the core in use (the compiled one where it is built; the Python
one under ``NFW_NATIVE=0``). Here both run on the same models and must leave the same op
graph, the same stage edges and the same attention maps; and the compiled core's own parts
(its tag table, its references) are checked where Python cannot see them.
"""

import contextlib
import gc
import sys
import weakref

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings

import neural_flow_widget as nfw
from conftest import compiled_core
from neural_flow_widget import _trace, _tracer
from test_random_architectures import Random, specs
from zoo import (Attention, Branchy, Dense, InPlace, Keyword, Multimodal, Nested, PreNorm,
                 ResNet, Reused, ThreeHeads, UNet, seeded)


@pytest.fixture(scope="module")
def compiled():
    return compiled_core()


@contextlib.contextmanager
def core(cls):
    saved = _trace.DataflowTracer
    _trace.DataflowTracer = _tracer.tracer_class(cls)
    try:
        yield
    finally:
        _trace.DataflowTracer = saved


def traced(cls, model, inputs, **options):
    with core(cls):
        return nfw.trace(model, inputs, **options)


def same_flow(compiled, model, inputs, **options):
    """Trace with both cores; everything the tracer decides must be equal."""
    a = traced(_tracer._PythonCore, model, inputs, **options)
    b = traced(compiled, model, inputs, **options)
    assert a.graph == b.graph  # op owners, parents, call inputs, input and output ops
    assert a.edges == b.edges and a.topology == b.topology == "dataflow"
    assert [s.id for s in a.stages] == [s.id for s in b.stages]
    if a.capture is not None:
        assert sorted(a.capture.maps) == sorted(b.capture.maps)
        for call in a.capture.maps:
            ma = [m.resolve() if hasattr(m, "resolve") else m for m in a.capture.maps[call]]
            mb = [m.resolve() if hasattr(m, "resolve") else m for m in b.capture.maps[call]]
            assert [m.source for m in ma] == [m.source for m in mb]
            for x, y in zip(ma, mb):
                assert (x.weights == y.weights).all()
    return a


ZOO = [
    (UNet, lambda: torch.randn(1, 1, 16, 16)),
    (ResNet, lambda: torch.randn(1, 3, 8, 8)),
    (Multimodal, lambda: (torch.randn(2, 1, 8, 8), torch.randn(2, 6))),
    (ThreeHeads, lambda: torch.randn(2, 4)),
    (Reused, lambda: torch.randn(2, 4)),
    (Branchy, lambda: torch.randn(2, 4)),
    (Attention, lambda: torch.randn(2, 5, 6)),
    (InPlace, lambda: torch.randn(2, 4)),
    (Nested, lambda: {"batch": {"x": torch.randn(2, 3),
                                "pair": [torch.randn(2, 3), torch.randn(2, 3)]}, "k": 3}),
    (PreNorm, lambda: torch.randn(2, 4)),
    (Dense, lambda: torch.randn(2, 4)),
]


@pytest.mark.parametrize("cls,make", ZOO, ids=[c.__name__ for c, _ in ZOO])
def test_both_cores_trace_the_zoo_alike(compiled, cls, make):
    torch.manual_seed(1)
    same_flow(compiled, seeded(cls), make())


def test_both_cores_agree_on_keyword_inputs_and_out_arguments(compiled):
    same_flow(compiled, seeded(Keyword), torch.randn(2, 4),
              kwargs={"mask": torch.randn(2, 4), "scale": 2.0})

    class Out(torch.nn.Module):  # writes through out=, into a buffer, and in place
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
            self.register_buffer("acc", torch.zeros(2, 4))

        def forward(self, x):
            h = self.a(x)
            torch.add(h, 1.0, out=self.acc)
            parts = torch.empty(2, 4), torch.empty(2, 4)
            torch.split(h, 2, dim=1)
            torch.mul(h, 2, out=parts[0])
            parts[1].copy_(self.acc)
            return self.b(parts[0] + parts[1]), F.relu(h, inplace=True)

    same_flow(compiled, Out().eval(), torch.randn(2, 4), capture=False)


@settings(max_examples=40, deadline=None)
@given(specs())
def test_both_cores_recover_random_architectures_alike(spec):
    torch.manual_seed(0)
    same_flow(compiled_core(), Random(spec), torch.randn(2, 4), capture=False)


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_both_cores_agree_on_transformers_with_their_attention_maps(compiled, impl):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=64,
                                     n_positions=32, attn_implementation=impl)
    gpt2 = transformers.GPT2LMHeadModel(config).eval()
    flow = same_flow(compiled, gpt2, torch.randint(0, 64, (1, 12)))
    assert len(flow.capture.maps) == 2  # one per layer, from both cores
    config = transformers.BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                                     intermediate_size=64, vocab_size=64,
                                     max_position_embeddings=32, attn_implementation=impl)
    bert = transformers.BertModel(config).eval()
    ids = torch.randint(0, 64, (2, 9))
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, 6:] = 0
    same_flow(compiled, bert, {"input_ids": ids, "attention_mask": mask})


def test_the_tag_table_forgets_a_tensor_when_it_is_freed(compiled):
    table = type(compiled().table)()  # the compiled TagTable
    a, b = torch.randn(3), torch.randn(3)
    table.set(a, (1, -1, (0,)))
    table.set(b, (2, -1, (1,)))
    table.set(a, (3, 0, (2,)))  # a new tag for the same tensor
    assert len(table) == 2 and table.get(a) == (3, 0, (2,)) and table.get(b) == (2, -1, (1,))
    assert table.get(torch.randn(3)) is None
    del a
    assert len(table) == 1
    del b
    assert len(table) == 0
    kept = torch.randn(3)
    table.set(kept, (4, -1, (3,)))
    assert weakref.getweakrefcount(kept) == 1  # the table's entry
    del table
    gc.collect()  # (the table and its entries' callback form a cycle, as in Python)
    assert weakref.getweakrefcount(kept) == 0  # the table, and its entry, are gone


def test_the_compiled_core_holds_no_reference_it_should_not(compiled):
    tracer = _tracer.tracer_class(compiled)([-1])
    x, _ = tracer.tag_input(torch.randn(4, 4))
    weight = torch.randn(4, 4)
    kwargs = {"alpha": 2.0}
    before = sys.getrefcount(x), sys.getrefcount(weight), sys.getrefcount(kwargs)
    outs = []
    with tracer:
        for _ in range(50):
            y = torch.add(x, weight, **kwargs)
            outs.append(weakref.ref(y))
            y.mul_(2)  # in place: a write is remembered
            del y
    assert (sys.getrefcount(x), sys.getrefcount(weight), sys.getrefcount(kwargs)) == before
    assert all(o() is None for o in outs)  # freed: nothing kept them
    assert len(tracer.table) == 1  # only x is left
    assert tracer.seq == 1 + 50 * 2 and sum(map(len, tracer.writes.values())) == 50
    assert len(tracer.owners) == 1  # (ops of the same call as their inputs add no node)


def test_errors_of_the_op_reach_the_model_unchanged(compiled):
    for cls in (_tracer._PythonCore, compiled):
        tracer = _tracer.tracer_class(cls)([-1])
        with tracer, pytest.raises(RuntimeError, match="size of tensor a"):
            torch.randn(2, 3) + torch.randn(2, 4)
        assert tracer.failure is None and not tracer.paused


def test_a_tracer_core_of_another_version_is_refused(compiled, monkeypatch):
    from neural_flow_widget import _native

    monkeypatch.setattr(_native, "_TRACER_VERSION", _native._TRACER_VERSION + 1)
    with pytest.warns(UserWarning, match="stale or unreadable.*Python core"):
        assert _native.tracer_core() is None


def test_a_tracer_without_a_call_stack_fails_as_the_python_one_does(compiled):
    for cls in (_tracer._PythonCore, compiled):
        tracer = _tracer.tracer_class(cls)([])  # (the call tracker always gives [-1])
        with tracer:
            y = torch.randn(2) + 1  # the op still runs; the tracer records its failure
        assert y.shape == (2,) and tracer.paused
        assert isinstance(tracer.failure, IndexError)


SMOKE = r"""
import gc, _tracer_core as tc
class Storage:
    def __init__(self, p): self.p = p
    def data_ptr(self): return self.p
class T:  # a stand-in tensor: this Python has no torch
    def __init__(self, p): self.p = p
    def untyped_storage(self): return Storage(self.p)
tc.setup(T, type("Size", (tuple,), {}), lambda f: 1 if f.__name__.endswith("_") else 0)
core = tc.Core()
core.stack = [-1, 5]
x = T(1)
core.table.set(x, (0, -1, (0,)))
def add(a, b): return T(2)
def add_(a, b): return a
y = core.__torch_function__(add, (), (x, x), None)
core.__torch_function__(add_, (), (y, x), {})
assert core.table.get(y) == (2, 5, (1,)) and core.owners == [5, 5]
assert core.parents == [(0,), (0,)]  # (x came from outside the call: a node each)
assert core.writes == {2: [(2, (2, 5, (1,)))]} and core.last_write == 2 and core.dispatched == 2
del y; gc.collect()
assert len(core.table) == 1
print("ok")
"""


def _other_pythons():
    """Other CPython 3.10+ interpreters on this machine (pyenv's), with their headers."""
    import pathlib
    import shutil
    import subprocess

    pyenv = shutil.which("pyenv")
    if pyenv is None:
        return []
    root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
    found = []
    for exe in sorted(pathlib.Path(root, "versions").glob("3.*/bin/python3")):
        version = exe.parent.parent.name.split(".")
        if int(version[1]) >= 10 and exe.resolve() != pathlib.Path(sys.executable).resolve():
            found.append(exe)
    return found


@pytest.mark.parametrize("python", _other_pythons() or [None],
                         ids=lambda p: p and p.parent.parent.name)
def test_the_core_builds_and_runs_on_other_pythons(python, tmp_path):
    """tracer.c against other Pythons' headers (the wheel is built for the installing one):
    it compiles, imports and records an op and an in-place write as it does here."""
    import subprocess

    from neural_flow_widget._native import build

    if python is None or build.compiler() is None:
        pytest.skip("no other CPython 3.10+ (pyenv) or no C compiler here")
    probe = ("import sysconfig as s; print(s.get_paths()['include']); "
             "print(s.get_config_var('EXT_SUFFIX'))")
    include, suffix = subprocess.run([python, "-c", probe], capture_output=True,
                                     text=True).stdout.split()
    out = tmp_path / f"_tracer_core{suffix}"
    command = [build.compiler(), *build.FLAGS, f"-I{include}", str(build.TRACER), "-o", str(out)]
    compiled = subprocess.run(command, capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    ran = subprocess.run([python, "-c", SMOKE], cwd=tmp_path, capture_output=True, text=True)
    assert ran.stdout.strip() == "ok", ran.stderr
