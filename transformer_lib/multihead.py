"""Multi-head attention, in the d2l form (separate W_q, W_k, W_v, W_o) and the ViT form (one
fused ``qkv`` projection), with exact conversions between the two.

Vaswani et al. (2017), section 3.2.2:

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

All h heads' projections are stored as one ``num_hiddens x num_hiddens`` matrix each; head
``i`` owns rows ``i*d : (i+1)*d`` of the projected features, with ``d = num_hiddens / h``.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_positive_int, check_probability, check_tensor
from .attention import scaled_dot_product_attention


def split_heads(X: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``(B, T, h*d)`` -> ``(B, h, T, d)``: give every head its own slice of the features."""
    B, T, D = X.shape
    return X.view(B, T, num_heads, D // num_heads).transpose(1, 2)


def merge_heads(X: torch.Tensor) -> torch.Tensor:
    """``(B, h, T, d)`` -> ``(B, T, h*d)``: concatenate the heads again."""
    B, h, T, d = X.shape
    return X.transpose(1, 2).reshape(B, T, h * d)


def transpose_qkv(X: torch.Tensor, num_heads: int) -> torch.Tensor:
    """d2l's layout: ``(B, T, h*d)`` -> ``(B*h, T, d)``, the heads folded into the batch."""
    X = split_heads(X, num_heads)  # (B, h, T, d)
    B, h, T, d = X.shape
    return X.reshape(B * h, T, d)


def transpose_output(X: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Undo :func:`transpose_qkv`: ``(B*h, T, d)`` -> ``(B, T, h*d)``."""
    Bh, T, d = X.shape
    return merge_heads(X.reshape(Bh // num_heads, num_heads, T, d))


class KVCache:
    """The projected keys and values an attention layer has already computed, per head.

    ``static=False`` (decoder self-attention): each call appends the new positions' keys and
    values.  ``static=True`` (cross-attention over the encoder outputs): the first call
    stores them and later calls reuse them without projecting again.
    """

    def __init__(self, static: bool = False):
        self.static = static
        self.keys: torch.Tensor | None = None    # (B, h, t, d)
        self.values: torch.Tensor | None = None  # (B, h, t, d)

    def __len__(self) -> int:
        return 0 if self.keys is None else self.keys.shape[2]

    def update(self, keys: torch.Tensor, values: torch.Tensor):
        if self.keys is None or self.static:
            self.keys, self.values = keys, values
        else:
            if keys.shape[0] != self.keys.shape[0]:
                raise ValueError(
                    f"the cache holds batch size {self.keys.shape[0]}, the new keys have "
                    f"{keys.shape[0]}"
                )
            self.keys = torch.cat([self.keys, keys], dim=2)
            self.values = torch.cat([self.values, values], dim=2)
        return self.keys, self.values

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows ``index`` (e.g. the surviving hypotheses of a beam search)."""
        if self.keys is not None:
            self.keys, self.values = self.keys[index], self.values[index]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query, key, value and output projections.

    Args:
        num_hiddens: model width; also the width of the output.
        num_heads:   number of heads h; must divide ``num_hiddens``.
        dropout:     dropout on the attention weights.
        bias:        whether the four projections have a bias (d2l: False).
        query_size, key_size, value_size: input widths if they differ from ``num_hiddens``.
    """

    def __init__(self, num_hiddens: int, num_heads: int, dropout: float = 0.0, bias: bool = False,
                 *, query_size: int | None = None, key_size: int | None = None,
                 value_size: int | None = None):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        check_positive_int("num_heads", num_heads)
        if num_hiddens % num_heads:
            raise ValueError(
                f"num_heads ({num_heads}) must divide num_hiddens ({num_hiddens}) so that every "
                f"head gets num_hiddens / num_heads features"
            )
        check_probability("dropout", dropout)
        self.num_hiddens, self.num_heads, self.dropout = num_hiddens, num_heads, dropout
        self.query_size = query_size or num_hiddens
        self.key_size = key_size or num_hiddens
        self.value_size = value_size or num_hiddens
        self.W_q = nn.Linear(self.query_size, num_hiddens, bias=bias)
        self.W_k = nn.Linear(self.key_size, num_hiddens, bias=bias)
        self.W_v = nn.Linear(self.value_size, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def _check_inputs(self, queries, keys, values):
        check_tensor("queries", queries, ndim=3, kind="float", last_dim=self.query_size)
        check_tensor("keys", keys, ndim=3, kind="float", last_dim=self.key_size)
        check_tensor("values", values, ndim=3, kind="float", last_dim=self.value_size)
        if not queries.shape[0] == keys.shape[0] == values.shape[0]:
            raise ValueError(
                f"queries, keys and values must share the batch size, got {queries.shape[0]}, "
                f"{keys.shape[0]}, {values.shape[0]}"
            )
        if keys.shape[1] != values.shape[1]:
            raise ValueError(
                f"keys and values must have the same number of positions, got {keys.shape[1]} "
                f"and {values.shape[1]}"
            )

    def forward(self, queries, keys, values, valid_lens=None, *, attn_mask=None, causal=False,
                return_weights=False, cache: KVCache | None = None):
        """Attend from ``queries`` to ``keys``/``values``.

        queries ``(B, Q, query_size)``, keys ``(B, K, key_size)``, values ``(B, K, value_size)``.
        valid_lens ``(B,)`` or ``(B, Q)``; attn_mask boolean, broadcastable to ``(B, h, Q, K)``;
        causal hides later keys (see :func:`attention_mask`).
        cache: a :class:`KVCache`; with one, keys/values of earlier calls are reused, and a
        static cache that is already filled ignores ``keys`` and ``values``.
        Returns ``(B, Q, num_hiddens)``, or ``(output, weights)`` with weights ``(B, h, Q, K)``.
        """
        reuse = cache is not None and cache.static and cache.keys is not None
        if reuse:
            check_tensor("queries", queries, ndim=3, kind="float", last_dim=self.query_size)
        else:
            self._check_inputs(queries, keys, values)
        h = self.num_heads
        q = split_heads(self.W_q(queries), h)  # (B, h, Q, d)
        if reuse:
            k, v = cache.keys, cache.values
        else:
            k = split_heads(self.W_k(keys), h)  # (B, h, K, d)
            v = split_heads(self.W_v(values), h)  # (B, h, K, d)
            if cache is not None:
                k, v = cache.update(k, v)
        if q.shape[0] != k.shape[0]:
            raise ValueError(f"queries have batch size {q.shape[0]} but the cache holds {k.shape[0]}")
        result = scaled_dot_product_attention(
            q, k, v, valid_lens, attn_mask=attn_mask, causal=causal,
            dropout_p=self.dropout if self.training else 0.0, return_weights=return_weights,
        )
        if return_weights:
            out, weights = result
            return self.W_o(merge_heads(out)), weights  # (B, Q, D), (B, h, Q, K)
        return self.W_o(merge_heads(result))  # (B, Q, D)


class FusedSelfAttention(nn.Module):
    """Multi-head *self*-attention with one fused ``qkv`` projection, as in ViT.

    ``qkv`` maps ``D`` to ``3D`` features laid out ``[queries | keys | values]``; ``proj`` is
    the output projection.  One matmul instead of three: the same function as
    :class:`MultiHeadAttention` with ``W_q, W_k, W_v`` stacked (see :func:`fused_from_separate`).
    """

    def __init__(self, num_hiddens: int, num_heads: int, dropout: float = 0.0, bias: bool = False):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        check_positive_int("num_heads", num_heads)
        if num_hiddens % num_heads:
            raise ValueError(f"num_heads ({num_heads}) must divide num_hiddens ({num_hiddens})")
        check_probability("dropout", dropout)
        self.num_hiddens, self.num_heads, self.dropout = num_hiddens, num_heads, dropout
        self.qkv = nn.Linear(num_hiddens, 3 * num_hiddens, bias=bias)
        self.proj = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, X, valid_lens=None, *, attn_mask=None, causal=False, return_weights=False):
        """X ``(B, T, D)`` -> ``(B, T, D)`` [and weights ``(B, h, T, T)``]."""
        check_tensor("X", X, ndim=3, kind="float", last_dim=self.num_hiddens)
        B, T, D = X.shape
        h = self.num_heads
        # (B, T, 3D) -> (B, T, 3, h, d) -> (3, B, h, T, d)
        q, k, v = self.qkv(X).view(B, T, 3, h, D // h).permute(2, 0, 3, 1, 4)
        result = scaled_dot_product_attention(
            q, k, v, valid_lens, attn_mask=attn_mask, causal=causal,
            dropout_p=self.dropout if self.training else 0.0, return_weights=return_weights,
        )
        if return_weights:
            out, weights = result
            return self.proj(merge_heads(out)), weights
        return self.proj(merge_heads(result))


@torch.no_grad()
def fused_from_separate(mha: MultiHeadAttention) -> FusedSelfAttention:
    """A :class:`FusedSelfAttention` computing exactly what ``mha`` computes on ``(X, X, X)``."""
    if not mha.query_size == mha.key_size == mha.value_size == mha.num_hiddens:
        raise ValueError("fused_from_separate needs query, key and value sizes equal to num_hiddens")
    bias = mha.W_q.bias is not None
    fused = FusedSelfAttention(mha.num_hiddens, mha.num_heads, mha.dropout, bias=bias)
    fused = fused.to(device=mha.W_q.weight.device, dtype=mha.W_q.weight.dtype)
    fused.qkv.weight.copy_(torch.cat([mha.W_q.weight, mha.W_k.weight, mha.W_v.weight], dim=0))
    fused.proj.weight.copy_(mha.W_o.weight)
    if bias:
        fused.qkv.bias.copy_(torch.cat([mha.W_q.bias, mha.W_k.bias, mha.W_v.bias]))
        fused.proj.bias.copy_(mha.W_o.bias)
    return fused


@torch.no_grad()
def separate_from_fused(fused: FusedSelfAttention) -> MultiHeadAttention:
    """The :class:`MultiHeadAttention` that ``fused`` is a fused form of."""
    bias = fused.qkv.bias is not None
    mha = MultiHeadAttention(fused.num_hiddens, fused.num_heads, fused.dropout, bias=bias)
    mha = mha.to(device=fused.qkv.weight.device, dtype=fused.qkv.weight.dtype)
    for proj, w in zip((mha.W_q, mha.W_k, mha.W_v), fused.qkv.weight.chunk(3, dim=0)):
        proj.weight.copy_(w)
    mha.W_o.weight.copy_(fused.proj.weight)
    if bias:
        for proj, b in zip((mha.W_q, mha.W_k, mha.W_v), fused.qkv.bias.chunk(3)):
            proj.bias.copy_(b)
        mha.W_o.bias.copy_(fused.proj.bias)
    return mha


class PostNormMultiHeadAttention(nn.Module):
    """Multi-head attention in the layout of jadore801120's attention-is-all-you-need-pytorch:
    projections ``w_qs, w_ks, w_vs, fc``; heads split with ``view``/``transpose``; the softmax
    *temperature* ``sqrt(d_k)``; a 0/1 ``mask`` applied with ``masked_fill``; and the residual
    connection, dropout and LayerNorm *inside* the module.

    It computes ``LayerNorm(q + Dropout(MultiHead(q, k, v)))``, i.e. :class:`AddNorm` around
    :class:`MultiHeadAttention` (see :func:`post_norm_from_separate`).  Masked scores are filled
    with the dtype's lowest value (the original's -1e9 overflows float16).
    """

    def __init__(self, n_head: int, d_model: int, d_k: int, d_v: int, dropout: float = 0.0,
                 eps: float = 1e-6):
        super().__init__()
        for name, value in (("n_head", n_head), ("d_model", d_model), ("d_k", d_k), ("d_v", d_v)):
            check_positive_int(name, value)
        check_probability("dropout", dropout)
        self.n_head, self.d_k, self.d_v = n_head, d_k, d_v
        self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_vs = nn.Linear(d_model, n_head * d_v, bias=False)
        self.fc = nn.Linear(n_head * d_v, d_model, bias=False)
        self.temperature = d_k ** 0.5
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=eps)

    def forward(self, q, k, v, mask=None):
        """q ``(B, Q, d_model)``, k and v ``(B, K, d_model)``; mask ``(B, Q or 1, K)``, nonzero =
        keep.  Returns ``(output (B, Q, d_model), attn (B, n_head, Q, K))``."""
        check_tensor("q", q, ndim=3, kind="float")
        check_tensor("k", k, ndim=3, kind="float")
        check_tensor("v", v, ndim=3, kind="float")
        B, len_q, len_k, h = q.shape[0], q.shape[1], k.shape[1], self.n_head
        residual = q
        q = self.w_qs(q).view(B, len_q, h, self.d_k).transpose(1, 2)  # (B, h, Q, d_k)
        k = self.w_ks(k).view(B, len_k, h, self.d_k).transpose(1, 2)  # (B, h, K, d_k)
        v = self.w_vs(v).view(B, len_k, h, self.d_v).transpose(1, 2)  # (B, h, K, d_v)
        attn = (q / self.temperature) @ k.transpose(2, 3)             # (B, h, Q, K)
        if mask is not None:
            check_tensor("mask", mask, ndim=3)
            attn = attn.masked_fill(mask.unsqueeze(1) == 0, torch.finfo(attn.dtype).min)
        attn = self.dropout(torch.softmax(attn, dim=-1))
        out = (attn @ v).transpose(1, 2).contiguous().view(B, len_q, h * self.d_v)
        out = self.dropout(self.fc(out)) + residual
        return self.layer_norm(out), attn


@torch.no_grad()
def post_norm_from_separate(mha: MultiHeadAttention, addnorm) -> PostNormMultiHeadAttention:
    """The :class:`PostNormMultiHeadAttention` equal to ``addnorm(q, mha(q, k, v))``.

    ``mha`` must have no biases (the jadore layout has none) and ``addnorm`` a LayerNorm.
    """
    if mha.W_q.bias is not None:
        raise ValueError("post_norm_from_separate needs a MultiHeadAttention built with bias=False")
    if getattr(addnorm, "norm", "layer") != "layer":
        raise ValueError("post_norm_from_separate needs an AddNorm with a LayerNorm")
    d = mha.num_hiddens // mha.num_heads
    out = PostNormMultiHeadAttention(mha.num_heads, mha.num_hiddens, d, d, mha.dropout, eps=addnorm.ln.eps)
    out = out.to(device=mha.W_q.weight.device, dtype=mha.W_q.weight.dtype)
    for mine, theirs in ((out.w_qs, mha.W_q), (out.w_ks, mha.W_k), (out.w_vs, mha.W_v), (out.fc, mha.W_o)):
        mine.weight.copy_(theirs.weight)
    out.layer_norm.load_state_dict(addnorm.ln.state_dict())
    return out
