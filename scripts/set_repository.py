"""Name the repository that publishes this book: the one setting behind the
Colab and repository buttons (``_config.yml``) and every chapter's install
cell, which must carry the URL itself because Colab opens a chapter alone.
The book's address on GitHub Pages (``html.baseurl``) follows it, and so do
the links of the README, CITATION.cff and pyproject.toml.

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
# Text files whose links name the repository, its branch or its Pages site.
LINKED_FILES = ("README.md", "CITATION.cff", "pyproject.toml")


def pages_url(url: str) -> str:
    """The GitHub Pages address of repository ``url``."""
    owner, name = url.removeprefix("https://github.com/").split("/")
    return f"https://{owner.lower()}.github.io/{name}/"


def _relink(text: str, old: str, old_branch: str, url: str,
            branch: str) -> str:
    """``text`` with links to repository ``old`` pointing at ``url``."""
    old_path = old.removeprefix("https://github.com/")
    new_path = url.removeprefix("https://github.com/")
    text = text.replace(f"colab.research.google.com/github/{old_path}"
                        f"/blob/{old_branch}/",
                        f"colab.research.google.com/github/{new_path}"
                        f"/blob/{branch}/")
    text = text.replace(pages_url(old), pages_url(url))
    # the README's clone-and-enter lines name the clone's folder
    text = re.sub(r"^cd " + re.escape(old_path.split("/")[1]) + "$",
                  "cd " + new_path.split("/")[1], text, flags=re.M)
    return re.sub(re.escape(old) + r"(?![\w.-])", url, text)


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
    old, old_branch = found.group(2), found.group(4)
    new_config = (config[:found.start()]
                  + f"{found.group(1)} {url}{found.group(3)} {branch}"
                  + config[found.end():])
    new_config = new_config.replace(f"baseurl: {pages_url(old)}",
                                    f"baseurl: {pages_url(url)}")
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
    for name in LINKED_FILES:
        path = root / name
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        new_text = _relink(text, old, old_branch, url, branch)
        if new_text != text:
            path.write_text(new_text, encoding="utf-8")
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
