"""A planted bug: a wrong answer to an exercise that its checker must
catch, at a named case (the tests in test_exercises.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class PlantedBug:
    """``answer`` is a small, realistic mistake; ``case`` names the case
    of ``checker`` that must catch it first; ``alone``: no other case
    catches it (without that case, the checker would pass it)."""

    name: str
    checker: Callable
    answer: Callable
    case: str
    alone: bool = False
