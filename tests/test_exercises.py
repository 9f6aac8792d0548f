"""The exercises' checkers (transformer_lib.instruments.exercises), tested:
each passes the library's own answer (and PyTorch's, sacreBLEU's or
tokenizers' where there is one), and fails each planted bug of the
catalogue (tests/bugs_*.py) at the case named for it; a checker without
that case lets the bug through or names another case."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import nbformat
import pytest
import torch
from test_notebooks import exercises_start

from transformer_lib.instruments import exercises

TOPICS = sorted(p.stem for p in Path(__file__).parent.glob("bugs_*.py"))
MODULES = [importlib.import_module(topic) for topic in TOPICS]
CORRECT = [(topic, *row) for topic, module in zip(TOPICS, MODULES)
           for row in module.CORRECT]
BUGS = [(topic, bug) for topic, module in zip(TOPICS, MODULES)
        for bug in module.BUGS]


def capitalised(name: str) -> str:
    return name[0].upper() + name[1:]


@pytest.mark.parametrize(
    "topic, checker, answer, whose", CORRECT,
    ids=[f"{row[0]}-{row[3]}" for row in CORRECT])
def test_a_right_answer_passes(topic, checker, answer, whose):
    report = checker(answer)
    assert report.ok, f"{whose}: {report}"
    assert str(report) == (f"{checker.exercise}: passed all "
                           f"{len(checker.cases)} cases.")


@pytest.mark.parametrize("topic, bug", BUGS,
                         ids=[f"{t}-{b.name}" for t, b in BUGS])
def test_a_planted_bug_fails_at_its_case(topic, bug):
    names = [case.name for case in bug.checker.cases]
    assert bug.case in names, f"{bug.checker!r} has no case {bug.case!r}"
    report = bug.checker(bug.answer)
    assert not report.ok, f"{bug.name}: the checker passed it"
    assert report.failure.startswith(capitalised(bug.case) + ": "), (
        f"{bug.name}: expected case {bug.case!r} to catch it, got "
        f"{report}")
    assert report.passed == names.index(bug.case)
    assert max(map(len, str(report).splitlines())) <= 77, str(report)


@pytest.mark.parametrize("topic, bug", BUGS,
                         ids=[f"{t}-{b.name}" for t, b in BUGS])
def test_a_weakened_checker_fails_these_tests(topic, bug, monkeypatch):
    """Without the case that catches a bug, the checker passes it (a bug
    marked ``alone``) or names another case: either way the test above
    fails."""
    monkeypatch.setattr(bug.checker, "cases", [
        c for c in bug.checker.cases if c.name != bug.case])
    if bug.alone:
        assert bug.checker(bug.answer).ok
    with pytest.raises(AssertionError):
        test_a_planted_bug_fails_at_its_case(topic, bug)


def test_every_checker_has_a_bug_only_one_case_catches():
    checkers = {id(bug.checker): bug.checker for _, bug in BUGS}
    alone = {id(bug.checker) for _, bug in BUGS if bug.alone}
    assert set(checkers) == alone, [
        c.exercise for k, c in checkers.items() if k not in alone]


# --- the exercises in the chapters -----------------------------------------

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def exercise_cells(chapter: int):
    """The code cells of a chapter's Exercises section: (open, folded)."""
    [path] = NOTEBOOKS.glob(f"{chapter:02d}_*.ipynb")
    cells = nbformat.read(path, as_version=4).cells
    code = [c for c in cells[exercises_start(cells):]
            if c.cell_type == "code"]
    folded = [c for c in code
              if "hide-cell" in c.metadata.get("tags", [])]
    return [c for c in code if not c.metadata.get("tags")], folded


@pytest.mark.parametrize("checker", exercises.CHECKERS,
                         ids=[c.exercise for c in exercises.CHECKERS])
