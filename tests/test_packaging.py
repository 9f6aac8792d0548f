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
            "transformer_lib/instruments/translator.js",
            "transformer_lib/instruments/onnx_page.js",
            "transformer_lib/instruments/language_model.js"} <= set(names)
    # the published translator travels with the package (chapter 8 loads it on Colab)
    assert {f"transformer_lib/translation/everyday/{name}"
            for name in ("model.pt", "log.json", "SHA256SUMS")} <= set(names)
    # the metadata a package index shows: one version (transformer_lib/__init__.py), the short
    # README, the licence as an SPDX expression (PEP 639), the project's links
    import transformer_lib

    [metadata_name] = [name for name in names if name.endswith(".dist-info/METADATA")]
    metadata = zipfile.ZipFile(wheel).read(metadata_name).decode()
    assert f"\nVersion: {transformer_lib.__version__}\n" in metadata
    assert "\nLicense-Expression: MIT\n" in metadata
    assert "Project-URL: Source, https://github.com/" in metadata
    assert "Programming Language :: Python :: 3.13" in metadata
    assert "# The Transformer, from first principles" in metadata     # the README is the description


def test_the_version_is_written_once_and_the_changelog_and_citation_name_it():
    import transformer_lib

    pyproject = (ROOT / "pyproject.toml").read_text()
    assert not re.search(r"^version\s*=\s*\"", pyproject, re.M), "pyproject.toml writes a version of its own"
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "transformer_lib.__version__" }' in pyproject
    init = (ROOT / "transformer_lib" / "__init__.py").read_text()
    assert len(re.findall(r"^__version__ = ", init, re.M)) == 1
    changelog = (ROOT / "CHANGELOG.md").read_text()
    newest = re.search(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.M)
    assert newest and newest.group(1) == transformer_lib.__version__, "CHANGELOG's newest entry is another"
    citation = (ROOT / "CITATION.cff").read_text()
    assert f'version: "{transformer_lib.__version__}"' in citation
