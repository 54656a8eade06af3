"""Build hook: bundle the front end (js/ -> neural_flow_widget/static/widget.js).

An sdist carries the built bundle, so a wheel built from it needs no Node.js; a build from
the repository bundles the front end with npm when the bundle is missing or older than its
sources. Nothing is compiled: the wheel is pure Python (``py3-none-any``). The optional
capture accelerator compiles itself on first use where a C compiler is present
(``neural_flow_widget/capture/accelerator/build.py``).
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUNDLE = pathlib.Path("neural_flow_widget") / "static" / "widget.js"


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        root = pathlib.Path(self.root)
        self._bundle(root)

    def _bundle(self, root: pathlib.Path) -> None:
        js, bundle = root / "js", root / BUNDLE
        if not (js / "package.json").exists():
            if not bundle.exists():
                raise RuntimeError(
                    f"{BUNDLE} is missing and there are no front-end sources "
                    f"(js/) to build it from: build from the repository or "
                    f"from a released sdist or wheel"
                )
            return  # an sdist: it carries the bundle
        sources = [p for p in (js / "src").rglob("*") if p.is_file()]
        sources += [
            js / "package.json",
            js / "build.mjs",
            root / "neural_flow_widget" / "capture" / "colormaps.json",
        ]
        if bundle.exists() and all(p.stat().st_mtime <= bundle.stat().st_mtime for p in sources):
            return
        npm = shutil.which("npm")
        if npm is None and bundle.exists():  # an sdist whose files lost their times
            self.app.display_warning(
                f"neural_flow_widget: npm not found; {BUNDLE} is used as "
                f"it is (its sources look newer)"
            )
            return
        if npm is None:
            raise RuntimeError(
                "building neural_flow_widget from the repository needs Node.js "
                "and npm to bundle its front end (js/); install them, or "
                "install from a released sdist or wheel, which carry the bundle"
            )
        if not (js / "node_modules").exists():
            subprocess.run(
                [npm, "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=js,
                check=True,
            )
        subprocess.run([npm, "run", "-s", "build"], cwd=js, check=True)
