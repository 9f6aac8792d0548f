"""The built book (``make test`` builds it first): every internal link resolves, and a real
headless Chromium finds no JavaScript errors, rendered figures and math on every chapter, code
listings that fit the page, sliders that change the figure on chapters 2 and 5, the attention
views of chapters 2 and 7 answering the pointer and every control, light pages, the architecture
figure's links,
and exercise solutions that stay folded until a reader opens them."""

from __future__ import annotations

import hashlib
import os
import re
import time
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import nbformat
import pytest

from browser import ROOT, check_attention_view, offline_book, require_chromium
from load_script import load_script
from test_notebooks import PAGE_WIDTH, exercises_start, is_solution_code, repository

pytestmark = pytest.mark.book

HTML = ROOT / "_build" / "html"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SLIDER_CHAPTERS = ("02_multihead_attention", "05_positional_encoding")

# Console errors that are not ours and break nothing, each with its reason.
KNOWN_HARMLESS = {
    # jupyter-book 1.x puts sphinx-thebe's configuration <script> into the page twice; the
    # second declaration fails, and Thebe (live code in the page) is not used by this book.
    "THEBE_JS_URL": re.compile(r"Identifier 'THEBE_JS_URL' has already been declared"),
    # @jupyter-widgets/html-manager 1.x calls MathJax 2's MathJax.Hub.Queue to typeset widget
    # labels; with MathJax 3 (the page's math) that call fails. Our widget labels hold no math.
    "html-manager MathJax 2 API": re.compile(r"reading 'Queue'"),
    # The same bundle asks for its Font Awesome fonts relative to the page (webpack publicPath),
    # which 404s on any host; only icon glyphs are affected.
    "html-manager icon fonts":
        re.compile(r"Failed to load resource: the server responded with a status of 404"),
    # pydata-sphinx-theme, on a fresh profile with no stored light/dark preference.
    "theme mode": re.compile(r"Got invalid theme mode"),
}


def not_known_harmless(errors) -> list:
    """The page errors that :data:`KNOWN_HARMLESS` does not explain: ours."""
    return [e for e in errors if not any(rx.search(e) for rx in KNOWN_HARMLESS.values())]


FONT_404 = re.compile(r"/@jupyter-widgets/html-manager/dist/[0-9a-f]+\.(woff2?|ttf|eot|svg)$")


def _built():
    if not (HTML / "index.html").is_file():
        if os.environ.get("CI"):
            pytest.fail("the book is not built: run `make test` (it builds the book first)")
        pytest.skip("the book is not built (run `make book`)")
    return HTML


def _pages():
    return sorted(p for p in _built().rglob("*.html")
                  if not {"_static", "_sources", "_images"} & set(p.relative_to(HTML).parts))


def test_every_internal_link_resolves():
    from bs4 import BeautifulSoup

    ids_cache = {}

    def ids_of(path):
        if path not in ids_cache:
            soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
            ids_cache[path] = {t["id"] for t in soup.find_all(id=True)}
        return ids_cache[path]

    broken = []
    for page in _pages():
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for a in soup.find_all("a", href=True):
            href = a["href"]
            if urlparse(href).scheme or href.startswith(("mailto:", "javascript:")):
                continue
            target, fragment = urldefrag(urljoin(page.relative_to(HTML).as_posix(), href))
            path = HTML / unquote(target) if target else page
            if path.is_dir():
                path = path / "index.html"
            if not path.is_file():
                broken.append(f"{page.relative_to(HTML)}: {href}")
            elif fragment and path.suffix == ".html" and fragment not in ids_of(path):
                broken.append(f"{page.relative_to(HTML)}: {href} (no #{fragment})")
    assert not broken, "broken internal links:\n" + "\n".join(broken)


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory):
    require_chromium()
    if not (ROOT / ".vendor" / "npm").is_dir():
        pytest.fail("run scripts/fetch_vendor_js.py first (`make test` does)")
    with offline_book(_built(), tmp_path_factory.mktemp("chromium-profile")) as opened:
        yield opened


