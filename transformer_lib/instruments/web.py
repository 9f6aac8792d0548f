"""A translator that runs in the reader's browser, in the static book: a
text box, a button, the French, and the cross-attention behind it in the
viewer of :mod:`.viz`.  With ``switches=True`` it also has the switches
of :func:`~transformer_lib.model.intervene`: a button per head, for each kind
of attention, "all on" and "keep the top k" of a ranking, the encoder's
window, and the source words, which a click hides; every click
translates again (the ONNX graphs take the switches as inputs).

:func:`translator_box` is an HTML output: inline script and markup only
(a few kilobytes).  ONNX Runtime Web and the model, exported by
:func:`transformer_lib.instruments.export.export_translator`, load on the
first click, from ``ort/`` and ``translator/`` at the root of the book's site
(the build copies them from ``_extra/``; they are not in ``_static``,
whose scripts every page loads); where they are missing (a notebook
outside the book) or WebAssembly is not available, the box says so.
"""

from __future__ import annotations

import hashlib
import html
import json
from importlib.resources import files
from pathlib import Path

from .._checks import check_flag
from .viz import _STYLE


def book_root() -> Path | None:
    """The book's folder when a chapter runs from the book's sources (the
    notebook's folder sits beside ``_config.yml`` and ``_extra/``, as in
    the repository and in the book's build); None elsewhere (Colab, a
    notebook copied on its own)."""
    root = Path("..").resolve()
    if (root / "_config.yml").is_file() and (root / "_extra").is_dir():
        return root
    return None


MODELS = ("translator", "everyday")  # the page's model folders


def _check_model(model) -> str:
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    return model


def page_files_dir(model: str = "translator") -> Path:
    """Where an exported model goes for :func:`translator_box`:
    ``_extra/<model>`` of the book, which its build copies to the site's
    root where the page looks; elsewhere ``<model>_web`` beside the
    notebook.  ``model``: ``"translator"`` (chapter 8's own model, which
    chapter 9's switches use) or ``"everyday"`` (the published model)."""
    _check_model(model)
    root = book_root()
    return root / "_extra" / model if root else Path(f"{model}_web")


def saved_translator_path() -> Path | None:
    """Where chapter 8 saves the model the page runs, in the book's
    sources (for chapter 9 and the browser tests; not published); None
    outside them."""
    root = book_root()
    return root / "_build" / "translator" / "exported.ckpt" if root else None


_BOX_STYLE = """<style>
.tl-tr{font:14px sans-serif;margin:.5em 0}
.tl-tr-row{display:flex;gap:.5em;flex-wrap:wrap;align-items:center}
.tl-tr-input{flex:1 1 18em;font:inherit;padding:.3em}
.tl-tr-output{font-size:1.2em;margin:.4em 0;min-height:1.4em}
.tl-tr-status{opacity:.8;min-height:1.3em}
.tl-tr-grids{display:flex;flex-wrap:wrap;gap:.5em;margin:.4em 0}
.tl-tr-grid{border:1px solid #ccc;border-radius:4px;padding:.2em .5em}
.tl-tr-block{display:flex;gap:.25em;align-items:center;margin:.15em 0}
.tl-tr-label{min-width:4.5em;opacity:.8}
.tl-tr-head,.tl-tr-word{font:inherit;min-width:2em;padding:.1em .4em;
 border:1px solid #888;border-radius:3px;cursor:pointer;background:#fff}
.tl-tr-head[aria-pressed=true]{background:#1f77b4;color:#fff}
.tl-tr-word[aria-pressed=true]{text-decoration:line-through;opacity:.5}
.tl-tr-words{display:flex;flex-wrap:wrap;gap:.3em;align-items:center;
 margin:.4em 0}
</style>"""


KINDS = ("encoder_self", "decoder_self", "cross")


class TranslatorBox:
    """The translator as an HTML output (``_repr_html_``)."""

    def __init__(self, example: str, base: str, switches: bool = False,
                 ranking: list | None = None, model: str = "translator"):
        self.example, self.base = example, base
        self.switches, self.ranking = switches, ranking
        self.model = model

    def _repr_html_(self) -> str:
        package = files(__package__)
        scripts = "\n".join(package.joinpath(name).read_text()
                            for name in ("attention_view.js",
                                         "translator.js"))
        base = json.dumps(self.base)
        options = json.dumps({"ranking": self.ranking, "model": self.model}
                             ).replace("</", "<\\/")
        key = (f"{self.example}\n{self.base}\n{self.switches}\n"
               f"{self.model}").encode()
        box_id = "tl-tr-" + hashlib.sha1(key).hexdigest()[:12]
        return (f'{_STYLE}{_BOX_STYLE}<div class="tl-tr" id="{box_id}">'
                f'<div class="tl-tr-row"><label>English '
                f'<input class="tl-tr-input" type="text" '
                f'value="{html.escape(self.example)}" '
                f'aria-label="English sentence"></label>'
                f'<button class="tl-tr-button" type="button">Translate'
                f'</button></div>'
                + ('<div class="tl-tr-switches"></div>' if self.switches
                   else '') +
                f'<div class="tl-tr-output" aria-live="polite"></div>'
                f'<div class="tl-tr-status" aria-live="polite">The model '
                f'loads when you first press Translate.</div>'
                f'<div class="tl-tr-view"></div></div>'
                f'<script>{scripts}\n(function(){{'
                f'function go(n){{var root=document.getElementById('
                f'"{box_id}");if(root&&!root.tlReady){{root.tlReady=true;'
                f'tlTranslator(root,{base},{options});}}'
                f'else if(!root&&n<50){{'
                f'setTimeout(function(){{go(n+1);}},100);}}}}go(0);}})();'
                f'</script>')


def _checked_ranking(ranking) -> list | None:
    if ranking is None:
        return None
    if isinstance(ranking, (str, bytes)) or not hasattr(ranking, "__iter__"):
        raise TypeError(f"ranking must be a list of (kind, block, head), "
                        f"got {type(ranking).__name__}")
    checked = []
    for entry in ranking:
        if not (isinstance(entry, (tuple, list)) and len(entry) == 3
                and entry[0] in KINDS
                and all(isinstance(i, int) and not isinstance(i, bool)
                        and i >= 0 for i in entry[1:])):
            raise ValueError(f"ranking: each entry must be (kind, block, "
                             f"head), kind one of {KINDS}, block and head "
                             f"ints >= 0; got {entry!r}")
        checked.append([entry[0], entry[1], entry[2]])
    if len({tuple(e) for e in checked}) != len(checked):
        raise ValueError("ranking names a head twice")
    return checked


def translator_box(example: str = "I am cold.", base: str = "../", *,
                   switches: bool = False, ranking=None,
                   model: str = "translator") -> TranslatorBox:
    """The box, with ``example`` typed in.  ``base``: the folder that holds
    ``ort/`` and the model's folder, relative to the page, used when the
    page does not load Sphinx's ``_static`` folder (whose parent is the
    root).  ``model``: the folder of :func:`page_files_dir` the box
    translates with.

    switches: show the switches of :func:`~transformer_lib.model.intervene`
    (they appear with the first translation, when the model's sizes are
    known).  ranking: ``(kind, block, head)`` triples, most important
    first, for "keep the top k" (every head of the model, once)."""
    if not isinstance(example, str):
        raise TypeError(f"example must be a string, got "
                        f"{type(example).__name__}")
    check_flag("switches", switches)
    ranking = _checked_ranking(ranking)
    if ranking is not None and not switches:
        raise ValueError("ranking is for the switches: pass switches=True")
    return TranslatorBox(example, base, switches, ranking,
                         _check_model(model))
