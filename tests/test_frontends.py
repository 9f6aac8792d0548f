"""The chapters in live Jupyter front-ends, driven in a real (headless) Chromium.

- JupyterLab 4 with ipywidgets 8: the figure explorers are precomputed (``Stack``s linked in the
  browser);
- the classic Notebook with Colab's kernel side (ipywidgets 7.7.1, IPython 7.34, numpy 2.1;
  ``envs.COLAB``) and the widgetsnbextension 3.6.10 that pip picks for it, the closest we can
  get to Colab's front-end: the explorers are live, and the kernel redraws the figure.

Each front-end runs in an environment of its own (``.venv-lab``, ``.venv-classic``), created
once and reused (rebuilt when its requirements below change), with the torch that ``make``
installs and ``transformer_lib`` installed from this repository (editable).  Its server
listens on 127.0.0.1 only, with a random token, serves a temporary copy of the chapters, and is
stopped afterwards.  The multi-head attention and the positional-encoding chapters are run as a
reader runs them (Run All), the first slider is moved with the keyboard, and the figure must
change; no JavaScript error may appear.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from browser import CHROMIUM_FLAGS, ROOT, check_attention_view, find_chromium, require_chromium
from envs import COLAB, environment, run
from test_notebooks import is_solution_code, is_solution_prose

from transformer_lib.instruments.exercises import CHECKERS

pytestmark = pytest.mark.environment

CHAPTERS = ("02_multihead_attention", "05_positional_encoding")
SHOTS = ROOT / "_build" / "screenshots"

# front-end: (its environment, what it installs besides torch and transformer_lib)
# The classic Notebook gets Colab's ipywidgets 7.7.1 *instead of* the newest 7.x (7.8.5): both
# come with the same widgetsnbextension 3.6.10 (7.7.1 asks for ~=3.6.0), so the browser side
# is the same; only the kernel side differs, and 7.7.1 is the one that readers of the book meet
# on Colab. A third environment for 7.8.x would cost another build and two chapters run live
# for readers who ask pip for "ipywidgets<8" themselves. With IPython 7.34 (Colab's) and
# notebook 6.5's jupyter-client < 8, pip picks ipykernel 6.x.
FRONT_ENDS = {
    "lab": (".venv-lab", ("jupyterlab>=4,<5", "ipywidgets>=8,<9", "ipykernel")),
    "classic": (".venv-classic", ("notebook<7", *COLAB, "ipykernel")),
}

# Messages of the front-ends themselves that break nothing of ours, each with its reason.
KNOWN_HARMLESS = {
    # The classic Notebook highlights the book's MyST fences ("```{admonition} Solution") as a
    # language, and asks for a CodeMirror mode of that name, which does not exist (a 404).
    "no CodeMirror mode for a MyST fence": re.compile(r"/codemirror/mode/"),
    # MathJax 2 in the classic Notebook probes web fonts it does not ship.
    "MathJax 2 font probes": re.compile(r"Access to font at 'about:blank'|/MathJax/fonts/"),
    # The classic Notebook asks twice for the kernel of a notebook that names none; the second
    # request is refused and the first kernel used.
    "a repeated kernel request": re.compile(r"SessionAlreadyStarting"),
}


def _harmless(message: str) -> bool:
    return any(rx.search(message) for rx in KNOWN_HARMLESS.values())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class JupyterServer:
    """A JupyterLab or classic Notebook server on 127.0.0.1 over a copy of the chapters."""

    def __init__(self, front_end: str, python: Path, workdir: Path):
        self.front_end, self.port, self.token = front_end, _free_port(), secrets.token_hex(16)
        self.workdir = workdir
        for chapter in CHAPTERS:
            shutil.copy(ROOT / "notebooks" / f"{chapter}.ipynb", workdir)
        common = ["--no-browser", "--ip=127.0.0.1", f"--port={self.port}", "--allow-root"]
        if front_end == "lab":
            # exposes window.jupyterapp, through which the test waits for the kernel
            args = ["-m", "jupyterlab", *common, f"--IdentityProvider.token={self.token}",
                    f"--ServerApp.root_dir={workdir}", "--LabApp.expose_app_in_browser=True"]
        else:
            args = ["-m", "notebook", *common, f"--NotebookApp.token={self.token}",
                    f"--NotebookApp.notebook_dir={workdir}"]
        self.log = open(workdir / "server.log", "w")
        env = {**os.environ, "JUPYTER_CONFIG_DIR": str(workdir / ".jupyter"),
               "JUPYTER_RUNTIME_DIR": str(workdir / ".runtime")}
        self.process = subprocess.Popen([str(python), *args], cwd=workdir, env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{front_end} server did not start:\n"
                                       + (workdir / "server.log").read_text()[-3000:])
                time.sleep(0.2)

    def url(self, chapter: str) -> str:
        if self.front_end == "lab":  # reset: no workspace restored from an earlier page
            return f"http://127.0.0.1:{self.port}/lab/tree/{chapter}.ipynb?reset&token={self.token}"
        return f"http://127.0.0.1:{self.port}/notebooks/{chapter}.ipynb?token={self.token}"

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture(scope="module")
def chromium():
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module", params=list(FRONT_ENDS))
def server(request, tmp_path_factory):
    name, packages = FRONT_ENDS[request.param]
    python = environment(name, packages)
    # the pins again, so that installing transformer_lib's own ranges cannot move them
    run(python, "-m", "pip", "install", "--quiet", *packages, "-e", ROOT)
    front = "jupyterlab" if request.param == "lab" else "notebook"
    names = ("torch", "numpy", "ipython", "ipykernel", "ipywidgets", "widgetsnbextension", front)
    versions = run(python, "-c", "import importlib.metadata as m, sys; "
                                 "print(*(m.version(p) for p in sys.argv[1:]))", *names).stdout
    print(f"\n{request.param}: " + ", ".join(f"{n} {v}" for n, v in zip(names, versions.split())))
    live = JupyterServer(request.param, python, tmp_path_factory.mktemp(request.param))
    yield live
    live.stop()


# JupyterLab: the open notebook of a path, once its kernel is ready (window.jupyterapp)
LAB_NOTEBOOK = """(path) => { const app = window.jupyterapp;
  const nb = app && Array.from(app.shell.widgets('main')).find(w => w.context && w.context.path === path);
  const kernel = nb && nb.sessionContext.session && nb.sessionContext.session.kernel;
  return kernel && kernel.status === 'idle' ? nb : null; }"""


def _run_all(page, front_end: str, chapter: str):
    """Run every cell as a reader does, and wait until the last one has run."""
    if front_end == "lab":
        path = f"{chapter}.ipynb"
        # find and activate in one call: the kernel can be busy again a moment after it was idle
        page.wait_for_function(f"(path) => {{ const nb = ({LAB_NOTEBOOK})(path); if (!nb) return false;"
                               " window.jupyterapp.shell.activateById(nb.id); return true; }",
                               arg=path, timeout=120_000)
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")  # Run > Run All
        page.wait_for_function(f"(path) => {{ const nb = ({LAB_NOTEBOOK})(path); if (!nb) return false;"
                               " const cells = nb.content.model.cells;"
                               " for (let i = 0; i < cells.length; i++) { const c = cells.get(i);"
                               "   if (c.type === 'code' && !c.executionCount) return false; }"
                               " return true; }", arg=path, timeout=300_000)
    else:
        page.wait_for_function("() => window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel"
                               " && Jupyter.notebook.kernel.is_connected()", timeout=120_000)
        page.wait_for_timeout(1000)   # the widget manager connects to the kernel
        page.click("#celllink")       # Cell > Run All
        page.click("#run_all_cells")
        page.wait_for_function("() => !Jupyter.notebook.kernel_busy && Jupyter.notebook.get_cells()"
                               ".every(c => c.cell_type !== 'code' || typeof c.input_prompt_number"
                               " === 'number')", timeout=300_000)


# Every exercise solution, after Run All: its prose in a closed <details>, and (JupyterLab) its
# code collapsed. JupyterLab shows the output of a cell it runs even when the notebook stored it
# collapsed, so a solution's printed check is visible after Run All; its explanation and code
# stay folded. The classic Notebook has no metadata that hides a code cell without an extension,
# so there only the prose is folded (the code cell starts with "# @title Solution to exercise N").
SOLUTIONS = """(frontEnd) => {
  const details = Array.from(document.querySelectorAll('details'))
    .filter(d => d.querySelector('summary') && d.querySelector('summary').textContent.trim() === 'Solution');
  const result = {details: details.length, open: details.filter(d => d.open).length, code: 0, folded: 0};
  if (frontEnd === 'lab') {
    const nb = window.jupyterapp.shell.currentWidget;
    for (const cell of nb.content.widgets) {
      if (cell.model.type === 'code' && cell.model.sharedModel.getSource().startsWith('# @title Solution')) {
        result.code += 1;
        if (cell.inputHidden) result.folded += 1;
      }
    }
  }
  return result; }"""


# Every code cell's outputs, as JSON text, from the front-end's own model of the notebook (the
# page need not render cells that are scrolled away).
OUTPUTS = """(frontEnd) => {
  if (frontEnd === 'lab') {
    const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
    const texts = [];
    for (let i = 0; i < cells.length; i++) {
      const cell = cells.get(i);
      if (cell.type === 'code') texts.push(JSON.stringify(cell.outputs.toJSON()));
    }
    return texts.join('\\n');
  }
  return Jupyter.notebook.get_cells().filter(c => c.cell_type === 'code')
    .map(c => JSON.stringify(c.output_area.outputs)).join('\\n'); }"""


def _solution_counts(chapter: str) -> tuple[int, int]:
    cells = nbformat.read(ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4).cells
    return sum(map(is_solution_prose, cells)), sum(map(is_solution_code, cells))


def _figure(widget):
    """A screenshot of the explorer's visible figure."""
    images = [img for img in widget.locator("img").all() if img.is_visible()]
    assert len(images) == 1, f"expected one visible figure in the explorer, saw {len(images)}"
    return images[0].screenshot()


