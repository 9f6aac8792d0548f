"""Colab's starting point, simulated: a virtual environment that already has a torch and
Colab's ipywidgets 7.7.1, IPython 7.34 and numpy 2.1 (``envs.COLAB``).  The chapters' install
cell must leave them untouched, and the widget helper must fall back to redrawing in the kernel
(ipywidgets 7 has no Stack)."""

from __future__ import annotations

import os

import nbformat
import pytest

from browser import ROOT
from envs import COLAB, environment, run

pytestmark = pytest.mark.environment

VERSIONS = ("import importlib.metadata as m; "
            "print(*(m.version(p) for p in ('torch', 'ipywidgets', 'ipython', 'numpy')))")
LIVE_CHECK = """
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
import transformer_lib.instruments.widgets as w
def render(n):
    fig, ax = plt.subplots(); ax.plot(range(n)); return fig
box = w.figure_explorer(render, {"n": [2, 3]})
print(box.mode, w.supports_static())
"""
# chapter 9's head switches, on ipywidgets 7.7.1: built, and a head's button changes the settings
SWITCH_CHECK = """
import torch, transformer_lib as tl
from transformer_lib.translation.data import Vocab
from transformer_lib.instruments.switches import head_switches
src, tgt = Vocab([["i", "am", "cold", "."]] * 2), Vocab([["je", "suis", "froid", "."]] * 2)
torch.manual_seed(0)
model = tl.Transformer(tl.TransformerConfig(len(src), len(tgt), num_hiddens=16, ffn_num_hiddens=32,
                                            num_heads=2, num_enc_blks=1, num_dec_blks=1,
                                            max_len=16)).eval()
panel = head_switches(model, src, tgt, "i am cold .")
panel.heads["cross", 0, 1].value = False
panel.words.children[0].value = True
print(panel.settings(), panel.figure.value[:4] == b"\\x89PNG")
"""


def install_cells():
    """The first code cell of every chapter: its install cell."""
    cells = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        cells.append(next(c.source for c in nb.cells if c.cell_type == "code"))
    return cells


def test_install_cell_keeps_colabs_torch_and_ipywidgets(tmp_path):
    python = environment(".venv-colab", COLAB)  # what Colab ships
    run(python, "-m", "pip", "uninstall", "--yes", "--quiet", "transformer_lib")  # start without it
    before = run(python, "-c", VERSIONS).stdout
    assert before.split()[1:3] == ["7.7.1", "7.34.0"] and before.split()[3].startswith("2.1."), before

    install_cell = install_cells()[0]
    env = dict(os.environ, TRANSFORMER_LIB_SOURCE=str(ROOT))  # the repository instead of its URL
    run(python, "-c", install_cell, env=env, cwd=tmp_path)

    assert run(python, "-c", VERSIONS).stdout == before  # torch, ipywidgets, IPython, numpy untouched
    # outside a kernel the live redraw prints the image's repr first; the verdict is the last line
    assert run(python, "-c", LIVE_CHECK, cwd=tmp_path).stdout.strip().splitlines()[-1] == "live False"
    assert run(python, "-c", SWITCH_CHECK, cwd=tmp_path).stdout.strip().splitlines()[-1] == (
        "{'heads_off': [('cross', 0, 1)], 'hidden': [0], 'window': None} True")
