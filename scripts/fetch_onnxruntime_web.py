"""Fetch ONNX Runtime Web and Hugging Face's tokenizers.js from the npm
registry into ``_extra/ort/`` and ``_extra/tokenizers/`` (git-ignored),
which the build copies to ``ort/`` and ``tokenizers/`` at the root of the
book's site (Sphinx's ``html_extra_path``; in ``_static`` jupyter-book
would load their scripts on every page).  The in-browser translators load
them from there when a reader first asks: they are served by the book
itself, never by a CDN.

Each package is pinned by version and by the SHA-256 of its npm tarball.
Of ONNX Runtime Web only the plain WebAssembly build is kept
(``ort.wasm.min.js``, the module that loads the ``.wasm``, and the
``.wasm``: the smallest of the package's builds, 3.7 MB gzip-compressed
against 4.1, 6.7 and 6.7 MB for its jspi, asyncify and jsep builds); of
tokenizers.js its ES module (``tokenizers.min.mjs``, 37 kB), which reads
the ``tokenizer.json`` that Python's ``tokenizers`` writes.  Idempotent:
nothing is fetched when the files are there with the pinned version.

Run:  python scripts/fetch_onnxruntime_web.py   (``make book`` does)
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fetch_vendor_js import npm_pack, unpack  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [  # (npm package, version, tarball SHA-256, folder, files)
    ("onnxruntime-web", "1.30.0",
     "d2228df7e4616bc3348bf504ee888f3bec43789a273f0a63f3e68d203ce3bf71",
     "ort", ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs",
             "ort-wasm-simd-threaded.wasm")),
    ("@huggingface/tokenizers", "0.2.0",
     "2800014c83b8186b2e4210c20672f1fb65a12cef85d7e95e0f2003e022611b4a",
     "tokenizers", ("tokenizers.min.mjs",)),
]
STAMP = "VERSION.json"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    worst = 0
    for package, version, tarball_sha256, folder, files in PACKAGES:
        worst = max(worst, fetch(package, version, tarball_sha256,
                                 ROOT / "_extra" / folder, files))
    return worst


def fetch(package, version, tarball_sha256, dest, files) -> int:
    stamp = dest / STAMP
    if stamp.is_file() and all((dest / f).is_file() for f in files):
        if json.loads(stamp.read_text()).get("version") == version:
            return 0
    with tempfile.TemporaryDirectory() as tmp:
        try:
            tarball = npm_pack(package, version, tmp)
        except (OSError, subprocess.CalledProcessError) as err:
            # The book still builds; its translator box will say that the
            # runtime is missing (and the browser test fails).
            print(f"note: could not fetch {package}@{version} with npm "
                  f"({err}); the in-browser translators will not run in "
                  f"this build", file=sys.stderr)
            return 0
        if sha256(tarball) != tarball_sha256:
            print(f"{tarball.name}: SHA-256 {sha256(tarball)}, expected "
                  f"{tarball_sha256}; not installed", file=sys.stderr)
            return 1
        unpacked = Path(tmp) / "package"
        unpack(tarball, unpacked)
        dest.mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.copyfile(unpacked / "dist" / name, dest / name)
        shutil.copyfile(unpacked / "package.json", dest / "package.json")
    stamp.write_text(json.dumps({
        "package": package, "version": version,
        "tarball_sha256": tarball_sha256,
        "files": {f: sha256(dest / f) for f in files}}, indent=1))
    print(f"fetched {package}@{version} into {dest.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
