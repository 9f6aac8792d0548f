"""Checkers for the attention the reader writes: chapter 1's masked
softmax and attention mask, chapter 2's heads and multi-head attention.

What the reader writes:

    masked_softmax(scores, valid_lens=None)
        scores (B, Q, K); valid_lens None, (B,) or (B, Q) -> weights
        (B, Q, K): 0 on masked keys, rows summing to 1, all-zero rows
        where no key is valid.
    attention_mask(scores_shape, valid_lens=None, causal=False)
        a boolean mask (True = keep) broadcastable to scores_shape
        (B, ..., Q, K), or None when nothing is masked.
    split_heads(X, num_heads)   (B, T, h d_k) -> (B, h, T, d_k)
    merge_heads(X)              (B, h, T, d_k) -> (B, T, h d_k)
    multi_head_attention(layer, queries, keys, values, valid_lens=None)
        the output of ``layer`` (a tl.MultiHeadAttention), computed from
        its weights W_q, W_k, W_v, W_o: (B, Q, d).
"""

from __future__ import annotations

import torch

from ...model import MultiHeadAttention, attention_mask
from ...model.attention import softmax_with_mask
from .core import (Case, Checker, Mismatch, expect_close, expect_tensor,
                   random_tensor, seeded)


def _lens(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long)


# --- chapter 1: masked_softmax -------------------------------------------

def _expect_weights(weights, scores, mask, what: str) -> None:
    """Masked entries 0, each row with a valid key summing to 1, and the
    library's values."""
    expect_tensor(weights, what, scores.shape, scores.dtype)
    if torch.isnan(weights).any():
        index = torch.nonzero(torch.isnan(weights))[0].tolist()
        raise Mismatch(f"{what} hold NaN, e.g. at {index}")
    keep = torch.broadcast_to(mask, scores.shape)
    leaked = (weights != 0) & ~keep
    if leaked.any():
        index = torch.nonzero(leaked)[0].tolist()
        raise Mismatch(f"a masked key gets weight "
                       f"{weights[tuple(index)].item():.4g} at {index}; "
                       f"masked keys must get exactly 0")
    sums = weights.sum(dim=-1)                       # (B, Q)
    has_key = keep.any(dim=-1)
    wrong = has_key & ~torch.isclose(sums, torch.ones_like(sums),
                                     atol=1e-5)
    if wrong.any():
        index = torch.nonzero(wrong)[0].tolist()
        raise Mismatch(f"the weights do not sum to 1 over the keys: row "
                       f"{index} sums to {sums[tuple(index)].item():.4g}")
    expect_close(weights, softmax_with_mask(scores, keep), what)


def _softmax_case(valid_lens, shape=(2, 3, 4), scale: float = 1.0):
    def run(masked_softmax):
        scores = random_tensor(shape, 1, scale=scale)
        lens = None if valid_lens is None else _lens(valid_lens)
        weights = masked_softmax(scores.clone(), lens)
        if lens is None:
            mask = torch.ones(shape, dtype=torch.bool)
        else:
            mask = attention_mask(shape, lens)
        _expect_weights(weights, scores, mask, "the weights")
    return run


def _empty_row(masked_softmax):
    scores = random_tensor((2, 2, 4), 2)
    weights = masked_softmax(scores.clone(), _lens([0, 3]))
    expect_tensor(weights, "the weights", scores.shape, scores.dtype)
    row = weights[0, 0]
    if torch.isnan(row).any():
        raise Mismatch("expected zeros, got NaN (a softmax over -inf "
                       "alone is 0/0)")
    if not (row == 0).all():
        values = sorted({round(v, 4) for v in row.tolist()})
        each = (f"{values[0]:.4g} each" if len(values) == 1
                else ", ".join(f"{v:.4g}" for v in row.tolist()))
        raise Mismatch(f"expected zeros, got {each}")
    _expect_weights(weights, scores, attention_mask(scores.shape,
                                                    _lens([0, 3])),
                    "the weights")


def _empty_row_gradient(masked_softmax):
    leaf = random_tensor((2, 2, 4), 3).requires_grad_()
    # a copy, as inside attention: the reader may mask it in place
    weights = masked_softmax(leaf.clone(), _lens([0, 3]))
    expect_tensor(weights, "the weights", leaf.shape, leaf.dtype)
    if not weights.requires_grad:
        raise Mismatch("the weights do not depend on the scores for "
                       "autograd (computed under torch.no_grad(), or "
                       "from .detach()?)")
    (weights * random_tensor((2, 2, 4), 4)).sum().backward()
    if not torch.isfinite(leaf.grad).all():
        raise Mismatch("the gradient with respect to the scores holds NaN "
                       "or inf on the empty row (zero it before the "
                       "softmax, not after)")
    if (leaf.grad[0] != 0).any():
        raise Mismatch("the empty row's scores get a nonzero gradient: its "
                       "weights are constant zeros")


