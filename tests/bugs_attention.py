"""Planted bugs for chapter 1's and 2's checkers: masked softmax,
attention mask, heads, multi-head attention."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from planted_bugs import PlantedBug

import transformer_lib as tl
from transformer_lib.instruments.exercises.attention import (
    check_attention_mask, check_masked_softmax, check_merge_heads,
    check_multi_head_attention, check_split_heads)


# --- masked_softmax -------------------------------------------------------

def masked_softmax(scores, valid_lens=None):
    """A right answer, written as a reader would."""
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    K = scores.shape[-1]
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    keep = torch.arange(K) < lens[..., None]              # (B, 1|Q, K)
    has_key = keep.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~keep, float("-inf"))
    scores = scores.masked_fill(~has_key, 0.0)
    return torch.softmax(scores, dim=-1) * has_key


def d2l_style_masked_softmax(scores, valid_lens=None):
    """d2l's flattening, with -inf and the empty rows handled."""
    if valid_lens is None:
        return F.softmax(scores, dim=-1)
    B, Q, K = scores.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, Q)
    else:
        valid_lens = valid_lens.reshape(-1)
    keep = torch.arange(K)[None, :] < valid_lens[:, None]   # (B Q, K)
    flat = scores.reshape(-1, K).masked_fill(~keep, float("-inf"))
    empty = ~keep.any(dim=-1)
    flat = flat.masked_fill(empty[:, None], 0.0)
    weights = F.softmax(flat, dim=-1).masked_fill(empty[:, None], 0.0)
    return weights.reshape(B, Q, K)


def softmax_over_queries(scores, valid_lens=None):
    if valid_lens is None:
        return torch.softmax(scores, dim=1)   # BUG: over the queries
    return masked_softmax(scores, valid_lens)


def mask_after_softmax(scores, valid_lens=None):
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    K = scores.shape[-1]
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    keep = torch.arange(K) < lens[..., None]
    # BUG: the softmax first, then the masked keys zeroed
    return torch.softmax(scores, dim=-1) * keep


def fill_minus_1e6(scores, valid_lens=None):
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    K = scores.shape[-1]
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    keep = torch.arange(K) < lens[..., None]
    # BUG: a large negative number instead of -inf: an empty row is uniform
    return torch.softmax(scores.masked_fill(~keep, -1e6), dim=-1)


def fill_minus_inf_alone(scores, valid_lens=None):
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    K = scores.shape[-1]
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    keep = torch.arange(K) < lens[..., None]
    # BUG: -inf, but an empty row is all -inf: 0/0
    return torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)


def additive_mask_then_nan_to_num(scores, valid_lens=None):
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    K = scores.shape[-1]
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    keep = torch.arange(K) < lens[..., None]
    bias = torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))
    # BUG: an additive -inf mask, its empty rows' NaN replaced after the
    # softmax: the values are right, the gradient is NaN
    return torch.softmax(scores + bias, dim=-1).nan_to_num(0.0)


def repeat_for_repeat_interleave(scores, valid_lens=None):
    if valid_lens is None:
        return F.softmax(scores, dim=-1)
    B, Q, K = scores.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens.repeat(Q)   # BUG: 2, 3, 2, 3, ...
    else:
        valid_lens = valid_lens.reshape(-1)
    keep = torch.arange(K)[None, :] < valid_lens[:, None]
    flat = scores.reshape(-1, K).masked_fill(~keep, float("-inf"))
    empty = ~keep.any(dim=-1)
    flat = flat.masked_fill(empty[:, None], 0.0)
    weights = F.softmax(flat, dim=-1).masked_fill(empty[:, None], 0.0)
    return weights.reshape(B, Q, K)


