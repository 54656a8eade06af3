"""The ``neural-flow`` command.

    neural-flow demo [unet|fusion|resnet|transformer]   trace a built-in demo, print its graph
"""

from __future__ import annotations

import argparse
import sys

EXIT_USAGE = 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="neural-flow",
        description="Trace a PyTorch model and show its flow graph: stages, skip and merge "
                    "edges, and what flowed through each stage.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="trace a built-in demo model (trained weights)")
    demo.add_argument("name", nargs="?", default="unet",
                      choices=["unet", "fusion", "resnet", "transformer"])
    demo.add_argument("--stages", default="1",
                      help="stage selection: a depth (default 1), or comma-separated names")
    args = parser.parse_args(argv)
    try:
        return _demo(args)
    except (ValueError, TypeError) as error:
        print(f"neural-flow: error: {error}", file=sys.stderr)
        return EXIT_USAGE


def _stages(text: str):
    if text.isdigit():
        return int(text)
    return [part.strip() for part in text.split(",") if part.strip()]


def _demo(args: argparse.Namespace) -> int:
    from . import demos
    from ._trace import trace

    demo = demos.load(args.name)
    flow = trace(demo.model, demo.inputs, stages=_stages(args.stages))
    print(f"{demo.name}: {demo.description}")
    print(flow.to_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