def _offline_page(chromium, server):
    """A page that reaches only the server, and the errors it reports."""
    page = chromium.new_page(viewport={"width": 1280, "height": 1000})
    errors = []  # failed loads are judged by their URL (the responses), not by the console's text
    page.on("console", lambda m: m.type == "error" and not m.text.startswith("Failed to load resource")
            and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(e.message))
    page.on("response", lambda r: r.status >= 400 and errors.append(f"HTTP {r.status} for {r.url}"))
    local = f"http://127.0.0.1:{server.port}"
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith((local, "data:", "blob:"))
               else r.abort())
    return page, errors


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_moving_a_slider_in_a_live_kernel_changes_the_figure(server, chromium, chapter):
    page, errors = _offline_page(chromium, server)
    try:
        page.goto(server.url(chapter))
        _run_all(page, server.front_end, chapter)
        prose, code = _solution_counts(chapter)
        folded = page.evaluate(SOLUTIONS, server.front_end)
        print(f"{server.front_end} {chapter}: solutions {folded}")
        assert folded["details"] == prose >= 1 and folded["open"] == 0, folded
        if server.front_end == "lab":
            assert folded["code"] == folded["folded"] == code, folded
        # the exercises' stubs report "not written yet", their solutions pass
        outputs = page.evaluate(OUTPUTS, server.front_end)
        checkers = [c for c in CHECKERS if c.chapter == int(chapter[:2])]
        assert checkers
        for checker in checkers:
            assert f"{checker.exercise}: not written yet" in outputs, checker
            assert f"{checker.exercise}: passed all {len(checker.cases)} cases." in outputs
        if chapter == "02_multihead_attention":   # the attention view, drawn by its own script
            check_attention_view(page, page.locator(".tl-av").first)
            page.mouse.move(0, 0)
        slider = page.locator(".widget-slider, .widget-hslider").first
        slider.scroll_into_view_if_needed()
        widget = page.locator(".widget-vbox", has=slider).first
        deadline = time.monotonic() + 30
        while not any(img.is_visible() for img in widget.locator("img").all()):
            assert time.monotonic() < deadline, "the explorer shows no figure"
            time.sleep(0.2)
        before = _figure(widget)
        SHOTS.mkdir(parents=True, exist_ok=True)
        widget.screenshot(path=str(SHOTS / f"{server.front_end}-{chapter}-before.png"))
        slider.locator(".noUi-handle, .ui-slider-handle").first.focus()
        page.keyboard.press("ArrowRight")
        deadline = time.monotonic() + 30
        while (after := _figure(widget)) == before:   # live mode: the kernel redraws
            assert time.monotonic() < deadline, "the figure did not change"
            time.sleep(0.3)
        widget.screenshot(path=str(SHOTS / f"{server.front_end}-{chapter}-after.png"))
        assert after != before
        assert not [e for e in errors if not _harmless(e)], errors
    finally:
        page.close()


