"""The encoder-decoder Transformer for sequence-to-sequence tasks such as
translation."""

from __future__ import annotations

import textwrap
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields

import torch
from torch import nn

from .._checks import (check_flag, check_model_sizes, check_positive_int,
                      check_pre_norm, check_tensor, check_tie_embeddings,
                      check_token_ids, check_valid_lens)
from .decoder import TransformerDecoder
from .encoder import TransformerEncoder
from .record import record_attention


@contextmanager
def training_mode(model: nn.Module, training: bool):
    """``model.train(training)`` inside the ``with`` block (``False``: no
    dropout, BatchNorm's running averages); its former mode afterwards."""
    was_training = model.training
    model.train(training)
    try:
        yield model
    finally:
        model.train(was_training)


PAGE_COLUMNS = 77  # the book's page width, for code and what it prints


def fields_text(config, width: int = PAGE_COLUMNS) -> str:
    """A dataclass as its repr shows it, ``Name(field=value, ...)``,
    wrapped to ``width`` columns so that ``print(config)`` fits the page."""
    items = ", ".join(f"{f.name}={getattr(config, f.name)!r}"
                      for f in fields(config) if f.repr)
    # width - 1 leaves room for the closing parenthesis
    return textwrap.fill(items, width - 1, break_long_words=False,
                         break_on_hyphens=False,
                         initial_indent=f"{type(config).__name__}(",
                         subsequent_indent="    ") + ")"


@dataclass
class TransformerConfig:
    """All the sizes of a :class:`Transformer` (defaults: a small model that
    trains on a CPU)."""

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
    norm: str = "layer"  # "batch": BatchNorm in every Add & Norm (chapter 4)
    norm_first: bool = False  # True: pre-norm blocks, a final LayerNorm
    tie_embeddings: bool = False  # True: one matrix for both embeddings
    #                 and the output layer (3.4; needs one vocabulary)

    def __post_init__(self):
        for name in ("src_vocab_size", "tgt_vocab_size", "ffn_num_hiddens",
                     "num_enc_blks", "num_dec_blks", "max_len"):
            check_positive_int(name, getattr(self, name))
        check_model_sizes(self.num_hiddens, self.num_heads, self.dropout)
        if self.norm not in ("layer", "batch"):
            raise ValueError(f"norm must be 'layer' or 'batch', "
                             f"got {self.norm!r}")
        check_flag("norm_first", self.norm_first)
        check_flag("use_bias", self.use_bias)
        if self.norm_first:
            check_pre_norm(self.norm)
        check_tie_embeddings(self.tie_embeddings, self.src_vocab_size,
                             self.tgt_vocab_size)

    __str__ = fields_text  # print() wraps the fields to the page

    def to_dict(self) -> dict:
        return asdict(self)


def count_parameters(module: nn.Module) -> int:
    """How many numbers ``module``'s parameters hold."""
    return sum(p.numel() for p in module.parameters())


