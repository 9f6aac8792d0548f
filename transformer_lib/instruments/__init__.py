"""The book's instruments: what lets a reader see and test the model.

- :mod:`.notebook`    ``show_source`` (the library as the book's listing),
                      ``glue``, ``claim``, ``report``, a live loss plot
- :mod:`.plotting`    heatmaps and curves (matplotlib)
- :mod:`.widgets`     ``figure_explorer``: sliders that stay live in the
                      static book
- :mod:`.viz`         ``attention_view``: attention you can point at, as
                      plain HTML and JavaScript (no kernel, no CDN)
- :mod:`.heads`       each head's confidence (``head_confidence``)
- :mod:`.switches`    heads and source words switched off, live
- :mod:`.architecture` the encoder-decoder drawn as SVG
- :mod:`.export`, :mod:`.web`: the trained translator and language model
                      as ONNX graphs, and page boxes that run them in the
                      reader's browser
- :mod:`.checkup`     ``doctor()``: a self-check of the set-up
"""

from .architecture import architecture_svg
from .checkup import doctor
from .export import (export_language_model, export_translator,
                     rounded_to_float16)
from .heads import head_confidence
from .notebook import LiveLossPlot, claim, glue, report, show_source
from .plotting import (plot_loss_curves, plot_positional_encoding,
                       show_heatmaps)
from .switches import head_switches
from .viz import AttentionExample, attention_view
from .web import (language_model_box, page_files_dir,
                  saved_page_model_path, saved_translator_path,
                  translator_box)
from .widgets import figure_explorer

__all__ = [
    "AttentionExample", "LiveLossPlot", "architecture_svg",
    "attention_view", "claim", "doctor", "export_language_model",
    "export_translator", "language_model_box",
    "figure_explorer", "glue", "head_confidence", "head_switches",
    "page_files_dir", "plot_loss_curves", "plot_positional_encoding",
    "report", "rounded_to_float16", "saved_page_model_path",
    "saved_translator_path",
    "show_heatmaps", "show_source", "translator_box",
]
