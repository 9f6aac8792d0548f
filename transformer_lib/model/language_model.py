"""A language model: the decoder alone, trained to predict the next token
of one stream of text, in the 2017 block's layout or a GPT block's.

The 2017 block (Vaswani et al.): post-norm Add & Norm with LayerNorm, a
ReLU FFN, sinusoidal positions added to the embeddings, an output layer
of its own.  A GPT block changes five things, each a field of
:class:`LanguageModelConfig` (:data:`GPT_CHANGES`, in the order the book
adds them):

- pre-norm residual connections (GPT-2; Xiong et al. 2020);
- RMSNorm instead of LayerNorm (Zhang and Sennrich 2019; LLaMA);
- GELU instead of ReLU in the FFN (GPT, BERT);
- rotary positions in the attention instead of added ones (Su et al.
  2021; GPT-NeoX, LLaMA);
- the output layer tied to the embedding (the paper's 3.4; GPT-2).

Every variant scales its embeddings by sqrt(d) and starts from the
library's initialisation, so that the five fields are all that differ.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import torch
from torch import nn

from .._checks import (check_one_stack_config, check_positive_int,
                      check_tensor, check_token_ids)
from .ffn import ACTIVATIONS, PositionWiseFFN
from .multihead import KVCache, MultiHeadAttention, RotaryMultiHeadAttention
from .positional import PositionalEncoding
from .transformer import (Transformer, count_parameters, fields_text)

NORMS = ("layer", "rms")
POSITIONS = ("sinusoidal", "rotary")

# 2017 block -> a GPT block, one field at a time
GPT_CHANGES = {
    "pre-norm": {"norm_first": True},
    "RMSNorm": {"norm": "rms"},
    "GELU": {"activation": "gelu"},
    "rotary positions": {"positions": "rotary"},
    "tied embeddings": {"tie_embeddings": True},
}


class RMSNorm(nn.Module):
    """``X / RMS(X) * g`` over the last axis, ``RMS(x) = sqrt(mean(x^2) +
    eps)``: LayerNorm without subtracting the mean and without a bias
    (Zhang and Sennrich 2019).  X ``(..., d)`` -> the same shape."""

    def __init__(self, num_hiddens: int, eps: float = 1e-6):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_hiddens))   # g

    def forward(self, X):
        check_tensor("X", X, kind="float", last_dim=len(self.weight))
        x = X.float()                  # the mean of squares in float32
        mean_square = x.pow(2).mean(-1, keepdim=True)
        return (x * torch.rsqrt(mean_square + self.eps)
                ).to(X.dtype) * self.weight


def make_norm(norm: str, num_hiddens: int) -> nn.Module:
    """``"layer"``: nn.LayerNorm; ``"rms"``: :class:`RMSNorm`."""
    return nn.LayerNorm(num_hiddens) if norm == "layer" else RMSNorm(
        num_hiddens)


@dataclass
class LanguageModelConfig:
    """All the sizes and choices of a :class:`LanguageModel`; the defaults
    are the 2017 block's, and :meth:`gpt` turns on the five changes."""

    vocab_size: int
    num_hiddens: int = 128
    ffn_num_hiddens: int = 512
    num_heads: int = 4
    num_blks: int = 4
    dropout: float = 0.0
    use_bias: bool = False
    max_len: int = 256
    norm_first: bool = False       # True: pre-norm, and a final norm
    norm: str = "layer"            # or "rms"
    activation: str = "relu"       # or "gelu"
    positions: str = "sinusoidal"  # or "rotary"
    tie_embeddings: bool = False   # True: the output layer is the embedding

    __str__ = fields_text  # print() wraps the fields to the page

    def __post_init__(self):
        check_one_stack_config(self)
        for name, allowed in (("norm", NORMS), ("activation",
                              tuple(ACTIVATIONS)), ("positions", POSITIONS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got "
                                 f"{getattr(self, name)!r}")
        if self.positions == "rotary" and (self.num_hiddens
                                           // self.num_heads) % 2:
            raise ValueError(f"rotary positions turn pairs of features: "
                             f"num_hiddens / num_heads must be even, got "
                             f"{self.num_hiddens // self.num_heads}")

    def gpt(self) -> LanguageModelConfig:
        """The same sizes with all of :data:`GPT_CHANGES`."""
        changes = {k: v for change in GPT_CHANGES.values()
                   for k, v in change.items()}
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)


class LanguageModelBlock(nn.Module):
    """The 2017 layout, with a causal mask: masked self-attention -> Add &
    Norm -> FFN -> Add & Norm.  Its parts come from the config: the norm
    (LayerNorm or RMSNorm), the attention (rotary or not) and the FFN's
    activation."""

    def __init__(self, config: LanguageModelConfig):
        super().__init__()
        c, d = config, config.num_hiddens
        self.norm1 = make_norm(c.norm, d)
        self.attention = (
            RotaryMultiHeadAttention(d, c.num_heads, c.dropout, c.use_bias,
                                     c.max_len)
            if c.positions == "rotary" else
            MultiHeadAttention(d, c.num_heads, c.dropout, c.use_bias))
        self.norm2 = make_norm(c.norm, d)
        self.ffn = PositionWiseFFN(c.ffn_num_hiddens, d,
                                   activation=c.activation)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, X, kv: KVCache | None = None):
        """X ``(B, T, d)`` -> ``(B, T, d)``; kv: this block's cache of the
        earlier positions' keys and values."""
        A = self.attention(X, X, X, causal=True, kv=kv)
        X = self.norm1(X + self.dropout(A))
        return self.norm2(X + self.dropout(self.ffn(X)))


