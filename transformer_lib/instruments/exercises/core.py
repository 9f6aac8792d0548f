"""What every checker shares: cases with names in words, a report that
says "passed" or names the first failing case, and comparisons whose
messages say what was expected and what came back.

A checker is a list of :class:`Case` s run in order on the reader's
function.  Shapes and dtypes come first, so that a wrong shape is
reported as one, not as a wall of mismatched numbers.
"""

from __future__ import annotations

import contextlib
import textwrap
from dataclasses import dataclass
from typing import Callable

import torch


WIDTH = 77  # the book's page, and a notebook's, without scrolling


class Mismatch(AssertionError):
    """What a case found wrong, in words (raised inside a case)."""


@dataclass(frozen=True)
class Case:
    """One thing a checker tries.  ``name`` says in words what is tried
    ("a query row with no valid key"); ``run(answer)`` raises
    :class:`Mismatch` when the reader's answer gets it wrong."""

    name: str
    run: Callable


@dataclass(frozen=True)
class Report:
    """A checker's verdict.  Shown in a notebook, it reads as a sentence.

    exercise: what the reader wrote (``"masked_softmax"``).
    cases:    how many cases the checker has.
    passed:   how many passed before the first failure (all, if none).
    failure:  the first failing case and what was wrong, or ``None``.
    written:  ``False`` while the stub still raises NotImplementedError.
    stub:     the function that raised it, when not the answer itself
              (a helper it calls, still a stub).
    """

    exercise: str
    cases: int
    passed: int
    failure: str | None = None
    written: bool = True
    stub: str | None = None

    @property
    def ok(self) -> bool:
        """Every case passed."""
        return self.written and self.failure is None

    @property
    def message(self) -> str:
        """The verdict, as one line."""
        if not self.written and self.stub:
            return (f"{self.exercise}: not written yet: `{self.stub}` "
                    f"still raises NotImplementedError. Write it first, "
                    f"then run this cell again.")
        if not self.written:
            return (f"{self.exercise}: not written yet. Replace `raise "
                    f"NotImplementedError` with your code and run the "
                    f"cell again.")
        if self.failure is None:
            return f"{self.exercise}: passed all {self.cases} cases."
        return (f"{self.exercise}: case {self.passed + 1} of {self.cases} "
                f"failed. {self.failure}")

    def __str__(self) -> str:
        # lines of at most WIDTH columns: a notebook does not wrap them
        return textwrap.fill(self.message, WIDTH, break_long_words=False,
                             break_on_hyphens=False)

    __repr__ = __str__


def generator(seed: int) -> torch.Generator:
    """A generator of its own for a case's inputs: torch's global one,
    which the reader's code may draw from, is left alone."""
    return torch.Generator().manual_seed(seed)


def random_tensor(shape, seed: int, *, dtype=torch.float32,
                  scale: float = 1.0) -> torch.Tensor:
    """``scale`` times standard normal numbers of ``shape``, the same for
    the same ``seed``."""
    return scale * torch.randn(*shape, generator=generator(seed),
                               dtype=dtype)


@contextlib.contextmanager
def seeded(seed: int):
    """torch's global generator seeded with ``seed`` inside (a module's
    initial weights, dropout), and as it was again after."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def check_callable(name: str, value) -> None:
    """A checker's argument must be the reader's function or class."""
    if not callable(value):
        raise TypeError(f"{name} must be your function (the name you "
                        f"defined, without calling it), got "
                        f"{type(value).__name__}")


class Checker:
    """A checker: call it on your answer, get a :class:`Report`.

    chapter:  the chapter whose exercise it checks (``1``).
    exercise: what the reader writes (``"masked_softmax"``).
    cases:    the :class:`Case` s, run in order until one fails.
    """

    def __init__(self, chapter: int, exercise: str, cases: list[Case]):
        self.chapter, self.exercise, self.cases = chapter, exercise, cases

    def __call__(self, answer) -> Report:
        """Run every case on ``answer`` (your function)."""
        check_callable(self.exercise, answer)
        return run_cases(self.exercise, self.cases, answer)

    def __repr__(self) -> str:
        return (f"<checker of chapter {self.chapter}'s {self.exercise}: "
                f"{len(self.cases)} cases>")


def _innermost_function(error: BaseException) -> str:
    """The name of the function where ``error`` was raised."""
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_name


def run_cases(exercise: str, cases: list[Case], answer) -> Report:
    """Run ``cases`` in order on ``answer``; stop at the first failure."""
    name = getattr(answer, "__name__", exercise)
    for done, case in enumerate(cases):
        what = f"{case.name[0].upper()}{case.name[1:]}"
        try:
            case.run(answer)
        except NotImplementedError as error:
            if error.args:  # raised by a library, not by a stub
                return Report(exercise, len(cases), done,
                              f"{what}: your code raised "
                              f"NotImplementedError: {error}")
            stub = _innermost_function(error)
            return Report(exercise, len(cases), done, written=False,
                          stub=None if stub == name else stub)
        except Mismatch as wrong:
            return Report(exercise, len(cases), done, f"{what}: {wrong}")
        except Exception as error:  # noqa: BLE001 -- the reader's code
            hint = ""
            if isinstance(error, TypeError) and f"{name}()" in str(error):
                hint = (" (the checker calls it with the stub's parameter "
                        "names: keep them)")
            return Report(exercise, len(cases), done,
                          f"{what}: your code raised "
                          f"{type(error).__name__}: {error}{hint}")
    return Report(exercise, len(cases), len(cases))


def expect_tensor(got, what: str, shape, dtype=None) -> torch.Tensor:
    """``got`` must be a tensor of ``shape`` (and ``dtype``, if given)."""
    if not isinstance(got, torch.Tensor):
        raise Mismatch(f"{what} should be a tensor of shape "
                       f"{tuple(shape)}, got {type(got).__name__}")
    if tuple(got.shape) != tuple(shape):
        raise Mismatch(f"{what} should have shape {tuple(shape)}, got "
                       f"{tuple(got.shape)}")
    if dtype is not None and got.dtype != dtype:
        raise Mismatch(f"{what} should be {dtype}, got {got.dtype}")
    return got


def number(x: float) -> str:
    """A value as a message shows it: 4 significant digits."""
    return f"{x:.4g}"


def expect_close(got: torch.Tensor, want: torch.Tensor, what: str, *,
                 atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """Values must agree; the message names the first entry that does
    not, and NaN apart."""
    got = got.detach()
    want = want.detach().to(device=got.device, dtype=got.dtype)
    if torch.isnan(got).any() and not torch.isnan(want).any():
        index = tuple(torch.nonzero(torch.isnan(got))[0].tolist())
        raise Mismatch(f"{what} holds NaN, e.g. at {list(index)}")
    bad = ~torch.isclose(got, want, atol=atol, rtol=rtol)
    if bad.any():
        index = tuple(torch.nonzero(bad)[0].tolist())
        raise Mismatch(f"{what} at {list(index)} should be "
                       f"{number(want[index].item())}, got "
                       f"{number(got[index].item())}")
