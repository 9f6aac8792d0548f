"""The committed chapters: no outputs, the same install cell in each, and the repository named in
one place (``_config.yml``).  No book build needed."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

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


def repository(root=ROOT) -> tuple[str, str]:
    """The repository URL and branch that ``_config.yml`` names."""
    config = (root / "_config.yml").read_text()
    found = re.search(r"repository:\s*\n\s*url:\s*(\S+)\s*\n\s*branch:\s*(\S+)", config)
    return found.group(1), found.group(2)


def install_sources(root=ROOT) -> dict[str, str]:
    """Every chapter's first code cell: its install cell."""
    sources = {}
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        sources[path.name] = next(c.source for c in cells if c.cell_type == "code")
    return sources


def test_the_repository_url_is_set_in_one_place():
    """The chapters' install cell installs from the repository that _config.yml names."""
    url, _ = repository()
    for name, install in install_sources().items():
        assert f'"git+{url}"' in install, f"{name}: install cell does not use {url}"


def test_set_repository_renames_it_everywhere(tmp_path):
    shutil.copy(ROOT / "_config.yml", tmp_path)
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    fork = "https://github.com/a-reader/my-transformer-book"
    usage = subprocess.run([sys.executable, ROOT / "scripts" / "set_repository.py", "--help"],
                           check=True, capture_output=True, text=True).stdout
    assert "--branch" in usage
    # the script edits the repository it lives in: run its function on the copy
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import set_repository
    finally:
        sys.path.pop(0)
    changed = set_repository.set_repository(fork, "pages", tmp_path)
    assert len(changed) == 1 + len(NOTEBOOKS) and repository(tmp_path) == (fork, "pages")
    assert all(f'"git+{fork}"' in source for source in install_sources(tmp_path).values())
