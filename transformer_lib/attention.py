"""Masked softmax and the two scoring functions: scaled dot-product and additive attention.

Vaswani et al. (2017), eq. (1):

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Masks follow one convention throughout the library: a boolean ``True`` means "this query
may look at this key" (the same as ``torch.nn.functional.scaled_dot_product_attention``;
``torch.nn.MultiheadAttention``'s ``key_padding_mask`` uses the opposite).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_probability, check_tensor


def attention_mask(scores_shape, valid_lens=None, *, attn_mask=None, causal=False, device=None):
    """Combine the three ways of masking into one boolean mask (``True`` = keep), or ``None``.

    scores_shape: the shape of the attention scores, ``(B, ..., Q, K)``.
    valid_lens:   ``(B,)`` -- key ``k`` is valid for batch item ``b`` iff ``k < valid_lens[b]``;
                  ``(B, Q)`` -- the same, per query (d2l's semantics).  Integers in ``[0, K]``.
    attn_mask:    a boolean tensor broadcastable to ``scores_shape``.
    causal:       query ``i`` may see key ``j`` iff ``j <= i + (K - Q)``.  With ``Q == K`` this is
                  the usual lower triangle; with a key/value cache (``K > Q``) the queries are
                  the *last* ``Q`` positions, so they see every cached key.
    Returns a boolean tensor broadcastable to ``scores_shape``.
    """
    scores_shape = tuple(scores_shape)
    batch, num_queries, num_keys = scores_shape[0], scores_shape[-2], scores_shape[-1]
    middle = (1,) * (len(scores_shape) - 3)  # head axes etc. between batch and queries
    mask = None
    if valid_lens is not None:
        check_tensor("valid_lens", valid_lens, ndim=(1, 2), kind="int")
        if len(scores_shape) < 3:
            raise ValueError(
                f"valid_lens needs batched scores (B, ..., Q, K); got scores of shape {scores_shape}"
            )
        want = (batch,) if valid_lens.dim() == 1 else (batch, num_queries)
        if tuple(valid_lens.shape) != want:
            raise ValueError(
                f"valid_lens must have shape (B,) = {want[:1]} or (B, Q) = {(batch, num_queries)}, "
                f"got {tuple(valid_lens.shape)}"
            )
        if valid_lens.numel() and bool(((valid_lens < 0) | (valid_lens > num_keys)).any()):
            raise ValueError(
                f"valid_lens must lie in [0, {num_keys}] (the number of keys), got values from "
                f"{int(valid_lens.min())} to {int(valid_lens.max())}"
            )
        keys = torch.arange(num_keys, device=valid_lens.device)
        if valid_lens.dim() == 1:
            mask = (keys < valid_lens[:, None]).view(batch, *middle, 1, num_keys)
        else:
            mask = (keys < valid_lens[:, :, None]).view(batch, *middle, num_queries, num_keys)
    if causal:
        dev = device if device is not None else (mask.device if mask is not None else None)
        query_pos = torch.arange(num_queries, device=dev)[:, None] + (num_keys - num_queries)
        tri = torch.arange(num_keys, device=dev)[None, :] <= query_pos  # (Q, K)
        mask = tri if mask is None else mask & tri
    if attn_mask is not None:
        check_tensor("attn_mask", attn_mask, kind="bool")
        try:
            fits = torch.broadcast_shapes(attn_mask.shape, scores_shape) == torch.Size(scores_shape)
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(
                f"attn_mask of shape {tuple(attn_mask.shape)} does not broadcast to the "
                f"attention scores' shape {scores_shape}"
            )
        mask = attn_mask if mask is None else mask & attn_mask
    return mask


def softmax_with_mask(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the last axis, keeping only the entries where ``mask`` is ``True``.

    Masked entries get exactly 0.  A row with no valid key gets all-zero weights, not NaN
    and not the uniform weights that a large negative fill such as -1e6 produces (d2l PR
    #2423); -1e9 would overflow float16, so the fill is -inf and empty rows are handled apart.
    """
    if mask is None:
        return F.softmax(scores, dim=-1)
    has_key = mask.any(dim=-1, keepdim=True)
    # Empty rows are set to 0 before the softmax so that neither its value nor its gradient
    # sees (-inf) - (-inf) = NaN; they are zeroed after it.
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~has_key, 0.0)
    return F.softmax(scores, dim=-1).masked_fill(~has_key, 0.0)


def masked_softmax(X, valid_lens=None, *, attn_mask=None, causal=False):
    """Softmax over the last axis of ``X`` with masked-out keys given weight 0.

    X:          scores ``(B, Q, K)`` as in d2l, or ``(B, h, Q, K)``.
    valid_lens: ``None``, ``(B,)`` or ``(B, Q)`` integers (see :func:`attention_mask`).
    attn_mask:  boolean, broadcastable to ``X``; ``True`` = keep.
    causal:     hide future keys.
    Returns weights of the shape of ``X``; each row sums to 1 over its valid keys, or is all
    zeros when it has none.
    """
    check_tensor("X", X, kind="float")
    if X.dim() < 2:
        raise ValueError(f"X must have at least 2 dimensions (..., Q, K), got shape {tuple(X.shape)}")
    mask = attention_mask(X.shape, valid_lens, attn_mask=attn_mask, causal=causal, device=X.device)
    return softmax_with_mask(X, mask)


