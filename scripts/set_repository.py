"""Name the repository that publishes this book: the one setting behind the
Colab and repository buttons (``_config.yml``) and every chapter's install
cell, which must carry the URL itself because Colab opens a chapter alone.

Run:  python scripts/set_repository.py https://github.com/YOU/FORK
      (add --branch NAME when the book is built from another branch)

``tests/test_notebooks.py`` and ``tests/test_book.py`` check that all of
them agree.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "_config.yml"
URL = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+")


def set_repository(url: str, branch: str, root: Path = ROOT) -> list[Path]:
    """Write ``url`` and ``branch`` into ``root``'s _config.yml and install
    cells; return the files changed."""
    if not URL.fullmatch(url):
        raise SystemExit(f"expected https://github.com/OWNER/REPOSITORY, "
                         f"got {url!r}")
    config_path = root / "_config.yml"
    config = config_path.read_text()
    found = re.search(
        r"(repository:\s*\n\s*url:) *(\S+)(\s*\n\s*branch:) *(\S+)", config)
    old = found.group(2)
    new_config = (config[:found.start()]
                  + f"{found.group(1)} {url}{found.group(3)} {branch}"
                  + config[found.end():])
    changed = []
    if new_config != config:
        config_path.write_text(new_config)
        changed.append(config_path)
    pages = [*(root / "notebooks").glob("*.ipynb"),
             *(root / "book").glob("*.ipynb")]
    for path in sorted(pages):
        nb = json.loads(path.read_text(encoding="utf-8"))
        edited = False
        for cell in nb["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and f'"git+{old}"' in source:
                source = source.replace(f'"git+{old}"', f'"git+{url}"')
                cell["source"] = source.splitlines(keepends=True)
                edited = True
        if edited:  # the repository's JSON style: indent 1, UTF-8
            text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url", help="https://github.com/OWNER/REPOSITORY")
    ap.add_argument("--branch", default="main")
    args = ap.parse_args()
    for path in set_repository(args.url.rstrip("/"), args.branch):
        print(f"updated {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
