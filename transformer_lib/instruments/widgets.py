"""Interactive figures that stay interactive in the static HTML book.

In a live kernel a slider can simply redraw a figure.  In the rendered
book there is no kernel, so a redraw cannot happen; instead
:func:`figure_explorer` draws the figure for *every* combination of
control values up front and lets the browser switch between them: each
control's ``index`` is linked in JavaScript (``jslink``) to the
``selected_index`` of a ``Stack`` of images.  Several controls make a tree
of stacks, one level per control.  The widget state (the images included)
is saved in the executed notebook and rendered by the book, so moving a
slider there still changes the figure.

ipywidgets 7 (Colab) has no ``Stack``; there, and whenever
``mode="live"``, the figure is redrawn by the kernel instead.
"""

from __future__ import annotations

import itertools

from .plotting import figure_to_png


def _ipywidgets():
    import ipywidgets

    return ipywidgets


def supports_static() -> bool:
    """Whether this ipywidgets has ``Stack`` (ipywidgets >= 8), needed for
    the precomputed mode."""
    return hasattr(_ipywidgets(), "Stack")


def _control(name, values, widgets):
    """A slider for numbers, toggle buttons for a few short labels, else a
    dropdown."""
    values = list(values)
    if not values:
        raise ValueError(f"control {name!r} has no values")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool)
           for v in values):
        return widgets.SelectionSlider(options=values, value=values[0],
                                       description=name,
                                       continuous_update=True)
    labels = [(str(v), v) for v in values]
    longest = max(len(label) for label, _ in labels)
    if len(values) <= 4 and longest <= 16:  # buttons cut long labels
        return widgets.ToggleButtons(options=labels, value=values[0],
                                     description=name)
    # wide enough for every label
    return widgets.Dropdown(
        options=labels, value=values[0], description=name,
        layout=widgets.Layout(
            width=f"calc({min(longest, 60) + 4}ch + 90px)"))


def figure_explorer(render, controls: dict, *, mode: str = "auto",
                    dpi: int = 80):
    """A figure with controls: ``render(**values)`` returns a matplotlib
    figure.

    controls: ``{"name": [value, ...], ...}``; the first value of each is
    shown first.
    mode: ``"static"`` precomputes every combination (works in the rendered
    book), ``"live"`` redraws in the kernel, ``"auto"`` picks static where
    ipywidgets has ``Stack``.
    Returns an ipywidgets ``VBox`` (controls above the figure); its
    ``.mode`` says which mode was used and, in static mode, ``.images``
    maps each combination of values to its PNG and ``.links`` holds the
    browser-side links from the controls to the stacks.
    """
    widgets = _ipywidgets()
    if mode not in ("auto", "static", "live"):
        raise ValueError(f"mode must be 'auto', 'static' or 'live', got "
                         f"{mode!r}")
    if not isinstance(controls, dict):
        raise TypeError(f"controls must be a dict {{name: [values]}}, e.g. "
                        f"{{'d_k': [4, 16]}}, got {type(controls).__name__}")
    if not controls:
        raise ValueError("controls must name at least one control")
    if mode == "auto":
        mode = "static" if supports_static() else "live"
    if mode == "static" and not supports_static():
        raise RuntimeError("mode='static' needs ipywidgets >= 8 (Stack); "
                           "use mode='live'")
    names = list(controls)
    sliders = {name: _control(name, controls[name], widgets)
               for name in names}

    if mode == "live":
        # The kernel redraws into an Image widget's value.  (Not into an
        # Output widget: with the widgetsnbextension 3.6.7-3.6.10 that pip
        # picks for ipywidgets 7.8, the classic Notebook cannot create any
        # Output, and the figure would show without its controls.)
        image = widgets.Image(format="png")

        def redraw(_change=None):
            values = {name: sliders[name].value for name in names}
            image.value = figure_to_png(render(**values), dpi=dpi)

        for s in sliders.values():
            s.observe(redraw, names="value")
        redraw()
        box = widgets.VBox([*sliders.values(), image])
        box.mode = "live"
        return box

    images, links = {}, []
    for combo in itertools.product(*(list(controls[n]) for n in names)):
        images[combo] = figure_to_png(render(**dict(zip(names, combo))),
                                      dpi=dpi)

    def stack(level, prefix):
        """The Stack for control ``level``, its children chosen by the
        controls after it."""
        if level == len(names):
            return widgets.Image(value=images[prefix], format="png")
        children = [stack(level + 1, prefix + (v,))
                    for v in controls[names[level]]]
        node = widgets.Stack(children=children, selected_index=0)
        links.append(widgets.jslink((sliders[names[level]], "index"),
                                    (node, "selected_index")))
        return node

    box = widgets.VBox([*sliders.values(), stack(0, ())])
    box.mode, box.images, box.links = "static", images, links
    return box
