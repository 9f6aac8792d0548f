"""claim() and the claims matrix (scripts/claims.py) on a notebook of their own."""

import json
import re

import nbformat
import pytest

from browser import ROOT
from load_script import load_script as load_named
from transformer_lib.instruments.notebook import claim, report


def load_script():
    return load_named("claims")


def test_a_claim_holds_or_stops_the_chapter_with_its_margin(monkeypatch):
    monkeypatch.delenv("TRANSFORMER_LIB_CLAIMS", raising=False)
    assert claim("warm-up helps", 3.0, ">", 1) is True
    assert claim("small", 0.2, "<=", 0.2) is True
    with pytest.raises(AssertionError, match=r"'gap': 0\.37 is not > 1 \(margin -0\.63\)"):
        claim("gap", 0.37, ">", 1)
    with pytest.raises(ValueError, match="op must be one of"):
        claim("gap", 1, "=>", 0)


def test_the_claims_file_records_every_claim_and_a_failure_does_not_stop(monkeypatch, tmp_path):
    path = tmp_path / "claims.jsonl"
    monkeypatch.setenv("TRANSFORMER_LIB_CLAIMS", str(path))
    assert claim("ratio", 5.0, ">", 2) is True
    assert claim("gap", 0.3, "<", 0.1) is False                     # recorded, not raised
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records == [
        dict(name="ratio", value=5.0, op=">", bound=2.0, margin=3.0, held=True),
        dict(name="gap", value=0.3, op="<", bound=0.1, margin=pytest.approx(-0.2), held=False)]


def test_a_reported_value_is_recorded_and_never_checked(monkeypatch, tmp_path):
    monkeypatch.delenv("TRANSFORMER_LIB_CLAIMS", raising=False)
    assert report("race gap", -0.04) == -0.04                       # nothing raised in the book
    path = tmp_path / "claims.jsonl"
    monkeypatch.setenv("TRANSFORMER_LIB_CLAIMS", str(path))
    report("race gap", -0.04)
    assert json.loads(path.read_text()) == dict(name="race gap", value=-0.04, op="reported",
                                                bound=None, margin=None, held=True)
    claims = load_script()
    runs = [dict(chapter="08_x", kind="native", seed=s, claims=[json.loads(path.read_text())])
            for s in (0, 1)]
    cells, ok = claims.measured_cells(runs)
    text = claims.write_table(cells, {})
    assert ok and "| 08 | race gap | reported | -0.04 | -0.04 |  |  |  |  |" in text
    # two chapters' runs of one kind and seed share its column
    other = [dict(chapter="09_y", kind="native", seed=s,
                  claims=[dict(name="y", value=s, op="reported", bound=None, margin=None,
                               held=True)]) for s in (0, 1)]
    text = claims.write_table(claims.measured_cells(runs + other)[0], {})
    assert "| ch. | claim | bound | native s0 | native s1 | native s2 | f32 s0 | f32 s1 | f32 s2 |" in text
    assert "| 09 | y | reported | 0 | 1 |  |  |  |  |" in text
    notebook = tmp_path / "97_reports.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        'report("x", 1)')]), notebook)
    assert claims.CLAIM_CALL.search(nbformat.read(notebook, as_version=4).cells[0].source)


def test_the_matrix_runs_each_seed_and_reports_failed_claims_and_errors(tmp_path):
    claims = load_script()
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from transformer_lib.instruments.notebook import claim\nSEED = 0"),
        nbformat.v4.new_code_cell('claim("seed is small", SEED, "<", 1)'),
        nbformat.v4.new_code_cell('raise RuntimeError("boom")'),
        nbformat.v4.new_code_cell('claim("after the error", 1, ">", 0)')])
    path = tmp_path / "99_test.ipynb"
    nbformat.write(notebook, path)
    runs = [claims.run_chapter(path, "native", seed) for seed in (0, 1)]
    assert [[c["held"] for c in r["claims"]] for r in runs] == [[True, True], [False, True]]
    assert all("RuntimeError: boom" in r["error"] for r in runs)      # recorded; the rest ran
    cells, ok = claims.measured_cells(runs)
    text = claims.write_table(cells, {})
    assert not ok and "FAILED" in text and "| 99 | seed is small | < 1 | 0 (+1) | 1 (+0) FAILED |" in text


