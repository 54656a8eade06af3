"""Build hook: bundle the front end (js/ -> neural_flow_widget/static/widget.js) when the
package is built, so that `pip install .` yields a working widget. Needs Node.js and npm;
skipped when the bundle is already newer than every source file (e.g. an sdist that carries it).
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        root = pathlib.Path(self.root)
        js, bundle = root / "js", root / "neural_flow_widget" / "static" / "widget.js"
        if not (js / "package.json").exists():
            return  # an sdist without the JS sources: the bundle must already be there
        sources = [p for p in (js / "src").rglob("*") if p.is_file()]
        sources += [js / "package.json", js / "build.mjs"]
        if bundle.exists() and all(p.stat().st_mtime <= bundle.stat().st_mtime for p in sources):
            return
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("building neural_flow_widget needs Node.js and npm to bundle its "
                               "front end (js/); install them, or build from a wheel")
        if not (js / "node_modules").exists():
            subprocess.run([npm, "install", "--no-save", "--no-audit", "--no-fund",
                            "--loglevel=error"], cwd=js, check=True)
        subprocess.run([npm, "run", "-s", "build"], cwd=js, check=True)
