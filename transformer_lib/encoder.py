"""The Transformer encoder: embeddings + positional encoding, then N identical blocks of
self-attention and a position-wise FFN, each wrapped in Add & Norm (Vaswani et al. 2017, 3.1)."""

from __future__ import annotations

from torch import nn

from ._checks import check_tensor
from .addnorm import AddNorm
from .ffn import PositionWiseFFN
from .multihead import MultiHeadAttention
from .stack import EmbeddedBlockStack


class TransformerEncoderBlock(nn.Module):
    """Self-attention -> Add & Norm -> FFN -> Add & Norm (post-norm, as in the paper and d2l)."""

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int, dropout: float = 0.0,
                 use_bias: bool = False, norm: str = "layer"):
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout, norm)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout, norm)

    def forward(self, X, valid_lens=None, *, return_weights=False):
        """X ``(B, T, D)``, valid_lens ``(B,)`` -> ``(B, T, D)`` [and weights ``(B, h, T, T)``]."""
        attended = self.attention(X, X, X, valid_lens, return_weights=return_weights)
        attended, weights = attended if return_weights else (attended, None)
        Y = self.addnorm1(X, attended)
        out = self.addnorm2(Y, self.ffn(Y))
        return (out, weights) if return_weights else out


class TransformerEncoder(EmbeddedBlockStack):
    """Token ids ``(B, T)`` -> contextual representations ``(B, T, num_hiddens)``."""

    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, use_bias: bool = False, max_len: int = 1000,
                 norm: str = "layer"):
        super().__init__(
            lambda: TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias, norm),
            vocab_size, num_hiddens, num_blks, dropout, max_len)

    def forward(self, X, valid_lens=None, *, return_weights=False):
        """X: token ids ``(B, T)``; valid_lens ``(B,)``: the source lengths (padding after them).

        Returns ``(B, T, D)``, or ``(output, weights)`` with one ``(B, h, T, T)`` tensor per block.
        """
        H = self.embed(X)  # (B, T, D)
        if valid_lens is not None:
            check_tensor("valid_lens", valid_lens, ndim=1, kind="int")
        weights = []
        for blk in self.blks:
            if return_weights:
                H, w = blk(H, valid_lens, return_weights=True)
                weights.append(w)
            else:
                H = blk(H, valid_lens)
        return (H, weights) if return_weights else H
