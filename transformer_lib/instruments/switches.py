"""The switches of :func:`~transformer_lib.model.intervene` as ipywidgets,
for a live kernel (JupyterLab, the classic Notebook, Colab's ipywidgets 7):
a button per head for each kind of attention, "all on", "keep the top k"
of a ranking, the encoder's window and the source words, which a click
hides.  Every change translates again with the PyTorch model.  The
static book has the same switches in the page (:mod:`.web`).

Only widgets that ipywidgets 7.7 (Colab's) and 8 both have are used, and
the figure goes into an ``Image``, not an ``Output`` (see
:mod:`.widgets`).
"""

from __future__ import annotations

import html

import torch

from ..model.intervene import KINDS, intervene
from .plotting import _pyplot, figure_to_png
from ..translation.translate import translate_with_attention
from .web import _checked_ranking
from .widgets import _ipywidgets

TITLES = {"encoder_self": "encoder self-attention",
          "decoder_self": "decoder self-attention",
          "cross": "cross-attention"}
MAX_WINDOW = 5


class HeadSwitches:
    """The switches and the translation they give; display it (or its
    ``widget``, an ipywidgets ``VBox``) in a notebook.

    ``settings()`` is what the switches say now; ``result`` the last
    translation (a :class:`~.translate.AttendedTranslation`).
    """

    def __init__(self, model, src_vocab, tgt_vocab, sentence: str,
                 ranking=None):
        w = _ipywidgets()
        self.model, self.ranking = model, ranking
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.result = None           # the last translation
        self._quiet = False          # True while one change sets many
        layers = model.attention_layers()
        self.heads = {}              # (kind, block, head) -> ToggleButton
        grids = []
        for kind in KINDS:
            rows = [w.HTML(f"<b>{TITLES[kind]}</b>")]
            for block, layer in enumerate(layers[kind]):
                buttons = []
                for head in range(layer.num_heads):
                    button = w.ToggleButton(
                        value=True, description=str(head + 1),
                        tooltip=f"{TITLES[kind]}, block {block + 1}, "
                                f"head {head + 1}",
                        layout=w.Layout(width="3.2em"))
                    self.heads[kind, block, head] = button
                    buttons.append(button)
                rows.append(w.HBox([w.Label(f"block {block + 1}"),
                                    *buttons]))
            grids.append(w.VBox(rows))
        self.all_on = w.Button(description="all on")
        self.top = None
        controls = [self.all_on]
        if ranking is not None:
            self.top = w.IntSlider(value=len(ranking), min=0,
                                   max=len(ranking),
                                   description="keep the top")
            controls.append(self.top)
        self.window = w.Dropdown(
            options=[("all words", -1)] + [(f"±{k}", k)
                                           for k in range(MAX_WINDOW + 1)],
            value=-1, description="window")
        controls.append(self.window)
        self.text = w.Text(value=sentence, description="English",
                           continuous_update=False)
        self.words = w.HBox([])
        self.french = w.HTML()
        self.figure = w.Image(format="png")
        self.widget = w.VBox([self.text, w.HBox(grids), w.HBox(controls),
                              self.words, self.french, self.figure])

        for button in self.heads.values():
            button.observe(self._changed, names="value")
        self.all_on.on_click(self._all_on)
        if self.top is not None:
            self.top.observe(self._keep_top, names="value")
        self.window.observe(self._changed, names="value")
        self.text.observe(self._new_sentence, names="value")
        self._new_sentence()

    # what the switches say
    def settings(self) -> dict:
        """``{"heads_off": [(kind, block, head)], "hidden": [source
        positions], "window": k or None}``."""
        return {"heads_off": [h for h, b in self.heads.items()
                              if not b.value],
                "hidden": [i for i, b in enumerate(self.words.children)
                           if b.value],
                "window": None if self.window.value < 0
                else self.window.value}

    def _changed(self, _change=None):
        if not self._quiet:
            self.translate()

    def _all_on(self, _button=None):
        self._set_heads(set())

    def _keep_top(self, _change=None):
        self._set_heads({tuple(h) for h in self.ranking[self.top.value:]})

    def _set_heads(self, off):
        self._quiet = True
        for head, button in self.heads.items():
            button.value = head not in off
        self._quiet = False
        self.translate()

    def _new_sentence(self, _change=None):
        w = _ipywidgets()
        source = self.src_vocab.tokenize(self.text.value)
        words = [w.ToggleButton(value=False, description=token,
                                tooltip="hide this word",
                                layout=w.Layout(width="auto"))
                 for token in source]
        for button in words:
            button.observe(self._changed, names="value")
        self.words.children = words
        self.translate()

    def translate(self):
        """Translate with the switches as they are; update the output."""
        settings = self.settings()
        if not self.words.children:
            self.french.value = "<i>Type an English sentence.</i>"
            self.result = None
            return
        S = len(self.words.children) + 1                      # + <eos>
        hidden = None
        if settings["hidden"]:
            hidden = torch.zeros(1, S, dtype=torch.bool)
            hidden[0, settings["hidden"]] = True
        with intervene(self.model, heads_off=settings["heads_off"],
                       hidden=hidden, window=settings["window"]):
            self.result = translate_with_attention(
                self.model, self.text.value, self.src_vocab,
                self.tgt_vocab)
        # the figure first: when the French changes, its attention is shown
        self.figure.value = figure_to_png(self._cross_figure(), dpi=72)
        self.french.value = (f"<p class='tl-sw-french' style='font-size:"
                             f"1.2em'>{html.escape(self.result.text)}</p>")

    def _cross_figure(self):
        """Each block's cross-attention, averaged over its heads that
        are on (all 0 where none is)."""
        plt = _pyplot()
        blocks = self.result.weights["cross"]             # [(h, T, S)]
        fig, axes = plt.subplots(1, len(blocks), squeeze=False,
                                 figsize=(3.4 * len(blocks), 2.8))
        for block, (ax, weights) in enumerate(zip(axes[0], blocks)):
            on = [h for h in range(weights.shape[0])
                  if self.heads["cross", block, h].value]
            mean = (weights[on].mean(0) if on
                    else torch.zeros(weights.shape[1:]))      # (T, S)
            ax.imshow(mean.numpy(), cmap="Blues", vmin=0, vmax=1)
            ax.set_xticks(range(len(self.result.source)),
                          self.result.source, rotation=90)
            ax.set_yticks(range(len(self.result.outputs)),
                          self.result.outputs)
            ax.set_title(f"cross-attention, block {block + 1}",
                         fontsize=9)
        return fig

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


def head_switches(model, src_vocab, tgt_vocab, sentence: str, *,
                  ranking=None) -> HeadSwitches:
    """The switches of :func:`~transformer_lib.model.intervene` on ``model``,
    translating ``sentence`` (which the reader can change) greedily.

    ranking: ``(kind, block, head)`` triples, most important first, for
    "keep the top k" (every head of the model, once).
    """
    if not hasattr(model, "attention_layers"):
        raise TypeError(f"model must have attention layers by kind (a "
                        f"Transformer), got {type(model).__name__}")
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a string, got "
                        f"{type(sentence).__name__}")
    ranking = _checked_ranking(ranking)
    if ranking is not None:
        layers = model.attention_layers()
        heads = {(kind, block, head) for kind in KINDS
                 for block, layer in enumerate(layers[kind])
                 for head in range(layer.num_heads)}
        if {tuple(h) for h in ranking} != heads:
            raise ValueError(f"ranking must name each of the model's "
                             f"{len(heads)} heads once")
    return HeadSwitches(model, src_vocab, tgt_vocab, sentence, ranking)
