"""Sinusoidal positional encoding.

Vaswani et al. (2017), section 3.5:

    PE(pos, 2i)   = sin(pos / 10000^(2i / d))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d))
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import check_positive_int, check_probability, check_tensor


def sinusoidal_encoding(max_len: int, num_hiddens: int,
                        dtype=torch.float32) -> torch.Tensor:
    """The ``(max_len, num_hiddens)`` matrix P with P[pos, 2i] = sin(.)
    and P[pos, 2i+1] = cos(.)."""
    check_positive_int("max_len", max_len)
    check_positive_int("num_hiddens", num_hiddens)
    if num_hiddens % 2:
        raise ValueError(f"num_hiddens must be even (sine and cosine come "
                         f"in pairs), got {num_hiddens}")
    f64 = torch.float64
    pos = torch.arange(max_len, dtype=f64)[:, None]          # (max_len, 1)
    two_i = torch.arange(0, num_hiddens, 2, dtype=f64)       # (d/2,)
    angles = pos * 10000.0 ** (-two_i / num_hiddens)         # (max_len, d/2)
    P = torch.empty(max_len, num_hiddens, dtype=f64)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P.to(dtype)


class PositionalEncoding(nn.Module):
    """Adds P[offset : offset + T] to ``(B, T, num_hiddens)`` inputs, then
    dropout.

    P is a non-persistent buffer: it follows ``.to(device)`` but is not
    saved in checkpoints (it is a formula, not a weight).  ``offset`` is
    the position of the first step, for decoding step by step.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0,
                 max_len: int = 1000):
        super().__init__()
        check_probability("dropout", dropout)
        self.num_hiddens, self.max_len = num_hiddens, max_len
        self.dropout = nn.Dropout(dropout)
        P = sinusoidal_encoding(max_len, num_hiddens)[None]
        self.register_buffer("P", P, persistent=False)

    def forward(self, X, offset: int = 0):
        check_tensor("X", X, ndim=3, kind="float", last_dim=self.num_hiddens)
        T = X.shape[1]
        if offset < 0 or offset + T > self.max_len:
            raise ValueError(
                f"positions {offset}..{offset + T - 1} exceed max_len="
                f"{self.max_len}: the input X has {T} steps; build the "
                f"model with a larger max_len")
        return self.dropout(X + self.P[:, offset:offset + T].to(X.dtype))
