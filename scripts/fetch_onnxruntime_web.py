"""Fetch ONNX Runtime Web from the npm registry into ``_extra/ort/``
(git-ignored), which the build copies to ``ort/`` at the root of the
book's site (Sphinx's ``html_extra_path``; in ``_static`` jupyter-book
would load its script on every page).  Chapter 8's in-browser translator
loads it from there when a reader first asks: the runtime is served by
the book itself, never by a CDN.

The package is pinned by version and by the SHA-256 of its npm tarball;
only the WebAssembly build is kept (``ort.wasm.min.js``, the module that
loads the ``.wasm``, and the ``.wasm``).  Idempotent: nothing is fetched
when the files are there with the pinned version.

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
from fetch_vendor_js import unpack  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEST = ROOT / "_extra" / "ort"
PACKAGE, VERSION = "onnxruntime-web", "1.30.0"
TARBALL_SHA256 = \
    "d2228df7e4616bc3348bf504ee888f3bec43789a273f0a63f3e68d203ce3bf71"
FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs",
         "ort-wasm-simd-threaded.wasm")
STAMP = "VERSION.json"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    stamp = DEST / STAMP
    if stamp.is_file() and all((DEST / f).is_file() for f in FILES):
        if json.loads(stamp.read_text()).get("version") == VERSION:
            return 0
    with tempfile.TemporaryDirectory() as tmp:
        command = ["npm", "pack", f"{PACKAGE}@{VERSION}", "--silent",
                   "--pack-destination", tmp]
        try:
            printed = subprocess.run(command, check=True, text=True,
                                     capture_output=True).stdout
        except (OSError, subprocess.CalledProcessError) as err:
            # The book still builds; its translator box will say that the
            # runtime is missing (and the browser test fails).
            print(f"note: could not fetch {PACKAGE}@{VERSION} with npm "
                  f"({err}); chapter 8's in-browser translator will not "
                  f"run in this build", file=sys.stderr)
            return 0
        tarball = Path(tmp) / printed.strip().splitlines()[-1]
        if sha256(tarball) != TARBALL_SHA256:
            print(f"{tarball.name}: SHA-256 {sha256(tarball)}, expected "
                  f"{TARBALL_SHA256}; not installed", file=sys.stderr)
            return 1
        unpacked = Path(tmp) / "package"
        unpack(tarball, unpacked)
        DEST.mkdir(parents=True, exist_ok=True)
        for name in FILES:
            shutil.copyfile(unpacked / "dist" / name, DEST / name)
        shutil.copyfile(unpacked / "package.json", DEST / "package.json")
    stamp.write_text(json.dumps({
        "package": PACKAGE, "version": VERSION,
        "tarball_sha256": TARBALL_SHA256,
        "files": {f: sha256(DEST / f) for f in FILES}}, indent=1))
    print(f"fetched {PACKAGE}@{VERSION} into {DEST.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