def _check_qkv(queries, keys, values):
    check_tensor("queries", queries, kind="float")
    check_tensor("keys", keys, ndim=queries.dim(), kind="float")
    check_tensor("values", values, ndim=queries.dim(), kind="float")
    if queries.dim() < 3:
        raise ValueError(f"queries must be batched, (B, ..., Q, d), got shape {tuple(queries.shape)}")
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"queries and keys must share their last (feature) dimension, got "
            f"{tuple(queries.shape)} and {tuple(keys.shape)}"
        )
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(
            f"keys and values must have the same number of positions, got "
            f"{tuple(keys.shape)} and {tuple(values.shape)}"
        )
    if not (queries.shape[:-2] == keys.shape[:-2] == values.shape[:-2]):
        raise ValueError(
            f"queries, keys and values must share their batch dimensions, got "
            f"{tuple(queries.shape)}, {tuple(keys.shape)}, {tuple(values.shape)}"
        )
    if not queries.dtype == keys.dtype == values.dtype:
        raise TypeError(
            f"queries, keys and values must share one dtype, got {queries.dtype}, "
            f"{keys.dtype}, {values.dtype}"
        )


def scaled_dot_product_attention(
    queries, keys, values, valid_lens=None, *, attn_mask=None, causal=False,
    dropout_p=0.0, return_weights=False,
):
    """softmax(Q K^T / sqrt(d)) V with masking.

    queries: ``(B, ..., Q, d)``; keys: ``(B, ..., K, d)``; values: ``(B, ..., K, d_v)``.
    Returns ``(B, ..., Q, d_v)``, or ``(output, weights)`` with weights ``(B, ..., Q, K)``
    when ``return_weights`` is set.  The weights are those before dropout.

    Without ``return_weights`` this calls torch's fused
    ``F.scaled_dot_product_attention`` (no Q x K matrix is kept for the backward pass);
    with it, the explicit formula below.  Both give the same numbers (tested).
    """
    _check_qkv(queries, keys, values)
    scores_shape = (*queries.shape[:-1], keys.shape[-2])
    if (not return_weights and causal and valid_lens is None and attn_mask is None
            and scores_shape[-2] == scores_shape[-1]):
        return F.scaled_dot_product_attention(queries, keys, values, dropout_p=dropout_p, is_causal=True)
    mask = attention_mask(scores_shape, valid_lens, attn_mask=attn_mask, causal=causal,
                          device=queries.device)
    if not return_weights:
        if mask is None:
            return F.scaled_dot_product_attention(queries, keys, values, dropout_p=dropout_p)
        # A query with no valid key would make the fused softmax 0/0; let it see every key
        # (finite, harmless) and zero its output afterwards, as the explicit path does.
        has_key = mask.any(dim=-1, keepdim=True)
        out = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask | ~has_key,
                                             dropout_p=dropout_p)
        return out.masked_fill(~has_key, 0.0)
    d = queries.shape[-1]
    # Scaling the queries rather than the scores is the same product and touches Q x d
    # numbers instead of Q x K.
    scores = (queries / math.sqrt(d)) @ keys.transpose(-2, -1)  # (B, ..., Q, K)
    weights = softmax_with_mask(scores, mask)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ values, weights  # (B, ..., Q, d_v), (B, ..., Q, K)


class DotProductAttention(nn.Module):
    """Scaled dot-product attention (d2l's name); dropout acts on the attention weights."""

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None, *, attn_mask=None, causal=False,
                return_weights=False):
        """See :func:`scaled_dot_product_attention` for shapes."""
        return scaled_dot_product_attention(
            queries, keys, values, valid_lens, attn_mask=attn_mask, causal=causal,
            dropout_p=self.dropout.p if self.training else 0.0, return_weights=return_weights,
        )


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: score(q, k) = w_v^T tanh(W_q q + W_k k).

    Useful when queries and keys have different sizes; it costs a ``(B, Q, K, num_hiddens)``
    intermediate, which dot-product attention avoids.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, *, query_size: int | None = None,
                 key_size: int | None = None):
        super().__init__()
        check_probability("dropout", dropout)
        self.query_size = query_size or num_hiddens
        self.key_size = key_size or num_hiddens
        self.W_q = nn.Linear(self.query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(self.key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None, *, attn_mask=None, causal=False,
                return_weights=False):
        """queries ``(B, Q, query_size)``, keys ``(B, K, key_size)``, values ``(B, K, d_v)``
        -> ``(B, Q, d_v)`` [and weights ``(B, Q, K)``]."""
        check_tensor("queries", queries, ndim=3, kind="float", last_dim=self.query_size)
        check_tensor("keys", keys, ndim=3, kind="float", last_dim=self.key_size)
        check_tensor("values", values, ndim=3, kind="float")
        if keys.shape[:2] != values.shape[:2] or queries.shape[0] != keys.shape[0]:
            raise ValueError(
                f"queries, keys and values must share the batch size, and keys and values the "
                f"number of positions; got {tuple(queries.shape)}, {tuple(keys.shape)}, "
                f"{tuple(values.shape)}"
            )
        features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))  # (B, Q, K, h)
        scores = self.w_v(features).squeeze(-1)  # (B, Q, K)
        weights = masked_softmax(scores, valid_lens, attn_mask=attn_mask, causal=causal)
        output = self.dropout(weights) @ values  # (B, Q, d_v)
        return (output, weights) if return_weights else output
