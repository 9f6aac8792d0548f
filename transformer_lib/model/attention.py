"""Masked softmax and the two scoring functions: scaled dot-product and
additive attention.

Vaswani et al. (2017), eq. (1):

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Masks follow one convention throughout the library: a boolean ``True``
means "this query may look at this key" (as in
``torch.nn.functional.scaled_dot_product_attention``;
``torch.nn.MultiheadAttention``'s ``key_padding_mask`` is the opposite).

The functions and layers here check shapes and dtypes, and that
``valid_lens`` lies in ``[0, K]``, except inside a model's ``encode`` and
``decode``, whose entry points checked it once (see
:mod:`transformer_lib._checks`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import (check_key_lens, check_positive_int,
                      check_probability, check_tensor, size_or)


def attention_mask(scores_shape, valid_lens=None, *, attn_mask=None,
                   causal=False, device=None):
    """Combine the three ways of masking into one boolean mask (``True`` =
    keep), or ``None`` when nothing is masked.

    scores_shape: the shape of the attention scores, ``(B, ..., Q, K)``.
    valid_lens:   ``(B,)``: key ``k`` is valid for batch item ``b`` iff
                  ``k < valid_lens[b]``; ``(B, Q)``: the same, per query
                  (d2l's semantics).  Integers in ``[0, K]``.
    attn_mask:    a boolean tensor broadcastable to ``scores_shape``.
    causal:       query ``i`` may see key ``j`` iff ``j <= i + (K - Q)``.
                  With ``Q == K`` this is the usual lower triangle; with a
                  key/value cache (``K > Q``) the queries are the *last*
                  ``Q`` positions, so they see every cached key.
    Returns a boolean tensor broadcastable to ``scores_shape``.
    """
    if isinstance(scores_shape, torch.Tensor):
        raise TypeError("scores_shape must be a shape, e.g. scores.shape, "
                        "not the scores themselves")
    shape = tuple(scores_shape)
    B, Q, K = shape[0], shape[-2], shape[-1]
    middle = (1,) * (len(shape) - 3)  # the head axes between batch and Q
    mask = None
    if valid_lens is not None:
        check_tensor("valid_lens", valid_lens, ndim=(1, 2), kind="int")
        if len(shape) < 3:
            raise ValueError(f"valid_lens needs batched scores (B, ..., Q, "
                             f"K); got scores of shape {shape}")
        want = (B,) if valid_lens.dim() == 1 else (B, Q)
        if tuple(valid_lens.shape) != want:
            raise ValueError(
                f"valid_lens must have shape (B,) = {(B,)} or (B, Q) = "
                f"{(B, Q)}, got {tuple(valid_lens.shape)}")
        # one host read per direct call; none inside a model's encode and
        # decode, whose entry point checked the lengths once
        check_key_lens(valid_lens, K)
        keys = torch.arange(K, device=valid_lens.device)
        if valid_lens.dim() == 1:
            mask = (keys < valid_lens[:, None]).view(B, *middle, 1, K)
        else:
            mask = (keys < valid_lens[..., None]).view(B, *middle, Q, K)
    if causal:
        if mask is not None:
            device = mask.device
        rows = torch.arange(Q, device=device)[:, None] + (K - Q)
        triangle = torch.arange(K, device=device) <= rows  # (Q, K)
        mask = triangle if mask is None else mask & triangle
    if attn_mask is not None:
        check_tensor("attn_mask", attn_mask, kind="bool")
        try:
            fits = torch.broadcast_shapes(attn_mask.shape, shape) == shape
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(
                f"attn_mask of shape {tuple(attn_mask.shape)} does not "
                f"broadcast to the attention scores' shape {shape}")
        mask = attn_mask if mask is None else mask & attn_mask
    return mask


def softmax_with_mask(scores: torch.Tensor, mask) -> torch.Tensor:
    """Softmax over the last axis, keeping only the entries where ``mask``
    is ``True``.

    Masked entries get exactly 0.  A row with no valid key gets all-zero
    weights, not NaN and not the uniform weights that a large negative
    fill such as -1e6 produces (d2l PR #2423); -1e9 would overflow
    float16, so the fill is -inf and empty rows are handled apart.
    """
    if mask is None:
        return F.softmax(scores, dim=-1)
    has_key = mask.any(dim=-1, keepdim=True)
    # Empty rows are set to 0 before the softmax, so that neither its value
    # nor its gradient sees (-inf) - (-inf) = NaN; they are zeroed after it.
    scores = scores.masked_fill(~mask, float("-inf"))
    scores = scores.masked_fill(~has_key, 0.0)
    return F.softmax(scores, dim=-1).masked_fill(~has_key, 0.0)


def masked_softmax(X, valid_lens=None, *, attn_mask=None, causal=False):
    """Softmax over the last axis of ``X`` with masked-out keys given
    weight 0.

    X:          scores ``(B, Q, K)`` as in d2l, or ``(B, h, Q, K)``.
    valid_lens: ``None``, ``(B,)`` or ``(B, Q)`` integers (see
                :func:`attention_mask`).
    attn_mask:  boolean, broadcastable to ``X``; ``True`` = keep.
    causal:     hide future keys.
    Returns weights of the shape of ``X``; each row sums to 1 over its
    valid keys, or is all zeros when it has none.
    """
    check_tensor("X", X, kind="float")
    if X.dim() < 2:
        raise ValueError(f"X must have at least 2 dimensions (..., Q, K), "
                         f"got shape {tuple(X.shape)}")
    mask = attention_mask(X.shape, valid_lens, attn_mask=attn_mask,
                          causal=causal, device=X.device)
    return softmax_with_mask(X, mask)


def _check_qkv(queries, keys, values):
    check_tensor("queries", queries, kind="float")
    if queries.dim() < 3:
        raise ValueError(f"queries must be batched, (B, ..., Q, d), "
                         f"got shape {tuple(queries.shape)}")
    for name, tensor in [("keys", keys), ("values", values)]:
        check_tensor(name, tensor, kind="float")
        if tensor.dim() != queries.dim():
            raise ValueError(f"{name} must have as many dimensions as the "
                             f"queries ({queries.dim()}), got shape "
                             f"{tuple(tensor.shape)}")
    q, k, v = (tuple(t.shape) for t in (queries, keys, values))
    if q[-1] != k[-1]:
        raise ValueError(f"queries and keys must share their last "
                         f"(feature) dimension, got {q} and {k}")
    if k[-2] != v[-2]:
        raise ValueError(f"keys and values must have the same number of "
                         f"positions, got {k} and {v}")
    if not q[:-2] == k[:-2] == v[:-2]:
        raise ValueError(f"queries, keys and values must share their batch "
                         f"dimensions, got {q}, {k}, {v}")
    if not queries.dtype == keys.dtype == values.dtype:
        raise TypeError(f"queries, keys and values must share one dtype, "
                        f"got {queries.dtype}, {keys.dtype}, {values.dtype}")


def scaled_dot_product_attention(
        queries, keys, values, valid_lens=None, *, attn_mask=None,
        causal=False, dropout_p=0.0, return_weights=False):
    """softmax(Q K^T / sqrt(d_k)) V with masking.

    queries ``(B, ..., Q, d_k)``, keys ``(B, ..., K, d_k)``, values
    ``(B, ..., K, d_v)``; masks as in :func:`attention_mask`.
    Returns ``(B, ..., Q, d_v)``, or ``(output, weights)`` with weights
    ``(B, ..., Q, K)`` (before dropout) when ``return_weights`` is set.

    Without ``return_weights`` this calls torch's fused
    ``F.scaled_dot_product_attention``, which need not store the Q x K
    weights; with it, the explicit formula below.  Both give the same
    numbers (tested).
    """
    _check_qkv(queries, keys, values)
    shape = (*queries.shape[:-1], keys.shape[-2])  # (B, ..., Q, K)
    if (not return_weights and causal and valid_lens is None
            and attn_mask is None and shape[-2] == shape[-1]):
        return F.scaled_dot_product_attention(
            queries, keys, values, dropout_p=dropout_p, is_causal=True)
    mask = attention_mask(shape, valid_lens, attn_mask=attn_mask,
                          causal=causal, device=queries.device)
    if not return_weights:
        if mask is None:
            return F.scaled_dot_product_attention(
                queries, keys, values, dropout_p=dropout_p)
        # A query with no valid key would make the fused softmax 0/0: let
        # it see every key (finite, harmless) and zero its output after.
        has_key = mask.any(dim=-1, keepdim=True)
        out = F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=mask | ~has_key,
            dropout_p=dropout_p)
        return out.masked_fill(~has_key, 0.0)
    d_k = queries.shape[-1]
    # Scaling the queries rather than the scores is the same product and
    # touches Q x d_k numbers instead of Q x K.
    scores = queries / math.sqrt(d_k) @ keys.transpose(-2, -1)
    weights = softmax_with_mask(scores, mask)             # (B, ..., Q, K)
    dropped = F.dropout(weights, dropout_p) if dropout_p else weights
    return dropped @ values, weights                     # (B, ..., Q, d_v)


class DotProductAttention(nn.Module):
    """Scaled dot-product attention as a layer (d2l's name), with dropout
    on the weights in training.

    It uses torch's fused kernel, except inside
    :func:`~transformer_lib.record_attention`, which sets ``recorder`` to a
    list for the duration of its ``with`` block: then it computes the
    weights explicitly and appends them there.  Inside
    :func:`~transformer_lib.model.intervene`, ``intervention`` masks more
    keys and switches heads off.
    """

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = dropout
        self.recorder: list | None = None
        self.intervention = None  # a LayerIntervention, inside intervene

    def forward(self, queries, keys, values, valid_lens=None, *,
                attn_mask=None, causal=False):
        """Shapes and masks as in :func:`scaled_dot_product_attention`."""
        p = self.dropout if self.training else 0.0
        change = self.intervention
        if change is not None:
            attn_mask = change.restrict(attn_mask, queries, keys)
        if self.recorder is None:  # nobody asks for the weights
            out = scaled_dot_product_attention(
                queries, keys, values, valid_lens, attn_mask=attn_mask,
                causal=causal, dropout_p=p)
            return out if change is None else change.apply_gate(out)
        out, weights = scaled_dot_product_attention(
            queries, keys, values, valid_lens, attn_mask=attn_mask,
            causal=causal, dropout_p=p, return_weights=True)
        if change is not None:
            out, weights = change.apply_gate(out), change.apply_gate(weights)
        self.recorder.append(weights.detach())
        return out


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention, in rows (the book's notation):
    a(q, k) = tanh(q W_q + k W_k) w_v^T, with hidden width d_a =
    ``num_hiddens``.

    Useful when queries and keys have different sizes; it costs a
    ``(B, Q, K, d_a)`` intermediate, against ``(B, Q, K)`` for the dot
    product.  Parameter names follow d2l (``W_q``, ``W_k``, ``w_v``).
    Like :class:`DotProductAttention`, it appends its weights to
    ``recorder`` inside :func:`~transformer_lib.record_attention`.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, *,
                 query_size: int | None = None, key_size: int | None = None):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        check_probability("dropout", dropout)
        self.query_size = size_or("query_size", query_size, num_hiddens)
        self.key_size = size_or("key_size", key_size, num_hiddens)
        self.W_q = nn.Linear(self.query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(self.key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.recorder: list | None = None

    def forward(self, queries, keys, values, valid_lens=None, *,
                attn_mask=None, causal=False):
        """queries ``(B, Q, query_size)``, keys ``(B, K, key_size)``,
        values ``(B, K, d_v)`` -> ``(B, Q, d_v)``."""
        check_tensor("queries", queries, ndim=3, kind="float",
                     last_dim=self.query_size)
        check_tensor("keys", keys, ndim=3, kind="float",
                     last_dim=self.key_size)
        check_tensor("values", values, ndim=3, kind="float")
        if (queries.shape[0] != keys.shape[0]
                or keys.shape[:2] != values.shape[:2]):
            raise ValueError(
                f"queries, keys and values must share the batch size, and "
                f"keys and values the number of positions; got "
                f"{tuple(queries.shape)}, {tuple(keys.shape)}, "
                f"{tuple(values.shape)}")
        return self.attend(self.W_q(queries), self.W_k(keys), values,
                           valid_lens, attn_mask=attn_mask, causal=causal)

    def attend(self, q, k, values, valid_lens=None, *, attn_mask=None,
               causal=False):
        """:meth:`forward` with queries and keys already projected:
        q ``(B, Q, num_hiddens)``, k ``(B, K, num_hiddens)``.  (A decoder
        that attends once per step projects its keys once per call.)"""
        # (B, Q, 1, num_hiddens) + (B, 1, K, num_hiddens): every pair
        features = torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)               # (B, Q, K)
        weights = masked_softmax(scores, valid_lens, attn_mask=attn_mask,
                                 causal=causal)
        if self.recorder is not None:
            self.recorder.append(weights.detach())
        return self.dropout(weights) @ values                 # (B, Q, d_v)
