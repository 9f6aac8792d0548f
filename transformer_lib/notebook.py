"""Small conveniences for the chapter notebooks."""

from __future__ import annotations

import inspect

from .training import pick_device

__all__ = ["pick_device", "show_source"]


def show_source(obj):
    """Display the library's own source of ``obj`` (a function, class or method), highlighted.

    The chapters show the code they teach this way, so that what a reader sees is exactly
    what the tests check -- never a copy that could drift.
    """
    from IPython.display import Code

    return Code(inspect.getsource(obj), language="python")
