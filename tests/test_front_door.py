"""The README is a reader's front door: short, with a row and a Colab link for every chapter, the
book's address and the workflows' badges taken from _config.yml's repository; and every relative
link of the repository's own pages (README, CONTRIBUTING, docs, the folders' READMEs) leads to a
file that exists."""

from __future__ import annotations

import re
import sys

from browser import ROOT
from test_notebooks import repository

README = ROOT / "README.md"
MAX_LINES, MAX_WORDS = 180, 1800
PAGES = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "docs/*.md", "benchmarks/README.md",
         "tests/README.md", "records/*/README.md", "notebooks/README.md", "scripts/README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def toc_pages() -> list[str]:
    """The book's pages in _toc.yml's order, as paths without their suffix."""
    return re.findall(r"^\s*(?:root|- file):\s*(\S+)", (ROOT / "_toc.yml").read_text(), re.M)


def baseurl(root=ROOT) -> str:
    return re.search(r"^\s*baseurl:\s*(\S+)", (root / "_config.yml").read_text(), re.M).group(1)


def test_the_readme_is_short():
    text = README.read_text()
    lines, words = len(text.splitlines()), len(text.split())
    assert lines <= MAX_LINES and words <= MAX_WORDS, (
        f"README.md: {lines} lines and {words} words (at most {MAX_LINES} and {MAX_WORDS}); "
        "measurements go to book/appendix_times.md or docs/, conventions to CONTRIBUTING.md")


def test_every_chapter_has_a_row_and_a_colab_link_to_this_repository():
    url, branch = repository()
    github = url.removeprefix("https://github.com/")
    text = README.read_text()
    notebooks = [page for page in toc_pages() if (ROOT / f"{page}.ipynb").exists()]
    assert len(notebooks) >= 11                          # ten chapters and the model page
    for page in notebooks:
        colab = f"https://colab.research.google.com/github/{github}/blob/{branch}/{page}.ipynb"
        assert f"[Open in Colab]({colab})" in text, f"README.md: no Colab link {colab}"
    for page in toc_pages():                             # the prose pages are linked as files
        if (ROOT / f"{page}.md").exists() and page != "book/intro":
            assert f"]({page}.md)" in text, f"README.md: no link to {page}.md"
    colab_links = re.findall(r"https://colab\.research\.google\.com/github/\S+?\.ipynb", text)
    assert len(colab_links) == len(notebooks), "a Colab link to a page the book does not have"


def test_the_book_address_and_the_badges_follow_the_repository():
    url, _ = repository()
    owner, name = url.removeprefix("https://github.com/").split("/")
    assert baseurl() == f"https://{owner.lower()}.github.io/{name}/"
    text = README.read_text()
    assert f"<{baseurl()}>" in text, "README.md does not give the rendered book's address"
    badges = re.findall(re.escape(url) + r"/actions/workflows/([\w.-]+)/badge\.svg", text)
    assert badges, "README.md has no workflow badge"
    for workflow in badges:
        assert (ROOT / ".github" / "workflows" / workflow).exists(), f"badge for a missing {workflow}"


def test_relative_links_lead_to_files():
    broken = []
    for pattern in PAGES:
        for page in sorted(ROOT.glob(pattern)):
            for target in LINK.findall(page.read_text()):
                if re.match(r"[a-z]+:|#|<", target):             # URLs, mailto:, anchors
                    continue
                path = (page.parent / target.split("#")[0]).resolve()
                if not path.exists():
                    broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_a_broken_link_is_found(tmp_path, monkeypatch):
    (tmp_path / "README.md").write_text("See [the guide](CONTRIBUTING.md) and [times](book/nope.md).\n")
    (tmp_path / "CONTRIBUTING.md").write_text("back to [the README](README.md)\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    try:
        test_relative_links_lead_to_files()
    except AssertionError as error:
        assert "README.md: book/nope.md" in str(error) and "CONTRIBUTING" not in str(error)
    else:
        raise AssertionError("a link to a missing page passed")


def test_the_readme_shows_what_the_published_model_answers():
    from transformer_lib.translation import load_everyday, translate

    example = re.search(r'^transformer-lib translate "([^"]+)"\n# (.+)$', README.read_text(), re.M)
    assert example, "README.md: no translate example with its answer"
    sentence, shown = example.groups()
    model, vocab = load_everyday()
    [answer] = translate(model, [sentence], vocab, vocab)
    assert answer.text == shown
