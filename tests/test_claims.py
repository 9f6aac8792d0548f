"""claim() and the claims matrix (scripts/claims.py) on a notebook of their own."""

import importlib.util
import json
import re

import nbformat
import pytest

from browser import ROOT
from transformer_lib.instruments.notebook import claim, report


def load_script():
    spec = importlib.util.spec_from_file_location("claims_script", ROOT / "scripts" / "claims.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    text, ok = claims.table(runs)
    assert ok and "| 08 | race gap | reported | -0.04 | -0.04 |" in text
    # two chapters' runs of one kind and seed share its column
    other = [dict(chapter="09_y", kind="native", seed=s,
                  claims=[dict(name="y", value=s, op="reported", bound=None, margin=None,
                               held=True)]) for s in (0, 1)]
    text, ok = claims.table(runs + other)
    assert text.splitlines()[0] == "| ch. | claim | bound | native s0 | native s1 |"
    assert "| 09 | y | reported | 0 | 1 |" in text
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
    text, ok = claims.table(runs)
    assert not ok and "FAILED" in text and "| 99 | seed is small | < 1 |" in text
    assert "native s0" in text and "native s1" in text


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
    # book/claims.md shows the README's table between these markers: a claim added to a chapter
    # without a run of the matrix would be missing from it
    readme = (ROOT / "README.md").read_text()
    table = readme.split("<!-- claims-table:start -->")[1].split("<!-- claims-table:end")[0]
    assert "<!-- claims-table:start -->" in (ROOT / "book" / "claims.md").read_text()
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
