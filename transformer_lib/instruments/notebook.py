"""Small conveniences for the chapter notebooks."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import operator
import os
import re
import textwrap
import time

__all__ = ["LiveLossPlot", "claim", "glue", "report", "show_source"]


def source_lines(obj, *, docstrings: bool = True,
                 checks: bool = True) -> list[str]:
    """The library's own source of ``obj`` (a function, class or method),
    dedented, as lines.  ``docstrings=False`` leaves out the docstring of
    every function and class in it; ``checks=False`` leaves out its
    argument checks (see :func:`_check_lines`).  Nothing else is left out."""
    source = textwrap.dedent(inspect.getsource(obj))
    lines = source.splitlines()
    tree = ast.parse(source)
    left_out = set()
    if not docstrings:
        for node in ast.walk(tree):
            if _has_docstring(node):
                left_out.update(range(node.body[0].lineno - 1,
                                      node.body[0].end_lineno))
    if not checks:
        left_out |= _check_lines(tree, lines)
    return [line for i, line in enumerate(lines) if i not in left_out]


def _called_name(node) -> str:
    """``check_tensor`` for ``check_tensor(...)`` or
    ``self.check_tensor(...)``, else ``""``."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return getattr(func, "id", None) or getattr(func, "attr", "")
    return ""


def _is_check(node) -> bool:
    """An argument check: a call to ``check_*`` or ``_check_*``, an ``if``
    without ``else`` that only raises or checks, or a loop or ``with`` whose
    whole body is checks."""
    if re.match(r"_?check_", _called_name(node)):
        return True
    if isinstance(node, ast.If) and not node.orelse:
        return all(isinstance(s, ast.Raise) or _is_check(s)
                   for s in node.body)
    if isinstance(node, (ast.For, ast.While)) and not node.orelse:
        return all(_is_check(s) for s in node.body)
    if isinstance(node, ast.With):
        return all(_is_check(s) for s in node.body)
    return False


