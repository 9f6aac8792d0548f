"""scripts/run_chapters.py, the headless runner of the GPU check: its
settings replace what they name and nothing else, and chapter 8 still has
the GPU_MINUTES line that the check lowers."""

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from load_script import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "run_chapters.py"


@pytest.fixture(scope="module")
def runner():
    return load_script("run_chapters")


def notebook(*sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


def test_a_setting_replaces_the_first_assignment_only(runner):
    nb = notebook("x = 1", "GPU_MINUTES = 10    # budget\nGPU_MINUTES = 3",
                  "print(GPU_MINUTES)")
    done = runner.apply_settings(nb, {"GPU_MINUTES": "1", "ABSENT": "2"})
    assert done == ["GPU_MINUTES = 1"]
    assert [c.source for c in nb.cells] == [
        "x = 1", "GPU_MINUTES = 1\nGPU_MINUTES = 3", "print(GPU_MINUTES)"]


def test_a_name_that_only_starts_the_same_is_left_alone(runner):
    nb = notebook("GPU_MINUTES_X = 5")
    assert runner.apply_settings(nb, {"GPU_MINUTES": "1"}) == []
    assert nb.cells[0].source == "GPU_MINUTES_X = 5"


def test_chapter_8_has_the_budget_that_the_gpu_check_lowers(runner):
    [path] = runner.chapters(["08"])
    nb = nbformat.read(path, as_version=4)
    assert runner.apply_settings(nb, {"GPU_MINUTES": "1"}) == [
        "GPU_MINUTES = 1"]


@pytest.mark.parametrize("args, message", [
    (["99"], "no notebook starts with ['99']"),
    (["--set", "GPU_MINUTES"], "--set wants NAME=VALUE"),
    (["--set", "1x=2"], "--set wants NAME=VALUE"),
])
def test_bad_arguments_are_named(args, message):
    done = subprocess.run([sys.executable, str(SCRIPT), *args],
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert message in done.stderr


def test_the_gpu_check_script_parses():
    subprocess.run(["bash", "-n", str(ROOT / "scripts" / "gpu_check.sh")],
                   check=True)


def test_the_deadline_interrupts_a_chapter_and_keeps_what_it_did(
        runner, tmp_path):
    import time
    path = tmp_path / "99_slow.ipynb"
    nbformat.write(notebook("print('first cell ran')",
                            "import time\ntime.sleep(3600)",
                            "print('never')"), path)
    out = tmp_path / "out"
    out.mkdir()
    # The deadline leaves a kernel on a slow or busy machine time to start and
    # run the first cell (a few seconds); the second cell, longer than the
    # cell timeout, ends only by the interrupt: a timeout would give another
    # error than KeyboardInterrupt.
    result = runner.run(path, {}, 120, out, deadline=time.monotonic() + 20)
    assert not result["ok"] and result["failing_cell"] == 1
    assert "KeyboardInterrupt" in result["error"]
    printed = (out / "99_slow.txt").read_text()
    assert "first cell ran" in printed and "never" not in printed
