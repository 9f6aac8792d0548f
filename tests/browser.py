"""A headless Chromium over the built book, offline: pages come from a local HTTP server, and
requests to jsDelivr's npm mirror are answered from ``.vendor/npm`` (see
``scripts/fetch_vendor_js.py``).  Any other outside request is refused and recorded."""

from __future__ import annotations

import functools
import http.server
import mimetypes
import os
import re
import shutil
import threading
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / ".vendor" / "npm"
JSDELIVR = re.compile(r"^https://cdn\.jsdelivr\.net/npm/((?:@[\w.-]+/)?[\w.-]+@[\w.-]+)/([^?#]*)")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class BookServer:
    """``_build/html`` on ``http://127.0.0.1:<port>/`` in a background thread."""

    def __init__(self, root: Path):
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class OfflineRoutes:
    """Answers jsDelivr npm URLs from ``.vendor/npm``; refuses and records everything else that
    is not the local server."""

    def __init__(self, local_prefix: str):
        self.local_prefix = local_prefix
        self.refused: list[str] = []
        self.missing: list[str] = []

    def __call__(self, route):
        url = route.request.url
        if url.startswith(self.local_prefix) or url.startswith("data:"):
            return route.continue_()
        match = JSDELIVR.match(url)
        if match:
            path = VENDOR / match.group(1) / match.group(2)
            if path.is_file():
                kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                return route.fulfill(status=200, body=path.read_bytes(), content_type=kind,
                                     headers={"Access-Control-Allow-Origin": "*"})
            self.missing.append(url)
            return route.fulfill(status=404, body=b"")
        self.refused.append(url)
        return route.abort()


def launch(playwright, user_data_dir: Path):
    """A persistent-context Chromium with the flags this machine needs and a fresh profile."""
    return playwright.chromium.launch_persistent_context(
        str(user_data_dir), executable_path=find_chromium(), headless=True, args=CHROMIUM_FLAGS,
        viewport={"width": 1280, "height": 1000})


def require_chromium() -> None:
    """Skip without Chromium, but fail on CI, where `make test` installs it."""
    import pytest

    if find_chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: `make test` installs it with apt-get (Debian)")
        pytest.skip("no Chromium on this machine (install the `chromium` package)")


@contextmanager
def offline_book(html: Path, user_data_dir: Path, timeout_ms: int = 30_000):
    """``(server, routes, page)``: the built book ``html`` served on 127.0.0.1 and a page of a
    fresh Chromium whose outside requests go through :class:`OfflineRoutes`."""
    from playwright.sync_api import sync_playwright

    with BookServer(html) as server, sync_playwright() as playwright:
        context = launch(playwright, user_data_dir)
        routes = OfflineRoutes(server.url)
        context.route("**/*", routes)
        page = context.new_page()
        page.set_default_timeout(timeout_ms)
        yield server, routes, page
        context.close()


# --- tl.instruments.viz.attention_view in a page (the built book and the live front-ends) -------------------
@contextmanager
def recorded_book(html: Path, user_data_dir: Path, timeout_ms: int = 60_000):
    """:func:`offline_book`, and what its page did: ``(server, routes, page, received, errors)``,
    ``received`` the ``(url, bytes, bytes gzip-compressed)`` of every response (what a static
    host that compresses sends), ``errors`` the page's uncaught errors."""
    import gzip

    with offline_book(html, user_data_dir, timeout_ms) as (server, routes, page):
        received, errors = [], []
        page.on("response", lambda r: received.append(
            (r.url, *((len(r.body()), len(gzip.compress(r.body(), 6))) if r.ok else (0, 0)))))
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield server, routes, page, received, errors


