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

from .._checks import check_count, check_flag, check_positive_int
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


MODELS = ("translator", "everyday")  # the translators' folders
PAGE_FOLDERS = MODELS + ("language_model",)


def _check_model(model, allowed=MODELS) -> str:
    if model not in allowed:
        raise ValueError(f"model must be one of {allowed}, got {model!r}")
    return model


def page_files_dir(model: str = "translator") -> Path:
    """Where an exported model goes for the page's boxes:
    ``_extra/<model>`` of the book, which its build copies to the site's
    root where the page looks; elsewhere ``<model>_web`` beside the
    notebook.  ``model``: ``"translator"`` (chapter 8's own model, which
    chapter 9's switches use), ``"everyday"`` (the published model) or
    ``"language_model"`` (chapter 12's, for :func:`language_model_box`).
    """
    _check_model(model, PAGE_FOLDERS)
    root = book_root()
    return root / "_extra" / model if root else Path(f"{model}_web")


def saved_page_model_path(model: str) -> Path | None:
    """Where a chapter saves the model a page box runs, as exported, in
    the book's sources (for later chapters and the browser tests; not
    published); None outside them.  ``model``: a folder of
    :func:`page_files_dir`."""
    _check_model(model, PAGE_FOLDERS)
    root = book_root()
    return root / "_build" / model / "exported.ckpt" if root else None


def saved_translator_path() -> Path | None:
    """Where chapter 8 saves the model its page runs (chapter 9 analyses
    it): :func:`saved_page_model_path` ``("translator")``."""
    return saved_page_model_path("translator")


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
        scripts = _scripts("onnx_page.js", "attention_view.js",
                           "translator.js")
        base = json.dumps(self.base)
        options = json.dumps({"ranking": self.ranking, "model": self.model}
                             ).replace("</", "<\\/")
        box_id = _box_id("tl-tr", self.example, self.base, self.switches,
                         self.model)
        return (f'{_STYLE}{_BOX_STYLE}<div class="tl-tr" id="{box_id}">'
                f'<div class="tl-tr-row"><label>English '
                f'<input class="tl-tr-input" type="text" '
                f'value="{html.escape(self.example)}" '
                f'aria-label="English sentence"></label>'
                f'<button class="tl-tr-button" type="button">Translate'
                f'</button></div>'
                + ('<div class="tl-tr-switches"></div>' if self.switches
                   else '') +
                '<div class="tl-tr-output" aria-live="polite"></div>'
                '<div class="tl-tr-status" aria-live="polite">The model '
                'loads when you first press Translate.</div>'
                '<div class="tl-tr-view"></div></div>'
                + _start_script(scripts, box_id,
                                f"tlTranslator(root,{base},{options})"))


def _scripts(*names: str) -> str:
    """The package's JavaScript files ``names``, in that order, as one
    text (a box's output carries them: no file to serve)."""
    package = files(__package__)
    return "\n".join(package.joinpath(name).read_text() for name in names)


def _box_id(prefix: str, *settings) -> str:
    """An id for a box, the same for the same settings (so that a chapter
    run again gives the same page)."""
    key = "\n".join(map(str, settings)).encode()
    return f"{prefix}-" + hashlib.sha1(key).hexdigest()[:12]


