"""A translator that runs in the reader's browser, in the static book: a
text box, a button, the French, and the cross-attention behind it in the
viewer of :mod:`.viz`.

:func:`translator_box` is an HTML output: inline script and markup only
(a few kilobytes).  ONNX Runtime Web and the model, exported by
:func:`transformer_lib.export.export_translator`, load on the first
click, from ``ort/`` and ``translator/`` at the root of the book's site
(the build copies them from ``_extra/``; they are not in ``_static``,
whose scripts every page loads); where they are missing (a notebook
outside the book) or WebAssembly is not available, the box says so.
"""

from __future__ import annotations

import hashlib
import html
import json
from importlib.resources import files

from .viz import _STYLE

_BOX_STYLE = """<style>
.tl-tr{font:14px sans-serif;margin:.5em 0}
.tl-tr-row{display:flex;gap:.5em;flex-wrap:wrap;align-items:center}
.tl-tr-input{flex:1 1 18em;font:inherit;padding:.3em}
.tl-tr-output{font-size:1.2em;margin:.4em 0;min-height:1.4em}
.tl-tr-status{opacity:.8;min-height:1.3em}
</style>"""


class TranslatorBox:
    """The translator as an HTML output (``_repr_html_``)."""

    def __init__(self, example: str, base: str):
        self.example, self.base = example, base

    def _repr_html_(self) -> str:
        package = files(__package__)
        scripts = "\n".join(package.joinpath(name).read_text()
                            for name in ("attention_view.js",
                                         "translator.js"))
        base = json.dumps(self.base)
        key = f"{self.example}\n{self.base}".encode()
        box_id = "tl-tr-" + hashlib.sha1(key).hexdigest()[:12]
        return (f'{_STYLE}{_BOX_STYLE}<div class="tl-tr" id="{box_id}">'
                f'<div class="tl-tr-row"><label>English '
                f'<input class="tl-tr-input" type="text" '
                f'value="{html.escape(self.example)}" '
                f'aria-label="English sentence"></label>'
                f'<button class="tl-tr-button" type="button">Translate'
                f'</button></div>'
                f'<div class="tl-tr-output" aria-live="polite"></div>'
                f'<div class="tl-tr-status" aria-live="polite">The model '
                f'loads when you first press Translate.</div>'
                f'<div class="tl-tr-view"></div></div>'
                f'<script>{scripts}\n(function(){{'
                f'function go(n){{var root=document.getElementById('
                f'"{box_id}");if(root&&!root.tlReady){{root.tlReady=true;'
                f'tlTranslator(root,{base});}}else if(!root&&n<50){{'
                f'setTimeout(function(){{go(n+1);}},100);}}}}go(0);}})();'
                f'</script>')


def translator_box(example: str = "I am cold.",
                   base: str = "../") -> TranslatorBox:
    """The box, with ``example`` typed in.  ``base``: the folder that holds
    ``ort/`` and ``translator/``, relative to the page, used when the page
    does not load Sphinx's ``_static`` folder (whose parent is the root)."""
    if not isinstance(example, str):
        raise TypeError(f"example must be a string, got "
                        f"{type(example).__name__}")
    return TranslatorBox(example, base)
