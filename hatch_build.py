"""Build hook: bundle the front end (js/ -> neural_flow_widget/static/widget.js) and compile
the capture path for float32 CPU activations (neural_flow_widget/_native/reduce.c) and the
tracer core (tracer.c, a CPython extension) when the package is built, so that `pip install .`
yields a working widget.

The bundle needs Node.js and npm; it is skipped when already newer than every source file
(e.g. an sdist that carries it). The compiled parts need a C compiler (`cc`; the tracer core
also this Python's headers); without them the package still works (capture takes its torch
path, the tracer its Python core) and the build says so. A wheel that carries the compiled
libraries is tagged for its platform, and for this Python when it carries the tracer core.
"""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import subprocess
import sysconfig

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        root = pathlib.Path(self.root)
        self._bundle(root)
        if self.target_name != "wheel":
            return  # an sdist carries reduce.c, not what it compiles to
        # the libraries are ignored by git; pyproject's wheel `artifacts` take them in
        built = self._compile(root)
        if built and version != "editable":
            build_data["pure_python"] = False
            if any(p.name.startswith("_tracer_core") for p in built):
                build_data["infer_tag"] = True  # an extension module: this Python's ABI
            else:  # loaded with ctypes, not imported: any Python 3 on this platform
                platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
                build_data["tag"] = f"py3-none-{platform}"

    def _bundle(self, root: pathlib.Path) -> None:
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

    def _compile(self, root: pathlib.Path) -> list[pathlib.Path]:
        # the build script is loaded by path: importing the package would need torch
        script = root / "neural_flow_widget" / "capture" / "accelerator" / "build.py"
        spec = importlib.util.spec_from_file_location("_nfw_native_build", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        try:
            libraries = module.build()
        except RuntimeError as error:
            self.app.display_warning(f"neural_flow_widget: the compiled capture path was not "
                                     f"built; capture takes its torch path.\n{error}")
            return []
        if not libraries:
            self.app.display_warning("neural_flow_widget: no C compiler found; capture takes "
                                     "its torch path (slower on CPU conv nets)")
        elif not any(p.name.startswith("_tracer_core") for p in libraries):
            self.app.display_warning("neural_flow_widget: no Python headers found; the tracer "
                                     "uses its Python core (slower on deep models)")
        return libraries
