"""The Transformer decoder: causal self-attention, cross-attention over the encoder outputs and
a position-wise FFN, each wrapped in Add & Norm (Vaswani et al. 2017, 3.1), plus the
key/value cache that makes step-by-step generation cost O(T) instead of O(T^2) layer calls."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from ._checks import check_tensor
from .addnorm import AddNorm
from .ffn import PositionWiseFFN
from .multihead import KVCache, MultiHeadAttention
from .stack import EmbeddedBlockStack


@dataclass
class DecoderCache:
    """What incremental decoding keeps between steps: per block, a growing self-attention cache
    and a fixed cross-attention cache; and how many target positions were already decoded."""

    blocks: list = field(default_factory=list)  # [(KVCache self, KVCache cross), ...]
    length: int = 0

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows ``index`` in every cache (beam search)."""
        for self_cache, cross_cache in self.blocks:
            self_cache.reorder(index)
            cross_cache.reorder(index)


class TransformerDecoderBlock(nn.Module):
    """Causal self-attention -> Add & Norm -> cross-attention -> Add & Norm -> FFN -> Add & Norm.

    The causal mask is applied in training *and* evaluation (d2l drops it in evaluation, where
    it only feeds one token at a time; a full-sequence evaluation would then see the future).
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int, dropout: float = 0.0,
                 use_bias: bool = False, norm: str = "layer"):
        super().__init__()
        self.attention1 = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout, norm)
        self.attention2 = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm2 = AddNorm(num_hiddens, dropout, norm)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout, norm)

    def forward(self, X, enc_outputs, enc_valid_lens=None, *, cache=None, return_weights=False):
        """X ``(B, T, D)``, enc_outputs ``(B, S, D)``, enc_valid_lens ``(B,)``.

        cache: ``(KVCache, KVCache)`` for self- and cross-attention, or None.
        Returns ``(B, T, D)``, or ``(output, self_weights (B, h, T, t), cross_weights (B, h, T, S))``.
        """
        self_cache, cross_cache = cache if cache is not None else (None, None)
        r = self.attention1(X, X, X, causal=True, cache=self_cache, return_weights=return_weights)
        attended, self_w = r if return_weights else (r, None)
        Y = self.addnorm1(X, attended)
        r = self.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens, cache=cross_cache,
                            return_weights=return_weights)
        attended, cross_w = r if return_weights else (r, None)
        Z = self.addnorm2(Y, attended)
        out = self.addnorm3(Z, self.ffn(Z))
        return (out, self_w, cross_w) if return_weights else out


class TransformerDecoder(EmbeddedBlockStack):
    """Target token ids ``(B, T)`` + encoder outputs -> next-token logits ``(B, T, vocab_size)``."""

    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, use_bias: bool = False, max_len: int = 1000,
                 norm: str = "layer"):
        super().__init__(
            lambda: TransformerDecoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias, norm),
            vocab_size, num_hiddens, num_blks, dropout, max_len)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_cache(self) -> DecoderCache:
        """An empty cache for incremental decoding (see :meth:`forward`)."""
        return DecoderCache([(KVCache(), KVCache(static=True)) for _ in self.blks])

    def forward(self, X, enc_outputs, enc_valid_lens=None, *, cache: DecoderCache | None = None,
                return_weights=False):
        """X: target ids ``(B, T)``; enc_outputs ``(B, S, D)``; enc_valid_lens ``(B,)``.

        With ``cache`` (from :meth:`init_cache`), X holds only the *new* steps, placed after the
        ``cache.length`` steps already decoded; the result equals the full-sequence result.
        Returns logits ``(B, T, vocab_size)``, or ``(logits, {"self": [...], "cross": [...]})``
        with per-block weights ``(B, h, T, t)`` and ``(B, h, T, S)``.
        """
        offset = cache.length if cache is not None else 0
        H = self.embed(X, offset)  # (B, T, D)
        check_tensor("enc_outputs", enc_outputs, ndim=3, kind="float", last_dim=self.num_hiddens)
        if enc_outputs.shape[0] != X.shape[0]:
            raise ValueError(
                f"X and enc_outputs must share the batch size, got {X.shape[0]} and {enc_outputs.shape[0]}"
            )
        if enc_valid_lens is not None:
            check_tensor("enc_valid_lens", enc_valid_lens, ndim=1, kind="int")
        caches = cache.blocks if cache is not None else [None] * len(self.blks)
        weights = {"self": [], "cross": []}
        for blk, blk_cache in zip(self.blks, caches):
            if return_weights:
                H, self_w, cross_w = blk(H, enc_outputs, enc_valid_lens, cache=blk_cache,
                                         return_weights=True)
                weights["self"].append(self_w)
                weights["cross"].append(cross_w)
            else:
                H = blk(H, enc_outputs, enc_valid_lens, cache=blk_cache)
        if cache is not None:
            cache.length += X.shape[1]
        logits = self.dense(H)  # (B, T, vocab_size)
        return (logits, weights) if return_weights else logits
