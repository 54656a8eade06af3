"""The ``neural-flow`` command: trace a model and write its interactive, offline HTML page.

    neural-flow demo [unet|fusion|resnet|transformer|vit] [--out FILE] [--open]
    neural-flow export MODULE:FACTORY --input-shape 1,3,224,224 [--dtype float32] [--out FILE]

Exit codes: 0 success, 1 the model or the export failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import sys
import time
import webbrowser
from typing import Any

EXIT_FAILED, EXIT_USAGE = 1, 2
DEMOS = ("unet", "fusion", "resnet", "transformer", "vit")  # demos.DEMOS, without importing torch


class UsageError(Exception):
    """Bad arguments: one line for the user, plus a hint."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as error:
        _fail(str(error), error.hint)
        return EXIT_USAGE
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except Exception as error:  # one clear line, not a traceback
        _fail(
            f"{type(error).__name__}: {error}",
            "run with --traceback to see where it happened" if not args.traceback else "",
        )
        if args.traceback:
            raise
        return EXIT_FAILED


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neural-flow",
        description="Trace a PyTorch model and write a self-contained, offline HTML page of "
        "its flow graph: stages, skip and merge edges, and what flowed through "
        "each stage (statistics, activation maps, attention maps).",
    )
    parser.add_argument(
        "--traceback", action="store_true", help="show the full Python traceback on errors"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="trace a built-in demo model (trained weights shipped in the package)",
        description="Trace a built-in demo and write its HTML page.",
    )
    demo.add_argument(
        "name", nargs="?", default="unet", choices=DEMOS, help="which demo (default: unet)"
    )
    _common(demo)
    demo.set_defaults(run=_demo)

    export = commands.add_parser(
        "export",
        help="trace your own model from MODULE:FACTORY",
        description="Import MODULE, call FACTORY() to get an nn.Module, feed it a random input "
        "of --input-shape and write the HTML page.",
        epilog="examples:\n  neural-flow export mypkg.models:make_unet --input-shape 1,3,128,128"
        "\n  neural-flow export mymodel:build --input-shape 1,128 --dtype long",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    export.add_argument(
        "target",
        metavar="MODULE:FACTORY",
        help="importable module and a callable in it returning an nn.Module",
    )
    export.add_argument(
        "--input-shape",
        required=True,
        metavar="N,C,...",
        help="shape of the random input, comma-separated",
    )
    export.add_argument(
        "--dtype",
        default="float32",
        help="input dtype: float32 (random normal) or long/int64 (random token ids below --vocab)",
    )
    export.add_argument(
        "--vocab", type=int, default=100, help="token ids are drawn below this (default 100)"
    )
    _common(export)
    export.set_defaults(run=_export_cmd)
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        metavar="FILE",
        help="where to write the HTML page "
        "(default: neural-flow-<name>.html in the current folder)",
    )
    parser.add_argument(
        "--stages",
        default=None,
        metavar="SPEC",
        help="stage selection: a depth (e.g. 2) or comma-separated names / "
        "patterns (default: every leaf module; the page opens collapsed)",
    )
    parser.add_argument(
        "--budget-mb",
        type=float,
        default=8.0,
        help="size budget of the baked stage views, in MB (default 8)",
    )
    parser.add_argument("--open", action="store_true", help="open the page in a browser")


def _fail(message: str, hint: str = "") -> None:
    print(f"neural-flow: error: {message}", file=sys.stderr)
    if hint:
        print(f"  hint: {hint}", file=sys.stderr)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _stages(text: str | None) -> Any:
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    return [part.strip() for part in text.split(",") if part.strip()]


def _demo(args: argparse.Namespace) -> int:
    from . import demos

    demo = demos.load(args.name)
    _progress(f"{demo.name}: {demo.description}")
    return _write(demo.model, demo.inputs, args, default_name=demo.name)


def _export_cmd(args: argparse.Namespace) -> int:
    import torch

    module_name, _, factory_name = args.target.partition(":")
    if not module_name or not factory_name:
        raise UsageError(
            f"{args.target!r} is not MODULE:FACTORY",
            "e.g. mypkg.models:make_unet (a function that returns an nn.Module)",
        )
    sys.path.insert(0, str(pathlib.Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(
            f"cannot import {module_name!r}: {error}",
            "run from the folder that contains it, or pip install it",
        ) from None
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise UsageError(
            f"{module_name!r} has no callable {factory_name!r}",
            f"names there: {', '.join(n for n in dir(module) if n[0] != '_')}",
        )
    try:
        shape = tuple(int(part) for part in args.input_shape.split(","))
    except ValueError:
        raise UsageError(
            f"--input-shape {args.input_shape!r} is not a list of integers",
            "e.g. --input-shape 1,3,224,224",
        ) from None
    dtypes = {
        "float32": torch.float32,
        "float": torch.float32,
        "float64": torch.float64,
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
        "long": torch.long,
        "int64": torch.long,
        "int32": torch.int32,
    }
    if args.dtype not in dtypes:
        raise UsageError(
            f"--dtype {args.dtype!r} is not supported", f"choose one of {', '.join(dtypes)}"
        )
    dtype = dtypes[args.dtype]
    _progress(f"building {args.target} ...")
    model = factory()
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"{args.target}() returned {type(model).__name__}, not an nn.Module")
    torch.manual_seed(0)
    if dtype.is_floating_point:
        x = torch.randn(shape, dtype=dtype)
    else:
        x = torch.randint(0, args.vocab, shape, dtype=dtype)
    return _write(model, x, args, default_name=factory_name)


def _write(model: Any, inputs: Any, args: argparse.Namespace, *, default_name: str) -> int:
    from .notebook import export as _export
    from .run import trace

    started = time.perf_counter()
    _progress(f"tracing {type(model).__name__} ...")
    flow = trace(model, inputs, stages=_stages(args.stages))
    _progress(
        f"  {len(flow.stages)} stages, {len(flow.edges)} edges "
        f"({time.perf_counter() - started:.1f} s); baking views ..."
    )
    out = pathlib.Path(args.out or f"neural-flow-{default_name}.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    bundle = pathlib.Path(__file__).parent / "static" / "widget.js"
    if not bundle.exists():
        raise RuntimeError(
            f"the front-end bundle {bundle} is missing; build it with "
            f"`cd js && npm ci && npm run build` or reinstall the package"
        )
    tokens = _export.token_labels(inputs, flow)
    _export.write_html(
        flow,
        out,
        bundle=bundle.read_text(encoding="utf-8"),
        tokens=tokens,
        budget_bytes=int(args.budget_mb * 1e6),
    )
    size = out.stat().st_size
    _progress(f"  {size / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s")
    print(out.resolve())
    if args.open:
        webbrowser.open(out.resolve().as_uri())
    return 0


if __name__ == "__main__":
    sys.exit(main())
