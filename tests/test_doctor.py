"""The reader's self-check: one entry per check, ok or a reason with the fix, wrapped to the page."""

import re

import transformer_lib as tl
from transformer_lib.instruments import checkup as doc
from transformer_lib.cli import main
from transformer_lib.model.transformer import PAGE_COLUMNS


def entries(printed: str) -> list[str]:
    """The doctor's printout as one string per check: a continuation line is indented, and a
    word it cut (a path) continues without a space."""
    found = []
    for line in printed.strip().splitlines():
        if line.startswith(("ok  ", "!!  ")):
            found.append(line)
        else:
            glue = "" if found[-1].endswith("/") else " "
            found[-1] += glue + line.strip()
    return found


def test_everything_is_ok_on_the_build_machine(data_dir, capsys):
    assert tl.doctor(data_dir) is True
    printed = capsys.readouterr().out
    checks = entries(printed)
    names = ["python", "torch", "device", "widgets", "front-end", "data"]
    assert [check.split()[1] for check in checks] == names
    assert all(check.startswith("ok  ") for check in checks)
    assert "fit trains in" in checks[2] and "fra.txt found and verified" in checks[5]
    assert max(map(len, printed.splitlines())) <= PAGE_COLUMNS


def test_a_wrong_data_folder_is_named_with_the_fix(tmp_path, capsys):
    assert main(["doctor", "--data-dir", str(tmp_path)]) == 1
    [check] = [check for check in entries(capsys.readouterr().out) if " data " in check]
    assert check.startswith("!!") and str(tmp_path) in check and "TRANSFORMER_LIB_DATA" in check


def test_a_long_path_is_cut_after_a_slash_to_fit_the_page():
    # The built book's chapter 1 prints the doctor: on the CI machine the data path made its line
    # 82 columns wide.
    path = "/check/work/shared/data/" + "a" * 50 + "/fra-eng/fra.txt"
    check = doc.Check("data", True, f"fra.txt found and verified: {path}")
    lines = check.text().splitlines()
    assert len(lines) > 2 and max(map(len, lines)) <= PAGE_COLUMNS
    assert all(re.fullmatch(r" {15}\S.*", line) for line in lines[1:])
    assert all(line.endswith("/") for line in lines[1:-1])
    assert entries(check.text()) == [f"ok  data       fra.txt found and verified: {path}"]
    # A folder name wider than the page is cut anywhere, still within it.
    lines = doc.Check("data", True, "/" + "b" * 100 + "/fra.txt").text().splitlines()
    assert max(map(len, lines)) <= PAGE_COLUMNS and "".join(map(str.strip, lines))[-8:] == "/fra.txt"
    short = doc.Check("python", True, "3.11.7")
    assert short.text() == "ok  python     3.11.7"


def test_mismatched_widget_front_end_says_what_to_install(monkeypatch):
    versions = {"ipywidgets": "8.1.5", "jupyterlab_widgets": "1.1.11"}
    monkeypatch.setattr(doc, "package_version", versions.get)
    check = doc.check_frontend()
    assert not check.ok and "jupyterlab_widgets==3.*" in check.fix
    monkeypatch.setattr(doc, "package_version", {"ipywidgets": "8.1.5"}.get)
    check = doc.check_frontend()
    assert not check.ok and "jupyterlab" in check.fix
