"""The package's import graph: layers that point one way, no circles, no reaching into another
module's private names, Jupyter only in the notebook shell, no torch in the graph record.

The layers, lowest first: ``graph`` <- ``tracing`` <- ``capture`` <- ``run`` <- ``compare`` <-
``patching`` <- ``wire`` <- ``notebook`` <- ``demos`` <- ``cli``. A module imports only from its
own layer and the layers below; ``capture`` sees ``tracing`` only through ``tracing.protocols``.
"""

from __future__ import annotations

import ast
import functools
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "neural_flow_widget"
LAYERS = [
    "graph", "tracing", "capture", "request", "run", "compare", "patching", "wire", "notebook",
    "demos", "cli",
]  # fmt: skip
JUPYTER = {"anywidget", "ipywidgets", "traitlets", "IPython", "ipykernel"}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _parsed() -> tuple[tuple[str, ast.Module], ...]:
    """Every module of the package, parsed once for all the checks (they only read the trees)."""
    return tuple(
        (module_name(p), ast.parse(p.read_text(encoding="utf-8"))) for p in PACKAGE.rglob("*.py")
    )


def modules() -> dict[str, ast.Module]:
    return dict(_parsed())


def imports(name: str, tree: ast.Module, is_package: bool) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import, lazy ones included."""
    found = []
    base = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{anchor}.{node.module}" if node.module else anchor
            else:
                target = node.module or ""
            found.append((target, [a.name for a in node.names], node.lineno))
    return found


def resolve(target: str, names: list[str], known: set[str]) -> list[tuple[str, str | None]]:
    """The package modules an import reaches, each with the name taken from it (None for a
    submodule imported by ``from package import submodule``)."""
    out = []
    for item in names or [None]:
        sub = f"{target}.{item}" if item else None
        if sub in known:
            out.append((sub, None))
        elif target in known:
            out.append((target, item))
    return out


def layer(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def graph_edges():
    found = modules()
    known = set(found)
    packages = {module_name(p) for p in PACKAGE.rglob("__init__.py")}
    edges = []
    for name, tree in found.items():
        for target, names, line in imports(name, tree, name in packages):
            if target.split(".")[0] != "neural_flow_widget":
                continue
            for module, taken in resolve(target, names, known):
                edges.append((name, module, taken, line))
    return found, edges


def test_the_import_graph_has_no_circles():
    _, edges = graph_edges()
    graph: dict[str, set[str]] = {}
    for src, dst, _, _ in edges:
        # a package's __init__ re-exporting its own modules is not a circle through them
        if src != dst and not dst.startswith(src + ".") and not src.startswith(dst + "."):
            graph.setdefault(src, set()).add(dst)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            pytest.fail("import circle: " + " -> ".join(cycle))


def test_imports_point_down_the_layers():
    _, edges = graph_edges()
    wrong = []
    for src, dst, _, line in edges:
        a, b = layer(src), layer(dst)
        if "__init__" in (a, b) or a == b:
            continue
        if LAYERS.index(b) > LAYERS.index(a):
            wrong.append(f"{src}:{line} imports {dst} (a higher layer)")
        elif a == "capture" and b == "tracing" and dst != "neural_flow_widget.tracing.protocols":
            wrong.append(
                f"{src}:{line} imports {dst} (capture sees tracing only through tracing.protocols)"
            )
    assert wrong == []


def test_no_module_takes_another_modules_private_names():
    found, edges = graph_edges()
    wrong = [
        f"{src}:{line} takes {taken} from {dst}"
        for src, dst, taken, line in edges
        if taken and taken.startswith("_") and taken != "__version__"
    ]
    # attribute access on an imported package module: module._name
    for name, tree in found.items():
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(
                    "neural_flow_widget")):  # fmt: skip
                aliases.update({a.asname or a.name: a.name for a in node.names})
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):  # fmt: skip
                wrong.append(f"{name}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert wrong == []


def test_the_graph_record_imports_no_torch_and_nothing_else_of_the_package():
    found, edges = graph_edges()
    for name, tree in found.items():
        if layer(name) != "graph":
            continue
        outside = {target.split(".")[0] for target, _, _ in imports(name, tree, True)}
        assert not outside & {"torch", "numpy"}, name
    assert [e for e in edges if layer(e[0]) == "graph" and layer(e[1]) != "graph"] == []


def test_only_the_notebook_shell_imports_jupyter():
    found, _ = graph_edges()
    packages = {module_name(p) for p in PACKAGE.rglob("__init__.py")}
    for name, tree in found.items():
        if layer(name) == "notebook":
            continue
        used = {target.split(".")[0] for target, _, _ in imports(name, tree, name in packages)}
        assert not used & JUPYTER, f"{name} imports {used & JUPYTER}"


def _type_only(tree: ast.Module) -> set[int]:
    """Lines of the imports under ``if TYPE_CHECKING:`` (names for annotations only)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            lines |= {
                n.lineno for child in node.body for n in ast.walk(child) if hasattr(n, "lineno")
            }
    return lines