def test_each_checker_has_a_stub_and_a_checked_solution(checker):
    """The reader fills a stub that calls the checker; the folded solution
    goes through the same checker, and the build fails if it fails."""
    name = next(n for n, v in vars(exercises).items() if v is checker)
    call = re.compile(rf"tl\.exercises\.{name}\((\w+)\)")
    open_cells, folded = exercise_cells(checker.chapter)
    stubs = [c.source for c in open_cells if call.search(c.source)]
    assert len(stubs) == 1, f"chapter {checker.chapter}: no stub calls {name}"
    answer = call.search(stubs[0]).group(1)   # the reader's function
    assert re.search(rf"def {answer}\(.*\n(.*\n)*?"
                     r"    raise NotImplementedError", stubs[0])
    solved = [c.source for c in folded if call.search(c.source)]
    assert len(solved) == 1, f"chapter {checker.chapter}: no solution {name}"
    assert f"def {answer}(" in solved[0]
    assert re.search(r"assert (report|\w+)\.ok, ", solved[0])
    assert "NotImplementedError" not in solved[0]


def test_the_reader_writes_in_enough_chapters():
    chapters = {c.chapter for c in exercises.CHECKERS}
    assert len(exercises.CHECKERS) >= 9 and len(chapters) >= 7, chapters


def test_a_checker_reports_a_stub_and_a_crash_in_words():
    def stub(scores, valid_lens=None):
        raise NotImplementedError
    report = exercises.check_masked_softmax(stub)
    assert not report.ok and not report.written
    assert "not written yet" in str(report)

    def crash(scores, valid_lens=None):
        return scores.softmax(dim=7)
    report = exercises.check_masked_softmax(crash)
    assert report.message.startswith(
        "masked_softmax: case 1 of 6 failed. Scores without a mask: your "
        "code raised IndexError: ")
    with pytest.raises(TypeError, match="masked_softmax must be your "
                       "function"):
        exercises.check_masked_softmax(torch.ones(3))


def test_the_catalogue_page_names_every_exercise_and_bug():
    """docs/exercises.md (scripts/exercise_catalogue.py --write) is
    current: every checker and every planted bug is on it."""
    page = (NOTEBOOKS.parent / "docs" / "exercises.md").read_text()
    missing = [c.exercise for c in exercises.CHECKERS
               if f"| `{c.exercise}` |" not in page]
    missing += [bug.name for _, bug in BUGS
                if f"| {bug.name.replace('|', chr(92) + '|')}" not in page]
    assert not missing, ("run scripts/exercise_catalogue.py --write; "
                         f"missing: {missing}")


def test_a_report_names_the_stub_a_finished_answer_still_calls():
    def stub(X, num_heads):
        raise NotImplementedError

    def split_heads(X, num_heads):
        return stub(X, num_heads)
    report = exercises.check_split_heads(split_heads)
    assert report.message == ("split_heads: not written yet: `stub` still "
                           "raises NotImplementedError. Write it first, "
                           "then run this cell again.")

    def my_sequence_loss(logits, labels, pad, label_smoothing):
        raise AssertionError("never called: the checker passes pad_id=")
    report = exercises.check_sequence_loss(my_sequence_loss)
    assert "unexpected keyword argument 'pad_id' (the checker calls it " \
        "with the stub's parameter names: keep them)" in report.message

    def library_error(X, num_heads):
        raise NotImplementedError("an operator this device lacks")
    report = exercises.check_split_heads(library_error)
    assert report.written
    assert "an operator this device lacks" in report.message


def test_d2l_passes_where_it_is_right_and_fails_where_it_is_not(d2l):
    """d2l 1.0.3's table of positions passes; its masked_softmax, which
    fills with -1e6, is caught at the empty row (d2l PR #2423)."""
    def sinusoidal_encoding(T, d):
        return d2l.PositionalEncoding(d, 0.0, max_len=T).P[0, :T]
    assert exercises.check_sinusoidal_encoding(sinusoidal_encoding).ok

    def masked_softmax(scores, valid_lens=None):
        return d2l.masked_softmax(scores, valid_lens)
    report = exercises.check_masked_softmax(masked_softmax)
    assert report.failure == ("A query row with no valid key: expected "
                              "zeros, got 0.25 each")
