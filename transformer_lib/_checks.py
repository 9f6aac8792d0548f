"""Argument checks that fail early with a message naming the argument.

A shape error from deep inside ``torch.matmul`` tells a reader nothing about which of
*their* arguments was wrong; these helpers do.  They are cheap (shape and dtype checks
only, plus one reduction for value ranges).
"""

from __future__ import annotations

import torch

_KINDS = {
    "float": lambda t: t.is_floating_point(),
    "int": lambda t: not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool,
    "bool": lambda t: t.dtype == torch.bool,
}


def check_tensor(name: str, x, *, ndim=None, kind: str | None = None, last_dim: int | None = None):
    """Raise a clear ``TypeError``/``ValueError`` unless ``x`` is a tensor of the expected form.

    ``ndim`` may be an int or a tuple of allowed ranks; ``kind`` is ``"float"``, ``"int"`` or
    ``"bool"``; ``last_dim`` is the required size of the last axis.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.dim() not in allowed:
            want = " or ".join(str(n) for n in allowed)
            raise ValueError(f"{name} must have {want} dimensions, got shape {tuple(x.shape)}")
    if kind is not None and not _KINDS[kind](x):
        raise TypeError(f"{name} must have a {kind} dtype, got {x.dtype}")
    if last_dim is not None and x.shape[-1] != last_dim:
        raise ValueError(
            f"{name} must have last dimension {last_dim}, got shape {tuple(x.shape)}"
        )


def check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def check_probability(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be a float in [0, 1), got {value!r}")


def check_token_ids(name: str, tokens, vocab_size: int) -> None:
    """Token ids must be a 2-D integer tensor (batch, steps) with ids in [0, vocab_size)."""
    check_tensor(name, tokens, ndim=2, kind="int")
    if tokens.numel() and bool(((tokens < 0) | (tokens >= vocab_size)).any()):
        raise ValueError(
            f"{name} holds ids outside [0, {vocab_size}): min {int(tokens.min())}, "
            f"max {int(tokens.max())}"
        )
