"""The encoder-decoder Transformer for sequence-to-sequence tasks such as translation."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from ._checks import check_positive_int, check_probability
from .decoder import TransformerDecoder
from .encoder import TransformerEncoder


@dataclass
class TransformerConfig:
    """All the sizes of a :class:`Transformer` (defaults: a small model that trains on a CPU)."""

    src_vocab_size: int
    tgt_vocab_size: int
    num_hiddens: int = 256
    ffn_num_hiddens: int = 1024
    num_heads: int = 4
    num_enc_blks: int = 2
    num_dec_blks: int = 2
    dropout: float = 0.1
    use_bias: bool = False
    max_len: int = 1000
    norm: str = "layer"  # "batch": BatchNorm in every Add & Norm (for comparison only)

    def __post_init__(self):
        for name in ("src_vocab_size", "tgt_vocab_size", "num_hiddens", "ffn_num_hiddens",
                     "num_heads", "num_enc_blks", "num_dec_blks", "max_len"):
            check_positive_int(name, getattr(self, name))
        if self.num_hiddens % self.num_heads:
            raise ValueError(
                f"num_heads ({self.num_heads}) must divide num_hiddens ({self.num_hiddens})"
            )
        if self.num_hiddens % 2:
            raise ValueError(f"num_hiddens must be even for the positional encoding, got {self.num_hiddens}")
        check_probability("dropout", self.dropout)
        if self.norm not in ("layer", "batch"):
            raise ValueError(f"norm must be 'layer' or 'batch', got {self.norm!r}")

    def to_dict(self) -> dict:
        return asdict(self)


class EncoderDecoder(nn.Module):
    """Any encoder plus a decoder that attends to the encoder's outputs (d2l's name)."""

    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, src, tgt, src_valid_lens=None, *, return_weights=False):
        """src ``(B, S)`` ids, tgt ``(B, T)`` ids (teacher forcing: the decoder's inputs),
        src_valid_lens ``(B,)``.  Returns logits ``(B, T, tgt_vocab)``, or ``(logits, weights)``
        where weights is a dict with keys ``encoder_self``, ``decoder_self`` and ``cross``, each
        a list (one per block) of ``(B, heads, queries, keys)`` tensors."""
        if not return_weights:
            return self.decoder(tgt, self.encoder(src, src_valid_lens), src_valid_lens)
        enc_outputs, enc_w = self.encoder(src, src_valid_lens, return_weights=True)
        logits, dec_w = self.decoder(tgt, enc_outputs, src_valid_lens, return_weights=True)
        return logits, {"encoder_self": enc_w, "decoder_self": dec_w["self"], "cross": dec_w["cross"]}

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class Transformer(EncoderDecoder):
    """The encoder-decoder Transformer of Vaswani et al. (2017), built from a config."""

    def __init__(self, config: TransformerConfig):
        c = config
        super().__init__(
            TransformerEncoder(c.src_vocab_size, c.num_hiddens, c.ffn_num_hiddens, c.num_heads,
                               c.num_enc_blks, c.dropout, c.use_bias, c.max_len, c.norm),
            TransformerDecoder(c.tgt_vocab_size, c.num_hiddens, c.ffn_num_hiddens, c.num_heads,
                               c.num_dec_blks, c.dropout, c.use_bias, c.max_len, c.norm),
        )
        self.config = config
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        """Xavier-uniform projections (as in torch.nn.Transformer) and N(0, 1/d) embeddings, so
        that the embeddings times sqrt(d) have unit scale, like the positional encoding.
        (PyTorch's default N(0, 1) embeddings times sqrt(d) = 16 would drown it.)"""
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=self.config.num_hiddens ** -0.5)