MASKED_SOFTMAX_CASES = [
    Case("scores without a mask", _softmax_case(None)),
    Case("lengths per batch item, (B,)", _softmax_case([2, 3])),
    Case("lengths per query, (B, Q)",
         _softmax_case([[1, 3, 4], [4, 2, 3]])),
    Case("large scores (around 1000)",
         _softmax_case([3, 4], scale=1000.0)),
    Case("a query row with no valid key", _empty_row),
    Case("the gradient through a row with no valid key",
         _empty_row_gradient),
]
check_masked_softmax = Checker(1, "masked_softmax", MASKED_SOFTMAX_CASES)


# --- chapter 1: attention_mask -------------------------------------------

def _describe(mask_row, K: int) -> str:
    keys = [k for k in range(K) if mask_row[k]]
    if not keys:
        return "no key"
    if keys == list(range(keys[0], keys[-1] + 1)) and len(keys) > 1:
        return f"keys {keys[0]}-{keys[-1]}"
    return ("key " if len(keys) == 1 else "keys ") + ", ".join(
        map(str, keys))


def _expect_mask(got, shape, valid_lens=None, causal=False) -> None:
    want = attention_mask(shape, valid_lens, causal=causal)
    if got is None:
        raise Mismatch("got None, but some keys must be masked")
    if not isinstance(got, torch.Tensor):
        raise Mismatch(f"the mask should be a tensor, got "
                       f"{type(got).__name__}")
    if got.dtype != torch.bool:
        raise Mismatch(f"the mask should be boolean (True = keep), got "
                       f"{got.dtype}")
    try:
        full = torch.broadcast_to(got, shape)
    except RuntimeError:
        raise Mismatch(f"a mask of shape {tuple(got.shape)} does not "
                       f"broadcast to the scores' shape {tuple(shape)}"
                       ) from None
    want = torch.broadcast_to(want, shape)
    wrong = full != want
    if wrong.any():
        index = torch.nonzero(wrong)[0].tolist()
        *lead, q, _ = index
        where = f"batch item {lead[0]}"
        if len(lead) > 1:
            where += f", head {lead[1]}"
        K = shape[-1]
        raise Mismatch(f"{where}, query {q} should see "
                       f"{_describe(want[tuple(lead)][q], K)}; your mask "
                       f"lets it see {_describe(full[tuple(lead)][q], K)}")


def _mask_case(shape, valid_lens=None, causal=False):
    def run(attention_mask_):
        lens = None if valid_lens is None else _lens(valid_lens)
        got = attention_mask_(shape, lens, causal)
        _expect_mask(got, shape, lens, causal)
    return run


def _nothing_masked(attention_mask_):
    shape = (2, 3, 4)
    got = attention_mask_(shape, None, False)
    if got is None:
        return
    if not isinstance(got, torch.Tensor) or got.dtype != torch.bool:
        raise Mismatch(f"expected None (or an all-True boolean mask), got "
                       f"{got!r}")
    if not torch.broadcast_to(got, shape).all():
        raise Mismatch("nothing is to be masked, but your mask hides some "
                       "keys")


ATTENTION_MASK_CASES = [
    Case("nothing to mask", _nothing_masked),
    Case("lengths per batch item, (B,)", _mask_case((2, 3, 4), [2, 4])),
    Case("lengths per batch item, with a head axis (B, h, Q, K)",
         _mask_case((2, 3, 3, 4), [1, 3])),
    Case("lengths per query, (B, Q)",
         _mask_case((2, 3, 4), [[1, 4, 2], [3, 0, 4]])),
    Case("lengths per query, with a head axis (B, h, Q, K)",
         _mask_case((2, 3, 3, 4), [[1, 4, 2], [3, 0, 4]])),
    Case("a causal mask, Q = K", _mask_case((1, 4, 4), causal=True)),
    Case("a causal mask under a cache: the queries are the last Q of K "
         "positions", _mask_case((1, 2, 5), causal=True)),
    Case("a causal mask and lengths together",
         _mask_case((2, 4, 4), [2, 4], causal=True)),
]
check_attention_mask = Checker(1, "attention_mask", ATTENTION_MASK_CASES)


# --- chapter 2: split_heads and merge_heads -------------------------------

def _labelled(B: int, T: int, D: int) -> torch.Tensor:
    """X[b, t, c] = 10000 b + 100 t + c: each entry says where it came
    from."""
    b = torch.arange(B)[:, None, None] * 10000
    t = torch.arange(T)[None, :, None] * 100
    c = torch.arange(D)[None, None, :]
    return (b + t + c).float()