def _visit(page, url):
    """Load ``url``; return the JavaScript errors that are not known to be harmless."""
    errors = []

    def on_console(message):
        if message.type == "error":
            errors.append(message.text)

    def on_error(error):
        errors.append(error.message)

    def on_response(response):
        if response.status >= 400 and not FONT_404.search(response.url):
            errors.append(f"HTTP {response.status} for {response.url}")

    page.on("console", on_console)
    page.on("pageerror", on_error)
    page.on("response", on_response)
    try:
        page.goto(url, wait_until="networkidle")
        page.wait_for_timeout(300)
    finally:
        page.remove_listener("console", on_console)
        page.remove_listener("pageerror", on_error)
        page.remove_listener("response", on_response)
    return not_known_harmless(errors)


def test_every_page_loads_without_javascript_errors(browser_page):
    server, routes, page = browser_page
    problems = {}
    for path in _pages():
        errors = _visit(page, server.url + path.relative_to(HTML).as_posix())
        if errors:
            problems[path.name] = errors
    assert not problems, problems
    assert not routes.missing, f"CDN files missing from .vendor: {routes.missing}"


@pytest.mark.parametrize("chapter", [p.stem for p in NOTEBOOKS])
def test_chapter_shows_figures_and_math(browser_page, chapter):
    server, _, page = browser_page
    assert not _visit(page, f"{server.url}notebooks/{chapter}.html")
    figures = page.locator(".cell_output img")
    assert figures.count() >= 1, "no figure"
    assert page.evaluate("Array.from(document.querySelectorAll('.cell_output img'))"
                         ".some(img => img.complete && img.naturalWidth > 50)"), "no figure rendered"
    assert page.locator("mjx-container").count() >= 1, "no rendered math"


def _show_source_calls(path):
    nb = nbformat.read(path, as_version=4)
    return sum(c.source.count("show_source(") for c in nb.cells if c.cell_type == "code")


def test_code_listings_fit_the_page(browser_page):
    """No ``show_source`` listing (the library's own code) scrolls sideways in the 1280-pixel-wide
    window of ``launch``: ruff's line limit in pyproject.toml keeps every line within the listing."""
    server, _, page = browser_page
    too_wide, counted = [], 0
    for path in NOTEBOOKS:
        assert not _visit(page, f"{server.url}notebooks/{path.stem}.html")
        assert page.viewport_size["width"] == 1280
        listings = page.evaluate("""() => Array.from(
            document.querySelectorAll('.cell_output .output.text_html .highlight pre'),
            pre => ({scroll: pre.scrollWidth, client: pre.clientWidth,
                     first: pre.textContent.split('\\n')[0]}))""")
        assert len(listings) == _show_source_calls(path), f"{path.stem}: listings not found"
        counted += len(listings)
        too_wide += [f"{path.stem}: {x['first']!r} ({x['scroll']} > {x['client']} px)"
                     for x in listings if x["scroll"] > x["client"]]
    assert counted >= 20
    assert not too_wide, "listings that scroll sideways:\n" + "\n".join(too_wide)


def test_code_cells_and_their_outputs_fit_the_page(browser_page):
    """At 1280 pixels nothing a chapter shows is cut off: every code cell (folded solutions
    opened) fits its box, since its lines fit 77 columns (test_notebooks) and a folded cell's box
    is as wide as the others (_static/outputs.css); printed outputs wrap instead of scrolling.
    Before that stylesheet, folded cells of 76-77 columns and long printed lines (a config's
    repr) scrolled sideways here."""
    server, _, page = browser_page
    too_wide, counted = [], 0
    for path in NOTEBOOKS:
        assert not _visit(page, f"{server.url}notebooks/{path.stem}.html")
        boxes = page.evaluate("""() => {
            document.querySelectorAll('details.hide').forEach(d => { d.open = true; });
            return Array.from(document.querySelectorAll(
                '.cell_input pre, .cell_output > .output > pre, .cell_output pre.stdout'),
              pre => ({scroll: pre.scrollWidth, client: pre.clientWidth,
                       line: pre.textContent.split('\\n').reduce(
                         (a, b) => (b.length > a.length ? b : a), '')}));
        }""")
        counted += len(boxes)
        too_wide += [f"{path.stem}: {x['line']!r} ({x['scroll']} > {x['client']} px)"
                     for x in boxes if x["scroll"] > x["client"] + 1]
    assert counted >= 200
    assert not too_wide, "boxes that scroll sideways:\n" + "\n".join(too_wide)


