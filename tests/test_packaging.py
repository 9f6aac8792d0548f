"""Dependencies are declared once: pyproject.toml lists them (with "book" and "test" extras),
requirements.txt installs from it, and torch is pinned in one place, the Makefile's TORCH_SPEC."""

from __future__ import annotations

import re

from browser import ROOT
from envs import build_wheel, torch_spec


def test_requirements_install_the_package_and_its_extras():
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert [line for line in lines if line and not line.startswith("#")] == ["-e .[book,test]"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r"^book = \[", pyproject, re.M) and re.search(r"^test = \[", pyproject, re.M)


def test_torch_is_pinned_in_one_place():
    assert re.fullmatch(r"torch==[\d.]+", torch_spec().split()[0])
    pinned = [str(path.relative_to(ROOT)) for path in (ROOT / "tests").glob("*.py")
              if re.search(r"torch==\d", path.read_text())]
    pinned += [name for name in ("pyproject.toml", "requirements.txt", ".ci/run")
               if re.search(r"torch==\d", (ROOT / name).read_text())]
    assert pinned == [], f"torch pinned outside the Makefile: {pinned}"


def test_the_wheel_carries_the_scripts_of_the_viewer_and_the_translator(tmp_path):
    """Colab installs the package from git, not editable: the viewer's JavaScript and the
    published translator must be in the wheel (package data), or attention_view,
    translator_box and load_everyday fail there."""
    import zipfile

    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert {"transformer_lib/instruments/attention_view.js",
            "transformer_lib/instruments/translator.js"} <= set(names)
    # the published translator travels with the package (chapter 8 loads it on Colab)
    assert {f"transformer_lib/translation/everyday/{name}"
            for name in ("model.pt", "log.json", "SHA256SUMS")} <= set(names)