class EncoderDecoder(nn.Module):
    """Any encoder plus a decoder that attends to the encoder's output
    (d2l's name).  The encoder has ``encode(X, valid_lens)``, the decoder
    ``decode(X, memory, valid_lens, cache=...)`` and ``init_cache()``."""

    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, src, tgt, src_valid_lens=None):
        """src ``(B, S)`` ids, tgt ``(B, T)`` ids (the decoder's inputs:
        teacher forcing), src_valid_lens ``(B,)`` -> logits ``(B, T, V)``.
        Checks the values once, here, and runs :meth:`logits`."""
        self.check_inputs(src, tgt, src_valid_lens)
        return self.logits(src, tgt, src_valid_lens)

    def logits(self, src, tgt, src_valid_lens=None):
        """:meth:`forward` without the value checks (shapes and dtypes
        only, which read no tensor: no GPU synchronisation)."""
        check_tensor("src", src, ndim=2, kind="int")
        check_tensor("tgt", tgt, ndim=2, kind="int")
        memory = self.encoder.encode(src, src_valid_lens)    # (B, S, d)
        return self.decoder.decode(tgt, memory, src_valid_lens)

    def check_inputs(self, src, tgt=None, src_valid_lens=None) -> None:
        """Raise an error naming the argument unless the ids are in the
        vocabularies and every length in ``[0, S]``."""
        check_token_ids("src", src, self.encoder.vocab_size)
        check_valid_lens("src_valid_lens", src_valid_lens, src)
        if tgt is not None:
            check_token_ids("tgt", tgt, self.decoder.vocab_size)
            if tgt.shape[0] != src.shape[0]:
                raise ValueError(f"src and tgt must share the batch size, "
                                 f"got {src.shape[0]} and {tgt.shape[0]}")

    def attention_layers(self) -> dict[str, list[nn.Module]]:
        """The attention layers by kind: ``encoder_self``,
        ``decoder_self`` and ``cross``, each a list with one per block."""
        raise NotImplementedError(f"{type(self).__name__} does not list "
                                  f"its attention layers")

    @torch.no_grad()
    def attention_maps(self, src, tgt, src_valid_lens=None) -> dict:
        """The attention weights of one pass in evaluation mode, by kind
        (see :meth:`attention_layers`): ``{kind: [weights of each
        block]}``, each ``(B, heads, queries, keys)``."""
        with training_mode(self, False), record_attention(self) as maps:
            self(src, tgt, src_valid_lens)
        result = {}
        for kind, layers in self.attention_layers().items():
            result[kind] = []
            for layer in layers:
                # one tensor per call: one call, or one per decoding step
                weights = torch.cat(maps.of(layer), dim=-2)
                if weights.dim() == 3:  # a single head: (B, Q, K)
                    weights = weights.unsqueeze(1)
                result[kind].append(weights)
        return result

    def num_parameters(self) -> int:
        return count_parameters(self)


class Transformer(EncoderDecoder):
    """The encoder-decoder Transformer of Vaswani et al. (2017), built from
    a :class:`TransformerConfig`."""

    def __init__(self, config: TransformerConfig):
        c = config
        super().__init__(
            TransformerEncoder(c.src_vocab_size, c.num_hiddens,
                               c.ffn_num_hiddens, c.num_heads,
                               c.num_enc_blks, c.dropout, c.use_bias,
                               c.max_len, c.norm, c.norm_first),
            TransformerDecoder(c.tgt_vocab_size, c.num_hiddens,
                               c.ffn_num_hiddens, c.num_heads,
                               c.num_dec_blks, c.dropout, c.use_bias,
                               c.max_len, c.norm, c.norm_first))
        self.config = config
        self.apply(self._init_weights)
        if c.tie_embeddings:  # the paper's 3.4: one matrix, three uses
            shared = self.decoder.embedding.weight             # (V, d)
            self.encoder.embedding.weight = shared
            self.decoder.dense.weight = shared  # logits: X shared^T + b

    def attention_layers(self) -> dict[str, list[nn.Module]]:
        encoder, decoder = self.encoder.blks, self.decoder.blks
        return {"encoder_self": [blk.attention for blk in encoder],
                "decoder_self": [blk.attention1 for blk in decoder],
                "cross": [blk.attention2 for blk in decoder]}

    def parameter_counts(self) -> dict[str, int]:
        """The parameters by part, in the model's order: source embedding,
        encoder blocks, target embedding, decoder blocks, output layer,
        and, for a pre-norm model, its two final LayerNorms.  With tied
        embeddings the one matrix counts once, as "shared embedding", and
        the output layer is its bias.  They add up to
        :meth:`num_parameters`."""
        count = count_parameters
        enc, dec = self.encoder, self.decoder
        if self.config.tie_embeddings:
            counts = {"shared embedding": count(dec.embedding),
                      "encoder blocks": count(enc.blks),
                      "decoder blocks": count(dec.blks),
                      "output layer": dec.dense.bias.numel()}
        else:
            counts = {"source embedding": count(enc.embedding),
                      "encoder blocks": count(enc.blks),
                      "target embedding": count(dec.embedding),
                      "decoder blocks": count(dec.blks),
                      "output layer": count(dec.dense)}
        final = count(enc.final_norm) + count(dec.final_norm)
        if final:
            counts["final norms"] = final
        return counts

    def _init_weights(self, module: nn.Module) -> None:
        """Xavier-uniform projections (as in torch.nn.Transformer) and
        N(0, 1/d) embeddings, so that the embeddings times sqrt(d) have unit
        scale, like the positional encoding.  (PyTorch's default N(0, 1)
        embeddings times sqrt(d), 16 at the default d = 256, would drown
        it.)"""
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            std = self.config.num_hiddens ** -0.5
            nn.init.normal_(module.weight, std=std)
