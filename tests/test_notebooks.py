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
    for name in ("_config.yml", "README.md", "CITATION.cff", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path)
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
    old_url, _ = repository()
    changed = set_repository.set_repository(fork, "pages", tmp_path)
    assert len(changed) == 1 + len(NOTEBOOKS) + 3 and repository(tmp_path) == (fork, "pages")
    assert all(f'"git+{fork}"' in source for source in install_sources(tmp_path).values())
    config = (tmp_path / "_config.yml").read_text()
    assert "baseurl: https://a-reader.github.io/my-transformer-book/" in config
    readme = (tmp_path / "README.md").read_text()
    assert "colab.research.google.com/github/a-reader/my-transformer-book/blob/pages/notebooks/" in readme
    assert "https://a-reader.github.io/my-transformer-book/" in readme
    assert "\ncd my-transformer-book\n" in readme
    for name in ("README.md", "CITATION.cff", "pyproject.toml"):
        assert old_url not in (tmp_path / name).read_text(), f"{name} still names {old_url}"


# --- Numbers in the prose ---------------------------------------------------------------------
# A measured number typed into the prose goes stale on the next machine, so every number in a
# chapter's markdown is glued from the cell that computed it ({glue:text}`name`), or printed by
# a cell, or is one of these constants (or a small count: an integer up to 16).
CONSTANTS = {
    "the paper's base model and schedule (Vaswani et al., Table 3 and section 5)":
        {512, 2048, 64, 8, 6, 0.1, 4000, 10000, 0.9, 0.98},
    "the paper's Table 3, row (A): BLEU with 1, 4, 8, 16 and 32 heads": {24.9, 25.5, 25.8, 25.4, 32},
    "ViT-Base/16 (Dosovitskiy et al.)": {224, 16, 196, 768, 3072, 12},
    "the largest float16 number": {65504},
    "the values a byte takes (byte-level BPE starts from them)": {256},
}
ALLOWED = set().union(*CONSTANTS.values())
_NUMBER = re.compile(r"(?<![\w.\\])\d[\d,]*(?:\.\d+)?(?!\w)")
_NOT_PROSE = [
    r"^(?:    |\t).*$",                                # indented code
    r"Reading time: about \d+ minutes",   # counted by scripts/reading_weight.py, tested
    r"\{glue(?::\w+)?\}`[^`]*`",                        # glued values
    r"\{[\w:-]+\}`[^`]*`",                              # other roles: {cite}, {doc}, {ref}
    r"`[^`]*`",                                         # code spans
    r"\]\([^)]*\)", r"https?://\S+", r"<[^>]*>",        # link targets, URLs, HTML tags
    r"(?i)(?:§|\b(?:sections?|tables?|figures?|equations?|chapters?|exercises?|steps?|"
    r"cc-by|sha|python|torch|ipywidgets|jupyterlab|notebook))[\s-]*\d+(?:\.\d+)*",  # names
]


def _without_code_blocks(markdown: str) -> str:
    """``markdown`` without its fenced code blocks; a MyST directive's fence (```{note}) holds
    prose, which stays."""
    kept, fence = [], None   # fence: (marker, is_code) of the block we are in
    for line in markdown.splitlines():
        opening = re.match(r"\s*(`{3,}|~{3,}|:{3,})(.*)$", line)
        if fence is None and opening:
            marker, info = opening.groups()
            fence = (marker, not info.strip().startswith("{") and marker[0] != ":")
            continue
        if fence is not None and line.strip() == fence[0]:
            fence = None
            continue
        if fence is None or not fence[1]:
            kept.append(line)
    return "\n".join(kept)