SWITCHES = "head_switches"
CHECKPOINT = ROOT / "_build" / "translator" / "exported.ckpt"


def _switches_notebook(workdir: Path, sentence: str):
    """A notebook that shows chapter 8's translator with tl's head switches."""
    cells = [nbformat.v4.new_code_cell(
        "from transformer_lib.translation.checkpoint import load_checkpoint\n"
        "from transformer_lib.instruments.switches import head_switches\n"
        f"model, src_vocab, tgt_vocab, _ = load_checkpoint({str(CHECKPOINT)!r})\n"
        f"head_switches(model, src_vocab, tgt_vocab, {sentence!r})")]
    # with a kernel named, as the chapters have: without one, JupyterLab asks which to start
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=kernel),
                   workdir / f"{SWITCHES}.ipynb")


def test_the_head_switches_change_the_translation_in_a_live_kernel(server, chromium):
    import transformer_lib as tl
    from transformer_lib.translation.checkpoint import load_checkpoint
    from transformer_lib.translation.translate import translate_with_attention

    if not CHECKPOINT.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{CHECKPOINT} is missing: chapter 8 writes it in the book build")
        pytest.skip("no exported model: build the book (`make book`)")
    model, src_vocab, tgt_vocab, extra = load_checkpoint(CHECKPOINT)
    cross = [("cross", b, h) for b, layer in enumerate(model.attention_layers()["cross"])
             for h in range(layer.num_heads)]

    def french(sentence, off=()):
        with tl.intervene(model, heads_off=off):
            return translate_with_attention(model, sentence, src_vocab, tgt_vocab).text

    # a held-out sentence whose French changes without cross-attention (checked here first)
    sentence = next(s for s in extra["held_out"] if french(s) != french(s, cross))
    _switches_notebook(server.workdir, sentence)
    page, errors = _offline_page(chromium, server)
    try:
        page.goto(server.url(SWITCHES))
        _run_all(page, server.front_end, SWITCHES)
        shown = page.locator(".tl-sw-french")
        shown.wait_for(timeout=60_000)
        assert shown.inner_text() == french(sentence)
        for kind, block, head in cross:            # every cross-attention head, clicked off
            button = page.locator(f"button[title='cross-attention, block {block + 1}, "
                                  f"head {head + 1}']")
            button.scroll_into_view_if_needed()
            button.click()
        page.wait_for_function("(want) => { const p = document.querySelector('.tl-sw-french');"
                               " return p && p.textContent === want; }",
                               arg=french(sentence, cross), timeout=60_000)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{server.front_end}-head-switches.png"), full_page=True)
        print(f"{server.front_end}: {sentence!r} -> {french(sentence)!r}; cross-attention off: "
              f"{french(sentence, cross)!r}")
        assert not [e for e in errors if not _harmless(e)], errors
    finally:
        page.close()
