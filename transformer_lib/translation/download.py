"""Find, download and verify the English-French sentence pairs that d2l
uses.

The file is ``fra-eng/fra.txt``: tab-separated English/French sentence
pairs from the Tatoeba project, collected by manythings.org (CC-BY 2.0).
:func:`fra_eng_path` looks for a copy in this order and returns the first
one whose SHA-256 matches:

1. the ``data_dir`` argument,
2. the directory named by the environment variable
   ``TRANSFORMER_LIB_DATA``,
3. the user cache (``$XDG_CACHE_HOME/transformer_lib`` or
   ``~/.cache/transformer_lib``),
4. a fresh download of d2l's ``fra-eng.zip`` into that cache.

A directory qualifies if it holds ``fra-eng/fra.txt`` or ``fra.txt``
directly.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

FRA_ENG_URL = "http://d2l-data.s3-accelerate.amazonaws.com/fra-eng.zip"
FRA_ENG_ZIP_SHA1 = "94646ad1522d915e7b0f9296181140edcf86a4f5"
FRA_TXT_SHA256 = (
    "0bb85dbaa1c896844649094d7eaf2e34bee34e84fe362b26ce7e8f2e12aae104")
DATA_DIR_ENV = "TRANSFORMER_LIB_DATA"
DOWNLOAD_TIMEOUT = 60.0  # seconds without data before a download gives up

# (resolved path, size, mtime_ns) -> the SHA-256 that file was verified
# against.
_verified: dict[tuple[str, int, int], str] = {}


class DataError(RuntimeError):
    """The data is missing, corrupted, unsafe, or could not be
    downloaded."""


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/transformer_lib``, or
    ``~/.cache/transformer_lib``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "transformer_lib"


def _hash_file(path: Path, algorithm: str) -> str:
    """Hex digest of a file, read in 1 MiB chunks so that memory use stays
    flat."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verify(path: Path, sha256: str) -> Path:
    """Return ``path`` if its SHA-256 is ``sha256``; remember the answer
    until the file changes."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if _verified.get(key) != sha256:
        actual = _hash_file(path, "sha256")
        if actual != sha256:
            raise DataError(f"{path} is corrupted or a different version "
                            f"of fra.txt: SHA-256 checksum mismatch "
                            f"(expected {sha256}, got {actual})")
        _verified[key] = sha256
    return path


def _find_in(directory: Path) -> Path | None:
    """``directory/fra-eng/fra.txt`` or ``directory/fra.txt``, whichever
    exists first."""
    for candidate in (directory / "fra-eng" / "fra.txt",
                      directory / "fra.txt"):
        if candidate.is_file():
            return candidate
    return None


def _where_to_put_it(cache: Path, url: str) -> str:
    return (f"Put fra.txt in one of these places:\n"
            f"  - a directory passed as the data_dir argument, e.g. "
            f"fra_eng_path('/path/to/data')\n"
            f"  - the environment variable {DATA_DIR_ENV}=/path/to/data "
            f"(a directory containing fra-eng/fra.txt)\n"
            f"  - the cache: {cache / 'fra-eng' / 'fra.txt'}\n"
            f"Get it from {url} (unzip it; the archive holds "
            f"fra-eng/fra.txt).")


def _download(url: str, dest: Path, sha1: str, help_text: str) -> None:
    """Stream ``url`` to a temporary file beside ``dest``, check its SHA-1,
    then move it into place."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent,
                                    prefix=dest.name + ".", suffix=".part")
    digest = hashlib.sha1()
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(
                        url, timeout=DOWNLOAD_TIMEOUT) as response:
                    if response.status != 200:
                        raise DataError(f"downloading {url} failed: HTTP "
                                        f"status {response.status}")
                    for chunk in iter(lambda: response.read(1 << 20), b""):
                        digest.update(chunk)
                        out.write(chunk)
            except urllib.error.HTTPError as e:
                # 404, 403, ...: the server answered
                raise DataError(f"downloading {url} failed: HTTP status "
                                f"{e.code}\n{help_text}") from e
            except (urllib.error.URLError, http.client.HTTPException,
                    OSError) as e:  # offline
                raise DataError(f"downloading {url} failed ({e}).\n"
                                f"{help_text}") from e
        if digest.hexdigest() != sha1:
            raise DataError(f"SHA-1 checksum mismatch for the download "
                            f"from {url}: expected {sha1}, got "
                            f"{digest.hexdigest()}")
        # atomic: dest is either absent or complete
        os.replace(tmp_name, dest)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _extract(zip_path: Path, target: Path, sha256: str) -> Path:
    """Safely extract ``fra-eng/`` from ``zip_path`` into ``target`` and
    return its fra.txt.

    Members that would land outside ``target`` (absolute paths, ``..``) are
    refused.  The archive is unpacked into a temporary directory and moved
    into place in one step, so an interrupted extraction never leaves a
    half-written ``fra-eng/`` behind.
    """
    root = target.resolve()
    with zipfile.ZipFile(zip_path) as archive:
        for name in archive.namelist():
            parts = PurePosixPath(name.replace("\\", "/"))
            inside = (root / parts).resolve().is_relative_to(root)
            if parts.is_absolute() or ".." in parts.parts or not inside:
                raise DataError(f"refusing to extract {zip_path}: member "
                                f"{name!r} would be written outside "
                                f"{root}")
        tmp = Path(tempfile.mkdtemp(dir=root, prefix=".extract-"))
        try:
            archive.extractall(tmp)
            found = _find_in(tmp)
            if found is None:
                raise DataError(f"{zip_path} contains no fra-eng/fra.txt")
            # a bad file never reaches its final place
            _verify(found, sha256)
            final = root / "fra-eng"
            # left over without fra.txt, or we would not be here
            if final.exists():
                shutil.rmtree(final)
            os.replace(found.parent, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final / "fra.txt"


def fra_eng_path(data_dir: str | os.PathLike | None = None, *,
                 download: bool = True,
                 url: str = FRA_ENG_URL, zip_sha1: str = FRA_ENG_ZIP_SHA1,
                 txt_sha256: str = FRA_TXT_SHA256,
                 cache_dir: str | os.PathLike | None = None) -> Path:
    """Return the path of a verified ``fra.txt``, downloading it into the
    cache if needed.

    An explicit ``data_dir`` (or ``$TRANSFORMER_LIB_DATA``) must hold the
    file: if it does not, a :class:`DataError` names the directory instead
    of silently looking elsewhere.  With ``download=False`` a missing file
    is an error that says where to put it.
    """
    if data_dir is not None:
        explicit, source = (Path(data_dir).expanduser(),
                            "the data_dir argument")
    elif os.environ.get(DATA_DIR_ENV):
        explicit, source = (Path(os.environ[DATA_DIR_ENV]).expanduser(),
                            f"${DATA_DIR_ENV}")
    else:
        explicit = None
    if explicit is not None:
        found = _find_in(explicit)
        if found is None:
            raise DataError(f"{source} points to {explicit}, but it "
                            f"contains neither fra-eng/fra.txt nor "
                            f"fra.txt")
        return _verify(found, txt_sha256)

    cache = (Path(cache_dir).expanduser() if cache_dir is not None
             else default_cache_dir())
    found = _find_in(cache)
    if found is None:
        help_text = _where_to_put_it(cache, url)
        if not download:
            raise DataError(f"fra.txt not found (download=False).\n"
                            f"{help_text}")
        zip_path = cache / "fra-eng.zip"
        if not (zip_path.is_file()
                and _hash_file(zip_path, "sha1") == zip_sha1):
            _download(url, zip_path, zip_sha1, help_text)
        found = _extract(zip_path, cache, txt_sha256)
    return _verify(found, txt_sha256)


def read_fra_eng(data_dir: str | os.PathLike | None = None,
                 **kwargs) -> str:
    """The text of the verified ``fra.txt`` (UTF-8); ``kwargs`` go to
    :func:`fra_eng_path`."""
    return fra_eng_path(data_dir, **kwargs).read_text(encoding="utf-8")