def lengths_per_batch_only(scores, valid_lens=None):
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    K = scores.shape[-1]
    if valid_lens.dim() == 2:
        valid_lens = valid_lens[:, 0]   # BUG: (B, Q) read as one per item
    keep = torch.arange(K) < valid_lens[:, None, None]
    has_key = keep.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~keep, float("-inf"))
    scores = scores.masked_fill(~has_key, 0.0)
    return torch.softmax(scores, dim=-1) * has_key


def exp_over_sum(scores, valid_lens=None):
    K = scores.shape[-1]
    if valid_lens is None:
        keep = torch.ones_like(scores, dtype=torch.bool)
    else:
        lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
        keep = torch.arange(K) < lens[..., None]
    # BUG: exp without subtracting the row's maximum overflows
    e = torch.exp(scores) * keep
    total = e.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, e / total, 0.0)


# --- attention_mask -------------------------------------------------------

def attention_mask(scores_shape, valid_lens=None, causal=False):
    """A right answer, written as a reader would."""
    B, Q, K = scores_shape[0], scores_shape[-2], scores_shape[-1]
    heads = (1,) * (len(scores_shape) - 3)
    mask = None
    if valid_lens is not None:
        lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
        mask = (torch.arange(K) < lens[..., None])        # (B, 1|Q, K)
        mask = mask.view(B, *heads, -1, K)
    if causal:
        triangle = (torch.arange(K)[None, :]
                    <= torch.arange(Q)[:, None] + (K - Q))
        mask = triangle if mask is None else mask & triangle
    return mask


def mask_without_head_axis(scores_shape, valid_lens=None, causal=False):
    Q, K = scores_shape[-2], scores_shape[-1]
    mask = None
    if valid_lens is not None:
        lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
        mask = torch.arange(K) < lens[..., None]  # BUG: (B, 1, K) always
    if causal:
        triangle = (torch.arange(K)[None, :]
                    <= torch.arange(Q)[:, None] + (K - Q))
        mask = triangle if mask is None else mask & triangle
    return mask


def per_query_mask_without_head_axis(scores_shape, valid_lens=None,
                                     causal=False):
    B, K = scores_shape[0], scores_shape[-1]
    heads = (1,) * (len(scores_shape) - 3)
    mask = None
    if valid_lens is not None:
        if valid_lens.dim() == 1:
            mask = torch.arange(K) < valid_lens[:, None]
            mask = mask.view(B, *heads, 1, K)
        else:  # BUG: (B, Q, K), with no axis for the heads
            mask = torch.arange(K) < valid_lens[..., None]
    if causal:
        triangle = attention_mask(scores_shape, causal=True)
        mask = triangle if mask is None else mask & triangle
    return mask


def causal_off_by_one(scores_shape, valid_lens=None, causal=False):
    if not causal:
        return attention_mask(scores_shape, valid_lens)
    Q, K = scores_shape[-2], scores_shape[-1]
    # BUG: < instead of <=: a query does not see its own position
    triangle = torch.arange(K)[None, :] < torch.arange(Q)[:, None] + (K - Q)
    lens_mask = attention_mask(scores_shape, valid_lens)
    return triangle if lens_mask is None else lens_mask & triangle


def causal_not_aligned_to_the_last_keys(scores_shape, valid_lens=None,
                                        causal=False):
    if not causal:
        return attention_mask(scores_shape, valid_lens)
    Q, K = scores_shape[-2], scores_shape[-1]
    # BUG: torch.tril: query i sees keys 0..i, even when the queries are
    # the last Q of K positions
    triangle = torch.ones(Q, K, dtype=torch.bool).tril()
    lens_mask = attention_mask(scores_shape, valid_lens)
    return triangle if lens_mask is None else lens_mask & triangle


def causal_or_lengths(scores_shape, valid_lens=None, causal=False):
    lens_mask = attention_mask(scores_shape, valid_lens)
    if not causal:
        return lens_mask
    triangle = attention_mask(scores_shape, causal=True)
    # BUG: either condition lets a key through
    return triangle if lens_mask is None else lens_mask | triangle


