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

The table the book shows, book/claims_table.md, is updated in place: the
columns this run measured replace those of its chapters, the others stay,
and a table of runs says which machine and code measured each chapter's
columns (--no-write leaves the file alone).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
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
# The book's table: one column per kind and seed (a chapter without a seed
# fills the s0 columns).
TABLE = ROOT / "book" / "claims_table.md"
SHORT_KIND = {"native": "native", "float32-avx2": "f32"}
COLUMNS = [f"{short} s{seed}" for short in SHORT_KIND.values()
           for seed in (0, 1, 2)]
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


def column(run: dict) -> str:
    """The book table's column of a run: ``"f32 s1"``."""
    return f"{SHORT_KIND[run['kind']]} s{run['seed'] or 0}"


def measured_cells(runs: list) -> tuple[dict, bool]:
    """{(chapter, claim, bound): {column: "value (margin)"}} of ``runs``,
    and whether every claim held."""
    rows, ok = {}, True
    for run in runs:
        seen = {}
        for c in run["claims"]:
            # a claim checked twice in a chapter (e.g. in a loop) gets #2
            seen[c["name"]] = seen.get(c["name"], 0) + 1
            name = c["name"].replace("|", "\\|")
            if seen[c["name"]] > 1:
                name += f" #{seen[c['name']]}"
            bound = ("reported" if c["op"] == "reported"
                     else f"{c['op']} {c['bound']:.4g}")
            mark = "" if c["held"] else " FAILED"
            ok &= c["held"]
            rows.setdefault((run["chapter"][:2], name, bound), {})[
                column(run)] = (
                f"{c['value']:.4g}" if c["op"] == "reported" else
                f"{c['value']:.4g} ({c['margin']:+.3g}){mark}")
    return rows, ok


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row; ``\\|`` stays in its cell."""
    return [cell.strip() for cell in
            re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def read_table(text: str) -> tuple[dict, dict]:
    """The claims rows and the runs rows of a table file written by
    :func:`write_table`."""
    claims, runs = {}, {}
    for line in text.splitlines():
        cells = _cells(line) if line.startswith("|") else []
        if len(cells) == 3 + len(COLUMNS) and cells[0].isdigit():
            claims[tuple(cells[:3])] = {
                name: cell for name, cell in zip(COLUMNS, cells[3:]) if cell}
        elif len(cells) == 6 and cells[0].isdigit():
            runs[tuple(cells[:2])] = cells[2:]
    return claims, runs


def merge(old: dict, new: dict, measured: set) -> dict:
    """``old`` claims rows with the cells of ``measured`` (chapter, column)
    pairs replaced by ``new``'s; rows left with no cell are dropped."""
    merged = {}
    for key, cells in old.items():
        kept = {name: cell for name, cell in cells.items()
                if (key[0], name) not in measured}
        merged[key] = kept
    for key, cells in new.items():
        merged.setdefault(key, {}).update(cells)
    return {key: merged[key] for key in
            sorted((k for k in merged if merged[k]),
                   key=lambda k: k[0])}


def write_table(claims: dict, runs: dict) -> str:
    lines = ["<!-- Written by scripts/claims.py (make claims): "
             "edit the chapters, not this file. -->", "",
             "| ch. | claim | bound | " + " | ".join(COLUMNS) + " |",
             "|---|---|---|" + "---|" * len(COLUMNS)]
    for (chapter, name, bound), cells in claims.items():
        lines.append(f"| {chapter} | {name} | {bound} | "
                     + " | ".join(cells.get(c, "") for c in COLUMNS)
                     + " |")
    if runs:
        lines += ["",
                  "Which machine and code measured each chapter's columns:",
                  "", "| ch. | kind | seeds | date | CPU, 2048² GFLOP/s "
                  "bf16 / fp32 | code |", "|---|---|---|---|---|---|"]
    for (chapter, kind), rest in sorted(runs.items()):
        lines.append(f"| {chapter} | {kind} | " + " | ".join(rest) + " |")
    return "\n".join(lines) + "\n"


def this_machine() -> str:
    """The CPU's name, its cores and its 2048² matrix products' GFLOP/s
    (bf16 / fp32), as a training log records them."""
    from transformer_lib.translation.provenance import machine_record
    machine = machine_record("cpu")
    speed = machine["matmul_2048_gflops"]
    return (f"{machine['cpu']}, {machine['cores']} cores, "
            f"{speed['bfloat16']:,.0f} / {speed['float32']:,.0f}")


def this_code() -> str:
    """The commit that the run measured (with ``+`` if files differed)."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, text=True,
                              capture_output=True).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+" if git("status", "--porcelain",
                                "--untracked-files=no") else "")


def update_table(runs: list, machine: str, code: str,
                 path: Path = TABLE) -> None:
    """Write ``runs``' cells into the book's table at ``path``."""
    old_claims, old_runs = read_table(
        path.read_text() if path.exists() else "")
    new, _ = measured_cells(runs)
    measured = {(r["chapter"][:2], column(r)) for r in runs}
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    for chapter in sorted({r["chapter"][:2] for r in runs}):
        for kind in SHORT_KIND.values():
            seeds = sorted(r["seed"] or 0 for r in runs
                           if r["chapter"][:2] == chapter
                           and SHORT_KIND[r["kind"]] == kind)
            if seeds:
                old_runs[(chapter, kind)] = [
                    ", ".join(map(str, seeds)), date, machine, code]
    path.write_text(write_table(merge(old_claims, new, measured),
                                old_runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="+", default=None,
                        help="notebook prefixes, e.g. 04 08 (default: "
                             "every chapter that calls claim() or report())")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--kinds", nargs="+", choices=list(KINDS),
                        default=list(KINDS))
    parser.add_argument("--no-write", action="store_true",
                        help=f"leave {TABLE.relative_to(ROOT)} as it is")
    args = parser.parse_args()
    args.chapters = args.chapters or claim_chapters()
    out = ROOT / "_build" / "claims"
    out.mkdir(parents=True, exist_ok=True)
    machine = this_machine()   # measured quiet, before the chapters run
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
    cells, ok = measured_cells(runs)
    text = write_table(cells, {})
    errors = [r for r in runs if r["error"]]
    print("\n" + text)
    print("\nchapter times (s): " + ", ".join(
        f"{r['chapter'][:2]} {r['kind']} s{r['seed']}: {r['seconds']:.0f}"
        for r in runs))
    (out / "table.md").write_text(text)
    if not args.no_write:
        update_table(runs, machine, this_code())
        print(f"updated {TABLE.relative_to(ROOT)}")
    if errors or not ok:
        print(f"\nFAILED: {len(errors)} chapter(s) raised; "
              f"{'some claims failed' if not ok else 'no claim failed'}")
        return 1
    print("\nevery claim held in every run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