def typed_numbers(markdown: str) -> list[str]:
    """The numbers in ``markdown``'s prose (and math) that are neither glued, in code, a small
    count, a year, nor one of ``CONSTANTS``."""
    text = _without_code_blocks(markdown).replace("{,}", ",")
    for pattern in _NOT_PROSE:
        text = re.sub(pattern, " ", text, flags=re.S | re.M)
    found = []
    for match in _NUMBER.finditer(text):
        token = match.group(0).rstrip(",")
        value = float(token.replace(",", ""))
        small_count = "." not in token and value <= 16
        year = "." not in token and "," not in token and 1950 <= value <= 2030
        if not (small_count or year or value in ALLOWED):
            context = text[max(0, match.start() - 40):match.end() + 20].replace("\n", " ")
            found.append(f"{token!r} in '…{context.strip()}…'")
    return found


def markdown_cells(path):
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


def test_the_typed_number_guard_catches_typed_numbers():
    assert typed_numbers("Training took 273 s, 3,695 tokens/s.") == [
        "'273' in '…Training took 273 s, 3,695 tokens/s.…'",
        "'3,695' in '…Training took 273 s, 3,695 tokens/s.…'"]
    assert typed_numbers("about 0.95: nearly one-hot") and typed_numbers("$\\approx 3.47$")
    assert typed_numbers("a third of it (38.6 %)") and typed_numbers("$2{,}097{,}152$ adds")
    assert typed_numbers(
        "It took {glue:text}`seconds:.1f` s (`--max-seconds 720`) on $d = 512$, $h = 8$ heads, "
        "section 3.2.2 of {cite}`vaswani2017attention` (2017), §5.4, SHA-256; [chapter 4](04_x.ipynb).") == []
    assert typed_numbers("    print(x)  # 4194304.0\n\n```python\ny = 17.5\n```\n") == []
    assert typed_numbers("```{note}\nIt took 273 s.\n```\n") and typed_numbers(
        "````{admonition} Solution\n:class: dropdown\n\n```python\nx = 1\n```\n39 MB\n````")


def test_no_measured_number_is_typed_into_the_prose():
    pages = [(p.name, markdown_cells(p)) for p in NOTEBOOKS]
    pages.append(("intro.md", [(ROOT / "book" / "intro.md").read_text()]))
    typed = [f"{name}: {number}" for name, cells in pages
             for cell in cells for number in typed_numbers(cell)]
    assert not typed, "glue these numbers (or print them) instead of typing them:\n" + "\n".join(typed)


# --- Exercise solutions -------------------------------------------------------------------------
# A solution is folded in every front-end: its prose in a markdown cell
#     <details class="solution"><summary>Solution</summary> … </details>
# (HTML that the book, JupyterLab, the classic Notebook and Colab all fold), and its code in an
# executed cell that starts with "# @title Solution…", hidden by the tag hide-cell in the book,
# by jupyter.source_hidden/outputs_hidden in JupyterLab and by Colab's form view.
SOLUTION_CELL_TAG, SOLUTION_TITLE = "hide-cell", "# @title Solution"


def is_solution_prose(cell) -> bool:
    return cell.cell_type == "markdown" and cell.source.lstrip().startswith(
        '<details class="solution">')


def is_solution_code(cell) -> bool:
    return cell.cell_type == "code" and cell.source.startswith(SOLUTION_TITLE)


def exercises_start(cells) -> int | None:
    """The index of the markdown cell that opens the chapter's exercises (a heading
    "## Exercises", first in its cell or not), or None."""
    return next((i for i, c in enumerate(cells) if c.cell_type == "markdown"
                 and re.search(r"^## Exercises", c.source, flags=re.M)), None)


