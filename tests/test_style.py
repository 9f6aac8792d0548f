"""The code follows the project's style: ruff (configured in pyproject.toml, and tests/ruff.toml
for the tests) finds nothing.  Its line limit keeps every line of the library within a code
listing of the book (tests/test_book.py checks the built pages themselves)."""

import shutil
import subprocess
import sys

import pytest

from browser import ROOT


def test_ruff_finds_nothing():
    try:
        import ruff  # noqa: F401
    except ImportError:
        if shutil.which("ruff") is None:
            pytest.fail("ruff is not installed: `make test` installs it (requirements.txt)")
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
