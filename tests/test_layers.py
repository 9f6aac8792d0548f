"""The library's layout shows its architecture: three layers, each importing only the ones
before it -- model (the Transformer), translation (the task), instruments (the book's) -- and
the public names a reader uses stay where the chapters import them."""

from __future__ import annotations

import ast

import pytest

import transformer_lib as tl
from browser import ROOT

LIBRARY = ROOT / "transformer_lib"
LAYERS = ["model", "translation", "instruments"]


def imported_layers(path, layer, depth=0):
    """The layers (and top-level modules) that the module at ``path`` imports, resolved from
    its relative and absolute imports, lazy ones inside functions included. ``depth``: how many
    packages below its layer's the module lies (0 for ``transformer_lib/model/x.py``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names]
            if 0 < node.level <= depth + 1:       # from .x (or ..x in a subpackage): its layer
                found.add(layer)
            elif node.level == depth + 2:         # from ..x.y, or from .. import x
                found.update([node.module.split(".")[0]] if node.module else names)
            elif node.module == "transformer_lib":               # from transformer_lib import x
                found.update(names)
            elif (node.module or "").startswith("transformer_lib."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names
                         if a.name.startswith("transformer_lib."))
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_imports_only_the_layers_before_it(layer):
    allowed = set(LAYERS[:LAYERS.index(layer) + 1]) | {"_checks"}
    for path in sorted((LIBRARY / layer).rglob("*.py")):
        depth = len(path.relative_to(LIBRARY / layer).parts) - 1
        extra = imported_layers(path, layer, depth) - allowed
        assert not extra, f"{path.relative_to(ROOT)} imports {sorted(extra)}"


def test_the_layer_check_can_fail(tmp_path):
    upward = tmp_path / "upward.py"
    upward.write_text("def f():\n    from ..instruments.notebook import glue\n")
    assert imported_layers(upward, "model") == {"instruments"}
    for line in ("from transformer_lib import instruments", "from .. import instruments",
                 "import transformer_lib.instruments.viz"):
        upward.write_text(f"def f():\n    {line}\n")
        assert imported_layers(upward, "model") == {"instruments"}, line
    upward.write_text("from ...instruments import viz\nfrom ..data import Vocab\n")
    assert imported_layers(upward, "translation", depth=1) == {"instruments", "translation"}


def test_every_module_belongs_to_a_layer():
    top = sorted(p.name for p in LIBRARY.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "_checks.py", "cli.py"]


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_exports_what_its_all_names(layer):
    package = getattr(tl, layer)
    missing = [name for name in package.__all__ if not hasattr(package, name)]
    assert not missing


def test_each_top_level_name_is_one_of_a_layers_own():
    for name in tl.__all__:
        obj = getattr(tl, name)
        if name in LAYERS:
            continue
        # a function or class, or a layer's sub-package (tl.exercises)
        home = getattr(obj, "__module__", obj.__name__).split(".")[1]
        assert home in LAYERS, name
        assert getattr(getattr(tl, home), name) is obj, name
