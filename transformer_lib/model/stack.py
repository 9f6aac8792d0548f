"""What the encoder and the decoder share: token embeddings scaled by
sqrt(d), the positional encoding, and a stack of N identical blocks."""

from __future__ import annotations

import math

from torch import nn

from .._checks import check_positive_int, check_tensor
from .positional import PositionalEncoding


class EmbeddedBlockStack(nn.Module):
    """Holds ``embedding``, ``pos_encoding`` and ``blks`` (d2l's attribute
    names, so that d2l's state dicts load unchanged): ``num_blks`` blocks
    of the subclass's ``block_class``, built with d2l's arguments, and
    ``final_norm``.

    ``norm_first=True`` builds ``pre_norm_block_class`` blocks instead,
    whose residual stream is never normalised, so ``final_norm`` is then
    one LayerNorm after the last block; in post-norm every block ends
    normalised and it is the identity."""

    block_class: type[nn.Module]
    pre_norm_block_class: type[nn.Module]

    def __init__(self, vocab_size: int, num_hiddens: int,
                 ffn_num_hiddens: int, num_heads: int, num_blks: int,
                 dropout: float = 0.0, use_bias: bool = False,
                 max_len: int = 1000, norm: str = "layer",
                 norm_first: bool = False):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("num_blks", num_blks)
        self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        block_class = (self.pre_norm_block_class if norm_first
                       else self.block_class)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            block = block_class(num_hiddens, ffn_num_hiddens, num_heads,
                                dropout, use_bias, norm)
            self.blks.add_module(f"block{i}", block)
        self.final_norm = (nn.LayerNorm(num_hiddens) if norm_first
                           else nn.Identity())

    def embed(self, X, offset: int = 0):
        """Token ids ``(B, T)`` at positions ``offset, ..., offset+T-1`` ->
        ``(B, T, num_hiddens)``."""
        check_tensor("X", X, ndim=2, kind="int")
        # The embeddings are scaled by sqrt(d), as in the paper (3.4).
        scaled = self.embedding(X) * math.sqrt(self.num_hiddens)
        return self.pos_encoding(scaled, offset=offset)
