"""The Transformer decoder: masked self-attention, cross-attention over
the encoder's output and a position-wise FFN, each wrapped in Add & Norm
(Vaswani et al. 2017, 3.1); and the key/value cache that makes decoding
step by step run each position-wise layer on T positions in all instead
of T(T+1)/2."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .._checks import (check_pre_norm, check_tensor, check_token_ids,
                      check_valid_lens, skip_value_checks)
from .addnorm import AddNorm
from .ffn import PositionWiseFFN
from .multihead import KVCache, MultiHeadAttention
from .stack import EmbeddedBlockStack


class TransformerDecoderBlock(nn.Module):
    """Masked self-attention -> Add & Norm -> cross-attention -> Add & Norm
    -> FFN -> Add & Norm (post-norm, as in the paper and d2l).

    The causal mask applies in training *and* evaluation (d2l drops it in
    evaluation, where it feeds one token at a time; evaluating a whole
    sequence would then see the future).
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int,
                 num_heads: int, dropout: float = 0.0,
                 use_bias: bool = False, norm: str = "layer"):
        super().__init__()
        d, h = num_hiddens, num_heads
        self.attention1 = MultiHeadAttention(d, h, dropout, use_bias)
        self.addnorm1 = AddNorm(d, dropout, norm)
        self.attention2 = MultiHeadAttention(d, h, dropout, use_bias)
        self.addnorm2 = AddNorm(d, dropout, norm)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, d)
        self.addnorm3 = AddNorm(d, dropout, norm)

    def forward(self, X, M, valid_lens=None, *, kv1=None, kv2=None):
        """X ``(B, T, d)``: the decoder's inputs; M ``(B, S, d)``: the
        memory (the encoder's output), real up to valid_lens ``(B,)``.
        The three sub-layers: masked self-attention, attention over the
        memory, FFN.  kv1, kv2: the two attention layers' KVCaches when
        decoding step by step.  Returns ``(B, T, d)``."""
        Y = self.addnorm1(X, self.attention1(X, X, X, causal=True, kv=kv1))
        Z = self.addnorm2(Y, self.attention2(Y, M, M, valid_lens, kv=kv2))
        return self.addnorm3(Z, self.ffn(Z))


class PreNormDecoderBlock(nn.Module):
    """The pre-norm layout of :class:`TransformerDecoderBlock`: each of its
    three sub-layers reads a LayerNorm of the residual stream and adds its
    output to it (``nn.TransformerDecoderLayer(norm_first=True)``).  The
    memory is the encoder's output, already normalised by the encoder's
    final LayerNorm.  Arguments as for :class:`TransformerDecoderBlock`;
    ``norm`` must be ``"layer"``."""

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int,
                 num_heads: int, dropout: float = 0.0,
                 use_bias: bool = False, norm: str = "layer"):
        super().__init__()
        check_pre_norm(norm)
        d, h = num_hiddens, num_heads
        self.norm1 = nn.LayerNorm(d)
        self.attention1 = MultiHeadAttention(d, h, dropout, use_bias)
        self.norm2 = nn.LayerNorm(d)
        self.attention2 = MultiHeadAttention(d, h, dropout, use_bias)
        self.norm3 = nn.LayerNorm(d)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, d)
        self.dropout = nn.Dropout(dropout)

    def forward(self, X, M, valid_lens=None, *, kv1=None, kv2=None):
        """As :meth:`TransformerDecoderBlock.forward`: X ``(B, T, d)``,
        M ``(B, S, d)`` -> ``(B, T, d)``."""
        H = self.norm1(X)                                      # (B, T, d)
        X = X + self.dropout(self.attention1(H, H, H, causal=True, kv=kv1))
        H = self.norm2(X)
        X = X + self.dropout(self.attention2(H, M, M, valid_lens, kv=kv2))
        return X + self.dropout(self.ffn(self.norm3(X)))


@dataclass
class BlockCache:
    """One decoder block's caches: its self-attention's (growing, ``kv1``)
    and its cross-attention's (static, ``kv2``); ``None`` = no cache."""

    kv1: KVCache | None = None
    kv2: KVCache | None = None


@dataclass
class DecoderCache:
    """What decoding step by step keeps between steps: one
    :class:`BlockCache` per block, and how many target positions were
    decoded already (the position of the next step)."""

    blocks: list[BlockCache]
    length: int = 0

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows ``index`` in every cache (beam search)."""
        for cache in self.blocks:
            cache.kv1.reorder(index)
            cache.kv2.reorder(index)


class TransformerDecoder(EmbeddedBlockStack):
    """Target token ids ``(B, T)`` and the encoder's output -> next-token
    logits ``(B, T, vocab_size)``."""

    block_class = TransformerDecoderBlock
    pre_norm_block_class = PreNormDecoderBlock

    def __init__(self, vocab_size: int, num_hiddens: int, *args, **kwargs):
        """Arguments as for :class:`TransformerEncoder`; the decoder adds
        the output layer, from d features to one logit per token."""
        super().__init__(vocab_size, num_hiddens, *args, **kwargs)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_cache(self) -> DecoderCache:
        """An empty cache for decoding step by step (see :meth:`decode`)."""
        return DecoderCache([BlockCache(KVCache(), KVCache(static=True))
                             for _ in self.blks])

    def forward(self, X, memory, valid_lens=None, *, cache=None):
        """X ``(B, T)`` target ids; memory ``(B, S, d)``: the encoder's
        output, real up to valid_lens ``(B,)``.  Checks the values once,
        here, and runs :meth:`decode`."""
        check_token_ids("X", X, self.vocab_size)
        check_tensor("memory", memory, ndim=3, kind="float",
                     last_dim=self.num_hiddens)
        if memory.shape[0] != X.shape[0]:
            raise ValueError(f"X and memory must share the batch size, "
                             f"got {X.shape[0]} and {memory.shape[0]}")
        check_valid_lens("valid_lens", valid_lens, memory)
        return self.decode(X, memory, valid_lens, cache=cache)

    @skip_value_checks
    def decode(self, X, memory, valid_lens=None, *, cache=None):
        """:meth:`forward` without the value checks.

        With ``cache`` (from :meth:`init_cache`), X holds only the *new*
        steps, which follow the ``cache.length`` steps decoded before; the
        logits equal those of the whole sequence.  Returns ``(B, T, V)``.
        """
        no_cache = [BlockCache()] * len(self.blks)
        offset, caches = (0, no_cache) if cache is None else (
            cache.length, cache.blocks)
        H = self.embed(X, offset)                              # (B, T, d)
        for blk, c in zip(self.blks, caches):
            H = blk(H, memory, valid_lens, kv1=c.kv1, kv2=c.kv2)
        if cache is not None:
            cache.length += X.shape[1]
        return self.dense(self.final_norm(H))                  # (B, T, V)