def test_solutions_are_folded_everywhere_and_their_code_runs_in_the_build():
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        exercises = exercises_start(cells)
        for cell in cells:
            if cell.cell_type == "markdown":
                # MyST's dropdown admonition shows as raw, unfolded text in a live front-end
                assert ":class: dropdown" not in cell.source, f"{path.name}: a MyST dropdown"
            elif is_solution_code(cell):
                meta = cell.metadata
                assert SOLUTION_CELL_TAG in meta.get("tags", []), f"{path.name}: {cell.source[:60]}"
                assert meta.get("jupyter") == {"source_hidden": True, "outputs_hidden": True}
                assert meta.get("cellView") == "form", f"{path.name}: {cell.source[:60]}"
        if exercises is None:
            continue
        solutions = [c.source for c in cells[exercises:] if is_solution_prose(c)]
        assert solutions, f"{path.name}: exercises without solutions"
        for source in solutions:
            assert source.rstrip().endswith("</details>"), f"{path.name}: {source[:60]}"
            # code in a solution's prose never runs: it belongs in a solution cell
            assert not re.search(r"^(```|~~~|    \S)", source, flags=re.M), f"{path.name}: {source[:80]}"


def test_the_introduction_shows_the_figure_the_library_draws():
    """book/architecture.svg is what scripts/draw_architecture.py writes today, is well-formed
    SVG, and links every box to an existing chapter."""
    import xml.etree.ElementTree as ET

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import draw_architecture
    finally:
        sys.path.pop(0)
    committed = (ROOT / "book" / "architecture.svg").read_text()
    assert committed == draw_architecture.intro_figure(), "run scripts/draw_architecture.py"
    svg = ET.fromstring(committed)
    links = [a.get("href") for a in svg.iter("{http://www.w3.org/2000/svg}a")]
    assert len(links) >= 10
    for href in links:
        assert (ROOT / "book" / href).with_suffix(".ipynb").resolve().is_file(), href
    assert ":file: architecture.svg" in (ROOT / "book" / "intro.md").read_text()


# --- Pages that show the Transformer -------------------------------------------------------------
# The book's page shows 77 columns of code. Every code line a reader can see in the book (every
# code cell except the bookkeeping ones, folded solutions included) fits in them. The book's
# bookkeeping -- glue() calls and the checks that guard the prose (claim(), their asserts) --
# runs in cells of their own, next to the text they serve, as do the asserts that test the library
# rather than the idea ("# @title Checks: ..."): removed from the book page
# (tag remove-cell), folded on Colab (a "# @title Bookkeeping: ..." first line and cellView
# form) and in JupyterLab (jupyter.source_hidden).
PAGE_WIDTH = 77
BOOKKEEPING_TAG = "remove-cell"
# glue and claims ("Bookkeeping: ..."), or asserts that test the library rather than the idea
# ("Checks: ...")
BOOKKEEPING_TITLES = ("# @title Bookkeeping: ", "# @title Checks: ")


def is_bookkeeping(cell) -> bool:
    return cell.cell_type == "code" and BOOKKEEPING_TAG in cell.metadata.get("tags", [])


def wide_lines(cells, width=PAGE_WIDTH) -> list[str]:
    """The displayed code lines of ``cells`` wider than ``width`` columns."""
    return [f"{len(line)} columns: {line.strip()[:60]}" for cell in cells
            if cell.cell_type == "code" and not is_bookkeeping(cell)
            for line in cell.source.splitlines() if len(line) > width]


def test_the_width_check_catches_a_wide_line():
    narrow = nbformat.v4.new_code_cell("x = 1  # fits\n" + "y" * PAGE_WIDTH)
    wide = nbformat.v4.new_code_cell("z = " + "9" * PAGE_WIDTH)
    hidden = nbformat.v4.new_code_cell("w = " + "9" * PAGE_WIDTH, metadata={"tags": ["remove-cell"]})
    assert wide_lines([narrow, hidden]) == [] and len(wide_lines([narrow, wide])) == 1


def test_every_displayed_code_line_fits_the_page():
    wide = [f"{path.name}: {line}" for path in NOTEBOOKS
            for line in wide_lines(nbformat.read(path, as_version=4).cells)]
    assert not wide, f"{len(wide)} lines wider than {PAGE_WIDTH} columns:\n" + "\n".join(wide)


