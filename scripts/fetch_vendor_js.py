"""Fetch, from the npm registry, the JavaScript that the built book loads
from a CDN at view time (require.js, the Jupyter widgets HTML manager,
MathJax), into the git-ignored folder ``.vendor/``.

The browser test serves these files in place of the CDN, so that it runs
offline and checks the very files readers get: the CDN URLs in
``_config.yml`` name npm packages with exact versions
(``https://cdn.jsdelivr.net/npm/<package>@<version>/<path>``), and
jsDelivr serves those packages' own files.  Idempotent: a package already
unpacked is not fetched again.

Run:  python scripts/fetch_vendor_js.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / ".vendor" / "npm"
CDN = re.compile(
    r"https://cdn\.jsdelivr\.net/npm/((?:@[\w.-]+/)?[\w.-]+)@([\w.-]+)/")


def cdn_packages(config_text: str) -> set[tuple[str, str]]:
    """Every ``(package, version)`` that ``_config.yml`` loads from
    jsDelivr's npm mirror."""
    return set(CDN.findall(config_text))


def npm_pack(package: str, version: str, folder: str | Path) -> Path:
    """Download ``package@version``'s tarball from the npm registry into
    ``folder``; its path.  Raises ``OSError`` (no npm) or
    ``subprocess.CalledProcessError`` (no registry, no such version)."""
    command = ["npm", "pack", f"{package}@{version}", "--silent",
               "--pack-destination", str(folder)]
    printed = subprocess.run(command, check=True, text=True,
                             capture_output=True).stdout
    return Path(folder) / printed.strip().splitlines()[-1]


def unpack(tarball: Path, dest: Path) -> None:
    """Extract an npm tarball's ``package/`` folder into ``dest``, refusing
    paths that escape it."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if (not parts or parts[0] != "package" or ".." in parts
                    or member.issym() or member.islnk()):
                continue
            member.name = str(Path(*parts[1:])) if len(parts) > 1 else "."
            tar.extract(member, dest)


def main() -> int:
    packages = cdn_packages((ROOT / "_config.yml").read_text())
    if not packages:
        print("no jsDelivr npm URLs in _config.yml", file=sys.stderr)
        return 1
    for name, version in sorted(packages):
        dest = VENDOR / f"{name}@{version}"
        if (dest / "package.json").is_file():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            unpack(npm_pack(name, version, tmp), dest)
        print(f"fetched {name}@{version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
