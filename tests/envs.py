"""Virtual environments that the tests create once and then reuse (``.venv-colab`` and the
front-end environments), each with the torch that ``make`` installs: ``TORCH_SPEC`` as ``make``
passes it, else the Makefile's default -- the one place that pins torch."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from browser import ROOT

# What Colab has today (2026): ipywidgets 7.7.1 (its exact version since 2022), IPython 7.34 and
# numpy 2.1. Colab's own front-end is not installable; .venv-colab and the classic Notebook's
# environment install these instead of the newest 7.x that pip would pick.
COLAB = ("ipywidgets==7.7.1", "ipython==7.34.0", "numpy>=2.1,<2.2")

STAMP = ".requirements"  # inside each environment: what it was built with


def torch_spec() -> str:
    if os.environ.get("TORCH_SPEC"):
        return os.environ["TORCH_SPEC"]
    default = re.search(r"^TORCH_SPEC\s*\?=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M)
    return default.group(1).strip()


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, **kwargs)


def environment(name: str, packages: tuple[str, ...] = ()) -> Path:
    """The Python of the virtual environment ``ROOT/name`` with torch and ``packages``.

    It is created once and reused while it was built from the same torch and package
    requirements (written in its ``.requirements``); when they change, or it has none (an
    older or half-built environment), it is built again from scratch, so that nothing of
    the former versions stays behind."""
    home = ROOT / name
    python, stamp = home / "bin" / "python", home / STAMP
    wanted = "\n".join([torch_spec(), *packages]) + "\n"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    shutil.rmtree(home, ignore_errors=True)
    run(sys.executable, "-m", "venv", home)
    run(python, "-m", "pip", "install", "--quiet", *torch_spec().split())
    if packages:
        run(python, "-m", "pip", "install", "--quiet", *packages)
    stamp.write_text(wanted)
    return python


def build_wheel(folder: Path) -> Path:
    """The package's wheel, built into ``folder`` from a copy of the tree without its
    environments, build outputs and git history."""
    source = folder / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".venv*", "_build", ".vendor", "_extra", ".git", "*.egg-info", "build", "__pycache__"))
    run(sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_wheel({str(folder)!r})",
        cwd=source)
    return next(folder.glob("transformer_lib-*.whl"))
