"""What a student reads on each page of the book: words of main text and of
optional asides, open code lines (and the assert lines among them), folded
figure cells, and the reading time that the page states at its top.

Run:  python scripts/reading_weight.py          # the table
      python scripts/reading_weight.py --write  # and the pages' stated times

The *main path* is the introduction and every page of the table of contents
before its "Going deeper" part; the book keeps it to an afternoon
(``MAIN_PATH_WORDS``), and each chapter on it to ``CHAPTER_WORDS``
(tests/test_main_path.py).

Main text: the prose of the markdown cells outside the chapter's Exercises
section and outside optional asides (a markdown cell that starts with
``<details class="aside">``, folded in every front-end).  A word is a token
with a letter or digit in it; a math span ``$...$`` or ``$$...$$``, a role
such as a glued number, and a link each count as one word; fenced code and
HTML tags count as none.
Open code: every line of a code cell that the book shows unfolded, that is
neither bookkeeping (tags remove-cell, remove-input), a folded figure
(hide-input) nor a folded solution (hide-cell); blank lines count, as the
page shows them.  Open code in the Exercises section (the stubs a reader
fills in) counts apart, as exercise lines.
Listed lines: the lines of the library's source that ``show_source`` cells
display.
Reading time: main-text words at ``WORDS_PER_MINUTE`` plus open code and
listed lines at ``LINES_PER_MINUTE``, rounded to 5 minutes; exercises come
on top.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import json
import pkgutil
import re
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
FOLDED = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
# an assert statement, or a testing helper (torch.testing.assert_close, ...)
ASSERT = re.compile(r"\bassert\w*\b")
ASIDE = '<details class="aside">'
EXERCISES = re.compile(r"^## Exercises", re.MULTILINE)
MAIN_PATH_WORDS, CHAPTER_WORDS, ASIDE_SHARE = 20_000, 2_800, 0.15
WORDS_PER_MINUTE, LINES_PER_MINUTE = 150, 20
GOING_DEEPER = "Going deeper"
STATED = re.compile(r"Reading time: about (\d+) minutes")


def prose_words(markdown: str) -> int:
    """The words of ``markdown`` as a reader meets them (see the module's
    docstring)."""
    text = re.sub(r"\$\$.*?\$\$", " MATH ", markdown, flags=re.S)
    text = re.sub(r"\\begin\{.*?\\end\{[^}]*\}", " MATH ", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", " MATH ", text)
    text = re.sub(r"(`{3,}).*?\1", " ", text, flags=re.S)   # fenced code
    text = re.sub(r"\]\([^)]*\)", "]", text)                  # link targets
    text = re.sub(r"\{[\w:-]+\}`[^`]*`", " ROLE ", text)      # glue, cite
    text = re.sub(r"<[^>]+>", " ", text)                      # HTML tags
    text = re.sub(r"^:[\w-]+:.*$", " ", text, flags=re.M)    # directive opts
    return sum(1 for token in text.split() if re.search(r"\w", token))


def reading_minutes(main_words: int, code_lines: int) -> int:
    minutes = main_words / WORDS_PER_MINUTE + code_lines / LINES_PER_MINUTE
    return max(5, 5 * round(minutes / 5))


@functools.cache
def _library_names() -> dict:
    """Every name defined in transformer_lib's modules, and ``tl``: what
    the chapters' ``show_source`` calls name."""
    sys.path.insert(0, str(ROOT))
    import transformer_lib

    names = {}
    for info in pkgutil.walk_packages(transformer_lib.__path__,
                                      "transformer_lib."):
        if info.name.endswith("__main__"):
            continue
        names.update(vars(importlib.import_module(info.name)))
    names["tl"] = transformer_lib
    return names


def listed_lines(source: str) -> int:
    """The lines that the ``show_source(...)`` calls in ``source`` list."""
    from transformer_lib.instruments.notebook import source_lines

    count = 0
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call)
                and getattr(node.func, "id", "") == "show_source"):
            options = {k.arg: ast.literal_eval(k.value)
                       for k in node.keywords}
            for arg in node.args:
                obj = eval(ast.unparse(arg), dict(_library_names()))
                count += len(source_lines(obj, **options))
    return count


