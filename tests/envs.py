"""Virtual environments that the tests create once and then reuse (``.venv-colab`` and the
front-end environments), each with the torch that ``make`` installs: ``TORCH_SPEC`` as ``make``
passes it, else the Makefile's default -- the one place that pins torch."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from browser import ROOT


def torch_spec() -> str:
    if os.environ.get("TORCH_SPEC"):
        return os.environ["TORCH_SPEC"]
    default = re.search(r"^TORCH_SPEC\s*\?=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M)
    return default.group(1).strip()


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, **kwargs)


def environment(name: str) -> Path:
    """The Python of the virtual environment ``ROOT/name``, created (with torch) if missing."""
    python = ROOT / name / "bin" / "python"
    if not python.exists():
        run(sys.executable, "-m", "venv", ROOT / name)
    if subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode:
        run(python, "-m", "pip", "install", "--quiet", *torch_spec().split())
    return python