def wide_printed_lines(html: str, width: int = PAGE_WIDTH) -> list[str]:
    """The lines a page prints (its cells' text outputs) wider than ``width`` columns. The page
    wraps them rather than scrolling (test above), but a wrapped table loses its columns, and
    Colab and Jupyter do not wrap at all."""
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(html, "html.parser")
    return [f"{len(line)} columns: {line[:70]}"
            for pre in soup.select("div.cell_output pre")
            for line in pre.get_text().splitlines() if len(line) > width]


def test_the_print_width_check_catches_a_wide_line():
    page = ('<div class="cell_output"><div class="output stream highlight-myst-ansi">'
            '<div class="highlight"><pre><span></span>{}\n</pre></div></div></div>')
    assert wide_printed_lines(page.format("x" * PAGE_WIDTH)) == []
    assert len(wide_printed_lines(page.format("table row " * 8))) == 1


def test_printed_lines_fit_the_page():
    wide = [f"{page.relative_to(HTML)}: {line}" for page in _pages()
            for line in wide_printed_lines(page.read_text(encoding="utf-8"))]
    assert not wide, f"{len(wide)} printed lines wider than {PAGE_WIDTH} columns:\n" + \
        "\n".join(wide)


def _visible_image_digests(widget):
    return [hashlib.md5((img.get_attribute("src") or "").encode()).hexdigest()
            for img in widget.locator("img").all() if img.is_visible()]


def _wait_for(condition, timeout_s=10.0, step_s=0.1):
    """Poll ``condition()`` until it returns something truthy (the page renders asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step_s)


@pytest.mark.parametrize("chapter", SLIDER_CHAPTERS)
def test_moving_a_slider_changes_the_figure(browser_page, chapter):
    server, _, page = browser_page
    assert not _visit(page, f"{server.url}notebooks/{chapter}.html")
    slider = page.locator(".widget-slider").first
    slider.scroll_into_view_if_needed()
    widget = page.locator(".jupyter-widgets.widget-vbox", has=slider).first
    before = _wait_for(lambda: _visible_image_digests(widget))
    assert len(before) == 1, f"expected one visible figure in the widget, saw {len(before)}"
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(shots / f"{chapter}-before.png"))
    slider.locator(".noUi-handle").first.focus()
    page.keyboard.press("ArrowRight")
    after = _wait_for(lambda: (d := _visible_image_digests(widget)) != before and len(d) == 1 and d)
    widget.screenshot(path=str(shots / f"{chapter}-after.png"))
    page.screenshot(path=str(shots / f"{chapter}-page.png"))
    assert after and after != before, "the figure did not change"


def test_translator_attention_view_responds(browser_page):
    """Chapter 8's attention view, in the static page: hovering, and every control."""
    server, _, page = browser_page
    assert not _visit(page, f"{server.url}notebooks/08_translator.html")
    view = page.locator(".tl-av").first
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    check_attention_view(page, view, shots, "08_translator-attention-view")
    sentences = view.locator("select.tl-av-sentence option")
    assert sentences.count() == 4
    first = view.locator(".tl-av-head-view").text_content()
    view.locator("select.tl-av-sentence").select_option("1")
    assert view.locator(".tl-av-head-view").text_content() != first
    view.screenshot(path=str(shots / "08_translator-attention-view-after.png"))
    # readable in both themes: its text contrasts with the background it is drawn on (in the
    # dark theme the book gives HTML outputs a light background, and the view's text follows)
    contrast = """view => { const lum = c => c.match(/\\d+(\\.\\d+)?/g).slice(0, 3)
            .map(Number).reduce((a, b) => a + b) / 765;
        const text = lum(getComputedStyle(view.querySelector('.tl-av-token text')).fill);
        let n = view, bg = null;
        while (n && !bg) { const c = getComputedStyle(n).backgroundColor;
            if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') bg = c; n = n.parentElement; }
        return Math.abs(text - lum(bg || 'rgb(255, 255, 255)')); }"""
    for theme in ("light", "dark"):
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        page.wait_for_timeout(200)
        assert view.evaluate(contrast) > 0.5, theme
    view.screenshot(path=str(shots / "08_translator-attention-view-dark.png"))
    page.evaluate("document.documentElement.dataset.theme = 'light'")