def _has_docstring(node) -> bool:
    """Whether ``node`` is a function or class whose body opens with a
    docstring."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef)) or not node.body:
        return False
    first = node.body[0]
    return (isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str))


def _check_lines(tree, lines: list[str]) -> set[int]:
    """The lines (0-based) of every argument check in ``tree``, with the
    comment lines just above each, the ``@skip_value_checks`` decorators, and
    the assignments (or ``try`` blocks) whose names only the checks read."""
    checks, stores = [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            checks += [d for d in node.decorator_list
                       if getattr(d, "id", "") == "skip_value_checks"]
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            block = block if isinstance(block, list) else []
            checks += [s for s in block if _is_check(s)]
            stores += [s for s in block if isinstance(
                s, (ast.Assign, ast.AnnAssign, ast.Try))]

    def names(nodes, ctx):
        return {n.id for node in nodes for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}

    def span(node):
        return set(range(node.lineno - 1, node.end_lineno))

    removed = set().union(*map(span, checks)) if checks else set()
    read_by_checks = names(checks, ast.Load)
    for stmt in stores:   # e.g. ``want = ...``, read by an error message
        stored = names([stmt], ast.Store)
        kept = [n for n in ast.walk(tree) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Load) and n.id in stored
                and n.lineno - 1 not in removed | span(stmt)]
        if stored and stored <= read_by_checks and not kept:
            removed |= span(stmt)
    # a statement left with an empty body goes too, and so does a method
    # that is nothing but checks; such a function listed alone stays whole
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if not (isinstance(node, ast.stmt) and isinstance(body, list)):
                continue
            code = body[_has_docstring(node):]
            inside = set().union(*map(span, code))
            if not inside <= removed or span(node) <= removed:
                continue
            if node is tree.body[0]:
                removed -= span(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([d.lineno for d in node.decorator_list]
                            + [node.lineno])
                blank = first >= 2 and not lines[first - 2].strip()
                removed |= set(range(first - 1 - blank, node.end_lineno))
            else:
                removed |= span(node)
            changed = True
    for first in sorted(removed):      # the comments that explain a check
        i = first - 1
        while i >= 0 and lines[i].strip().startswith("#"):
            removed.add(i)
            i -= 1
    return removed


def show_source(*objs, docstrings: bool = True, checks: bool = True):
    """Display the library's own source of each of ``objs`` (functions,
    classes or methods), highlighted, one after another;
    ``docstrings=False`` leaves their docstrings out, ``checks=False`` their
    argument checks (the ``check_*`` calls and the ``if ...: raise``).

    The chapters show the code they teach this way, so that what a reader
    sees is exactly what the tests check -- never a copy that could drift.
    """
    from IPython.display import Code

    if not objs:
        raise TypeError("show_source needs at least one object to show")
    listing = "\n\n".join(
        "\n".join(source_lines(obj, docstrings=docstrings, checks=checks))
        for obj in objs)
    return Code(listing, language="python")


def glue(name: str, value, *, display: bool = False):
    """Store ``value`` under ``name`` for the book's prose, which quotes it
    as ``{glue:text}`name:.2f```: myst-nb's ``glue`` in the book build.
    Where myst-nb is not installed (Colab), nothing is stored; the cells
    print what the prose quotes.  Returns ``value``."""
    if hasattr(value, "item"):  # a NumPy or torch scalar: a Python number
        value = value.item()   # (NumPy's repr np.float64(...) won't format)
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return value
    myst_glue(name, value, display=display)
    return value


# claim(): the comparisons, and where the claims matrix collects them
COMPARISONS = {">": operator.gt, ">=": operator.ge, "<": operator.lt,
               "<=": operator.le}
CLAIMS_VARIABLE = "TRANSFORMER_LIB_CLAIMS"


def _record_for_matrix(record: dict) -> bool:
    """Append ``record`` as a JSON line to the file that
    ``$TRANSFORMER_LIB_CLAIMS`` names, if it names one; whether it did."""
    path = os.environ.get(CLAIMS_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(json.dumps(record) + "\n")
    return bool(path)


def claim(name: str, value, op: str, bound) -> bool:
    """Check a comparison that a sentence of the book relies on:
    ``value op bound``, e.g. ``claim("warm-up helps post-norm: loss gap",
    gap, ">", 0.5)``.  Its margin is how far ``value`` is from ``bound``
    on the side the claim needs (negative: the claim failed).

    In the book a failed claim stops the chapter (an AssertionError).
    Where ``$TRANSFORMER_LIB_CLAIMS`` names a file (``make claims``), the
    claim is appended to it as a JSON line instead, failed or not, and
    the chapter goes on, so that one table shows every claim of every
    run.  Returns whether the claim held."""
    if op not in COMPARISONS:
        raise ValueError(f"op must be one of {list(COMPARISONS)}, "
                         f"got {op!r}")
    value, bound = float(value), float(bound)
    held = COMPARISONS[op](value, bound)
    margin = value - bound if op[0] == ">" else bound - value
    record = dict(name=name, value=value, op=op, bound=bound,
                  margin=margin, held=held)
    if not _record_for_matrix(record) and not held:
        raise AssertionError(f"claim {name!r}: {value:.4g} is not "
                             f"{op} {bound:.4g} (margin {margin:.3g})")
    return held


def report(name: str, value) -> float:
    """Record a measurement that a sentence of the book reports but does
    not rely on (a comparison whose sign the claims matrix saw change):
    nothing is checked; where ``$TRANSFORMER_LIB_CLAIMS`` names a file
    (``make claims``) the value is appended to it, so that the matrix's
    table shows its spread over machines and seeds beside the claims.
    Returns the value, as a float."""
    value = float(value)
    _record_for_matrix(dict(name=name, value=value, op="reported",
                            bound=None, margin=None, held=True))
    return value


def _first_seconds(history, seconds: float):
    """A copy of ``history`` holding its points up to ``seconds`` of
    training, to draw (its totals stay those of the whole run)."""
    shown = sum(t <= seconds for t in history.seconds)   # they ascend
    return dataclasses.replace(
        history, steps=history.steps[:shown],
        seconds=history.seconds[:shown],
        train_loss=history.train_loss[:shown],
        validation=[v for v in history.validation if v.seconds <= seconds])


class LiveLossPlot:
    """A loss plot that redraws itself in place while
    :func:`~transformer_lib.translation.training.fit` trains: pass it as
    ``fit(..., callback=plot)``.

    label: the name of the run being trained; finished: ``{"label":
    History}`` of earlier runs, drawn for comparison; compare_until: draw
    those only up to that many seconds of training (a race against their
    start; ``None``: all of them).  The figure is
    redrawn at most every ``every_seconds`` (drawing costs wall-clock time,
    which ``fit`` does not count as training time)
    and always by :meth:`finish`.  In a saved notebook only the last
    drawing remains, because every redraw replaces the same display.
    """

    def __init__(self, label: str, finished: dict | None = None, *,
                 every_seconds: float = 10.0,
                 compare_until: float | None = None):
        self.label, self.finished = label, dict(finished or {})
        if compare_until is not None:
            self.finished = {name: _first_seconds(run, compare_until)
                             for name, run in self.finished.items()}
        self.every_seconds = every_seconds
        self.handle, self.last_draw, self.draws = None, float("-inf"), 0

    def __call__(self, history) -> None:
        if time.perf_counter() - self.last_draw >= self.every_seconds:
            self.draw(history)

    def finish(self, history) -> None:
        """Draw the final state (call it after ``fit`` returns)."""
        self.draw(history)

    def draw(self, history) -> None:
        from IPython.display import Image, display

        from .plotting import figure_to_png, plot_loss_curves

        curves = plot_loss_curves({**self.finished, self.label: history})
        image = Image(figure_to_png(curves))
        if self.handle is None:
            self.handle = display(image, display_id=True)
        else:
            self.handle.update(image)
        self.last_draw, self.draws = time.perf_counter(), self.draws + 1
