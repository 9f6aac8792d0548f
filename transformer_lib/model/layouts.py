"""Other layouts of multi-head attention, for teaching: the same function
as :class:`~transformer_lib.model.multihead.MultiHeadAttention`, arranged as
other code bases arrange it, with exact conversions.

- d2l: the heads folded into the batch (:func:`transpose_qkv`);
- ViT: one fused ``qkv`` projection (:class:`FusedSelfAttention`);
- jadore801120's attention-is-all-you-need-pytorch: residual and
  LayerNorm inside the module (:class:`PostNormMultiHeadAttention`).
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import (check_heads_divide, check_positive_int,
                      check_probability, check_rows_match, check_tensor)
from .attention import DotProductAttention, softmax_with_mask
from .multihead import MultiHeadAttention, merge_heads, split_heads


def transpose_qkv(X: torch.Tensor, num_heads: int) -> torch.Tensor:
    """d2l's layout: ``(B, T, h*d_k)`` -> ``(B*h, T, d_k)``, the heads
    folded into the batch."""
    X = split_heads(X, num_heads)  # (B, h, T, d_k)
    B, h, T, d_k = X.shape
    return X.reshape(B * h, T, d_k)


def transpose_output(X: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Undo :func:`transpose_qkv`: ``(B*h, T, d_k)`` -> ``(B, T, h*d_k)``."""
    check_tensor("X", X, ndim=3)
    check_positive_int("num_heads", num_heads)
    Bh, T, d_k = X.shape
    if Bh % num_heads:
        raise ValueError(f"num_heads ({num_heads}) must divide X's first "
                         f"dimension B*h, got shape {tuple(X.shape)}")
    return merge_heads(X.reshape(Bh // num_heads, num_heads, T, d_k))


class FusedSelfAttention(nn.Module):
    """Multi-head *self*-attention with one fused ``qkv`` projection, as in
    ViT.

    ``qkv`` maps d to 3d features laid out ``[queries | keys | values]``;
    ``proj`` is the output projection.  One matrix product instead of
    three: :class:`MultiHeadAttention` with ``W_q, W_k, W_v`` stacked (see
    :func:`fused_from_separate`).
    """

    def __init__(self, num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, bias: bool = False):
        super().__init__()
        check_heads_divide(num_hiddens, num_heads)
        self.num_hiddens, self.num_heads = num_hiddens, num_heads
        self.attention = DotProductAttention(dropout)
        self.qkv = nn.Linear(num_hiddens, 3 * num_hiddens, bias=bias)
        self.proj = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, X, valid_lens=None, *, attn_mask=None, causal=False):
        """X ``(B, T, d)`` -> ``(B, T, d)``."""
        check_tensor("X", X, ndim=3, kind="float", last_dim=self.num_hiddens)
        B, T, d = X.shape
        h = self.num_heads
        # (B, T, 3d) -> (B, T, 3, h, d_k) -> (3, B, h, T, d_k)
        q, k, v = self.qkv(X).view(B, T, 3, h, d // h).permute(2, 0, 3, 1, 4)
        out = self.attention(q, k, v, valid_lens, attn_mask=attn_mask,
                             causal=causal)              # (B, h, T, d_k)
        return self.proj(merge_heads(out))               # (B, T, d)


@torch.no_grad()
def fused_from_separate(mha: MultiHeadAttention) -> FusedSelfAttention:
    """A :class:`FusedSelfAttention` computing exactly what ``mha``
    computes on ``(X, X, X)``."""
    if not (mha.query_size == mha.key_size == mha.value_size
            == mha.num_hiddens):
        raise ValueError("fused_from_separate needs query, key and value "
                         "sizes equal to num_hiddens")
    bias = mha.W_q.bias is not None
    fused = FusedSelfAttention(mha.num_hiddens, mha.num_heads,
                               mha.attention.dropout, bias=bias)
    fused = fused.to(mha.W_q.weight.device, mha.W_q.weight.dtype)
    separate = (mha.W_q, mha.W_k, mha.W_v)
    fused.qkv.weight.copy_(torch.cat([W.weight for W in separate]))
    fused.proj.weight.copy_(mha.W_o.weight)
    if bias:
        fused.qkv.bias.copy_(torch.cat([W.bias for W in separate]))
        fused.proj.bias.copy_(mha.W_o.bias)
    return fused


@torch.no_grad()
def separate_from_fused(fused: FusedSelfAttention) -> MultiHeadAttention:
    """The :class:`MultiHeadAttention` that ``fused`` is a fused form of."""
    bias = fused.qkv.bias is not None
    mha = MultiHeadAttention(fused.num_hiddens, fused.num_heads,
                             fused.attention.dropout, bias=bias)
    mha = mha.to(fused.qkv.weight.device, fused.qkv.weight.dtype)
    separate = (mha.W_q, mha.W_k, mha.W_v)
    for W, w in zip(separate, fused.qkv.weight.chunk(3)):
        W.weight.copy_(w)
    mha.W_o.weight.copy_(fused.proj.weight)
    if bias:
        for W, b in zip(separate, fused.qkv.bias.chunk(3)):
            W.bias.copy_(b)
        mha.W_o.bias.copy_(fused.proj.bias)
    return mha


class PostNormMultiHeadAttention(nn.Module):
    """Multi-head attention in the layout of jadore801120's
    attention-is-all-you-need-pytorch: projections ``w_qs, w_ks, w_vs,
    fc``; heads split with ``view``/``transpose``; the softmax
    *temperature* ``sqrt(d_k)``; a 0/1 ``mask``; and the residual
    connection, dropout and LayerNorm *inside* the module.

    It computes ``LayerNorm(q + Dropout(MultiHead(q, k, v)))``: ``AddNorm``
    around ``MultiHeadAttention`` (see :func:`post_norm_from_separate`).
    The original fills masked scores with -1e9, which overflows float16
    and gives a query with no valid key uniform weights; here masking
    follows the library's rule (masked weights 0, empty rows all 0).
    """

    def __init__(self, n_head: int, d_model: int, d_k: int, d_v: int,
                 dropout: float = 0.0, eps: float = 1e-6):
        super().__init__()
        for name, value in (("n_head", n_head), ("d_model", d_model),
                            ("d_k", d_k), ("d_v", d_v)):
            check_positive_int(name, value)
        check_probability("dropout", dropout)
        self.n_head, self.d_k, self.d_v = n_head, d_k, d_v
        self.d_model = d_model
        self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_vs = nn.Linear(d_model, n_head * d_v, bias=False)
        self.fc = nn.Linear(n_head * d_v, d_model, bias=False)
        self.temperature = d_k ** 0.5
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=eps)

    def forward(self, q, k, v, mask=None):
        """q ``(B, Q, d_model)``, k and v ``(B, K, d_model)``; mask
        ``(B, Q or 1, K)``, nonzero = keep.  Returns ``(output (B, Q,
        d_model), attn (B, n_head, Q, K))``, as the original does."""
        _check_jadore_inputs(q, k, v, mask, self.d_model)
        B, len_q, len_k, h = q.shape[0], q.shape[1], k.shape[1], self.n_head
        residual = q
        q = self.w_qs(q).view(B, len_q, h, self.d_k).transpose(1, 2)
        k = self.w_ks(k).view(B, len_k, h, self.d_k).transpose(1, 2)
        v = self.w_vs(v).view(B, len_k, h, self.d_v).transpose(1, 2)
        attn = (q / self.temperature) @ k.transpose(2, 3)  # (B, h, Q, K)
        if mask is not None:
            mask = mask.unsqueeze(1) != 0                  # (B, 1, Q|1, K)
        attn = self.dropout(softmax_with_mask(attn, mask))
        out = (attn @ v).transpose(1, 2).reshape(B, len_q, h * self.d_v)
        out = self.dropout(self.fc(out)) + residual
        return self.layer_norm(out), attn


@torch.no_grad()
def post_norm_from_separate(mha: MultiHeadAttention,
                            addnorm) -> PostNormMultiHeadAttention:
    """The :class:`PostNormMultiHeadAttention` equal to
    ``addnorm(q, mha(q, k, v))`` (in evaluation mode; in training, the
    same dropout rates but other random masks).  ``mha`` must have no
    biases (the jadore layout has none), ``addnorm`` a LayerNorm, and both
    the same dropout rate (the jadore layout has one for both)."""
    _check_post_norm_parts(mha, addnorm)
    d_k = mha.num_hiddens // mha.num_heads
    out = PostNormMultiHeadAttention(mha.num_heads, mha.num_hiddens, d_k,
                                     d_k, mha.attention.dropout,
                                     eps=addnorm.ln.eps)
    out = out.to(mha.W_q.weight.device, mha.W_q.weight.dtype)
    pairs = ((out.w_qs, mha.W_q), (out.w_ks, mha.W_k), (out.w_vs, mha.W_v),
             (out.fc, mha.W_o))
    for mine, theirs in pairs:
        mine.weight.copy_(theirs.weight)
    out.layer_norm.load_state_dict(addnorm.ln.state_dict())
    return out


def _check_jadore_inputs(q, k, v, mask, d_model: int) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t, ndim=3, kind="float", last_dim=d_model)
    check_rows_match(q, k, v, names=("q", "k", "v"))
    if mask is not None:
        check_tensor("mask", mask, ndim=3)
        B, Q, K = q.shape[0], q.shape[1], k.shape[1]
        if (mask.shape[0] != B or mask.shape[1] not in (1, Q)
                or mask.shape[2] != K):
            raise ValueError(f"mask must be (B, Q or 1, K) = ({B}, {Q} or "
                             f"1, {K}), got {tuple(mask.shape)}")