def test_bookkeeping_is_hidden_in_the_book_and_folded_elsewhere():
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            where = f"{path.name}: {cell.source[:60]!r}"
            if is_bookkeeping(cell):
                assert cell.source.startswith(BOOKKEEPING_TITLES), where
                assert cell.metadata.get("cellView") == "form", where
                assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, where
            else:
                shown = re.sub(r"#.*", "", cell.source)       # comments may name them
                assert not re.search(r"\b(glue|claim)\(", shown), f"bookkeeping shown in {where}"


# --- Figures: the figure shows, its drawing code one click away ----------------------------------
# A figure's drawing code (matplotlib's calls) runs in a cell of its own that starts with
# "# @title Figure: <what it shows>": folded in the book (tag hide-input: the figure shows, a
# button shows the code), in JupyterLab (jupyter.source_hidden) and on Colab (its form view).
# What the figure measures is computed in the open cells before it.
FIGURE_TAG, FIGURE_TITLE = "hide-input", "# @title Figure: "
_DRAWING = re.compile(
    r"\bplt\.(?!show\(\))\w+\(|(?<!torch)(?<!np)\.(set_(?!epoch\()\w+|plot|semilogy|loglog|imshow|bar|barh|hist|scatter|"
    r"text|annotate|legend|colorbar|tight_layout|axhline|axvline|fill_between|add_patch|"
    r"twinx|sharey|sharex|tick_params)\(")


def drawing_lines(cell) -> list[str]:
    """The lines of an open code cell that draw (matplotlib), comments left out."""
    return [line.strip() for line in cell.source.splitlines()
            if _DRAWING.search(re.sub(r"#.*", "", line))]


def is_open(cell) -> bool:
    tags = set(cell.metadata.get("tags", []))
    return cell.cell_type == "code" and not tags & {BOOKKEEPING_TAG, FIGURE_TAG, SOLUTION_CELL_TAG}


def test_the_drawing_check_catches_drawing_code():
    drawing = nbformat.v4.new_code_cell("fig, ax = plt.subplots()\nax.plot(x, y)  # the curve\nplt.show()")
    computing = nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\ntorch.set_num_threads(1)\ny = x.sum()  # .plot( not\nplt.show()")
    assert drawing_lines(drawing) == ["fig, ax = plt.subplots()", "ax.plot(x, y)  # the curve"]
    assert drawing_lines(computing) == []


def test_figures_are_folded_everywhere_and_drawn_nowhere_else():
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            where = f"{path.name}: {cell.source[:60]!r}"
            if cell.cell_type == "code" and FIGURE_TAG in cell.metadata.get("tags", []):
                assert cell.source.startswith(FIGURE_TITLE), where
                assert cell.metadata.get("cellView") == "form", where
                assert cell.metadata.get("jupyter") == {"source_hidden": True}, where
            elif is_open(cell):
                assert not drawing_lines(cell), f"drawing code in an open cell, {where}"


# --- The model, whole: one page, the library's own source -----------------------------------------
MODEL_WHOLE = ROOT / "book" / "model_whole.ipynb"
MODEL_WHOLE_MAX_LINES = 231  # the FFN names its activation (ReLU, or GELU)


