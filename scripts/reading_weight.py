"""What a student reads in each chapter: open code lines, the assert lines
among them (assert statements and calls such as torch.testing.assert_close),
folded figure cells, prose words.

Run:  python scripts/reading_weight.py

Open code: every line of a code cell that the book shows unfolded, that is
neither bookkeeping (tag remove-cell), a folded figure (hide-input) nor a
folded solution (hide-cell); blank lines count, as the page shows them.
Words: runs of letters and digits in the markdown cells.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
FOLDED = {"remove-cell", "hide-input", "hide-cell"}
# an assert statement, or a testing helper (torch.testing.assert_close, ...)
ASSERT = re.compile(r"\bassert\w*\b")


def weight(path: Path) -> dict[str, int]:
    counts = dict(open_lines=0, asserts=0, folded_figures=0, words=0)
    for cell in nbformat.read(path, as_version=4).cells:
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type == "markdown":
            counts["words"] += len(re.findall(r"\w+", cell.source))
        elif cell.cell_type == "code":
            counts["folded_figures"] += "hide-input" in tags
            if tags & FOLDED:
                continue
            lines = cell.source.splitlines()
            counts["open_lines"] += len(lines)
            code = [re.sub(r"#.*", "", line) for line in lines]
            counts["asserts"] += sum(bool(ASSERT.search(c)) for c in code)
    return counts


def main() -> None:
    rows = {p.stem: weight(p) for p in sorted(NOTEBOOKS.glob("*.ipynb"))}
    names = ["open_lines", "asserts", "folded_figures", "words"]
    print(f"{'chapter':<28}" + "".join(f"{n:>15}" for n in names))
    for chapter, counts in rows.items():
        print(f"{chapter:<28}" + "".join(f"{counts[n]:>15,}" for n in names))
    print(f"{'all':<28}" + "".join(
        f"{sum(c[n] for c in rows.values()):>15,}" for n in names))


if __name__ == "__main__":
    main()
