"""The main path is an afternoon: the introduction and the pages before the table of contents'
"Going deeper" part hold at most MAIN_PATH_WORDS words of main text, no chapter on it more than
CHAPTER_WORDS, optional asides at most ASIDE_SHARE of a chapter's words; and every page states
its reading time (as scripts/reading_weight.py computes it) and what it needs.  No book build
needed."""

from __future__ import annotations

import re

import nbformat
import pytest

from load_script import load_script

reading_weight = load_script("reading_weight")

STATED = reading_weight.STATED
NEEDS = re.compile(r"\bIt needs\b")


def notebook(tmp_path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s[5:]) if s.startswith("code:")
                else nbformat.v4.new_markdown_cell(s) for s in sources]
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    return path


def test_the_counter_counts_what_a_reader_reads(tmp_path):
    count = reading_weight.prose_words
    assert count("Scores $\\mathbf{Q}\\mathbf{K}^\\top$ are {glue:text}`x:.2f` here.") == 5
    assert count("See [the notation](notation.md), then\n```python\nx = 1\n```\n") == 4
    assert count("<details class=\"aside\"><summary>Optional: why</summary>\n\nTwo words") == 4
    path = notebook(tmp_path, "# Title\n\nOne two three.",
                    '<details class="aside"><summary>Optional: more</summary>\n\nfour five\n\n'
                    "</details>",
                    "code:x = 1\nassert x\n", "## Exercises\n\n1. Six seven.",
                    "code:def stub():\n    raise NotImplementedError\n",
                    "<details class=\"solution\"><summary>Solution</summary>\n\neight\n</details>",
                    "## After\n\nnine")
    counts = reading_weight.weight(path)
    assert (counts["main_words"], counts["aside_words"], counts["exercise_words"]) == (6, 4, 6)
    assert (counts["open_lines"], counts["asserts"]) == (2, 1)
    assert counts["exercise_lines"] == 2  # the stub a reader fills in


def test_the_main_path_is_an_afternoon():
    pages = reading_weight.pages()
    deeper = [path.stem for path, main in pages if not main]
    assert {"09_experiments", "10_variations", "11_details_and_detours", "12_gpt"} <= set(deeper)
    total, over = 0, []
    for path, on_main_path in pages:
        if not on_main_path:
            break
        counts = reading_weight.weight(path)
        total += counts["main_words"]
        if path.suffix == ".ipynb" and counts["main_words"] > reading_weight.CHAPTER_WORDS:
            over.append(f"{path.stem}: {counts['main_words']} words")
        share = counts["aside_words"] / max(1, counts["aside_words"] + counts["main_words"])
        if share > reading_weight.ASIDE_SHARE:
            over.append(f"{path.stem}: asides {share:.0%} of its words")
        if counts["open_lines"] > 300:
            over.append(f"{path.stem}: {counts['open_lines']} open code lines")
    assert not over, over
    assert total <= reading_weight.MAIN_PATH_WORDS, total


@pytest.mark.parametrize("path", [p for p, _ in reading_weight.pages() if p.suffix == ".ipynb"],
                         ids=lambda p: p.stem)
def test_each_page_states_its_reading_time_and_what_it_needs(path):
    first = next(c.source for c in nbformat.read(path, as_version=4).cells
                 if c.cell_type == "markdown")
    stated = STATED.search(first)
    minutes = reading_weight.weight(path)["minutes"]
    assert stated, f"{path.name}: its first cell should say 'Reading time: about {minutes} minutes'"
    assert int(stated.group(1)) == minutes, (
        f"{path.name} states {stated.group(1)} minutes; scripts/reading_weight.py counts "
        f"{minutes} (python scripts/reading_weight.py --write sets it)")
    assert NEEDS.search(first), f"{path.name}: its first cell should say what it needs"
