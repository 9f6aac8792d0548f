"""The claims matrix: run the chapters that assert claims under each kind of
CPU the book supports and each seed that matters, and print every claim's
measured value and margin in every run, as one table.

    python scripts/claims.py                      # everything (make claims)
    python scripts/claims.py --chapters 04 --seeds 0 --kinds float32-avx2

Kinds of machine:
  native        what this machine does by itself (bf16 matrix products
                where the CPU has them natively);
  float32-avx2  a CPU without native bf16 (AVX2 only), imitated: fit trains
                in float32 ($TRANSFORMER_LIB_PRECISION) and torch, MKL and
                oneDNN are held to AVX2 kernels.

A chapter with a line ``SEED = 0`` is run once per seed, with that line
changed; the others once per kind.  Each run executes a copy of the
notebook in a temporary folder, with $TRANSFORMER_LIB_CLAIMS naming a file
where ``transformer_lib.instruments.notebook.claim`` appends each claim
(failed claims are recorded there instead of stopping the chapter).  Exit
status 1 when a claim failed or a chapter raised anywhere.  Results also
go, as JSON, to _build/claims/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
KINDS = {
    "native": {},
    "float32-avx2": {"TRANSFORMER_LIB_PRECISION": "float32",
                     "ATEN_CPU_CAPABILITY": "avx2",
                     "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                     "ONEDNN_MAX_CPU_ISA": "AVX2"},
}
KIND_VARIABLES = {name for env in KINDS.values() for name in env}
SEED_LINE = re.compile(r"^SEED = 0\b", re.MULTILINE)
# claim() checks a comparison; report() records a value the matrix shows
CLAIM_CALL = re.compile(r"^[^#\n]*\b(claim|report)\(", re.MULTILINE)


def claim_chapters() -> list[str]:
    """The prefixes (``"04"``) of the chapters whose code calls claim()."""
    def calls_claim(path):
        cells = nbformat.read(path, as_version=4).cells
        return any(cell.cell_type == "code"
                   and CLAIM_CALL.search(cell.source)
                   for cell in cells)
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    return [path.name[:2] for path in paths if calls_claim(path)]


def chapter_path(prefix: str) -> Path:
    found = sorted((ROOT / "notebooks").glob(f"{prefix}*.ipynb"))
    if len(found) != 1:
        sys.exit(f"--chapters: {prefix!r} names {len(found)} notebooks")
    return found[0]


def with_seed(notebook, seed: int) -> int:
    """Change the notebook's ``SEED = 0`` line to ``seed``; the number of
    lines changed (0: the chapter has no seed)."""
    count = 0
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.source, n = SEED_LINE.subn(f"SEED = {seed}", cell.source)
            count += n
    return count


def run_chapter(path: Path, kind: str, seed: int | None) -> dict:
    notebook = nbformat.read(path, as_version=4)
    if seed is not None and with_seed(notebook, seed) != 1:
        raise SystemExit(f"{path.name}: expected one line 'SEED = 0'")
    with tempfile.TemporaryDirectory() as tmp:
        claims_file = Path(tmp, "claims.jsonl")
        # the kernel's environment: this one, with the kind's variables
        env = {name: value for name, value in os.environ.items()
               if name not in KIND_VARIABLES}
        env.update(KINDS[kind], TRANSFORMER_LIB_CLAIMS=str(claims_file))
        workdir = Path(tmp, "notebooks")
        workdir.mkdir()
        # allow_errors: a failing cell is recorded and the rest still run,
        # so that one run shows every claim
        client = NotebookClient(
            notebook, timeout=3600, kernel_name="python3", allow_errors=True,
            resources={"metadata": {"path": str(workdir)}})
        started = time.perf_counter()
        client.execute(env=env)  # passed on to the kernel's start
        seconds = time.perf_counter() - started
        claims = []
        if claims_file.exists():
            claims = [json.loads(line) for line in
                      claims_file.read_text().splitlines()]
    errors = [f"{o.ename}: {o.evalue}"[:300] for cell in notebook.cells
              for o in cell.get("outputs", []) if o.output_type == "error"]
    return dict(chapter=path.stem, kind=kind, seed=seed, seconds=seconds,
                error="; ".join(errors) or None, claims=claims,
                cells=cell_seconds(notebook))


def cell_seconds(notebook) -> list:
    """(seconds, first line) of the five slowest cells."""
    timed = []
    for cell in notebook.cells:
        timing = cell.get("metadata", {}).get("execution", {})
        start = timing.get("iopub.execute_input")
        end = timing.get("shell.execute_reply")
        if start and end:
            start, end = (datetime.fromisoformat(t.replace("Z", "+00:00"))
                          for t in (start, end))
            seconds = end - start
            line = cell.source.strip().splitlines()[0][:60]
            timed.append((round(seconds.total_seconds(), 1), line))
    return sorted(timed, reverse=True)[:5]


def table(runs: list) -> tuple[str, bool]:
    """A Markdown table: one row per claim, one column per run, each cell
    the value and (the margin); and whether every claim held."""
    # one column per kind and seed: the chapters' runs of it share it
    labels = [f"{r['kind']} s{r['seed']}" if r["seed"] is not None
              else r["kind"] for r in runs]
    columns = list(dict.fromkeys(labels))
    rows, ok = {}, True
    for run, label in zip(runs, labels):
        i = columns.index(label)
        seen = {}
        for c in run["claims"]:
            # a claim checked twice in a chapter (e.g. in a loop) gets #2
            seen[c["name"]] = seen.get(c["name"], 0) + 1
            key = (run["chapter"][:2], c["name"], c["op"], c["bound"],
                   seen[c["name"]])
            mark = "" if c["held"] else " FAILED"
            ok &= c["held"]
            rows.setdefault(key, {})[i] = (
                f"{c['value']:.4g}" if c["op"] == "reported" else
                f"{c['value']:.4g} ({c['margin']:+.3g}){mark}")
    lines = ["| ch. | claim | bound | " + " | ".join(columns) + " |",
             "|---|---|---|" + "---|" * len(columns)]
    for (chapter, name, op, bound, _), cells in rows.items():
        values = [cells.get(i, "") for i in range(len(columns))]
        condition = "reported" if op == "reported" else f"{op} {bound:.4g}"
        lines.append(f"| {chapter} | {name} | {condition} | "
                     + " | ".join(values) + " |")
    return "\n".join(lines), ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="+", default=None,
                        help="notebook prefixes, e.g. 04 08 (default: "
                             "every chapter that calls claim() or report())")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--kinds", nargs="+", choices=list(KINDS),
                        default=list(KINDS))
    args = parser.parse_args()
    args.chapters = args.chapters or claim_chapters()
    out = ROOT / "_build" / "claims"
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for kind in args.kinds:
        for prefix in args.chapters:
            path = chapter_path(prefix)
            seeded = with_seed(nbformat.read(path, as_version=4), 0) > 0
            for seed in (args.seeds if seeded else [None]):
                run = run_chapter(path, kind, seed)
                runs.append(run)
                failed = sum(not c["held"] for c in run["claims"])
                print(f"{path.stem} {kind} seed={seed}: "
                      f"{run['seconds']:.0f} s, "
                      f"{len(run['claims'])} claims, {failed} failed"
                      + (f", ERROR {run['error']}" if run["error"] else ""),
                      flush=True)
                for seconds, line in run["cells"][:3]:
                    print(f"    {seconds:7.1f} s  {line}")
                stamp = f"{path.stem}-{kind}-s{seed}"
                (out / f"{stamp}.json").write_text(json.dumps(run, indent=1))
    text, ok = table(runs)
    errors = [r for r in runs if r["error"]]
    print("\n" + text)
    print("\nchapter times (s): " + ", ".join(
        f"{r['chapter'][:2]} {r['kind']} s{r['seed']}: {r['seconds']:.0f}"
        for r in runs))
    (out / "table.md").write_text(text + "\n")
    if errors or not ok:
        print(f"\nFAILED: {len(errors)} chapter(s) raised; "
              f"{'some claims failed' if not ok else 'no claim failed'}")
        return 1
    print("\nevery claim held in every run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
