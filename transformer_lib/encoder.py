"""The Transformer encoder: embeddings and positional encoding, then N
identical blocks of self-attention and a position-wise FFN, each wrapped
in Add & Norm (Vaswani et al. 2017, 3.1)."""

from __future__ import annotations

from torch import nn

from ._checks import check_token_ids, check_valid_lens
from .addnorm import AddNorm
from .ffn import PositionWiseFFN
from .multihead import MultiHeadAttention
from .stack import EmbeddedBlockStack


class TransformerEncoderBlock(nn.Module):
    """Self-attention -> Add & Norm -> FFN -> Add & Norm (post-norm, as in
    the paper and d2l)."""

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int,
                 num_heads: int, dropout: float = 0.0,
                 use_bias: bool = False, norm: str = "layer"):
        super().__init__()
        d = num_hiddens
        self.attention = MultiHeadAttention(d, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(d, dropout, norm)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, d)
        self.addnorm2 = AddNorm(d, dropout, norm)

    def forward(self, X, valid_lens=None):
        """X ``(B, S, d)``; valid_lens ``(B,)``: the real length of each
        row.  Returns ``(B, S, d)``."""
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))


class TransformerEncoder(EmbeddedBlockStack):
    """Token ids ``(B, S)`` -> contextual representations ``(B, S, d)``.
    Arguments: ``(vocab_size, num_hiddens, ffn_num_hiddens, num_heads,
    num_blks, dropout=0, use_bias=False, max_len=1000, norm="layer")``."""

    block_class = TransformerEncoderBlock

    def forward(self, X, valid_lens=None):
        """X ``(B, S)`` token ids; valid_lens ``(B,)``: the real length of
        each row (padding after it).  Checks the values once, here, and
        runs :meth:`encode`."""
        check_token_ids("X", X, self.vocab_size)
        check_valid_lens("valid_lens", valid_lens, X)
        return self.encode(X, valid_lens)

    def encode(self, X, valid_lens=None):
        """:meth:`forward` without the value checks: ``(B, S, d)``."""
        H = self.embed(X)                                  # (B, S, d)
        for blk in self.blks:
            H = blk(H, valid_lens)
        return H