class PreNormLanguageModelBlock(LanguageModelBlock):
    """The pre-norm layout (GPT-2's): each sub-layer reads a norm of the
    residual stream and adds its output to it."""

    def forward(self, X, kv: KVCache | None = None):
        """X ``(B, T, d)`` -> ``(B, T, d)``."""
        H = self.norm1(X)                                   # (B, T, d)
        X = X + self.dropout(self.attention(H, H, H, causal=True, kv=kv))
        return X + self.dropout(self.ffn(self.norm2(X)))


class LanguageModel(nn.Module):
    """Embeddings, N causal blocks and an output layer: at every position
    of ``X``, the logits of the token after it.

    With a list of caches (:meth:`new_caches`), ``forward`` reads only the
    new positions and appends their keys and values: one growing stream,
    sampled a token at a time.  :meth:`logits` gives it the
    encoder-decoder's interface with an empty source, so that the
    library's loss, :func:`~transformer_lib.translation.fit` and
    ``evaluate_loss`` train it unchanged.
    """

    def __init__(self, config: LanguageModelConfig):
        super().__init__()
        c = self.config = config
        self.vocab_size = c.vocab_size
        self.embedding = nn.Embedding(c.vocab_size, c.num_hiddens)
        self.pos_encoding = (PositionalEncoding(c.num_hiddens, 0.0,
                                                c.max_len)
                             if c.positions == "sinusoidal" else None)
        self.dropout = nn.Dropout(c.dropout)
        block = (PreNormLanguageModelBlock if c.norm_first
                 else LanguageModelBlock)
        self.blks = nn.ModuleList(block(c) for _ in range(c.num_blks))
        # pre-norm leaves the stream unnormalised: one norm at the end
        self.final_norm = (make_norm(c.norm, c.num_hiddens)
                           if c.norm_first else nn.Identity())
        self.dense = nn.Linear(c.num_hiddens, c.vocab_size)
        # the encoder-decoder's initialisation (it reads config.num_hiddens)
        self.apply(lambda module: Transformer._init_weights(self, module))
        if c.tie_embeddings:  # logits: X E^T + b
            self.dense.weight = self.embedding.weight

    def forward(self, X, caches: list[KVCache] | None = None):
        """X ``(B, T)`` token ids at positions ``t .. t+T-1``, where t is
        the caches' length (0 without) -> ``(B, T, V)``: at each
        position, the logits of the next token."""
        check_token_ids("X", X, self.vocab_size)
        t = 0 if caches is None else caches[0].length
        if t + X.shape[1] > self.config.max_len:
            raise ValueError(f"positions {t}..{t + X.shape[1] - 1} exceed "
                             f"max_len={self.config.max_len}")
        H = self.embedding(X) * math.sqrt(self.config.num_hiddens)
        if self.pos_encoding is not None:  # sinusoidal: added here
            H = self.pos_encoding(H, offset=t)             # (B, T, d)
        H = self.dropout(H)
        for i, blk in enumerate(self.blks):
            H = blk(H, None if caches is None else caches[i])
        return self.dense(self.final_norm(H))              # (B, T, V)

    def new_caches(self) -> list[KVCache]:
        """One empty growing key/value cache per block."""
        return [KVCache() for _ in self.blks]

    def logits(self, src, tgt, src_valid_lens=None):
        """The encoder-decoder's :meth:`~EncoderDecoder.logits` with no
        source: src ``(B, 0)``, tgt ``(B, T)`` -> ``(B, T, V)``."""
        return self(tgt)

    def check_inputs(self, src, tgt=None, src_valid_lens=None) -> None:
        """What ``fit`` checks once per batch: an empty source, and ids
        of ``tgt`` in the vocabulary."""
        check_tensor("src", src, ndim=2)
        if src.shape[1]:
            raise ValueError(f"a language model reads no source: src must "
                             f"have 0 columns, got shape "
                             f"{tuple(src.shape)}")
        if tgt is not None:
            check_token_ids("tgt", tgt, self.vocab_size)

    def attention_layers(self) -> dict[str, list[nn.Module]]:
        """Its one kind of attention, ``self``: one layer per block."""
        return {"self": [blk.attention for blk in self.blks]}

    def num_parameters(self) -> int:
        return count_parameters(self)
