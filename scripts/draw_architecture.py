"""Write book/architecture.svg, the introduction's figure of the
encoder-decoder, from transformer_lib.instruments.architecture (its links
point from book/ to the chapters' pages).

    python scripts/draw_architecture.py

tests/test_notebooks.py checks that the committed file is what this script
writes."""

from pathlib import Path

from transformer_lib.instruments.architecture import architecture_svg

ROOT = Path(__file__).resolve().parents[1]


def intro_figure() -> str:
    return architecture_svg(
        link=lambda chapter: f"../notebooks/{chapter}.html") + "\n"


if __name__ == "__main__":
    (ROOT / "book" / "architecture.svg").write_text(intro_figure())
    print("wrote", ROOT / "book" / "architecture.svg")
