import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(params=["python", "compiled"])
def tracer_core(request, monkeypatch):
    """Runs a test with each core of the dataflow tracer: the Python one and the compiled one
    (skipped where it is not built, a failure under NFW_REQUIRE_NATIVE=1)."""
    from neural_flow_widget import _trace, _tracer

    core = compiled_core() if request.param == "compiled" else _tracer._PythonCore
    monkeypatch.setattr(_trace, "DataflowTracer", _tracer.tracer_class(core))
    return request.param


def compiled_core():
    """The compiled tracer core's class, or skip (fail under NFW_REQUIRE_NATIVE=1)."""
    import torch

    from neural_flow_widget import _native, _tracer

    compiled = _native.tracer_core()
    if compiled is None:
        if os.environ.get("NFW_REQUIRE_NATIVE") == "1":
            pytest.fail("NFW_REQUIRE_NATIVE=1 but the compiled tracer core is not built")
        pytest.skip("the compiled tracer core is not built")
    compiled.setup(torch.Tensor, torch.Size, _tracer._op_kind)
    return compiled.Core
