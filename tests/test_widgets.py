"""The plotting helpers and the widget helper (static precomputed mode and live fallback)."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import pytest  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import transformer_lib.instruments.widgets as tw  # noqa: E402
from transformer_lib.instruments.plotting import figure_to_png, plot_positional_encoding, show_heatmaps  # noqa: E402
from transformer_lib.model.positional import sinusoidal_encoding  # noqa: E402


def test_show_heatmaps_grid_and_labels():
    matrices = torch.rand(2, 3, 4, 5)
    fig = show_heatmaps(matrices, titles=["a", "b", "c"], xticklabels=list("vwxyz"))
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == 6 and heatmaps[0].get_title() == "a"
    for panel, expected in zip(heatmaps, matrices.reshape(6, 4, 5), strict=True):  # row by row
        np.testing.assert_array_equal(panel.images[0].get_array(), expected.numpy())
    assert [t.get_text() for t in heatmaps[-1].get_xticklabels()] == list("vwxyz")
    assert len(show_heatmaps(torch.rand(4, 5)).axes) == 2  # one heatmap and its colour bar
    with pytest.raises(ValueError, match="matrices"):
        show_heatmaps(torch.rand(5))


def test_positional_encoding_plot_and_png():
    fig = plot_positional_encoding(sinusoidal_encoding(60, 32))
    png = figure_to_png(fig)
    assert png.startswith(b"\x89PNG")


def _render_log():
    calls = []

    def render(heads, mask):
        calls.append((heads, mask))
        return show_heatmaps(torch.rand(heads, 3, 3))

    return render, calls


# ipywidgets 7 (Colab's 7.7.1) has no Stack: there the static mode refuses (tested below) and
# the figures are live. The set-up installs ipywidgets 8.
@pytest.mark.skipif(not tw.supports_static(), reason="ipywidgets 7 has no Stack (static mode needs 8)")
def test_static_mode_precomputes_every_state_and_links_the_controls_in_the_browser():
    render, calls = _render_log()
    box = tw.figure_explorer(render, {"heads": [1, 2, 4], "mask": ["none", "padding", "causal"]},
                             mode="static")
    assert box.mode == "static" and len(calls) == 9 and set(box.images) == set(calls)
    heads_slider, mask_buttons, top = box.children
    assert isinstance(heads_slider, widgets.SelectionSlider)
    assert isinstance(mask_buttons, widgets.ToggleButtons)
    assert isinstance(top, widgets.Stack) and len(top.children) == 3
    assert all(isinstance(child, widgets.Stack) and len(child.children) == 3 for child in top.children)
    image = top.children[2].children[1]
    assert isinstance(image, widgets.Image) and image.value == box.images[(4, "padding")]
    assert len(box.links) == 4  # one for the top stack, one per second-level stack
    linked = {(link.source[0].model_id, link.source[1], link.target[0].model_id, link.target[1])
              for link in box.links}
    assert (heads_slider.model_id, "index", top.model_id, "selected_index") in linked
    for child in top.children:  # the second control drives every stack of the second level
        assert (mask_buttons.model_id, "index", child.model_id, "selected_index") in linked


def test_live_mode_redraws_in_the_kernel():
    render, calls = _render_log()
    box = tw.figure_explorer(render, {"heads": [1, 2], "mask": ["none", "causal"]}, mode="live")
    assert box.mode == "live" and calls == [(1, "none")]
    image = box.children[-1]
    assert isinstance(image, widgets.Image) and bytes(image.value).startswith(b"\x89PNG")
    assert not any(isinstance(w, widgets.Output) for w in box.children)  # broken in classic Notebook 3.6.10
    first = image.value
    box.children[0].value = 2
    box.children[1].value = "causal"
    assert calls[-1] == (2, "causal") and len(calls) == 3
    assert bytes(image.value) != bytes(first)                            # the kernel redrew the figure


def test_auto_mode_falls_back_to_live_without_stack(monkeypatch):
    render, calls = _render_log()
    monkeypatch.setattr(tw, "supports_static", lambda: False)
    box = tw.figure_explorer(render, {"heads": [1, 2], "mask": ["none"]})
    assert box.mode == "live" and len(calls) == 1
    with pytest.raises(RuntimeError, match="ipywidgets >= 8"):
        tw.figure_explorer(render, {"heads": [1]}, mode="static")


def test_widget_helper_errors():
    render, _ = _render_log()
    with pytest.raises(ValueError, match="mode"):
        tw.figure_explorer(render, {"heads": [1]}, mode="fast")
    with pytest.raises(ValueError, match="controls"):
        tw.figure_explorer(render, {})
    with pytest.raises(ValueError, match="'heads' has no values"):
        tw.figure_explorer(render, {"heads": []})


def test_long_labels_get_a_dropdown_short_ones_buttons():
    render = lambda sentence: show_heatmaps(torch.rand(2, 2))  # noqa: E731
    box = tw.figure_explorer(render, {"sentence": ["i'm sure you know what i mean .", "she's busy ."]},
                             mode="live")
    dropdown = box.children[0]
    assert isinstance(dropdown, widgets.Dropdown) and dropdown.description == "sentence"
    assert [label for label, _ in dropdown.options] == ["i'm sure you know what i mean .", "she's busy ."]
    assert dropdown.value == "i'm sure you know what i mean ." and dropdown.index == 0
    assert dropdown.layout.width.startswith("calc(35ch")  # the longest label fits
    box = tw.figure_explorer(render, {"sentence": ["a", "b"]}, mode="live")
    buttons = box.children[0]
    assert isinstance(buttons, widgets.ToggleButtons) and buttons.description == "sentence"
    assert [label for label, _ in buttons.options] == ["a", "b"] and buttons.value == "a"


def _history(seconds, losses, val=()):
    from transformer_lib.translation.training import History, Validation

    return History(steps=list(range(1, len(losses) + 1)), seconds=list(seconds), train_loss=list(losses),
                   validation=[Validation(*v) for v in val])


def test_loss_curves_plot_every_run_against_seconds():
    from transformer_lib.instruments.plotting import plot_loss_curves

    fig = plot_loss_curves({"a": _history([1, 2, 3], [5, 4, 3], [(3, 1.0, 3.5)]),
                            "b": _history([2, 4], [6, 5])})
    left, right = fig.axes
    assert [list(line.get_xdata()) for line in left.lines] == [[1, 2, 3], [2, 4]]
    assert len(right.lines) == 1 and list(right.lines[0].get_ydata()) == [3.5]  # b has no validation
    assert left.get_xlabel() == "seconds of training"


def test_live_loss_plot_redraws_one_display_at_most_every_interval(monkeypatch):
    import IPython.display

    from transformer_lib.instruments.notebook import LiveLossPlot

    shown = []

    class Handle:
        def update(self, obj):
            shown.append(("update", obj))

    def display(obj, display_id=False):
        assert display_id is True  # a display that later redraws replace
        shown.append(("display", obj))
        return Handle()

    monkeypatch.setattr(IPython.display, "display", display)
    earlier = {"GRU": _history([1, 2], [6, 5])}
    plot = LiveLossPlot("Transformer", earlier, every_seconds=3600)
    history = _history([1], [5.0])
    plot(history)
    plot(history)                 # within the interval: no redraw
    assert [kind for kind, _ in shown] == ["display"] and plot.draws == 1
    history.seconds.append(2)
    history.train_loss.append(4.0)
    plot.finish(history)          # the final state is always drawn, into the same display
    assert [kind for kind, _ in shown] == ["display", "update"] and plot.draws == 2
    assert shown[-1][1].data.startswith(b"\x89PNG")


def test_live_loss_plot_races_against_the_start_of_an_earlier_run(monkeypatch):
    import transformer_lib.instruments.plotting as plotting
    from transformer_lib.instruments.notebook import LiveLossPlot

    drawn = []
    monkeypatch.setattr(plotting, "plot_loss_curves", lambda runs: drawn.append(runs))
    monkeypatch.setattr(plotting, "figure_to_png", lambda fig: b"")
    monkeypatch.setattr("IPython.display.display", lambda obj, display_id=False: None)
    earlier = _history([1, 2, 3], [5, 4, 3], [(2, 1.0, 4.5), (3, 1.5, 3.5)])
    plot = LiveLossPlot("GRU", {"Transformer": earlier}, compare_until=2)
    live = _history([1, 2.5], [6, 5], [(2.5, 1.0, 4.0)])   # its own budget ends a little late
    plot.finish(live)
    [runs] = drawn
    assert runs["Transformer"].seconds == [1, 2] and runs["Transformer"].train_loss == [5, 4]
    assert [v.loss for v in runs["Transformer"].validation] == [4.5]
    assert runs["GRU"] is live                          # the run being trained: every point
    assert len(earlier.seconds) == 3                    # the earlier run itself is untouched
