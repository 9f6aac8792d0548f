"""A reader's self-check: will the chapters run here, and how?

    python -m transformer_lib doctor        # in a terminal
    tl.doctor()                             # in a notebook cell

One entry per check, ``ok`` or ``!!`` with the reason and what to do,
wrapped to the book's page: a long path or URL continues on the next line.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

from ..model.transformer import PAGE_COLUMNS
from ..translation.provenance import package_version

MIN_PYTHON = (3, 10)
MIN_TORCH = (2, 3)


@dataclass
class Check:
    name: str
    ok: bool
    detail: str      # what was found
    fix: str = ""    # what to do, when not ok

    def text(self, width: int = PAGE_COLUMNS) -> str:
        """``ok  name  detail`` (or ``!!`` and the fix), in lines of at
        most ``width`` columns; continuation lines are indented."""
        mark = "ok" if self.ok else "!!"
        fix = f" -- {self.fix}" if self.fix else ""
        head = f"{mark}  {self.name:<10} "
        return _wrap(f"{self.detail}{fix}", width, head)


def _wrap(text: str, width: int, head: str) -> str:
    """Fill lines of ``width`` columns after ``head``, like ``textwrap``,
    except that a word too long for a line (a path, a URL) is cut after
    a ``/`` (or, with no ``/`` in reach, anywhere) and its pieces are
    not separated by a space."""
    room = width - len(head)
    lines, line = [], ""
    for word in text.split():
        parts = re.findall(r"[^/]*/|[^/]+", word) if len(word) > room \
            else [word]
        pieces = [part[i:i + room] for part in parts
                  for i in range(0, len(part), room)]
        for i, piece in enumerate(pieces):
            glue = "" if i > 0 or not line else " "
            if line and len(line) + len(glue) + len(piece) > room:
                lines.append(line)
                line, glue = "", ""
            line += glue + piece
    lines.append(line)
    indent = " " * len(head)
    return "\n".join([head + lines[0]] + [indent + x for x in lines[1:]])


def _major_minor(version: str) -> tuple[int, int]:
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int(minor)


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info[:2] >= MIN_PYTHON
    return Check("python", ok, version,
                 "" if ok else "the library needs Python 3.10 or newer")


def check_torch() -> Check:
    import torch

    ok = _major_minor(torch.__version__) >= MIN_TORCH
    return Check("torch", ok, torch.__version__,
                 "" if ok else "pip install 'torch>=2.3,<3'")


def check_device() -> Check:
    """The device the chapters will use, and the precision ``fit`` will
    train in there."""
    from ..translation.training import (PRECISION_VARIABLE, autocast_dtype,
                           cpu_has_native_bf16, forced_precision,
                           pick_device, precision_name)

    device = pick_device()
    dtype = autocast_dtype("auto", device)
    precision = precision_name(dtype)
    detail = f"{device}: fit trains in {precision}"
    if dtype is not None:
        detail += " autocast"
    if forced_precision():
        detail += f" (forced by ${PRECISION_VARIABLE})"
    elif device.type == "cpu":
        detail += (" (native bf16)" if cpu_has_native_bf16() else
                   " (no native bf16 on this CPU)")
    elif device.type == "cuda":
        import torch

        detail += f" on {torch.cuda.get_device_name(device)}"
    return Check("device", True, detail)


def check_widgets() -> Check:
    """ipywidgets, and whether figures with controls are precomputed
    (static) or redrawn by the kernel (live)."""
    version = package_version("ipywidgets")
    if version is None:
        return Check("widgets", False, "ipywidgets is not installed",
                     "pip install 'ipywidgets>=7.6,<9'")
    from .widgets import supports_static

    mode = "static (precomputed)" if supports_static() else "live (kernel)"
    return Check("widgets", True, f"ipywidgets {version}: figures {mode}")


def check_frontend() -> Check:
    """Whether an installed Jupyter front-end can render the widgets."""
    ipywidgets = package_version("ipywidgets")
    if "google.colab" in sys.modules or package_version("google-colab"):
        return Check("front-end", True, "Colab renders the widgets itself")
    lab, classic = package_version("jupyterlab_widgets"), package_version(
        "widgetsnbextension")
    if ipywidgets and lab:
        # jupyterlab_widgets 1.x goes with ipywidgets 7, 3.x with 8
        want = 1 if _major_minor(ipywidgets)[0] == 7 else 3
        ok = _major_minor(lab)[0] == want
        return Check("front-end", ok, f"jupyterlab_widgets {lab}",
                     "" if ok else f"pip install 'jupyterlab_widgets=="
                                   f"{want}.*' to match ipywidgets "
                                   f"{ipywidgets}")
    if ipywidgets and classic:
        return Check("front-end", True,
                     f"widgetsnbextension {classic} (classic Notebook)")
    return Check("front-end", False,
                 "no Jupyter widget front-end package found",
                 "pip install jupyterlab (or use Colab, or read the book's "
                 "static pages)")


def check_data(data_dir=None) -> Check:
    """Whether the English-French pairs are found, and where, or will be
    downloaded on first use."""
    from ..translation.download import (DATA_DIR_ENV, FRA_ENG_URL, DataError,
                           default_cache_dir, fra_eng_path)

    try:
        path = fra_eng_path(data_dir, download=False)
    except DataError as err:
        if data_dir is None and not os.environ.get(DATA_DIR_ENV):
            return Check("data", True,
                         f"fra.txt not found yet: first use downloads "
                         f"{FRA_ENG_URL} into {default_cache_dir()}")
        return Check("data", False, str(err).splitlines()[0],
                     f"point {DATA_DIR_ENV} (or data_dir) at a folder "
                     f"holding fra-eng/fra.txt")
    return Check("data", True, f"fra.txt found and verified: {path}")


def checks(data_dir=None) -> list[Check]:
    return [check_python(), check_torch(), check_device(), check_widgets(),
            check_frontend(), check_data(data_dir)]


def doctor(data_dir=None) -> bool:
    """Print each check (one line, or more for a long path); return
    whether all of them are ok."""
    results = checks(data_dir)
    for check in results:
        print(check.text())
    return all(check.ok for check in results)
