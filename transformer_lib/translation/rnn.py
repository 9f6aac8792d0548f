"""The model the Transformer replaced: a GRU encoder-decoder with additive
(Bahdanau) attention (Bahdanau et al. 2014; d2l's
``Seq2SeqAttentionDecoder``), with the interface of
:class:`~transformer_lib.model.Transformer`, so that the same training,
decoding and BLEU code measures both."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .._checks import (check_positive_int, check_probability, check_tensor,
                      check_token_ids, check_valid_lens,
                      skip_value_checks)
from ..model.attention import AdditiveAttention
from ..model import EncoderDecoder


@dataclass
class GRUConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    embed_size: int = 256
    num_hiddens: int = 256
    num_layers: int = 2
    dropout: float = 0.1

    def __post_init__(self):
        for name in ("src_vocab_size", "tgt_vocab_size", "embed_size",
                     "num_hiddens", "num_layers"):
            check_positive_int(name, getattr(self, name))
        check_probability("dropout", self.dropout)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class GRUMemory:
    """What the encoder hands the decoder: every position's output and
    the final state."""

    outputs: torch.Tensor  # (B, S, H)
    state: torch.Tensor    # (num_layers, B, H)

    def repeat_interleave(self, repeats: int, dim: int = 0) -> GRUMemory:
        """One copy per beam, as ``Tensor.repeat_interleave`` does for a
        Transformer's memory."""
        return GRUMemory(self.outputs.repeat_interleave(repeats, dim=0),
                         self.state.repeat_interleave(repeats, dim=1))


class GRUEncoder(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                 dropout=0.0):
        super().__init__()
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers,
                          dropout=dropout, batch_first=True)

    def forward(self, X, valid_lens=None) -> GRUMemory:
        """X ``(B, S)`` ids, valid_lens ``(B,)``; the values are checked
        once, here, before :meth:`encode`."""
        check_token_ids("X", X, self.vocab_size)
        check_valid_lens("valid_lens", valid_lens, X)
        return self.encode(X, valid_lens)

    def encode(self, X, valid_lens=None) -> GRUMemory:
        """Padding is packed away, so the final state is that of each
        sentence's last real token."""
        emb = self.embedding(X)  # (B, S, E)
        if valid_lens is None:
            outputs, state = self.rnn(emb)
        else:
            # packing wants the lengths on the CPU: one host read per call
            lengths = valid_lens.clamp(min=1).cpu()
            packed = pack_padded_sequence(emb, lengths, batch_first=True,
                                          enforce_sorted=False)
            outputs, state = self.rnn(packed)
            outputs, _ = pad_packed_sequence(outputs, batch_first=True,
                                             total_length=X.shape[1])
        return GRUMemory(outputs, state)


@dataclass
class GRUCache:
    """The decoder's recurrent state between calls of a step-by-step
    decoding."""

    state: torch.Tensor | None = None  # (num_layers, B, H)

    def reorder(self, index: torch.Tensor) -> None:
        if self.state is not None:
            self.state = self.state[:, index]


class AttentionGRUDecoder(nn.Module):
    """At each step: attend from the top layer's previous state to the
    encoder's outputs, feed ``[context; embedding]`` to the GRU, predict
    the next token."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                 dropout=0.0):
        super().__init__()
        self.vocab_size = vocab_size
        self.attention = AdditiveAttention(num_hiddens, dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers,
                          dropout=dropout, batch_first=True)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_cache(self) -> GRUCache:
        return GRUCache()

    def forward(self, X, memory: GRUMemory, valid_lens=None, *, cache=None):
        """X ``(B, T)`` target ids; memory from the encoder.  Checks the
        values once, here, and runs :meth:`decode`."""
        check_token_ids("X", X, self.vocab_size)
        check_tensor("memory.outputs", memory.outputs, ndim=3, kind="float")
        check_valid_lens("valid_lens", valid_lens, memory.outputs)
        return self.decode(X, memory, valid_lens, cache=cache)

    @skip_value_checks
    def decode(self, X, memory: GRUMemory, valid_lens=None, *, cache=None):
        """Logits ``(B, T, vocab_size)``; with ``cache``, X holds only the
        new steps and the state continues from the earlier calls."""
        state = memory.state
        if cache is not None and cache.state is not None:
            state = cache.state
        keys = self.attention.W_k(memory.outputs)  # once for all steps
        outputs = []
        for x in self.embedding(X).unbind(dim=1):  # x: (B, E), one step
            query = self.attention.W_q(state[-1]).unsqueeze(1)  # (B, 1, H)
            context = self.attention.attend(query, keys, memory.outputs,
                                            valid_lens)        # (B, 1, H)
            step_input = torch.cat([context, x.unsqueeze(1)], dim=-1)
            out, state = self.rnn(step_input, state)
            outputs.append(out)
        if cache is not None:
            cache.state = state
        return self.dense(torch.cat(outputs, dim=1))


class GRUSeq2Seq(EncoderDecoder):
    """GRU encoder + attention GRU decoder, built from a
    :class:`GRUConfig`."""

    def __init__(self, config: GRUConfig):
        c = config
        super().__init__(
            GRUEncoder(c.src_vocab_size, c.embed_size, c.num_hiddens,
                       c.num_layers, c.dropout),
            AttentionGRUDecoder(c.tgt_vocab_size, c.embed_size,
                                c.num_hiddens, c.num_layers, c.dropout))
        self.config = config

    def attention_layers(self) -> dict[str, list[nn.Module]]:
        return {"encoder_self": [], "decoder_self": [],
                "cross": [self.decoder.attention]}