def test_capture_knows_no_flow():
    """Capture's record is keyed by call index; the Flow resolves stage ids: no capture module
    imports the Flow, and no capture function takes one."""
    found, edges = graph_edges()
    wrong = [
        f"{src}:{line} imports Flow"
        for src, dst, taken, line in edges
        if layer(src) == "capture" and taken == "Flow"
    ]
    for name, tree in found.items():
        if layer(name) != "capture":
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = [
                    a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
                ]
                wrong += [
                    f"{name}:{node.lineno} {node.name}({a})" for a in args if a.startswith("flow")
                ]
    assert wrong == []


def test_the_wire_imports_nothing_that_computes():
    """At run time the wire modules import, of the package, only the graph records; the
    records they write come in under ``if TYPE_CHECKING:``, for annotations only."""
    found, edges = graph_edges()
    wrong = []
    for src, dst, _, line in edges:
        if layer(src) != "wire" or layer(dst) in ("wire", "graph"):
            continue
        if line not in _type_only(found[src]):
            wrong.append(f"{src}:{line} imports {dst}")
    assert wrong == []


def test_the_checks_see_a_circle_a_wrong_layer_and_a_private_name(monkeypatch):
    """The checks above can fail: on a planted circle, upward import and private name."""
    real = modules()
    planted = dict(real)
    planted["neural_flow_widget.graph.records"] = ast.parse(
        "from ..tracing.calls import _NONE\nfrom . import flow\n"
    )
    planted["neural_flow_widget.graph.flow"] = ast.parse("from . import records\n")
    monkeypatch.setitem(globals(), "modules", lambda: planted)
    for check in (
        test_the_import_graph_has_no_circles,
        test_imports_point_down_the_layers,
        test_no_module_takes_another_modules_private_names,
    ):
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            check()


def test_the_seam_checks_see_a_flow_in_capture_and_computing_in_the_wire(monkeypatch):
    """The two checks above fail on a capture module that takes a Flow and on a wire module
    that imports capture at run time (but not under ``if TYPE_CHECKING:``)."""
    real = modules()
    planted = dict(real)
    planted["neural_flow_widget.capture.record"] = ast.parse(
        "from ..graph import Flow\ndef summary(flow, stage_id): ...\n"
    )
    planted["neural_flow_widget.wire.reply"] = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..capture.image import View\n"
        "from ..capture.attention.maps import AttentionMap\n"
    )
    monkeypatch.setitem(globals(), "modules", lambda: planted)
    for check in (test_capture_knows_no_flow, test_the_wire_imports_nothing_that_computes):
        with pytest.raises(AssertionError) as caught:
            check()
        assert "View" not in str(caught.value)  # (the TYPE_CHECKING import is no violation)


def test_no_file_of_the_package_is_much_over_400_lines():
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*")
        if p.suffix in (".py", ".c", ".h") and (n := len(p.read_text().splitlines())) > 420
    }
    assert long == {}
