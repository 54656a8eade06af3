"""Build the capture accelerator next to this file (``reduce.c``, a baseline build and, on
x86-64, an AVX2 one; the loader picks by processor). Standard library only.

    python neural_flow_widget/capture/accelerator/build.py
"""

from __future__ import annotations

import os
import pathlib
import platform
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE / "reduce.c"  # one translation unit; it includes the headers beside it
# no -ffast-math (it would set flush-to-zero for the whole process) and no FMA contraction
# (both builds give the same numbers)
FLAGS = ["-O3", "-std=gnu11", "-fPIC", "-shared", "-ffp-contract=off", "-fno-math-errno",
         "-Wno-psabi"]
VARIANTS = {"base": [], "avx2": ["-mavx2", "-mf16c"]}


def targets() -> dict[str, pathlib.Path]:
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    return {name: HERE / f"_reduce_{name}.so" for name in VARIANTS if name == "base" or x86}


def compiler() -> str | None:
    """The C compiler: ``$CC`` if set (None when it is not there), else ``cc`` or ``gcc``."""
    if sys.platform == "win32":
        return None
    chosen = os.environ.get("CC")
    if chosen:
        return shutil.which(chosen)
    return shutil.which("cc") or shutil.which("gcc")


def build(force: bool = False, folder: pathlib.Path = HERE,
          extra: tuple[str, ...] = ()) -> list[pathlib.Path]:  # fmt: skip
    """Compile what is missing or older than the source into ``folder`` (``extra``: more
    compiler flags, e.g. sanitizers); returns the libraries there are.  Raises
    ``RuntimeError`` when the compiler fails, and returns [] without a compiler."""
    cc = compiler()
    if cc is None:
        return []
    built = []
    newest = max(p.stat().st_mtime for p in (SOURCE, *HERE.glob("*.h")))
    for name, path in targets().items():
        path = pathlib.Path(folder) / path.name
        if force or not path.exists() or path.stat().st_mtime < newest:
            _compile(path, [cc, *FLAGS, *extra, *VARIANTS[name], str(SOURCE)], ["-lm"])
        built.append(path)
    return built


def _compile(path: pathlib.Path, command: list[str], libraries: list[str]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    command = [*command, "-o", str(temporary), *libraries]
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as error:
        raise RuntimeError(f"{' '.join(command)} could not run: {error}") from error
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr}")
    temporary.replace(path)


if __name__ == "__main__":
    for path in build(force="--force" in sys.argv):
        print(path)
