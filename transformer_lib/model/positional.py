"""Positions: the sinusoidal encoding, added to the embeddings, and the
rotary embedding, which turns queries and keys by the same angles.

Vaswani et al. (2017), section 3.5:

    PE(pos, 2i)   = sin(pos / 10000^(2i / d))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d))

Su et al. (2021), RoFormer, eq. (34): the pair (x_2i, x_2i+1) of a query
or key at position pos is rotated by the angle pos / 10000^(2i / d_k).
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


class RotaryEmbedding(nn.Module):
    """Rotary positions (RoPE): turn each pair ``(x_2i, x_2i+1)`` of a
    head's query or key at position t by the angle ``t omega_i``, with
    ``omega_i = 10000^(-2i/d_k)``, the frequencies of
    :func:`sinusoidal_encoding`, whose table holds the cosines and sines.

    As RoFormer writes it: the pair is the complex number
    ``x_2i + i x_2i+1``, and turning it is multiplying it by
    ``e^(i t omega_i) = cos(t omega_i) + i sin(t omega_i)``.  A turned
    query at i and key at j then have the dot product ``q^T R_(j-i) k``:
    the scores depend on the positions only through ``j - i``.  Nothing
    is added to the embeddings.
    """

    def __init__(self, head_dim: int, max_len: int = 1000):
        super().__init__()
        P = sinusoidal_encoding(max_len, head_dim)      # (max_len, d_k)
        self.head_dim, self.max_len = head_dim, max_len
        # cos(t omega_i) and sin(t omega_i), (max_len, d_k/2): formulas,
        # not weights (real numbers, which a cast of the model leaves be)
        self.register_buffer("cos", P[:, 1::2], persistent=False)
        self.register_buffer("sin", P[:, 0::2], persistent=False)

    def forward(self, X, offset: int = 0):
        """X ``(B, h, T, d_k)``, queries or keys at positions ``offset ..
        offset + T - 1`` -> the same shape and dtype, every pair turned."""
        check_tensor("X", X, ndim=4, kind="float", last_dim=self.head_dim)
        T = X.shape[2]
        if offset < 0 or offset + T > self.max_len:
            raise ValueError(
                f"positions {offset}..{offset + T - 1} exceed max_len="
                f"{self.max_len}: build the model with a larger max_len")
        at = slice(offset, offset + T)
        turns = torch.complex(self.cos[at].float(), self.sin[at].float())
        pairs = X.float().unflatten(-1, (-1, 2))      # (B, h, T, d_k/2, 2)
        z = torch.view_as_complex(pairs.contiguous())  # x_2i + i x_2i+1
        turned = z * turns                             # (B, h, T, d_k/2)
        return torch.view_as_real(turned).flatten(-2).to(X.dtype)
