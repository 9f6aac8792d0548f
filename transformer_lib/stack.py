"""What the encoder and the decoder share: token embeddings scaled by
sqrt(d), the positional encoding, and a stack of N identical blocks."""

from __future__ import annotations

import math

from torch import nn

from ._checks import check_positive_int
from .positional import PositionalEncoding


class EmbeddedBlockStack(nn.Module):
    """Holds ``embedding``, ``pos_encoding`` and ``blks`` (d2l's attribute
    names, so that d2l's state dicts load unchanged); ``make_block()``
    builds each of the ``num_blks`` blocks."""

    def __init__(self, make_block, vocab_size: int, num_hiddens: int,
                 num_blks: int, dropout: float, max_len: int):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("num_blks", num_blks)
        self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(f"block{i}", make_block())

    def embed(self, X, offset: int = 0):
        """Token ids ``(B, T)`` at positions ``offset, ..., offset+T-1`` ->
        ``(B, T, num_hiddens)``."""
        # The embeddings are scaled by sqrt(d), as in the paper (3.4).
        scaled = self.embedding(X) * math.sqrt(self.num_hiddens)
        return self.pos_encoding(scaled, offset=offset)
