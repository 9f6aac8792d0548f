"""The model the Transformer replaced: a GRU encoder-decoder with additive (Bahdanau) attention
(Bahdanau et al. 2014; d2l's ``Seq2SeqAttentionDecoder``), with the same interface as
:class:`~transformer_lib.model.Transformer`, so the same training, decoding and BLEU code
measures both."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ._checks import check_positive_int, check_probability, check_tensor, check_token_ids
from .attention import AdditiveAttention
from .model import EncoderDecoder


@dataclass
class GRUConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    embed_size: int = 256
    num_hiddens: int = 256
    num_layers: int = 2
    dropout: float = 0.1

    def __post_init__(self):
        for name in ("src_vocab_size", "tgt_vocab_size", "embed_size", "num_hiddens", "num_layers"):
            check_positive_int(name, getattr(self, name))
        check_probability("dropout", self.dropout)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class GRUMemory:
    """What the encoder hands the decoder: every position's output and the final state."""

    outputs: torch.Tensor  # (B, S, H)
    state: torch.Tensor    # (num_layers, B, H)

    def repeat_interleave(self, repeats: int, dim: int = 0) -> "GRUMemory":
        """One copy per beam, as ``Tensor.repeat_interleave`` does for a Transformer's memory."""
        return GRUMemory(self.outputs.repeat_interleave(repeats, dim=0),
                         self.state.repeat_interleave(repeats, dim=1))


class GRUEncoder(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0.0):
        super().__init__()
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout, batch_first=True)

    def forward(self, X, valid_lens=None) -> GRUMemory:
        """X ``(B, S)`` ids, valid_lens ``(B,)``.  Padding is packed away, so the final state
        is that of each sentence's last real token."""
        check_token_ids("X", X, self.vocab_size)
        emb = self.embedding(X)  # (B, S, E)
        if valid_lens is None:
            outputs, state = self.rnn(emb)
        else:
            check_tensor("valid_lens", valid_lens, ndim=1, kind="int")
            packed = pack_padded_sequence(emb, valid_lens.clamp(min=1).cpu(), batch_first=True,
                                          enforce_sorted=False)
            outputs, state = self.rnn(packed)
            outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=X.shape[1])
        return GRUMemory(outputs, state)


class GRUCache:
    """The decoder's recurrent state between incremental calls."""

    def __init__(self):
        self.state: torch.Tensor | None = None  # (num_layers, B, H)
        self.length = 0

    def reorder(self, index: torch.Tensor) -> None:
        if self.state is not None:
            self.state = self.state[:, index]


class AttentionGRUDecoder(nn.Module):
    """At each step: attend from the top layer's previous state to the encoder outputs, feed
    ``[context; embedding]`` to the GRU, predict the next token."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0.0):
        super().__init__()
        self.vocab_size = vocab_size
        self.attention = AdditiveAttention(num_hiddens, dropout, query_size=num_hiddens,
                                           key_size=num_hiddens)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout,
                          batch_first=True)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_cache(self) -> GRUCache:
        return GRUCache()

    def forward(self, X, memory: GRUMemory, enc_valid_lens=None, *, cache: GRUCache | None = None,
                return_weights=False):
        """X ``(B, T)`` target ids -> logits ``(B, T, vocab_size)`` [and cross-attention
        weights ``{"cross": [(B, 1, T, S)]}``, one head]."""
        check_token_ids("X", X, self.vocab_size)
        state = cache.state if cache is not None and cache.state is not None else memory.state
        outputs, weights = [], []
        for x in self.embedding(X).unbind(dim=1):  # x: (B, E), one step at a time
            query = state[-1].unsqueeze(1)  # (B, 1, H)
            context, w = self.attention(query, memory.outputs, memory.outputs, enc_valid_lens,
                                        return_weights=True)  # (B, 1, H), (B, 1, S)
            out, state = self.rnn(torch.cat([context, x.unsqueeze(1)], dim=-1), state)
            outputs.append(out)
            weights.append(w)
        if cache is not None:
            cache.state, cache.length = state, cache.length + X.shape[1]
        logits = self.dense(torch.cat(outputs, dim=1))
        if return_weights:
            return logits, {"self": [], "cross": [torch.cat(weights, dim=1).unsqueeze(1)]}
        return logits


class GRUSeq2Seq(EncoderDecoder):
    """GRU encoder + attention GRU decoder, built from a :class:`GRUConfig`."""

    def __init__(self, config: GRUConfig):
        c = config
        super().__init__(
            GRUEncoder(c.src_vocab_size, c.embed_size, c.num_hiddens, c.num_layers, c.dropout),
            AttentionGRUDecoder(c.tgt_vocab_size, c.embed_size, c.num_hiddens, c.num_layers, c.dropout),
        )
        self.config = config

    def forward(self, src, tgt, src_valid_lens=None, *, return_weights=False):
        memory = self.encoder(src, src_valid_lens)
        if not return_weights:
            return self.decoder(tgt, memory, src_valid_lens)
        logits, w = self.decoder(tgt, memory, src_valid_lens, return_weights=True)
        return logits, {"encoder_self": [], "decoder_self": [], "cross": w["cross"]}
