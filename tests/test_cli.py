"""The neural-flow command: demo and export, errors as one line with a hint, exit codes."""

import subprocess
import sys
import textwrap

import pytest

from neural_flow_widget import cli


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "neural_flow_widget.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.mark.slow
def test_demo_writes_a_self_contained_page(tmp_path):
    out = tmp_path / "unet.html"
    done = run("demo", "unet", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out.resolve())  # the last line is the page's path
    assert "tracing UNet" in done.stderr and "stages" in done.stderr
    page = out.read_text()
    assert "renderStatic" in page and '"enc1"' in page and "https://" not in page


@pytest.mark.parametrize("name", ["fusion", "resnet", "transformer"])
def test_every_demo_exports(tmp_path, name):
    assert cli.main(["demo", name, "--out", str(tmp_path / f"{name}.html")]) == 0
    assert (tmp_path / f"{name}.html").stat().st_size > 100_000


@pytest.mark.slow
def test_export_a_users_factory(tmp_path):
    (tmp_path / "mymodels.py").write_text(
        textwrap.dedent("""
        import torch
        def tiny_lm():
            return torch.nn.Sequential(torch.nn.Embedding(50, 8), torch.nn.Linear(8, 50))
        def not_a_model():
            return 3
    """)
    )
    done = run(
        "export",
        "mymodels:tiny_lm",
        "--input-shape",
        "1,12",
        "--dtype",
        "long",
        "--vocab",
        "50",
        "--out",
        "lm.html",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "lm.html").exists()
    bad = run("export", "mymodels:not_a_model", "--input-shape", "1,3", cwd=tmp_path)
    assert bad.returncode == 2 and "not an nn.Module" in bad.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, code, needle",
    [
        (["export", "nomodule_xyz:f", "--input-shape", "1,3"], 2, "cannot import"),
        (["export", "json", "--input-shape", "1,3"], 2, "not MODULE:FACTORY"),
        (["export", "json:dumps", "--input-shape", "1,x"], 2, "not a list of integers"),
        (
            ["export", "json:dumps", "--input-shape", "1,3", "--dtype", "quaternion"],
            2,
            "not supported",
        ),
        (["demo", "nope"], 2, "invalid choice"),
    ],
)
def test_errors_are_one_line_with_a_hint(tmp_path, args, code, needle):
    done = run(*args, cwd=tmp_path)
    assert done.returncode == code and needle in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_model_that_fails_exits_1_with_the_stage_named(tmp_path):
    (tmp_path / "broken.py").write_text(
        textwrap.dedent("""
        import torch
        def make():
            return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(5, 2))
    """)
    )
    done = run("export", "broken:make", "--input-shape", "2,4", cwd=tmp_path)
    assert done.returncode == 1
    assert "stage '1'" in done.stderr and "--traceback" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_help_lists_the_commands():
    done = run("--help")
    assert done.returncode == 0 and "demo" in done.stdout and "export" in done.stdout
    assert "--input-shape" in run("export", "--help").stdout


def test_the_command_offers_every_demo():
    """The command lists the demos without importing torch; the list is the catalogue's."""
    from neural_flow_widget import cli, demos

    assert cli.DEMOS == demos.DEMOS
