"""Multi-head attention and its key/value cache.

Vaswani et al. (2017), section 3.2.2:

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

The h heads' projections are stored side by side as one ``d x d`` matrix
each; head ``i`` owns features ``i d_k : (i+1) d_k`` of the projected
queries, keys and values, with ``d_k = d / h``.  Other layouts of the same
function (d2l's, ViT's fused ``qkv``, jadore801120's post-norm module)
are in :mod:`.layouts`.  :class:`RotaryMultiHeadAttention` adds rotary
positions (RoFormer's) to self-attention.
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import (check_flag, check_heads_divide, check_positive_int,
                      check_rows_match, check_tensor, size_or)
from .attention import DotProductAttention
from .positional import RotaryEmbedding


def split_heads(X: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``(B, T, h*d_k)`` -> ``(B, h, T, d_k)``: each head its own slice."""
    check_tensor("X", X, ndim=3)
    check_positive_int("num_heads", num_heads)
    B, T, D = X.shape
    if D % num_heads:
        raise ValueError(f"num_heads ({num_heads}) must divide X's last "
                         f"dimension, got shape {tuple(X.shape)}")
    return X.view(B, T, num_heads, D // num_heads).transpose(1, 2)


def merge_heads(X: torch.Tensor) -> torch.Tensor:
    """``(B, h, T, d_k)`` -> ``(B, T, h*d_k)``: concatenate the heads."""
    check_tensor("X", X, ndim=4)
    B, h, T, d_k = X.shape
    return X.transpose(1, 2).reshape(B, T, h * d_k)


class KVCache:
    """The keys and values that one attention layer computed in earlier
    calls, per head: ``(B, h, t, d_k)`` each.

    ``static=False`` (decoder self-attention): each call appends the new
    positions' keys and values.  ``static=True`` (cross-attention): the
    first call stores the keys and values of the encoder's output, and
    later calls reuse them without projecting again.
    """

    def __init__(self, static: bool = False):
        self.static = static
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """How many positions it holds: where the next call's queries
        start."""
        return 0 if self.keys is None else self.keys.shape[2]

    def update(self, keys: torch.Tensor, values: torch.Tensor):
        """Store (static) or append (growing) the new keys and values;
        return all of them."""
        if self.keys is None or self.static:
            self.keys, self.values = keys, values
        elif keys.shape[0] != self.keys.shape[0]:
            raise ValueError(f"the cache holds batch size "
                             f"{self.keys.shape[0]}, the new keys have "
                             f"{keys.shape[0]}")
        else:
            self.keys = torch.cat([self.keys, keys], dim=2)
            self.values = torch.cat([self.values, values], dim=2)
        return self.keys, self.values

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows ``index`` (the surviving beams of a search)."""
        if self.keys is not None:
            self.keys, self.values = self.keys[index], self.values[index]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query, key, value and output
    projections (d2l's names ``W_q, W_k, W_v, W_o``).

    Args:
        num_hiddens: the model width d; also the width of the output.
        num_heads:   the number of heads h; must divide ``num_hiddens``.
        dropout:     dropout on the attention weights.
        bias:        whether the projections have biases (d2l: False).
        query_size, key_size, value_size: input widths, if not d.
    """

    def __init__(self, num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, bias: bool = False, *,
                 query_size: int | None = None,
                 key_size: int | None = None,
                 value_size: int | None = None):
        super().__init__()
        check_heads_divide(num_hiddens, num_heads)
        check_flag("bias", bias)
        self.num_hiddens, self.num_heads = num_hiddens, num_heads
        self.query_size = size_or("query_size", query_size, num_hiddens)
        self.key_size = size_or("key_size", key_size, num_hiddens)
        self.value_size = size_or("value_size", value_size, num_hiddens)
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(self.query_size, num_hiddens, bias=bias)
        self.W_k = nn.Linear(self.key_size, num_hiddens, bias=bias)
        self.W_v = nn.Linear(self.value_size, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens=None, *,
                attn_mask=None, causal=False, kv: KVCache | None = None):
        """queries ``(B, Q, query_size)``, keys ``(B, K, key_size)``, values
        ``(B, K, value_size)`` -> ``(B, Q, num_hiddens)``.

        valid_lens ``(B,)`` or ``(B, Q)``, attn_mask and causal: see
        :func:`~transformer_lib.model.attention.attention_mask`.  kv: a
        :class:`KVCache` holding the keys and values of earlier calls.
        """
        self.check_shapes(queries, keys, values, kv)
        q = split_heads(self.W_q(queries), self.num_heads)  # (B, h, Q, d_k)
        k, v = self.keys_values(keys, values, kv)          # (B, h, K, d_k)
        out = self.attention(q, k, v, valid_lens, attn_mask=attn_mask,
                             causal=causal)                # (B, h, Q, d_k)
        return self.W_o(merge_heads(out))                  # (B, Q, d)

    def keys_values(self, keys, values, kv: KVCache | None = None):
        """The heads' keys and values, ``(B, h, K, d_k)`` each; with a
        cache, those of the earlier calls too."""
        if kv is not None and kv.static and kv.keys is not None:
            return kv.keys, kv.values  # the encoder's, projected at step 1
        k = split_heads(self.W_k(keys), self.num_heads)
        v = split_heads(self.W_v(values), self.num_heads)
        return (k, v) if kv is None else kv.update(k, v)

    def check_shapes(self, queries, keys, values, kv=None) -> None:
        """Shapes and dtypes only: cheap enough for every call."""
        check_tensor("queries", queries, ndim=3, kind="float",
                     last_dim=self.query_size)
        if kv is not None and kv.static and kv.keys is not None:
            if queries.shape[0] != kv.keys.shape[0]:
                raise ValueError(f"queries have batch size "
                                 f"{queries.shape[0]} but the cache holds "
                                 f"{kv.keys.shape[0]}")
            return  # keys and values come from the cache
        check_tensor("keys", keys, ndim=3, kind="float",
                     last_dim=self.key_size)
        check_tensor("values", values, ndim=3, kind="float",
                     last_dim=self.value_size)
        check_rows_match(queries, keys, values)


class RotaryMultiHeadAttention(MultiHeadAttention):
    """Multi-head *self*-attention with rotary positions: each head's
    queries and keys are rotated by their positions
    (:class:`~.positional.RotaryEmbedding`) before the scores, so that a
    score depends on where its key is relative to its query.  Arguments
    as for :class:`MultiHeadAttention`, plus ``max_len``, the most
    positions it can rotate."""

    def __init__(self, num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, bias: bool = False,
                 max_len: int = 1000):
        super().__init__(num_hiddens, num_heads, dropout, bias)
        self.rotary = RotaryEmbedding(num_hiddens // num_heads, max_len)

    def forward(self, queries, keys, values, valid_lens=None, *,
                attn_mask=None, causal=False, kv: KVCache | None = None):
        """queries, keys, values: one X ``(B, T, d)``, at positions
        ``kv.length ..`` (0 without a cache) -> ``(B, T, d)``."""
        if not (queries is keys is values):
            raise ValueError("rotary attention is self-attention: pass "
                             "one X as queries, keys and values")
        if kv is not None and kv.static:
            raise ValueError("rotary attention needs a growing cache, "
                             "KVCache(static=False)")
        self.check_shapes(queries, keys, values, kv)
        t = 0 if kv is None else kv.length   # the position of X's first row
        h = self.num_heads
        q = self.rotary(split_heads(self.W_q(queries), h), t)  # (B,h,T,d_k)
        k = self.rotary(split_heads(self.W_k(keys), h), t)     # (B,h,T,d_k)
        v = split_heads(self.W_v(values), h)                   # (B,h,T,d_k)
        if kv is not None:
            k, v = kv.update(k, v)             # (B, h, t + T, d_k) each
        out = self.attention(q, k, v, valid_lens, attn_mask=attn_mask,
                             causal=causal)                    # (B,h,T,d_k)
        return self.W_o(merge_heads(out))                      # (B, T, d)
