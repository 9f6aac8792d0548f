"""A headless Chromium over the built book, offline: pages come from a local HTTP server, and
requests to jsDelivr's npm mirror are answered from ``.vendor/npm`` (see
``scripts/fetch_vendor_js.py``).  Any other outside request is refused and recorded."""

from __future__ import annotations

import functools
import http.server
import mimetypes
import re
import shutil
import threading
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
