"""Generating text from a language model, a token at a time: greedy, or
sampled with a temperature, top-k and top-p (nucleus) filtering.

A sampler turns the model's logits for the next token into
probabilities, then picks the token whose share of the cumulative
probability, in vocabulary order, holds a uniform number u in [0, 1).
u comes from xorshift32 (Marsaglia 2003), a generator simple enough to
run the same in the page's JavaScript, so that a seed gives the same
sample in both wherever the two computed the same logits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._checks import check_count, check_positive_int


class Xorshift32:
    """Uniform numbers in [0, 1) from a seed (an int >= 0), 32 bits of
    state: Marsaglia's xorshift with shifts 13, 17, 5."""

    MASK = 0xFFFFFFFF

    def __init__(self, seed: int = 0):
        check_count("seed", seed)
        # spread the seed over the bits; the state must not be 0
        self.state = (seed * 0x9E3779B9 + 0x6D2B79F5) & self.MASK or 1

    def uniform(self) -> float:
        x = self.state
        x ^= (x << 13) & self.MASK
        x ^= x >> 17
        x ^= (x << 5) & self.MASK
        self.state = x
        return x / 2 ** 32


@dataclass(frozen=True)
class Greedy:
    """Always the most likely token (the lowest id among ties)."""

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """``(V,)`` logits -> ``(V,)`` float64: 1 at the argmax."""
        p = torch.zeros(logits.shape[-1], dtype=torch.float64)
        p[int(logits.argmax())] = 1.0
        return p


@dataclass(frozen=True)
class Sampler:
    """Sampling with ``softmax(logits / temperature)``, then at most the
    ``top_k`` most likely tokens (``None``: all), then the fewest most
    likely tokens whose probabilities add up to ``top_p`` or more (1: all),
    renormalised.  Ties are broken by the lower id."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float = 1.0

    def __post_init__(self):
        t = self.temperature
        if (isinstance(t, bool) or not isinstance(t, (int, float))
                or not t > 0 or math.isinf(t)):
            raise ValueError(f"temperature must be a number > 0, got "
                             f"{t!r} (for the most likely token every "
                             f"time, use Greedy())")
        if self.top_k is not None:
            try:
                check_positive_int("top_k", self.top_k)
            except ValueError as error:
                raise ValueError(f"{error} (k < 1 keeps no token; None "
                                 f"keeps all)") from None
        p = self.top_p
        if (isinstance(p, bool) or not isinstance(p, (int, float))
                or not 0 < p <= 1):
            raise ValueError(f"top_p must be a number in (0, 1], got {p!r}")

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """``(V,)`` logits -> ``(V,)`` float64 probabilities, zero outside
        the kept tokens."""
        p = torch.softmax(logits.double() / self.temperature, dim=-1)
        order = torch.sort(p, descending=True, stable=True).indices
        keep = torch.ones_like(p, dtype=torch.bool)
        if self.top_k is not None:
            keep[order[self.top_k:]] = False
        if self.top_p < 1:
            before = p[order].cumsum(0) - p[order]   # the mass ahead of each
            keep[order[before >= self.top_p]] = False
        p = p * keep
        return p / p.sum()


def choose(probabilities: torch.Tensor, u: float) -> int:
    """The token whose slice of the cumulative probabilities, in id order,
    holds ``u`` in [0, 1)."""
    cumulative = probabilities.cumsum(0)
    index = int(torch.searchsorted(cumulative, u * float(cumulative[-1]),
                                   right=True))
    return min(index, len(probabilities) - 1)


@torch.no_grad()
def generate(model, prompt, max_new_tokens: int, sampler=None, *,
             seed: int = 0, stop_id: int | None = None,
             cache: bool = True) -> list[int]:
    """Continue ``prompt`` (a list of ids, at least one) by at most
    ``max_new_tokens`` ids, each picked by ``sampler`` (``None``:
    :class:`Greedy`) from the model's logits for the next token; stop
    after ``stop_id``.  Returns the new ids.

    With ``cache`` (the default) the model reads each new token alone and
    keeps the earlier keys and values (``model.new_caches()``); without,
    it reads the whole sequence again at every step.  Both give the same
    ids (tested).  The model is put in evaluation mode for the call.
    """
    sampler = sampler or Greedy()
    if not hasattr(sampler, "probabilities"):
        raise TypeError(f"sampler must be a Sampler or Greedy, got "
                        f"{type(sampler).__name__}")
    prompt = [int(i) for i in prompt]
    if not prompt:
        raise ValueError("prompt must hold at least one id")
    check_count("max_new_tokens", max_new_tokens)
    longest = len(prompt) + max_new_tokens
    if longest > model.config.max_len:
        raise ValueError(f"prompt and max_new_tokens make {longest} "
                         f"positions, more than the model's max_len="
                         f"{model.config.max_len}")
    device = next(model.parameters()).device
    rng = Xorshift32(seed)
    was_training = model.training
    model.eval()
    try:
        ids, new = list(prompt), []
        caches = model.new_caches() if cache else None
        step = torch.tensor([ids], device=device)
        for _ in range(max_new_tokens):
            logits = model(step, caches)[0, -1].float().cpu()    # (V,)
            token = choose(sampler.probabilities(logits), rng.uniform())
            ids.append(token)
            new.append(token)
            if token == stop_id:
                break
            step = torch.tensor([[token] if cache else ids], device=device)
        return new
    finally:
        model.train(was_training)