def test_the_model_whole_page_is_the_librarys_source_and_fits_its_budget():
    """Every listing of book/model_whole.ipynb is show_source(..., docstrings=False,
    checks=False) of the library's own objects (never a copy), in reading order, with
    attention_mask (the two lines that build every mask), and all of them together stay within
    the budget of lines the page promises a reader; each listed line fits the page."""
    import transformer_lib
    from transformer_lib.instruments.notebook import source_lines

    cells = [c for c in nbformat.read(MODEL_WHOLE, as_version=4).cells if c.cell_type == "code"]
    setup, listings = cells[0], cells[1:]
    assert "remove-cell" in setup.metadata.get("tags", [])
    assert f'"git+{repository()[0]}"' in setup.source      # set_repository.py renames it too
    shown = []

    def collect(*objs, docstrings=True, checks=True):
        assert docstrings is False and checks is False
        shown.extend(objs)

    namespace = {}
    exec(setup.source, namespace)
    namespace["show_source"] = collect
    for cell in listings:
        assert cell.source.startswith("show_source("), cell.source
        assert cell.metadata.get("tags") == ["remove-input"], cell.source
        exec(cell.source, namespace)
    assert all(getattr(obj, "__module__", "").startswith("transformer_lib") for obj in shown)
    lines = [line for obj in shown
             for line in source_lines(obj, docstrings=False, checks=False)]
    assert len(lines) + len(shown) - len(listings) <= MODEL_WHOLE_MAX_LINES, len(lines)
    assert max(map(len, lines)) <= PAGE_WIDTH
    names = [obj.__qualname__ for obj in shown]
    # reading order: positions, attention, heads, FFN, Add & Norm, blocks, stacks, model
    order = ["sinusoidal_encoding", "attention_mask", "scaled_dot_product_attention",
             "MultiHeadAttention.forward",
             "PositionWiseFFN", "AddNorm", "TransformerEncoderBlock", "TransformerDecoder.decode",
             "Transformer.__init__"]
    assert [names.index(name) for name in order] == sorted(names.index(name) for name in order)
    assert transformer_lib.Transformer.__init__ in shown


def test_a_listing_without_checks_computes_what_the_library_computes():
    """show_source(..., checks=False) leaves out the argument checks and nothing the model
    computes: every class and function of transformer_lib.model still parses without them and
    keeps no check_* call, and the listed functions, run from their shortened source, give the
    library's own results (a removal that took a line of the mask or the attention with it
    would differ)."""
    import ast
    import importlib
    import inspect
    import pkgutil

    import torch

    import transformer_lib.model as model
    from transformer_lib.instruments.notebook import source_lines

    for info in pkgutil.iter_modules(model.__path__):
        module = importlib.import_module(f"transformer_lib.model.{info.name}")
        for obj in vars(module).values():
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and \
                    obj.__module__ == module.__name__:
                text = "\n".join(source_lines(obj, docstrings=False, checks=False))
                ast.parse(text)
                if not re.match(r"_?check_", obj.__name__):   # a check, listed whole
                    assert not re.search(r"^\s+_?check_\w+\(", text, re.M), obj

    from transformer_lib.model import attention, positional

    def shortened(function):
        namespace = dict(vars(inspect.getmodule(function)))
        exec("\n".join(source_lines(function, checks=False)), namespace)
        return namespace[function.__name__]

    mask = shortened(attention.attention_mask)
    text = "\n".join(source_lines(attention.attention_mask, checks=False))
    assert "check_" not in text and "raise" not in text and "fits" not in text
    assert "keys < valid_lens[:, None]" in text and "<= rows" in text
    lens = torch.tensor([1, 3, 2])
    for kwargs in (dict(valid_lens=lens), dict(valid_lens=lens, causal=True),
                   dict(valid_lens=torch.tensor([[1, 2, 3]] * 3).T, causal=True),
                   dict(causal=True, attn_mask=torch.rand(3, 1, 3, 3) > 0.5)):
        assert torch.equal(mask((3, 2, 3, 3), **kwargs),
                           attention.attention_mask((3, 2, 3, 3), **kwargs)), kwargs
    q, k, v = torch.randn(3, 2, 4, 8), torch.randn(3, 2, 5, 8), torch.randn(3, 2, 5, 8)
    sdpa = shortened(attention.scaled_dot_product_attention)
    for kwargs in (dict(), dict(valid_lens=torch.tensor([0, 2, 5])),
                   dict(valid_lens=lens, return_weights=True)):
        torch.testing.assert_close(sdpa(q, k, v, **kwargs),
                                   attention.scaled_dot_product_attention(q, k, v, **kwargs))
    torch.testing.assert_close(shortened(positional.sinusoidal_encoding)(9, 6),
                               positional.sinusoidal_encoding(9, 6))
