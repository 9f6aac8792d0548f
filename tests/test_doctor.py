"""The reader's self-check: one line per check, ok or a reason with the fix."""

import transformer_lib as tl
from transformer_lib.instruments import checkup as doc
from transformer_lib.cli import main


def test_everything_is_ok_on_the_build_machine(data_dir, capsys):
    assert tl.doctor(data_dir) is True
    lines = capsys.readouterr().out.strip().splitlines()
    names = ["python", "torch", "device", "widgets", "front-end", "data"]
    assert [line.split()[1] for line in lines] == names
    assert all(line.startswith("ok  ") for line in lines)
    assert "fit trains in" in lines[2] and "fra.txt found and verified" in lines[5]


def test_a_wrong_data_folder_is_named_with_the_fix(tmp_path, capsys):
    assert main(["doctor", "--data-dir", str(tmp_path)]) == 1
    [line] = [line for line in capsys.readouterr().out.splitlines() if " data " in line]
    assert line.startswith("!!") and str(tmp_path) in line and "TRANSFORMER_LIB_DATA" in line


def test_mismatched_widget_front_end_says_what_to_install(monkeypatch):
    versions = {"ipywidgets": "8.1.5", "jupyterlab_widgets": "1.1.11"}
    monkeypatch.setattr(doc, "package_version", versions.get)
    check = doc.check_frontend()
    assert not check.ok and "jupyterlab_widgets==3.*" in check.fix
    monkeypatch.setattr(doc, "package_version", {"ipywidgets": "8.1.5"}.get)
    check = doc.check_frontend()
    assert not check.ok and "jupyterlab" in check.fix
