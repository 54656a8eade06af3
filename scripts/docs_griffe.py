"""A griffe extension for the documentation site (mkdocs.yml, mkdocstrings' ``extensions``).

The docstrings are written for ``help()``, doctest and Sphinx-like readers, not for
Markdown: their runnable examples are bare ``>>>`` blocks, and they name other objects with
roles (``:func:`trace```). On the site each ``>>>`` block (through its expected output, up to
a blank line) becomes a fenced ``pycon`` block, and a role keeps only its code span.

>>> markdown(">>> f()\\n1\\n\\nSee :func:`trace`.").splitlines()
['```pycon', '>>> f()', '1', '```', '', 'See `trace`.']
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|class|meth|attr|mod|data|obj|exc):(?=`)")


def markdown(text: str) -> str:
    """``text`` with its doctest blocks fenced and its roles dropped."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.lstrip().startswith(">>>"):
            out.append(_ROLE.sub("", line))
            i += 1
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **_: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
