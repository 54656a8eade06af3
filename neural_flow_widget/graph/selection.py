"""Which module calls are stages: ``stages=None | int | [names, patterns, ids] | callable``."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from typing import Any

from .records import ModuleInfo, Stage

_WILDCARDS = frozenset("*?[")
_COMPILED = "_orig_mod"  # where torch.compile's wrapper keeps the module it compiled


def unwrapped(name: str) -> str:
    """A module name as the tracer names it: without the ``_orig_mod`` parts that
    ``torch.compile``'s wrappers add to ``named_modules()`` (as ``tracing.modules.compiled_names``).

    >>> unwrapped("_orig_mod.blocks.0._orig_mod.attn")
    'blocks.0.attn'
    """
    if _COMPILED not in name:
        return name
    return ".".join(part for part in name.split(".") if part != _COMPILED) or name


def resolve(
    stages: Any, modules: Sequence[ModuleInfo], calls: Sequence[Stage], model: Any = None
) -> tuple[int, ...]:
    """Call indices (sorted) of the calls that ``stages`` selects.

    - ``None``: every leaf module (a module with no children, or none of whose children ran,
      such as ``nn.MultiheadAttention``);
    - an ``int`` d: the modules at depth d (1 = the model's children) plus shallower leaves;
    - names, glob patterns or stage ids (``"blocks.0"``, ``"blocks.*"``, ``"block#1"``): ``*``
      and ``?`` stay within one dotted component (``"blocks.*"`` is the blocks, not their
      children), ``**`` crosses dots (``"blocks.**"`` is everything inside ``blocks``);
    - a callable ``(name, module) -> bool``.

    Names of a ``torch.compile``d model as its ``named_modules()`` lists them
    (``"_orig_mod.stem"``) name the original modules (``"stem"``).
    """
    names = _module_names(stages, _run_leaves(modules, calls), model)
    if isinstance(stages, int) and not isinstance(stages, bool) and calls:
        names = _through_containers(names, modules, calls)
    picked_calls = set()
    if isinstance(stages, (list, tuple, set, frozenset)):
        ids = {c.id: c.index for c in calls}
        picked = [unwrapped(s) for s in stages if isinstance(s, str) and "#" in s]
        picked_calls = {ids[s] for s in picked if s in ids}
    return tuple(sorted({c.index for c in calls if c.module in names} | picked_calls))


def _through_containers(
    names: set[str], modules: Sequence[ModuleInfo], calls: Sequence[Stage]
) -> set[str]:
    """A container that never ran itself (``nn.ModuleList``, ``nn.ModuleDict``) stands for
    its children at a depth selection, so ``stages=1`` on a transformer shows its blocks."""
    ran = {c.module for c in calls}
    children: dict[str, list[str]] = {}
    for m in modules:
        parent = m.name.rpartition(".")[0]
        children.setdefault(parent, []).append(m.name)
    todo, chosen = list(names), set()
    while todo:
        name = todo.pop()
        if name in ran or name not in children:
            chosen.add(name)
        else:
            todo.extend(children[name])
    return chosen


def _run_leaves(modules: Sequence[ModuleInfo], calls: Sequence[Stage]) -> Sequence[ModuleInfo]:
    """Modules whose children never ran (``nn.MultiheadAttention`` calls a functional) count
    as leaves too."""
    if not calls:
        return modules
    with_children = {c.parent for c in calls if c.parent is not None}
    ran = {c.module for c in calls}
    inner = {c.module for c in calls if c.id in with_children}
    return [
        m
        if m.leaf or m.name not in ran or m.name in inner
        else ModuleInfo(m.name, m.type, m.depth, True)
        for m in modules
    ]


def _module_names(stages: Any, modules: Sequence[ModuleInfo], model: Any) -> set[str]:
    if stages is None:
        return {m.name for m in modules if m.leaf}
    if isinstance(stages, bool):
        raise TypeError(
            "stages= takes None, an int depth, a list of names or a callable, not a bool"
        )
    if isinstance(stages, int):
        if stages < 1:
            raise ValueError(f"stages={stages}: a depth starts at 1 (the model's children)")
        return {m.name for m in modules if m.depth == stages or (m.leaf and m.depth < stages)}
    if isinstance(stages, str):
        stages = [stages]
    if callable(stages):
        return _by_callable(stages, modules, model)
    if not isinstance(stages, (list, tuple, set, frozenset)):
        raise TypeError(
            f"stages= takes None, an int depth, a list of names or a callable, "
            f"not {type(stages).__name__}"
        )
    known = [m.name for m in modules]
    chosen: set[str] = set()
    for item in stages:
        if not isinstance(item, str):
            raise TypeError(f"stages= list items are module names or patterns, got {item!r}")
        name = unwrapped(item)  # (as given in the messages)
        base = name.split("#", 1)[0] if "#" in name else None
        if base is not None and base in known:
            continue  # a stage id: the call itself is picked by resolve()
        if _WILDCARDS & set(name):
            hits = [k for k in known if _glob(name).fullmatch(k)]
            if not hits:
                raise ValueError(
                    f"stage pattern {item!r} matches no module; "
                    f"modules look like: {', '.join(known[:8])}"
                )
            chosen.update(hits)
        elif name in known:
            chosen.add(name)
        else:
            close = difflib.get_close_matches(name, known, n=5, cutoff=0.4)
            hint = f"closest: {', '.join(close)}" if close else f"modules: {', '.join(known[:8])}"
            raise ValueError(f"no module named {item!r} in the model; {hint}")
    return chosen


def _glob(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        ch = pattern[i]
        if ch == "*":
            out.append("[^.]*")
        elif ch == "?":
            out.append("[^.]")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out))


def _by_callable(
    predicate: Callable[[str, Any], bool], modules: Sequence[ModuleInfo], model: Any
) -> set[str]:
    if model is None:
        raise ValueError(
            "a callable stages= needs the model, which is no longer alive; "
            "pass names or a depth instead"
        )
    # (the names of torch.compile'd submodules are read without their wrapper's "_orig_mod")
    by_name = {unwrapped(name): module for name, module in model.named_modules()}
    return {m.name for m in modules if m.name in by_name and predicate(m.name, by_name[m.name])}