def _columns(entries: torch.Tensor) -> str:
    cols = [int(v) % 100 for v in entries.tolist()]
    rows = {int(v) // 100 % 100 for v in entries.tolist()}
    if cols == list(range(cols[0], cols[0] + len(cols))):
        text = f"columns {cols[0]}-{cols[-1]}"
    else:
        text = "columns " + ", ".join(map(str, cols[:4])) + ", ..."
    if len(rows) > 1:
        text += " of several positions"
    return text


def _split_case(B, T, h, d_k):
    def run(split_heads):
        X = _labelled(B, T, h * d_k)
        got = split_heads(X.clone(), h)
        expect_tensor(got, f"split_heads(X, {h}) for X of shape "
                      f"{(B, T, h * d_k)}", (B, h, T, d_k), X.dtype)
        want = X.view(B, T, h, d_k).transpose(1, 2)      # (B, h, T, d_k)
        wrong = (got != want).any(dim=-1)                 # (B, h, T)
        if wrong.any():
            b, i, t = torch.nonzero(wrong)[0].tolist()
            raise Mismatch(
                f"head {i} should hold columns {i * d_k}-"
                f"{(i + 1) * d_k - 1} of X: split_heads(X, {h})[{b}, {i}, "
                f"{t}] should be X[{b}, {t}, {i * d_k}:{(i + 1) * d_k}], "
                f"it holds {_columns(got[b, i, t])}")
    return run


SPLIT_HEADS_CASES = [
    Case("two heads of width 3", _split_case(1, 2, 2, 3)),
    Case("four heads of width 16, a batch of 2",
         _split_case(2, 3, 4, 16)),
]
check_split_heads = Checker(2, "split_heads", SPLIT_HEADS_CASES)


def _merge_case(B, T, h, d_k):
    def run(merge_heads):
        X = _labelled(B, T, h * d_k)
        # (B, h, T, d_k), contiguous, as attention's output is
        heads = X.view(B, T, h, d_k).transpose(1, 2).contiguous()
        got = merge_heads(heads)
        expect_tensor(got, f"merge_heads of shape {(B, h, T, d_k)}",
                      (B, T, h * d_k), X.dtype)
        wrong = got != X
        if wrong.any():
            b, t, c = torch.nonzero(wrong)[0].tolist()
            i = c // d_k
            raise Mismatch(
                f"position {t} of batch item {b} should be its {h} heads "
                f"side by side (head {i} in columns {i * d_k}-"
                f"{(i + 1) * d_k - 1}); column {c} holds head "
                f"{int(got[b, t, c]) % 100 // d_k}'s feature "
                f"{int(got[b, t, c]) % 100 % d_k} of position "
                f"{int(got[b, t, c]) // 100 % 100}")
    return run


MERGE_HEADS_CASES = [
    Case("two heads of width 3", _merge_case(1, 2, 2, 3)),
    Case("four heads of width 16, a batch of 2",
         _merge_case(2, 3, 4, 16)),
]
check_merge_heads = Checker(2, "merge_heads", MERGE_HEADS_CASES)


# --- chapter 2: multi-head attention from its weights ---------------------

def _mha_case(num_heads, Q, K, valid_lens=None, d=16, bias=False):
    def run(multi_head_attention):
        with seeded(num_heads + Q + K):
            layer = MultiHeadAttention(d, num_heads, bias=bias).eval()
        queries = random_tensor((2, Q, d), 5)
        keys = queries if K == Q else random_tensor((2, K, d), 6)
        values = keys           # self-attention when K == Q: X, X, X
        lens = None if valid_lens is None else _lens(valid_lens)
        with torch.no_grad():
            want = layer(queries, keys, values, lens)
            got = multi_head_attention(layer, queries, keys, values, lens)
        expect_tensor(got, "the output", want.shape, want.dtype)
        expect_close(got, want, "the output (against tl.MultiHeadAttention"
                     " with the same weights)")
    return run


MULTI_HEAD_CASES = [
    Case("one head, self-attention", _mha_case(1, 3, 3)),
    Case("four heads, self-attention", _mha_case(4, 3, 3)),
    Case("cross-attention: more keys than queries", _mha_case(4, 2, 5)),
    Case("padded keys, lengths (B,)", _mha_case(4, 3, 5, [2, 5])),
    Case("projections with biases", _mha_case(2, 3, 3, bias=True)),
]
check_multi_head_attention = Checker(2, "multi_head_attention",
                                     MULTI_HEAD_CASES)
