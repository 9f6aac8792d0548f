"""The Transformer encoder: embeddings and positional encoding, then N
identical blocks of self-attention and a position-wise FFN, each wrapped
in Add & Norm (Vaswani et al. 2017, 3.1), or in pre-norm residual
connections (Xiong et al. 2020)."""

from __future__ import annotations

from torch import nn

from .._checks import (check_pre_norm, check_token_ids, check_valid_lens,
                      skip_value_checks)
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


class PreNormEncoderBlock(nn.Module):
    """The pre-norm layout: each sub-layer reads a LayerNorm of the
    residual stream and adds its (dropped-out) output to it, so the
    stream itself is never normalised (``X + Dropout(Sublayer(LN(X)))``,
    Xiong et al. 2020; ``nn.TransformerEncoderLayer(norm_first=True)``).
    Arguments as for :class:`TransformerEncoderBlock`; ``norm`` must be
    ``"layer"``."""

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int,
                 num_heads: int, dropout: float = 0.0,
                 use_bias: bool = False, norm: str = "layer"):
        super().__init__()
        check_pre_norm(norm)
        d = num_hiddens
        self.norm1 = nn.LayerNorm(d)
        self.attention = MultiHeadAttention(d, num_heads, dropout, use_bias)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, d)
        self.dropout = nn.Dropout(dropout)

    def forward(self, X, valid_lens=None):
        """X ``(B, S, d)``; valid_lens ``(B,)``.  Returns ``(B, S, d)``."""
        H = self.norm1(X)                                  # (B, S, d)
        X = X + self.dropout(self.attention(H, H, H, valid_lens))
        return X + self.dropout(self.ffn(self.norm2(X)))


class TransformerEncoder(EmbeddedBlockStack):
    """Token ids ``(B, S)`` -> contextual representations ``(B, S, d)``.
    Arguments: ``(vocab_size, num_hiddens, ffn_num_hiddens, num_heads,
    num_blks, dropout=0, use_bias=False, max_len=1000, norm="layer",
    norm_first=False)``; ``norm_first=True``: pre-norm blocks and a final
    LayerNorm."""

    block_class = TransformerEncoderBlock
    pre_norm_block_class = PreNormEncoderBlock

    def forward(self, X, valid_lens=None):
        """X ``(B, S)`` token ids; valid_lens ``(B,)``: the real length of
        each row (padding after it).  Checks the values once, here, and
        runs :meth:`encode`."""
        check_token_ids("X", X, self.vocab_size)
        check_valid_lens("valid_lens", valid_lens, X)
        return self.encode(X, valid_lens)

    @skip_value_checks
    def encode(self, X, valid_lens=None):
        """:meth:`forward` without the value checks: ``(B, S, d)``."""
        H = self.embed(X)                                  # (B, S, d)
        for blk in self.blks:
            H = blk(H, valid_lens)
        return self.final_norm(H)
