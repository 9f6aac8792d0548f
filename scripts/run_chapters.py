"""Execute chapters headless, as a reader's "Run all" would, and time each.

Run:  python scripts/run_chapters.py                  (every chapter)
      python scripts/run_chapters.py 07 08 --set GPU_MINUTES=1 --out runs/

Each chapter runs in a fresh kernel from the notebooks' folder (as the
book's build runs it); a chapter that fails does not stop the others. The
script prints one line per chapter (its wall time, or the failing cell and
the error) and exits with 1 if any failed. With ``--out`` it also writes
each executed notebook, its printed text (``NN_name.txt``) and
``times.json``, after every chapter, so a run cut short keeps what it did.

``--deadline SECONDS`` interrupts the kernel once that much time has
passed since the script started (the chapter then fails in the cell it
was running, and what it did so far is written): a time cap that, unlike
an outer ``timeout``, keeps the partial notebook.

``--set NAME=VALUE`` replaces the first line ``NAME = ...`` of a chapter's
code by ``NAME = VALUE`` before it runs (e.g. chapter 8's ``GPU_MINUTES``,
to check the GPU branch in less time); a chapter that has no such line is
left as it is. This is how the GPU checks of docs/gpu.md were run.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import threading
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def chapters(selected: list[str]) -> list[Path]:
    """The chapters whose file names start with one of ``selected``
    (every chapter when it is empty), in the book's order."""
    every = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if not selected:
        return every
    chosen = [p for p in every if any(p.name.startswith(s)
                                      for s in selected)]
    unknown = [s for s in selected
               if not any(p.name.startswith(s) for p in every)]
    if unknown:
        raise SystemExit(f"chapters: no notebook starts with {unknown}")
    return chosen


def parse_settings(pairs: list[str]) -> dict[str, str]:
    settings = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.isidentifier():
            raise SystemExit(f"--set wants NAME=VALUE, got {pair!r}")
        settings[name] = value
    return settings


def apply_settings(nb, settings: dict[str, str]) -> list[str]:
    """Replace each setting's first assignment; returns what was set."""
    done = []
    for name, value in settings.items():
        line = re.compile(rf"^{name}\s*=.*$", re.MULTILINE)
        for cell in nb.cells:
            if cell.cell_type == "code" and line.search(cell.source):
                cell.source = line.sub(f"{name} = {value}", cell.source,
                                       count=1)
                done.append(f"{name} = {value}")
                break
    return done


def printed_text(nb) -> str:
    """What the cells printed, and their plain-text results."""
    parts = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            text = output.get("text")
            if text is None:
                text = output.get("data", {}).get("text/plain")
            if output.get("output_type") == "error":
                text = "\n".join(output.get("traceback", []))
            if text:
                parts.append(f"[cell {index}]\n{text.rstrip()}")
    return "\n".join(parts) + "\n"


def failing_cell(nb) -> int | None:
    for index, cell in enumerate(nb.cells):
        if any(o.get("output_type") == "error"
               for o in cell.get("outputs", [])):
            return index
    return None


def interrupt(client: NotebookClient) -> None:
    """What Jupyter's interrupt button does to a Python kernel: SIGINT (the
    kernel manager's own method is a coroutine of the client's event loop,
    which this thread cannot await)."""
    client.km.provisioner.process.send_signal(signal.SIGINT)


def run(path: Path, settings, timeout, out: Path | None,
        deadline: float | None = None) -> dict:
    nb = nbformat.read(path, as_version=4)
    applied = apply_settings(nb, settings)
    where = {"metadata": {"path": str(path.parent)}}   # the chapter's folder
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources=where)
    start = time.perf_counter()
    error = None
    watchdog = None
    if deadline is not None:          # interrupt the kernel at the deadline
        watchdog = threading.Timer(max(0.0, deadline - time.monotonic()),
                                   interrupt, [client])
        watchdog.daemon = True
        watchdog.start()
    try:
        client.execute()
    except CellExecutionError as exc:
        error = str(exc).strip().splitlines()[-1][:300]
    except Exception as exc:            # a timeout, a dead kernel, ...
        error = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        if watchdog is not None:
            watchdog.cancel()
    seconds = time.perf_counter() - start
    if out is not None:
        nbformat.write(nb, out / path.name)
        (out / path.with_suffix(".txt").name).write_text(printed_text(nb))
    return {"chapter": path.stem, "seconds": round(seconds, 1),
            "ok": error is None, "error": error,
            "failing_cell": failing_cell(nb) if error else None,
            "settings": applied}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="*",
                        help="file-name prefixes, e.g. 01 08 (default: all)")
    parser.add_argument("--set", action="append", default=[],
                        metavar="NAME=VALUE", dest="settings")
    parser.add_argument("--timeout", type=int, default=1800,
                        help="seconds a cell may run (default 1800)")
    parser.add_argument("--deadline", type=float, metavar="SECONDS",
                        help="interrupt the chapter running at SECONDS "
                             "after the start, keeping what it did")
    parser.add_argument("--out", type=Path,
                        help="folder for the executed notebooks and times")
    args = parser.parse_args(argv)
    settings = parse_settings(args.settings)
    deadline = (None if args.deadline is None
                else time.monotonic() + args.deadline)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for path in chapters(args.chapters):
        if deadline is not None and time.monotonic() >= deadline:
            print(f"{path.stem:<28} not run: the deadline had passed")
            continue
        result = run(path, settings, args.timeout, args.out, deadline)
        results.append(result)
        status = "ok" if result["ok"] else (
            f"FAILED in cell {result['failing_cell']}: {result['error']}")
        print(f"{result['chapter']:<28} {result['seconds']:7.1f} s  "
              f"{status}", flush=True)
        if args.out is not None:
            (args.out / "times.json").write_text(json.dumps(results,
                                                            indent=1))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