def test_multihead_attention_view_responds(browser_page):
    server, _, page = browser_page
    assert not _visit(page, f"{server.url}notebooks/02_multihead_attention.html")
    check_attention_view(page, page.locator(".tl-av").first)


def test_pages_are_light():
    """No chapter page above 1.5 MB of HTML (where static widgets keep their images), and the
    translator's at most a third of the 3.1 MB its image-stack explorer weighed. The figures
    jupyter-book writes to _images/ are printed too, not limited."""
    from bs4 import BeautifulSoup

    html, images = {}, {}
    for page in (_built() / "notebooks" / f"{path.stem}.html" for path in NOTEBOOKS):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        files = {(page.parent / img["src"]).resolve() for img in soup.find_all("img", src=True)
                 if not urlparse(img["src"]).scheme and not img["src"].startswith("data:")}
        html[page.stem] = page.stat().st_size
        images[page.stem] = sum(p.stat().st_size for p in files if p.is_file())
    for name in html:
        print(f"{name}: {html[name] / 1e6:.2f} MB of HTML, {images[name] / 1e6:.2f} MB of images")
    assert max(html.values()) <= 1.5e6, html
    assert html["08_translator"] <= 3.1e6 / 3, html


def test_architecture_figure_links_each_box_to_its_chapter(browser_page):
    """The introduction's and chapter 6's figure of the model: drawn, with a link on every box to
    the chapter that builds it, and a click that opens that chapter."""
    server, _, page = browser_page
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    for url, name in ((f"{server.url}book/intro.html", "intro"),
                      (f"{server.url}notebooks/06_encoder_decoder.html", "06_encoder_decoder")):
        assert not _visit(page, url)
        figure = page.locator("svg[aria-label='The Transformer encoder-decoder']").first
        figure.scroll_into_view_if_needed()
        box = figure.bounding_box()
        assert box and box["width"] > 400 and box["height"] > 400, box
        figure.screenshot(path=str(shots / f"architecture-{name}.png"))
        links = figure.locator("a")
        stems = {re.search(r"(\d\d_\w+)\.html$", links.nth(i).get_attribute("href")).group(1)
                 for i in range(links.count())}
        # every chapter that builds a part of the model (chapter 1's attention is inside
        # chapter 2's heads; chapter 7 builds the loss and the decoding that take the softmax;
        # chapters 9 and 10 train it and Details and detours measures its parts further; they
        # add no part of it; the GPT chapter builds another model)
        builders = {p.stem for p in NOTEBOOKS} - {"01_attention", "09_experiments", "10_variations",
                                                  "11_details_and_detours", "12_gpt"}
        assert stems == builders, stems
    figure.locator("a", has_text="PositionWiseFFN").first.click()
    page.wait_for_load_state("networkidle")
    assert page.url.endswith("notebooks/03_ffn.html"), page.url


def test_decoding_time_plot_is_drawn(browser_page):
    server, _, page = browser_page
    assert not _visit(page, f"{server.url}notebooks/06_encoder_decoder.html")
    # the first figure of the section "What the cache saves, measured" is the timing plot
    plot = page.locator("section#what-the-cache-saves-measured .cell_output img").first
    plot.scroll_into_view_if_needed()
    assert plot.evaluate("img => img.complete && img.naturalWidth > 300")
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    plot.screenshot(path=str(shots / "06_encoder_decoder-decoding-time.png"))


# chapter 9 (experiments) has no exercises: it ends with suggestions in its prose
@pytest.mark.parametrize("chapter", [p.stem for p in NOTEBOOKS
                                     if exercises_start(nbformat.read(p, 4).cells) is not None])