def lengths_counted_from_one(scores_shape, valid_lens=None, causal=False):
    if valid_lens is None:
        return attention_mask(scores_shape, None, causal)
    B, K = scores_shape[0], scores_shape[-1]
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    # BUG: <= lets one padding key through
    mask = (torch.arange(K) <= lens[..., None])
    mask = mask.view(B, *(1,) * (len(scores_shape) - 3), -1, K)
    if causal:
        mask = mask & attention_mask(scores_shape, causal=True)
    return mask


def lengths_per_query_as_one_per_item(scores_shape, valid_lens=None,
                                      causal=False):
    if valid_lens is not None and valid_lens.dim() == 2:
        valid_lens = valid_lens.max(dim=1).values  # BUG: one per item
    return attention_mask(scores_shape, valid_lens, causal)


# --- split_heads, merge_heads ----------------------------------------------

def split_heads(X, num_heads):
    B, T, D = X.shape
    return X.reshape(B, T, num_heads, D // num_heads).permute(0, 2, 1, 3)


def split_heads_interleaved(X, num_heads):
    B, T, D = X.shape
    # BUG: (d_k, h) instead of (h, d_k): head i gets columns i, i+h, ...
    return X.reshape(B, T, D // num_heads, num_heads).permute(0, 3, 1, 2)


def split_heads_without_transpose(X, num_heads):
    B, T, D = X.shape
    # BUG: a view as (B, h, T, d_k) mixes positions and heads
    return X.reshape(B, num_heads, T, D // num_heads)


def split_heads_for_two(X, num_heads):
    B, T, D = X.shape
    # BUG: the example's 2 heads written in, num_heads ignored
    return X.reshape(B, T, 2, D // 2).permute(0, 2, 1, 3)


def merge_heads(X):
    B, h, T, d_k = X.shape
    return X.permute(0, 2, 1, 3).reshape(B, T, h * d_k)


def merge_heads_without_transpose(X):
    B, h, T, d_k = X.shape
    return X.reshape(B, T, h * d_k)   # BUG: heads and positions mixed


def merge_heads_with_view(X):
    B, h, T, d_k = X.shape
    # BUG: view of a transposed (non-contiguous) tensor raises
    return X.transpose(1, 2).view(B, T, h * d_k)


def merge_heads_for_two(X):
    B, h, T, d_k = X.shape
    # BUG: the example's 2 heads written in
    return X.permute(0, 2, 1, 3).reshape(B, T, 2 * d_k)


# --- multi_head_attention ---------------------------------------------------

def multi_head_attention(layer, queries, keys, values, valid_lens=None):
    h = layer.num_heads
    q = split_heads(layer.W_q(queries), h)                # (B, h, Q, d_k)
    k = split_heads(layer.W_k(keys), h)                   # (B, h, K, d_k)
    v = split_heads(layer.W_v(values), h)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = tl.masked_softmax(scores, valid_lens)       # (B, h, Q, K)
    return layer.W_o(merge_heads(weights @ v))            # (B, Q, d)


def mha_with_torchs_kernel(layer, queries, keys, values, valid_lens=None):
    """A right answer through F.scaled_dot_product_attention."""
    h = layer.num_heads
    q = split_heads(layer.W_q(queries), h)
    k = split_heads(layer.W_k(keys), h)
    v = split_heads(layer.W_v(values), h)
    mask = None
    if valid_lens is not None:        # (B, 1, 1, K): True = attend
        mask = (torch.arange(k.shape[2]) < valid_lens[:, None])[:, None,
                                                               None]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return layer.W_o(merge_heads(out))


def mha_unscaled(layer, queries, keys, values, valid_lens=None):
    h = layer.num_heads
    q = split_heads(layer.W_q(queries), h)
    k = split_heads(layer.W_k(keys), h)
    v = split_heads(layer.W_v(values), h)
    scores = q @ k.transpose(-2, -1)                      # BUG: no 1/sqrt
    weights = tl.masked_softmax(scores, valid_lens)
    return layer.W_o(merge_heads(weights @ v))


def mha_scaled_by_the_width(layer, queries, keys, values, valid_lens=None):
    h = layer.num_heads
    q = split_heads(layer.W_q(queries), h)
    k = split_heads(layer.W_k(keys), h)
    v = split_heads(layer.W_v(values), h)
    # BUG: sqrt(d) instead of sqrt(d_k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(layer.num_hiddens)
    weights = tl.masked_softmax(scores, valid_lens)
    return layer.W_o(merge_heads(weights @ v))


def mha_without_w_o(layer, queries, keys, values, valid_lens=None):
    h = layer.num_heads
    q = split_heads(layer.W_q(queries), h)
    k = split_heads(layer.W_k(keys), h)
    v = split_heads(layer.W_v(values), h)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = tl.masked_softmax(scores, valid_lens)
    return merge_heads(weights @ v)                  # BUG: no W_o


def mha_ignoring_lengths(layer, queries, keys, values, valid_lens=None):
    h = layer.num_heads
    q = split_heads(layer.W_q(queries), h)
    k = split_heads(layer.W_k(keys), h)
    v = split_heads(layer.W_v(values), h)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)        # BUG: padding attended
    return layer.W_o(merge_heads(weights @ v))


def mha_keys_from_the_queries(layer, queries, keys, values,
                              valid_lens=None):
    h = layer.num_heads
    q = split_heads(layer.W_q(queries), h)
    k = split_heads(layer.W_k(queries), h)      # BUG: self-attention only
    v = split_heads(layer.W_v(values), h)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = tl.masked_softmax(scores, valid_lens)
    return layer.W_o(merge_heads(weights @ v))


def mha_weights_without_bias(layer, queries, keys, values,
                             valid_lens=None):
    h = layer.num_heads
    # BUG: the weight matrices alone, without the layers' biases
    q = split_heads(queries @ layer.W_q.weight.T, h)
    k = split_heads(keys @ layer.W_k.weight.T, h)
    v = split_heads(values @ layer.W_v.weight.T, h)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = tl.masked_softmax(scores, valid_lens)
    return merge_heads(weights @ v) @ layer.W_o.weight.T


def library_masked_softmax(scores, valid_lens=None):
    return tl.masked_softmax(scores, valid_lens)


def library_attention_mask(scores_shape, valid_lens=None, causal=False):
    return tl.attention_mask(scores_shape, valid_lens, causal=causal)


def library_multi_head_attention(layer, queries, keys, values,
                                 valid_lens=None):
    return layer(queries, keys, values, valid_lens)


CORRECT = [
    (check_masked_softmax, library_masked_softmax,
     "the library's masked_softmax"),
    (check_masked_softmax, masked_softmax, "a reader's masked_softmax"),
    (check_masked_softmax, d2l_style_masked_softmax,
     "d2l's flattened layout, with -inf"),
    (check_attention_mask, library_attention_mask,
     "the library's attention_mask"),
    (check_attention_mask, attention_mask, "a reader's attention_mask"),
    (check_split_heads, tl.split_heads, "the library's split_heads"),
    (check_split_heads, split_heads, "a reader's split_heads"),
    (check_merge_heads, tl.merge_heads, "the library's merge_heads"),
    (check_merge_heads, merge_heads, "a reader's merge_heads"),
    (check_multi_head_attention, library_multi_head_attention,
     "tl.MultiHeadAttention itself"),
    (check_multi_head_attention, multi_head_attention,
     "a reader's multi_head_attention"),
    (check_multi_head_attention, mha_with_torchs_kernel,
     "a reader's, through F.scaled_dot_product_attention"),
]

BUGS = [
    PlantedBug("softmax over the queries", check_masked_softmax,
               softmax_over_queries, "scores without a mask",
               alone=True),
    PlantedBug("the mask applied after the softmax", check_masked_softmax,
               mask_after_softmax, "lengths per batch item, (B,)"),
    PlantedBug("repeat for repeat_interleave", check_masked_softmax,
               repeat_for_repeat_interleave,
               "lengths per batch item, (B,)"),
    PlantedBug("(B, Q) lengths read as (B,)", check_masked_softmax,
               lengths_per_batch_only, "lengths per query, (B, Q)",
               alone=True),
    PlantedBug("exp without subtracting the maximum", check_masked_softmax,
               exp_over_sum, "large scores (around 1000)"),
    PlantedBug("-1e6 instead of -inf", check_masked_softmax,
               fill_minus_1e6, "a query row with no valid key",
               alone=True),
    PlantedBug("-inf with no care for an empty row", check_masked_softmax,
               fill_minus_inf_alone, "a query row with no valid key",
               alone=True),
    PlantedBug("an additive mask, NaN replaced after", check_masked_softmax,
               additive_mask_then_nan_to_num,
               "the gradient through a row with no valid key",
               alone=True),
    PlantedBug("lengths counted with <=", check_attention_mask,
               lengths_counted_from_one, "lengths per batch item, (B,)"),
    PlantedBug("no head axis in the mask", check_attention_mask,
               mask_without_head_axis,
               "lengths per batch item, with a head axis (B, h, Q, K)"),
    PlantedBug("(B, Q) lengths read as one per item", check_attention_mask,
               lengths_per_query_as_one_per_item,
               "lengths per query, (B, Q)"),
    PlantedBug("(B, Q) lengths without the head axis", check_attention_mask,
               per_query_mask_without_head_axis,
               "lengths per query, with a head axis (B, h, Q, K)",
               alone=True),
    PlantedBug("the causal mask off by one", check_attention_mask,
               causal_off_by_one, "a causal mask, Q = K"),
    PlantedBug("the causal mask not aligned to the last keys",
               check_attention_mask, causal_not_aligned_to_the_last_keys,
               "a causal mask under a cache: the queries are the last Q "
               "of K positions",
               alone=True),
    PlantedBug("causal OR lengths", check_attention_mask, causal_or_lengths,
               "a causal mask and lengths together",
               alone=True),
    PlantedBug("heads interleaved", check_split_heads,
               split_heads_interleaved, "two heads of width 3"),
    PlantedBug("split without the transpose", check_split_heads,
               split_heads_without_transpose, "two heads of width 3"),
    PlantedBug("the number of heads written in", check_split_heads,
               split_heads_for_two, "four heads of width 16, a batch of 2",
               alone=True),
    PlantedBug("merge without the transpose", check_merge_heads,
               merge_heads_without_transpose, "two heads of width 3"),
    PlantedBug("merge with view after transpose", check_merge_heads,
               merge_heads_with_view, "two heads of width 3"),
    PlantedBug("the number of heads written in, merging",
               check_merge_heads, merge_heads_for_two,
               "four heads of width 16, a batch of 2", alone=True),
    PlantedBug("no 1/sqrt(d_k)", check_multi_head_attention, mha_unscaled,
               "one head, self-attention"),
    PlantedBug("no W_o", check_multi_head_attention, mha_without_w_o,
               "one head, self-attention"),
    PlantedBug("1/sqrt(d) instead of 1/sqrt(d_k)",
               check_multi_head_attention, mha_scaled_by_the_width,
               "four heads, self-attention"),
    PlantedBug("keys projected from the queries", check_multi_head_attention,
               mha_keys_from_the_queries,
               "cross-attention: more keys than queries"),
    PlantedBug("valid_lens ignored", check_multi_head_attention,
               mha_ignoring_lengths, "padded keys, lengths (B,)",
               alone=True),
    PlantedBug("the projections' biases left out",
               check_multi_head_attention, mha_weights_without_bias,
               "projections with biases",
               alone=True),
]