def _check_post_norm_parts(mha, addnorm) -> None:
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha must be a MultiHeadAttention, got "
                        f"{type(mha).__name__} (the order is mha, addnorm)")
    if not hasattr(addnorm, "dropout") or not hasattr(addnorm, "norm"):
        raise TypeError(f"addnorm must be an AddNorm, got "
                        f"{type(addnorm).__name__}")
    if addnorm.dropout.p != mha.attention.dropout:
        raise ValueError(f"post_norm_from_separate needs one dropout rate, "
                         f"got {mha.attention.dropout} (attention) and "
                         f"{addnorm.dropout.p} (AddNorm)")
    if mha.W_q.bias is not None:
        raise ValueError("post_norm_from_separate needs a "
                         "MultiHeadAttention built with bias=False")
    if addnorm.norm != "layer":
        raise ValueError("post_norm_from_separate needs an AddNorm with a "
                         "LayerNorm")
    if not (mha.query_size == mha.key_size == mha.value_size
            == mha.num_hiddens):
        raise ValueError("post_norm_from_separate needs query, key and "
                         "value sizes equal to num_hiddens")
    if tuple(addnorm.ln.normalized_shape) != (mha.num_hiddens,):
        raise ValueError(f"addnorm must normalise num_hiddens = "
                         f"{mha.num_hiddens} features, got "
                         f"{tuple(addnorm.ln.normalized_shape)}")