def test_each_kind_reaches_the_kernel_and_leaves_this_process_alone(tmp_path, monkeypatch):
    claims = load_script()
    monkeypatch.setenv("TRANSFORMER_LIB_PRECISION", "bfloat16")     # the native run must drop it
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os\nfrom transformer_lib.instruments.notebook import claim\n"
        'claim("forced float32", os.environ.get("TRANSFORMER_LIB_PRECISION") == "float32", ">", 0)')])
    path = tmp_path / "98_kind.ipynb"
    nbformat.write(notebook, path)
    runs = [claims.run_chapter(path, kind, None) for kind in ("float32-avx2", "native")]
    assert [r["claims"][0]["held"] for r in runs] == [True, False]
    assert claims.os.environ["TRANSFORMER_LIB_PRECISION"] == "bfloat16"
    assert "TRANSFORMER_LIB_CLAIMS" not in claims.os.environ


def test_the_appendix_table_has_a_row_for_every_claim_of_every_chapter():
    # book/claims.md includes the table that scripts/claims.py writes: a claim added to a chapter
    # without a run of the matrix would be missing from it
    table = (ROOT / "book" / "claims_table.md").read_text()
    assert "```{include} claims_table.md" in (ROOT / "book" / "claims.md").read_text()
    rows = set()
    for line in table.splitlines():
        cells = [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line)]
        if len(cells) > 3 and cells[1].isdigit():
            rows.add((cells[1], cells[2]))
    assert len(rows) > 50
    missing = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        chapter = path.name[:2]
        for cell in nbformat.read(path, as_version=4).cells:
            for call in re.finditer(r'\b(?:claim|report)\(\s*(f?)"([^"]*)"', cell.source):
                is_f, name = call.groups()
                # an f-string's fields match anything; a row may add a note in brackets
                pattern = re.sub(r"\\\{[^}]*\\\}", ".*", re.escape(name)) if is_f else re.escape(name)
                if not any(row_chapter == chapter and re.fullmatch(pattern + r"( \(.*\))?", row)
                           for row_chapter, row in rows):
                    missing.append(f"{path.name}: {name}")
    assert not missing, missing


def test_a_run_replaces_its_own_columns_of_the_book_table_and_keeps_the_others(tmp_path):
    claims = load_script()
    table = tmp_path / "claims_table.md"
    first = [dict(chapter="04_x", kind=kind, seed=seed, claims=[
        dict(name="gap | abs", op=">", bound=1.0, value=value, margin=value - 1.0, held=True)])
        for kind, seed, value in [("native", 0, 2.0), ("float32-avx2", 0, 3.0)]]
    other = [dict(chapter="06_y", kind="native", seed=None, claims=[
        dict(name="speed-up", op=">", bound=1.5, value=4.0, margin=2.5, held=True),
        dict(name="race", op="reported", bound=None, value=0.25, margin=None, held=True)])]
    claims.update_table(first + other, "a CPU, 2 cores, 900 / 200", "abc1234", table)
    again = [dict(chapter="04_x", kind="native", seed=0, claims=[
        dict(name="gap | abs", op=">", bound=1.0, value=0.5, margin=-0.5, held=False)])]
    claims.update_table(again, "another CPU, 2 cores, 2,400 / 350", "def5678", table)
    rows, runs = claims.read_table(table.read_text())
    assert rows[("04", "gap \\| abs", "> 1")] == {"native s0": "0.5 (-0.5) FAILED", "f32 s0": "3 (+2)"}
    assert rows[("06", "speed-up", "> 1.5")] == {"native s0": "4 (+2.5)"}
    assert rows[("06", "race", "reported")] == {"native s0": "0.25"}
    assert runs[("04", "native")][2:] == ["another CPU, 2 cores, 2,400 / 350", "def5678"]
    assert runs[("04", "f32")][2:] == ["a CPU, 2 cores, 900 / 200", "abc1234"]
    assert claims.read_table(claims.write_table(rows, runs)) == (rows, runs)     # it reads what it writes