def _start_script(scripts: str, box_id: str, call: str) -> str:
    """The box's scripts, then ``call`` (which sees ``root``, the box)
    once the box is in the page (a notebook may insert the output after
    running its script)."""
    return (f'<script>{scripts}\n(function(){{'
            f'function go(n){{var root=document.getElementById('
            f'"{box_id}");if(root&&!root.tlReady){{root.tlReady=true;'
            f'{call};}}'
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


_LM_STYLE = """<style>
.tl-lm{font:14px sans-serif;margin:.5em 0}
.tl-lm-row{display:flex;gap:.8em;flex-wrap:wrap;align-items:center;
 margin:.2em 0}
.tl-lm-prompt{flex:1 1 18em;font:inherit;padding:.3em}
.tl-lm-row input[type=number]{width:4.5em;font:inherit}
.tl-lm-output{font:1.1em monospace;margin:.4em 0;min-height:1.4em;
 white-space:pre-wrap}
.tl-lm-given{opacity:.6}
.tl-lm-status{opacity:.8;min-height:1.3em}
</style>"""


def _attribute(x) -> str:
    return html.escape(str(x), quote=True)


class LanguageModelBox:
    """The sampler as an HTML output (``_repr_html_``)."""

    def __init__(self, prompt: str, temperature: float, top_k, seed: int,
                 base: str):
        self.prompt, self.temperature = prompt, temperature
        self.top_k, self.seed, self.base = top_k, seed, base

    def _repr_html_(self) -> str:
        scripts = _scripts("onnx_page.js", "language_model.js")
        box_id = _box_id("tl-lm", self.prompt, self.temperature,
                         self.top_k, self.seed, self.base)
        return (f'{_LM_STYLE}<div class="tl-lm" id="{box_id}">'
                f'<div class="tl-lm-row"><label>Prompt '
                f'<input class="tl-lm-prompt" type="text" '
                f'value="{_attribute(self.prompt)}" aria-label="prompt">'
                f'</label><button class="tl-lm-button" type="button">'
                f'Write</button></div>'
                f'<div class="tl-lm-row"><label>temperature '
                f'<input class="tl-lm-temperature" type="range" min="0" '
                f'max="2" step="0.1" value="{_attribute(self.temperature)}" '
                f'aria-label="temperature"> '
                f'<span class="tl-lm-temperature-value"></span></label>'
                f'<label>top-k <input class="tl-lm-top-k" type="number" '
                f'min="0" step="1" value="{_attribute(self.top_k or 0)}" '
                f'aria-label="top-k, 0 for all"></label>'
                f'<label>seed <input class="tl-lm-seed" type="number" '
                f'min="0" step="1" value="{_attribute(self.seed)}" '
                f'aria-label="seed"></label></div>'
                f'<div class="tl-lm-output" aria-live="polite"></div>'
                f'<div class="tl-lm-status" aria-live="polite">The model '
                f'loads when you first press Write.</div></div>'
                + _start_script(scripts, box_id,
                                f"tlLanguageModel(root,"
                                f"{json.dumps(self.base)})"))


def language_model_box(prompt: str = "", *, temperature: float = 0.8,
                       top_k: int | None = None, seed: int = 0,
                       base: str = "../") -> LanguageModelBox:
    """A box that samples chapter 12's language model in the reader's
    browser: a prompt (one line), a temperature on a slider from 0
    (greedy) to 2 in steps of 0.1, top-k (``None``: all) and a seed (below
    2^53, which JavaScript's numbers hold exactly), set to these values.
    The model, exported by
    :func:`~transformer_lib.instruments.export.export_language_model`
    into :func:`page_files_dir` ``("language_model")``, loads on the first
    click; the box then writes what
    :func:`~transformer_lib.translation.generate` writes with the exported
    (float16-rounded) model for the same prompt, seed and settings, up to
    float32's rounding.  ``base`` as for :func:`translator_box`."""
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a string, got "
                        f"{type(prompt).__name__}")
    if "\n" in prompt or "\r" in prompt:
        raise ValueError("prompt must be one line (the box's text field "
                         "drops line breaks)")
    if (isinstance(temperature, bool)
            or not isinstance(temperature, (int, float))
            or not 0 <= temperature <= 2
            or abs(temperature * 10 - round(temperature * 10)) > 1e-9):
        raise ValueError(f"temperature must be one of the slider's values, "
                         f"0 (greedy) to 2 in steps of 0.1, got "
                         f"{temperature!r}")
    if top_k is not None:
        check_positive_int("top_k", top_k)
    check_count("seed", seed)
    if seed >= 2 ** 53:
        raise ValueError(f"seed must be below 2**53 (JavaScript's numbers "
                         f"hold no larger whole number exactly), got {seed}")
    return LanguageModelBox(prompt, temperature, top_k, seed, base)