def test_solutions_stay_folded_until_opened(browser_page, chapter):
    """Every solution's prose (<details class="solution">) and code (a hide-cell toggle) is folded
    when the page loads, and opens on a click."""
    server, _, page = browser_page
    assert not _visit(page, f"{server.url}notebooks/{chapter}.html")
    solutions = page.locator("details.solution")
    code_cells = sum(map(is_solution_code,
                         nbformat.read(ROOT / "notebooks" / f"{chapter}.ipynb", 4).cells))
    toggles = page.locator(".tag_hide-cell", has=page.locator("pre", has_text="@title Solution"))
    assert solutions.count() >= 1 and toggles.count() == code_cells
    for i in range(solutions.count()):
        details = solutions.nth(i)
        assert details.get_attribute("open") is None
        body = details.locator("p").first
        assert not body.is_visible()
        details.locator("summary").click()
        assert body.is_visible()
    for i in range(toggles.count()):
        cell = toggles.nth(i)
        assert not cell.locator(".cell_input").is_visible()
        cell.locator("summary").first.click()
        assert cell.locator(".cell_input").is_visible()


def test_launch_buttons_follow_the_repository_in_the_config():
    """Every chapter's Colab button opens that chapter in the repository and branch that _config.yml
    names (scripts/set_repository.py sets them), and the repository button points there too."""
    from bs4 import BeautifulSoup

    url, branch = repository()
    github = url.removeprefix("https://github.com/")
    for path in NOTEBOOKS:
        soup = BeautifulSoup((_built() / "notebooks" / f"{path.stem}.html").read_text(encoding="utf-8"),
                             "html.parser")
        links = [a["href"] for a in soup.find_all("a", href=True)]
        colab = f"https://colab.research.google.com/github/{github}/blob/{branch}/notebooks/{path.name}"
        assert colab in links, f"{path.stem}: no Colab button for {colab}"
        assert url in links, f"{path.stem}: no repository button for {url}"


def test_optional_asides_are_folded_and_marked():
    """Every optional aside (a markdown cell that starts <details class="aside">) is on its page
    as a closed <details> whose summary starts "Optional:", with its prose inside it."""
    from bs4 import BeautifulSoup

    reading_weight = load_script("reading_weight")    # where asides are defined and counted
    pages = [path for path, _ in reading_weight.pages() if path.suffix == ".ipynb"]
    seen = 0
    for path in pages:
        cells = [c.source for c in nbformat.read(path, 4).cells
                 if c.cell_type == "markdown" and c.source.lstrip().startswith(reading_weight.ASIDE)]
        html = _built() / path.parent.name / f"{path.stem}.html"
        asides = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser").select("details.aside")
        assert len(asides) == len(cells), f"{path.stem}: {len(asides)} asides built, {len(cells)} written"
        for aside in asides:
            assert not aside.has_attr("open"), f"{path.stem}: an aside opens by itself"
            assert aside.summary.get_text().startswith("Optional:"), aside.summary
            assert len(aside.get_text().split()) > len(aside.summary.get_text().split()) + 5
        seen += len(asides)
    assert seen >= 5, seen


def test_each_exercise_shows_its_stub_and_its_checked_solution():
    """What a reader of the static page meets: under each stub, its
    checker saying "not written yet"; in the folded solution, the same
    checker's "passed all N cases"."""
    from bs4 import BeautifulSoup

    from transformer_lib.instruments.exercises import CHECKERS

    for checker in CHECKERS:
        [path] = (ROOT / "notebooks").glob(f"{checker.chapter:02d}_*.ipynb")
        soup = BeautifulSoup((_built() / "notebooks" / f"{path.stem}.html")
                             .read_text(encoding="utf-8"), "html.parser")
        outputs = [(cell, cell.select_one(".cell_output"))
                   for cell in soup.select("div.cell")]
        stub = f"{checker.exercise}: not written yet"
        solved = f"{checker.exercise}: passed all {len(checker.cases)} cases."
        shown = [cell for cell, out in outputs if out and stub in out.get_text()]
        passed = [cell for cell, out in outputs if out and solved in out.get_text()]
        assert len(shown) == 1, f"{path.stem}: {stub!r} is not on the page once"
        assert "tag_hide-cell" not in shown[0]["class"]
        assert len(passed) == 1, f"{path.stem}: {solved!r} is not on the page once"
        assert "tag_hide-cell" in passed[0]["class"]