def status_when_missing(context, url: str, box: str, missing: str | None):
    """Open ``url`` in a new page of ``context`` with something a page box needs taken away
    (``missing``: a glob of files answered 404, or ``None`` for no WebAssembly), press the box's
    button (``{box}-button`` inside the first ``box``) and wait for the click to end.  Returns
    the box's status line (``{box}-status``) and the page's uncaught errors."""
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    if missing is None:
        page.add_init_script("delete window.WebAssembly;")
    else:
        page.route(missing, lambda route: route.fulfill(status=404, body=b""))
    try:
        page.goto(url, wait_until="networkidle")
        root = page.locator(box)
        root.locator(f"{box}-button").click()
        page.wait_for_function("b => (b.tlDone || 0) > 0", arg=root.element_handle())
        return root.locator(f"{box}-status").inner_text(), errors
    finally:
        page.close()


def saved_by_chapter(path: Path, chapter: str):
    """``load_checkpoint`` of the model a chapter saved for these tests (the one its page runs):
    a failure on CI when missing (the book build writes it), a skip elsewhere."""
    import pytest

    from transformer_lib.translation.checkpoint import load_checkpoint

    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing: {chapter} writes it in the book build")
        pytest.skip(f"no {path.name} from {chapter}: build the book (`make book`)")
    return load_checkpoint(path)


VISIBLE_LINES = """view => Array.from(view.querySelectorAll('.tl-av-head-view line'))
    .filter(l => l.style.display !== 'none')
    .map(l => [+l.dataset.head, +l.dataset.query, +l.dataset.key, l.getAttribute('stroke-opacity')])"""
MATRIX = """view => { const m = view.querySelector('.tl-av-matrix-view');
    return [m.dataset.head, Array.from(m.querySelectorAll('rect'),
                                       r => r.getAttribute('fill-opacity')).join(',')]; }"""


def check_attention_view(page, view, shots=None, name=""):
    """Exercise one tl.instruments.viz.attention_view on a page: pointing at a query token keeps only its
    lines, pointing at a key token only the lines into it, and the kind, layer, head and matrix
    controls change what is drawn, the matrix following the layer."""
    view.scroll_into_view_if_needed()
    lines = lambda: view.evaluate(VISIBLE_LINES)  # noqa: E731
    everything = lines()
    assert everything, "the head view draws no line"
    head_view = view.locator(".tl-av-head-view")

    def point_at(token, focus):
        # JupyterLab renders a notebook's cells lazily, so the page can still move under the
        # pointer: point again until the view says what it focuses (a few tries).
        for _ in range(5):
            token.scroll_into_view_if_needed()
            token.hover()
            if head_view.get_attribute("data-focus") == focus:
                return
            page.wait_for_timeout(200)
        assert head_view.get_attribute("data-focus") == focus

    point_at(view.locator(".tl-av-head-view .tl-av-token[data-side=query]").nth(1), "query:1")
    focused = lines()
    assert focused and {q for _, q, _, _ in focused} == {1} and len(focused) < len(everything)
    if shots is not None:
        view.screenshot(path=str(shots / f"{name}-hovered.png"))
    point_at(view.locator(".tl-av-head-view .tl-av-token[data-side=key]").nth(0), "key:0")
    into = lines()
    assert into and {k for _, _, k, _ in into} == {0}
    page.mouse.move(0, 0)
    assert lines() == everything
    before = (everything, view.evaluate(MATRIX))
    layers = view.locator("select.tl-av-layer option").count()
    if layers > 1:
        view.locator("select.tl-av-layer").select_option("1")
        after = (lines(), view.evaluate(MATRIX))
        assert after[0] != before[0] and after[1] != before[1], "layer switch changed nothing"
        before = after
    view.locator("select.tl-av-matrix-head").select_option("1")
    assert view.evaluate(MATRIX)[0] == "1" and view.evaluate(MATRIX)[1] != before[1][1]
    view.locator("input[data-head='0']").uncheck()
    assert lines() and all(head != 0 for head, *_ in lines())
    kinds = view.locator("select.tl-av-kind option")
    if kinds.count() > 1:
        label = view.locator(".tl-av-head-view").get_attribute("aria-label")
        view.locator("select.tl-av-kind").select_option(index=kinds.count() - 1)
        assert view.locator(".tl-av-head-view").get_attribute("aria-label") != label
        assert lines(), "the new kind draws no line"
