"""The committed chapters: no outputs, the same install cell in each, and the repository named in
one place (``_config.yml``).  No book build needed."""

from __future__ import annotations

import re

import nbformat

from browser import ROOT
from test_colab import install_cells

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_committed_notebooks_have_no_outputs():
    assert len(NOTEBOOKS) >= 6
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{path.name} has outputs"
        assert "widgets" not in nb.metadata, f"{path.name} carries widget state"


def test_every_chapter_starts_with_the_same_install_cell():
    cells = install_cells()
    assert len(cells) >= 5 and len(set(cells)) == 1
    assert 'find_spec("transformer_lib")' in cells[0] and "TRANSFORMER_LIB_SOURCE" in cells[0]


def test_the_repository_url_is_set_in_one_place():
    """The chapters' install cell installs from the repository that _config.yml names."""
    config = (ROOT / "_config.yml").read_text()
    url = re.search(r"repository:\s*\n\s*url:\s*(\S+)", config).group(1)
    for path in NOTEBOOKS:
        install = next(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        assert f'"git+{url}"' in install, f"{path.name}: install cell does not use {url}"
