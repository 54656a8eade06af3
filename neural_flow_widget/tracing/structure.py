"""What the stage records read of a model's modules: parameter counts and structure
signatures (equal for modules of the same type, parameter shapes and child structure), cached
per model while nothing they depend on changed.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from typing import Any

import torch


def is_leaf(module: torch.nn.Module) -> bool:
    """``module`` has no children (``next(module.children(), None) is None``, read from its
    registry: the generators cost ten times more, on every module of every trace)."""
    return not module._modules or all(c is None for c in module._modules.values())


_STRUCTURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: modules that hand their input on unchanged when evaluating (a dropout, stochastic depth's
#: drop path, an identity): without parameters or children, one kind in a signature, so that
#: the first of a stack whose drop-path rate starts at 0 (BEiT's, Swin's, SegFormer's layer 0
#: holds an ``nn.Identity`` where the others hold a ``DropPath``) is a block like the others
PASS_THROUGH = re.compile(r"dropout|droppath|^identity$|^stochasticdepth$", re.IGNORECASE)


def structure(model: torch.nn.Module, modules: list[torch.nn.Module]):
    """:func:`_structure` of ``model``'s ``modules``, cached per model while nothing it depends
    on changed: the same modules of the same types with the same children, and the same
    parameter objects under the same names with the same shapes (reading that takes a tenth
    of the walk, which a deep model would otherwise repeat on every trace)."""
    key = _fingerprint(modules)
    try:
        hit = _STRUCTURES.get(model)
    except TypeError:  # a model that cannot be weakly referenced: no cache
        return _structure(modules)
    if hit is not None and hit[0] == key:
        return hit[1]
    found = _structure(modules)
    _STRUCTURES[model] = (key, found)
    return found


def _fingerprint(modules: list[torch.nn.Module]) -> tuple:
    out: list = []
    for module in modules:
        out += (id(module), type(module))
        for name, p in module._parameters.items():
            if p is not None:
                out += (name, id(p), p.shape)
        for name, child in module._modules.items():
            out += (name, id(child))
    return tuple(out)


def _structure(modules: list[torch.nn.Module]) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Per module: its parameter count (recursive, a shared parameter counted once, as
    ``module.parameters()`` does) and its structure signature (equal for modules of the same
    type, parameter shapes and child structure; the PASS_THROUGH types one type). One
    bottom-up walk for both."""
    memo: dict[int, tuple[int, str, frozenset]] = {}
    shared = _shared_parameters(modules)  # id -> numel of parameters held twice or more

    def visit(module: torch.nn.Module) -> tuple[int, str, frozenset]:
        key = id(module)
        if key not in memo:
            own = _own(module._parameters)
            kids = [(n, visit(c)) for n, c in _own(module._modules)]
            plain = sum(p.numel() for _, p in own if id(p) not in shared)
            held = frozenset(id(p) for _, p in own if id(p) in shared).union(
                *(k[2] for _, k in kids)
            )
            kind = type(module).__qualname__
            if not own and not kids and PASS_THROUGH.search(type(module).__name__):
                kind = "(passes its input on)"
            text = repr(
                (
                    kind,
                    [(n, tuple(p.shape)) for n, p in own],
                    [(n if not n.isdigit() else "#", k[1]) for n, k in kids],
                )
            )
            memo[key] = (
                plain + sum(k[0] for _, k in kids),
                hashlib.blake2s(text.encode(), digest_size=4).hexdigest(),
                held,
            )
        return memo[key]

    found = [visit(m) for m in modules]
    return tuple(f[0] + sum(shared[i] for i in f[2]) for f in found), tuple(f[1] for f in found)


def _own(registered: dict[str, Any]) -> list[tuple[str, Any]]:
    """A module's own parameters or children as ``named_parameters(recurse=False)`` /
    ``named_children()`` give them (no None, each object once), read from its registry
    directly: the generators cost more than the rest of the walk on deep models."""
    seen: set[int] = set()
    found = []
    for name, item in registered.items():
        if item is not None and id(item) not in seen:
            seen.add(id(item))
            found.append((name, item))
    return found


def _shared_parameters(modules: list[torch.nn.Module]) -> dict[int, int]:
    seen: set[int] = set()
    shared: dict[int, int] = {}
    for m in modules:
        for _, p in _own(m._parameters):
            if id(p) in seen:
                shared[id(p)] = p.numel()
            seen.add(id(p))
    return shared
