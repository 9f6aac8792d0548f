"""The package as a reader installs it: its wheel in a virtual environment of its own (torch and
the package's dependencies; nothing of this checkout on its path), with no data folder and an
empty home. The installed command translates with the published model that the wheel carries."""

from __future__ import annotations

import os

import pytest

from envs import build_wheel, environment, run

pytestmark = pytest.mark.environment

SENTENCES = ["Where can I buy a ticket for the concert?", "My brother and his wife have two daughters."]


def test_the_installed_command_translates_with_the_published_model(tmp_path):
    from transformer_lib.translation import load_everyday
    from transformer_lib.translation.download import DATA_DIR_ENV
    from transformer_lib.translation.translate import translate

    wheel = build_wheel(tmp_path / "wheel")
    python = environment(".venv-wheel")
    run(python, "-m", "pip", "install", "--quiet", wheel)                       # its dependencies
    run(python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", wheel)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in (DATA_DIR_ENV, "PYTHONPATH", "XDG_CACHE_HOME")}
    done = run(python.parent / "transformer-lib", "translate", *SENTENCES, cwd=home,
               env={**env, "HOME": str(home)})
    model, vocab = load_everyday()
    assert done.stdout.splitlines() == [r.text for r in translate(model, SENTENCES, vocab, vocab)]
    # the model is the installed package's, not this checkout's
    assert "the published everyday model" in done.stderr
    assert "site-packages" in done.stderr and ".venv-wheel" in done.stderr
    print(f"\n{done.stderr.strip()}\n{done.stdout.strip()}")
