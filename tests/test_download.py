"""Finding, downloading and verifying fra.txt, with small fake files and a local HTTP server."""

from __future__ import annotations

import hashlib
import io
import os
import socket
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from transformer_lib.translation import download as dl
from transformer_lib.translation.download import DATA_DIR_ENV, DataError, fra_eng_path, read_fra_eng

FAKE_TEXT = "Go.\tVa !\nHi.\tSalut !\nRun!\tCours !\n"
FAKE_BYTES = FAKE_TEXT.encode("utf-8")
FAKE_SHA256 = hashlib.sha256(FAKE_BYTES).hexdigest()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """No test sees the real environment variable or writes to the real user cache."""
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def _write(directory: Path, layout: str = "fra-eng/fra.txt", data: bytes = FAKE_BYTES) -> Path:
    path = directory / layout
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _zip(members: dict[str, bytes]) -> tuple[bytes, str]:
    """An in-memory zip archive and its SHA-1."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data)  # ZipInfo keeps the name verbatim
    return buffer.getvalue(), hashlib.sha1(buffer.getvalue()).hexdigest()


@pytest.fixture
def server():
    """A local HTTP server on 127.0.0.1: ``files[path] = bytes`` to serve, anything else is 404."""
    files: dict[str, bytes] = {}
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):  # keep the test output clean
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # poll every 10 ms (default 0.5 s) so that shutdown() at teardown returns at once
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield base, files, requests
    httpd.shutdown()
    httpd.server_close()


# --- finding a local copy ------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["fra-eng/fra.txt", "fra.txt"])
def test_finds_file_in_data_dir_with_either_layout(tmp_path, layout):
    expected = _write(tmp_path / "data", layout)
    assert fra_eng_path(tmp_path / "data", txt_sha256=FAKE_SHA256, download=False) == expected
    assert fra_eng_path(str(tmp_path / "data"), txt_sha256=FAKE_SHA256) == expected


def test_finds_file_via_env_var(tmp_path, monkeypatch):
    expected = _write(tmp_path / "data")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    assert fra_eng_path(txt_sha256=FAKE_SHA256, download=False) == expected


def test_finds_file_in_cache_dir(tmp_path):
    expected = _write(tmp_path / "cache")
    assert fra_eng_path(cache_dir=tmp_path / "cache", txt_sha256=FAKE_SHA256,
                        download=False) == expected


def test_default_cache_dir_follows_xdg_cache_home(tmp_path):
    expected = _write(tmp_path / "xdg" / "transformer_lib")
    assert dl.default_cache_dir() == tmp_path / "xdg" / "transformer_lib"
    assert fra_eng_path(txt_sha256=FAKE_SHA256, download=False) == expected


def test_argument_beats_env_var_and_env_var_beats_cache(tmp_path, monkeypatch):
    arg, env, cache = (_write(tmp_path / name) for name in ("arg", "env", "cache"))
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "env"))
    kwargs = dict(cache_dir=tmp_path / "cache", txt_sha256=FAKE_SHA256, download=False)
    assert fra_eng_path(tmp_path / "arg", **kwargs) == arg
    assert fra_eng_path(**kwargs) == env
    monkeypatch.delenv(DATA_DIR_ENV)
    assert fra_eng_path(**kwargs) == cache


def test_explicit_dir_without_file_names_the_dir(tmp_path):
    _write(tmp_path / "cache")  # a good copy elsewhere must not be used silently
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="data_dir") as info:
        fra_eng_path(empty, cache_dir=tmp_path / "cache", txt_sha256=FAKE_SHA256)
    assert str(empty) in str(info.value)


def test_env_var_dir_without_file_names_the_dir(tmp_path, monkeypatch):
    _write(tmp_path / "cache")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match=DATA_DIR_ENV) as info:
        fra_eng_path(cache_dir=tmp_path / "cache", txt_sha256=FAKE_SHA256)
    assert str(tmp_path / "nowhere") in str(info.value)


def test_corrupted_file_is_rejected_with_checksum_message(tmp_path):
    path = _write(tmp_path, data=FAKE_BYTES.replace(b"Salut", b"Salux"))
    with pytest.raises(DataError, match="checksum") as info:
        fra_eng_path(tmp_path, txt_sha256=FAKE_SHA256)
    message = str(info.value)
    assert "corrupted or a different version" in message and FAKE_SHA256 in message
    assert str(path) in message


def test_verification_is_cached_until_the_file_changes(tmp_path, monkeypatch):
    path = _write(tmp_path)
    calls = []
    real_hash = dl._hash_file
    monkeypatch.setattr(dl, "_hash_file", lambda p, a: calls.append(p) or real_hash(p, a))
    for _ in range(3):
        fra_eng_path(tmp_path, txt_sha256=FAKE_SHA256)
    assert len(calls) == 1
    path.write_bytes(FAKE_BYTES.upper())  # same size, new content and mtime
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    with pytest.raises(DataError, match="checksum"):
        fra_eng_path(tmp_path, txt_sha256=FAKE_SHA256)


def test_missing_file_without_download_says_where_to_put_it(tmp_path):
    with pytest.raises(DataError) as info:
        fra_eng_path(cache_dir=tmp_path / "cache", download=False, url="http://example.invalid/x.zip")
    message = str(info.value)
    assert f"{DATA_DIR_ENV}=/path/to/data" in message and "fra-eng/fra.txt" in message
    assert str(tmp_path / "cache") in message and "http://example.invalid/x.zip" in message
    assert not (tmp_path / "cache").exists()


def test_read_fra_eng_returns_the_text(tmp_path):
    _write(tmp_path)
    assert read_fra_eng(tmp_path, txt_sha256=FAKE_SHA256) == FAKE_TEXT


# --- downloading ---------------------------------------------------------------------------


def test_download_extracts_and_verifies(tmp_path, server):
    base, files, requests = server
    files["/fra-eng.zip"], sha1 = _zip({"fra-eng/_about.txt": b"about", "fra-eng/fra.txt": FAKE_BYTES})
    cache = tmp_path / "cache"
    kwargs = dict(cache_dir=cache, url=base + "/fra-eng.zip", zip_sha1=sha1, txt_sha256=FAKE_SHA256)
    path = fra_eng_path(**kwargs)
    assert path == cache / "fra-eng" / "fra.txt" and path.read_bytes() == FAKE_BYTES
    assert (cache / "fra-eng" / "_about.txt").read_bytes() == b"about"
    assert sorted(p.name for p in cache.iterdir()) == ["fra-eng", "fra-eng.zip"]  # no temp files
    assert fra_eng_path(**kwargs) == path and requests == ["/fra-eng.zip"]  # served from the cache


def test_download_http_error_reports_status_and_url(tmp_path, server):
    base, _, _ = server
    url = base + "/missing.zip"
    with pytest.raises(DataError, match="404") as info:
        fra_eng_path(cache_dir=tmp_path / "cache", url=url, zip_sha1="0" * 40, txt_sha256=FAKE_SHA256)
    assert url in str(info.value)
    assert list((tmp_path / "cache").iterdir()) == []


def test_network_error_says_download_failed_and_where_to_put_the_file(tmp_path):
    with socket.socket() as s:  # a port that nobody listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DataError, match="download") as info:
        fra_eng_path(cache_dir=tmp_path / "cache", url=f"http://127.0.0.1:{port}/fra-eng.zip",
                     zip_sha1="0" * 40, txt_sha256=FAKE_SHA256)
    assert "failed" in str(info.value) and DATA_DIR_ENV in str(info.value)


def test_zip_with_wrong_sha1_leaves_nothing_behind(tmp_path, server):
    base, files, _ = server
    files["/fra-eng.zip"], sha1 = _zip({"fra-eng/fra.txt": FAKE_BYTES})
    with pytest.raises(DataError, match="checksum mismatch") as info:
        fra_eng_path(cache_dir=tmp_path / "cache", url=base + "/fra-eng.zip", zip_sha1="0" * 40,
                     txt_sha256=FAKE_SHA256)
    assert "0" * 40 in str(info.value) and sha1 in str(info.value)
    assert list((tmp_path / "cache").rglob("*")) == []


@pytest.mark.parametrize("evil", ["../evil.txt", "fra-eng/../../evil.txt", "ABSOLUTE"])
def test_zip_with_member_outside_target_is_refused(tmp_path, server, evil):
    base, files, _ = server
    name = str(tmp_path / "evil.txt") if evil == "ABSOLUTE" else evil
    files["/fra-eng.zip"], sha1 = _zip({"fra-eng/fra.txt": FAKE_BYTES, name: b"pwned"})
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="outside") as info:
        fra_eng_path(cache_dir=cache, url=base + "/fra-eng.zip", zip_sha1=sha1, txt_sha256=FAKE_SHA256)
    assert repr(name) in str(info.value)
    assert not (tmp_path / "evil.txt").exists() and not (cache / "fra-eng").exists()
    assert [p.name for p in cache.iterdir()] == ["fra-eng.zip"]  # no half-extracted data


def test_downloaded_fra_txt_with_wrong_content_is_not_put_in_place(tmp_path, server):
    base, files, _ = server
    files["/fra-eng.zip"], sha1 = _zip({"fra-eng/fra.txt": b"not the real thing\n"})
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="checksum"):
        fra_eng_path(cache_dir=cache, url=base + "/fra-eng.zip", zip_sha1=sha1, txt_sha256=FAKE_SHA256)
    assert [p.name for p in cache.iterdir()] == ["fra-eng.zip"]


# --- the real data -------------------------------------------------------------------------


def test_real_shared_copy_verifies(data_dir):
    path = fra_eng_path(data_dir, download=False)
    with open(path, encoding="utf-8") as f:
        assert f.readline() == "Go.\tVa !\n"
