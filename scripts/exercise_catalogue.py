"""The exercises where the reader writes a piece of the model, and the
planted bugs their checkers are tested against, as one markdown page.

Run:  python scripts/exercise_catalogue.py           # print it
      python scripts/exercise_catalogue.py --write   # docs/exercises.md

Each exercise: its chapter, what the reader writes, the checker's cases in
the order it runs them.  Each planted bug (tests/bugs_*.py): the checker's
report on it, as a reader would see it.  tests/test_exercises.py checks
that the page names every exercise and bug.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "exercises.md"
TESTS = ROOT / "tests"


def planted_bugs() -> list:
    """Every planted bug of tests/bugs_*.py, in file order."""
    sys.path.insert(0, str(TESTS))
    bugs = []
    for path in sorted(TESTS.glob("bugs_*.py")):
        bugs += importlib.import_module(path.stem).BUGS
    return bugs


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def catalogue() -> str:
    sys.path.insert(0, str(ROOT))
    from transformer_lib.instruments.exercises import CHECKERS

    bugs = planted_bugs()
    lines = [
        "# Exercises the reader writes, and their checkers",
        "",
        "Written by `scripts/exercise_catalogue.py`; do not edit by hand.",
        "",
        "In each of these exercises the reader fills in a stub and calls a "
        "checker from `tl.exercises`, which says `passed all N cases` or "
        "names the first case that failed. The folded solution goes "
        "through the same checker when the book is built.",
        "",
        "| ch. | the reader writes | the checker's cases, in order |",
        "| ---: | --- | --- |",
    ]
    for checker in sorted(CHECKERS, key=lambda c: c.chapter):
        cases = "; ".join(f"{i}. {c.name}"
                          for i, c in enumerate(checker.cases, 1))
        lines.append(f"| {checker.chapter} | `{checker.exercise}` | "
                     f"{cell(cases)} |")
    lines += [
        "",
        f"## Planted bugs ({len(bugs)})",
        "",
        "Each is a small, realistic mistake (`tests/bugs_*.py`); the "
        "tests check that its checker fails it at the case named here, "
        "and that a checker without that case would let it through "
        "(*alone*) or name another case.",
        "",
        "| the reader writes | bug | the checker says |",
        "| --- | --- | --- |",
    ]
    for bug in bugs:
        alone = " (alone)" if bug.alone else ""
        lines.append(f"| `{bug.checker.exercise}` | {cell(bug.name)}"
                     f"{alone} | {cell(bug.checker(bug.answer).message)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true",
                        help=f"write {PAGE.relative_to(ROOT)}")
    args = parser.parse_args()
    text = catalogue()
    if args.write:
        PAGE.write_text(text, encoding="utf-8")
        print(f"wrote {PAGE.relative_to(ROOT)}")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
