"""Compile the accelerator (``reduce.c``) on first use, into a per-user cache.

Nothing is compiled when the package is installed: the wheel is pure Python. The first
trace on a machine with a C compiler (``$CC``, else ``cc`` or ``gcc``) compiles the variant
for this processor (AVX2 and F16C on x86-64 processors that have them, else a baseline build) into
:func:`cache_dir`, keyed by the sources, the flags and the compiler, and later runs load it
from there. Standard library only.

    python -m neural_flow_widget.capture.accelerator.build   # compile now, print the paths
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE / "reduce.c"  # one translation unit; it includes the headers beside it
# no -ffast-math (it would set flush-to-zero for the whole process) and no FMA contraction
# (both builds give the same numbers)
FLAGS = [
    "-O3",
    "-std=gnu11",
    "-fPIC",
    "-shared",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-Wno-psabi",
]
VARIANTS = {"base": [], "avx2": ["-mavx2", "-mf16c"]}


def compiler() -> str | None:
    """The C compiler: ``$CC`` if set (None when it is not there), else ``cc`` or ``gcc``."""
    if sys.platform == "win32":
        return None
    chosen = os.environ.get("CC")
    if chosen:
        return shutil.which(chosen)
    return shutil.which("cc") or shutil.which("gcc")


def native_variant() -> str:
    """The variant for this processor: ``avx2`` where the processor reports AVX2 and F16C."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return "base"
    try:
        flags = pathlib.Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return "base"
    return "avx2" if " avx2" in flags and " f16c" in flags else "base"


def cache_dir(cc: str | None = None) -> pathlib.Path:
    """Where compiled libraries go: ``$NFW_ACCELERATOR_DIR``, else a folder under the user's
    cache (``$XDG_CACHE_HOME`` or ``~/.cache``) named by what the build depends on."""
    chosen = os.environ.get("NFW_ACCELERATOR_DIR")
    if chosen:
        return pathlib.Path(chosen)
    base = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
    digest = hashlib.sha256()
    for path in sorted([SOURCE, *HERE.glob("*.h")]):
        digest.update(path.read_bytes())
    digest.update(repr((FLAGS, VARIANTS, cc or compiler(), platform.machine())).encode())
    return base / "neural_flow_widget" / "accelerator" / digest.hexdigest()[:16]


def library_path(variant: str, folder: pathlib.Path | None = None) -> pathlib.Path:
    return (folder or cache_dir()) / f"_reduce_{variant}.so"


def build(
    variants: tuple[str, ...] | None = None,
    *,
    folder: pathlib.Path | None = None,
    force: bool = False,
    extra: tuple[str, ...] = (),
) -> list[pathlib.Path]:
    """Compile ``variants`` (default: :func:`native_variant`) into ``folder`` (default:
    :func:`cache_dir`) unless they are there already; ``extra``: more compiler flags (e.g.
    sanitizers). Returns the libraries there are; [] without a compiler; raises
    ``RuntimeError`` naming the command when the compiler fails."""
    cc = compiler()
    if cc is None:
        return []
    folder = pathlib.Path(folder or cache_dir(cc))
    folder.mkdir(parents=True, exist_ok=True)
    built = []
    for name in variants or (native_variant(),):
        path = library_path(name, folder)
        if force or not path.exists():
            _compile(path, [cc, *FLAGS, *extra, *VARIANTS[name], str(SOURCE)], ["-lm"])
        built.append(path)
    return built


def _compile(path: pathlib.Path, command: list[str], libraries: list[str]) -> None:
    # into a temporary file first: another process may be loading (or compiling) the same
    handle, temporary = tempfile.mkstemp(suffix=".so.tmp", dir=path.parent)
    os.close(handle)
    command = [*command, "-o", temporary, *libraries]
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as error:
        os.unlink(temporary)
        raise RuntimeError(f"{' '.join(command)} could not run: {error}") from error
    if result.returncode != 0:
        os.unlink(temporary)
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr}")
    os.replace(temporary, path)


if __name__ == "__main__":
    for built in build(
        tuple(VARIANTS) if "--all" in sys.argv else None, force="--force" in sys.argv
    ):
        print(built)