def weight(path: Path) -> dict[str, int]:
    """The counts of one page: a notebook, or a markdown page."""
    counts = dict(main_words=0, aside_words=0, exercise_words=0,
                  open_lines=0, exercise_lines=0, listed_lines=0,
                  asserts=0, folded_figures=0)
    if path.suffix == ".md":
        counts["main_words"] = prose_words(path.read_text())
    else:
        in_exercises = False
        for cell in nbformat.read(path, as_version=4).cells:
            tags = set(cell.metadata.get("tags", []))
            if cell.cell_type == "markdown":
                text = cell.source
                start = EXERCISES.search(text)
                if start:
                    counts["main_words"] += prose_words(text[:start.start()])
                    counts["exercise_words"] += prose_words(
                        text[start.start():])
                    in_exercises = True
                elif in_exercises and not re.match(r"#{1,2} ", text):
                    counts["exercise_words"] += prose_words(text)
                elif text.lstrip().startswith(ASIDE):
                    in_exercises = False
                    counts["aside_words"] += prose_words(text)
                else:
                    in_exercises = False
                    counts["main_words"] += prose_words(text)
            elif cell.cell_type == "code":
                counts["folded_figures"] += "hide-input" in tags
                if "show_source(" in cell.source and not in_exercises:
                    counts["listed_lines"] += listed_lines(cell.source)
                if tags & FOLDED:
                    continue
                lines = cell.source.splitlines()
                if in_exercises:
                    counts["exercise_lines"] += len(lines)
                    continue
                counts["open_lines"] += len(lines)
                code = [re.sub(r"#.*", "", line) for line in lines]
                counts["asserts"] += sum(map(bool, map(ASSERT.search, code)))
    counts["minutes"] = reading_minutes(
        counts["main_words"], counts["open_lines"] + counts["listed_lines"])
    return counts


def pages() -> list[tuple[Path, bool]]:
    """Every page of the table of contents, in its order, with whether it
    is on the main path."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    found = [(toc["root"], True)]
    main = True
    for part in toc["parts"]:
        main = main and part.get("caption") != GOING_DEEPER
        found += [(entry["file"], main) for entry in part["chapters"]]
    paths = []
    for name, on_main_path in found:
        path = next(p for p in (ROOT / f"{name}.ipynb", ROOT / f"{name}.md")
                    if p.exists())
        paths.append((path, on_main_path))
    return paths


def write_minutes(path: Path, minutes: int) -> bool:
    """Set the reading time that ``path``'s first markdown cell states;
    True when it changed."""
    notebook = json.loads(path.read_text())
    cell = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")
    old = "".join(cell["source"])
    new = STATED.sub(f"Reading time: about {minutes} minutes", old)
    if new == old:
        return False
    cell["source"] = new.splitlines(keepends=True)
    text = json.dumps(notebook, indent=1, ensure_ascii=False)
    path.write_text(text + "\n")
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true",
                        help="update the reading time each page states")
    args = parser.parse_args()
    # the stated time is one token of the first cell: writing it changes no
    # count, so each page is weighed once
    rows = [(path, main, weight(path)) for path, main in pages()]
    if args.write:
        for path, _, counts in rows:
            if path.suffix == ".ipynb" and write_minutes(path,
                                                         counts["minutes"]):
                print(f"{path.name}: reading time updated")
    names = ["main_words", "aside_words", "exercise_words", "open_lines",
             "exercise_lines", "listed_lines", "asserts", "folded_figures",
             "minutes"]

    def row(label, counts):
        print(f"{label:<26}" + "".join(f"{counts[n]:>15,}" for n in names))

    print(f"{'page':<26}" + "".join(f"{n:>15}" for n in names))
    main_path = [counts for _, main, counts in rows if main]
    for path, main, counts in rows:
        if main:
            row(path.stem, counts)
    row("main path", {n: sum(c[n] for c in main_path) for n in names})
    print(f"\n{GOING_DEEPER}:")
    for path, main, counts in rows:
        if not main and path.suffix == ".ipynb":
            row(path.stem, counts)


if __name__ == "__main__":
    main()
