"""A decoder-only Transformer, the layout of the GPT family: one stack of
blocks with causal self-attention and no cross-attention, over one
sequence that holds the source, a separator and the answer.

Each block is the encoder's block with the causal mask, or the decoder's
block without its cross-attention: masked self-attention, then the FFN.
For a sequence-to-sequence task the model reads ``x_1 .. x_n <sep> y_1 ..
y_m`` and is scored on predicting ``y_1 .. y_m <eos>``; the source's own
final token (``<eos>`` in this library's batches) is the separator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from .._checks import (check_one_stack_config, check_token_ids,
                      check_valid_lens)
from .encoder import PreNormEncoderBlock, TransformerEncoderBlock
from .stack import EmbeddedBlockStack
from .transformer import (Transformer, count_parameters, fields_text,
                          training_mode)


class CausalBlock(TransformerEncoderBlock):
    """Masked self-attention -> Add & Norm -> FFN -> Add & Norm: position
    t reads positions 0..t only (post-norm, as the paper's blocks)."""

    def forward(self, X):
        """X ``(B, S+T-1, d)``, the joined sequence -> the same shape."""
        Y = self.addnorm1(X, self.attention(X, X, X, causal=True))
        return self.addnorm2(Y, self.ffn(Y))


class PreNormCausalBlock(PreNormEncoderBlock):
    """The pre-norm layout of :class:`CausalBlock` (GPT-2's)."""

    def forward(self, X):
        """X ``(B, S+T-1, d)``, the joined sequence -> the same shape."""
        H = self.norm1(X)                                  # (B, S+T-1, d)
        X = X + self.dropout(self.attention(H, H, H, causal=True))
        return X + self.dropout(self.ffn(self.norm2(X)))


class CausalStack(EmbeddedBlockStack):
    """Token ids ``(B, S+T-1)`` -> ``(B, S+T-1, d)``: embeddings,
    positions and N causal blocks (the arguments of
    :class:`EmbeddedBlockStack`)."""

    block_class = CausalBlock
    pre_norm_block_class = PreNormCausalBlock

    def forward(self, X):
        H = self.embed(X)                                  # (B, S+T-1, d)
        for blk in self.blks:
            H = blk(H)
        return self.final_norm(H)


@dataclass
class DecoderOnlyConfig:
    """All the sizes of a :class:`DecoderOnlyTransformer`."""

    vocab_size: int
    num_hiddens: int = 256
    ffn_num_hiddens: int = 1024
    num_heads: int = 4
    num_blks: int = 4
    dropout: float = 0.1
    use_bias: bool = False
    max_len: int = 1000
    norm_first: bool = False  # True: pre-norm blocks, a final LayerNorm
    tie_embeddings: bool = False  # True: the output layer is the embedding

    def __post_init__(self):
        check_one_stack_config(self)

    __str__ = fields_text  # print() wraps the fields to the page

    def to_dict(self) -> dict:
        return asdict(self)


def join_source_and_target(src, src_valid_lens, tgt):
    """One sequence per row: the source's real tokens (the last of them,
    ``<eos>``, is the separator), then ``tgt`` without its first token
    (``<bos>``: the separator stands in for it); filler after it.

    src ``(B, S)``; src_valid_lens ``(B,)``, each in ``[1, S]`` (``None``:
    every column of src is real, its last one the separator); tgt
    ``(B, T)``, ``T >= 1``.  (No value checks here, which would make a
    GPU wait at every step: :meth:`DecoderOnlyTransformer.check_inputs`
    checks the lengths once per batch.)  Returns the sequences
    ``(B, S + T - 1)`` and ``(B, T)`` the positions whose next-token
    logits stand for the decoder's at ``tgt``'s positions (position t of
    tgt sits at src_valid_lens - 1 + t).
    """
    B, S = src.shape
    T = tgt.shape[1]
    if S < 1 or T < 1:
        raise ValueError(f"src and tgt need at least one position each, "
                         f"got shapes {tuple(src.shape)} and "
                         f"{tuple(tgt.shape)}")
    lens = (torch.full((B,), S, device=src.device) if src_valid_lens is None
            else src_valid_lens.to(src.device))
    tgt = tgt.to(src.device)
    # filler 0 after the answer: causal attention never lets a real
    # position read it, and its logits are never gathered
    seq = src.new_zeros(B, S + T - 1)
    real = torch.arange(S, device=src.device) < lens[:, None]   # (B, S)
    seq[:, :S] = src * real
    where = lens[:, None] - 1 + torch.arange(T, device=src.device)
    seq.scatter_(1, where[:, 1:], tgt[:, 1:])
    return seq, where


class DecoderOnlyTransformer(nn.Module):
    """A stack of causal blocks and an output layer: next-token logits at
    every position of one sequence.  :meth:`logits` gives it an
    encoder-decoder's interface, so the library's loaders, loss,
    :func:`~transformer_lib.translation.fit` and ``greedy_decode_uncached``
    train and decode it unchanged."""

    def __init__(self, config: DecoderOnlyConfig):
        super().__init__()
        c = self.config = config
        self.stack = CausalStack(c.vocab_size, c.num_hiddens,
                                 c.ffn_num_hiddens, c.num_heads, c.num_blks,
                                 c.dropout, c.use_bias, c.max_len, "layer",
                                 c.norm_first)
        self.dense = nn.Linear(c.num_hiddens, c.vocab_size)
        self.vocab_size = c.vocab_size
        # the encoder-decoder's initialisation (it reads config.num_hiddens)
        self.apply(lambda module: Transformer._init_weights(self, module))
        if c.tie_embeddings:
            self.dense.weight = self.stack.embedding.weight

    def forward(self, X):
        """X ``(B, S+T-1)``, the ids of the joined sequences ->
        ``(B, S+T-1, V)``: at each position, the logits of the token
        after it."""
        check_token_ids("X", X, self.vocab_size)
        if X.shape[1] > self.config.max_len:
            raise ValueError(f"X has {X.shape[1]} positions, more than "
                             f"max_len={self.config.max_len}")
        return self.dense(self.stack(X))

    def logits(self, src, tgt, src_valid_lens=None):
        """The encoder-decoder's :meth:`~EncoderDecoder.logits`: src
        ``(B, S)``, tgt ``(B, T)`` (``<bos>`` then the answer so far) ->
        ``(B, T, V)``, read from one causal pass over
        :func:`join_source_and_target`'s sequences.  The value checks are
        :meth:`check_inputs`, which ``fit`` runs once per batch."""
        seq, where = join_source_and_target(src, src_valid_lens, tgt)
        logits = self.dense(self.stack(seq))              # (B, S+T-1, V)
        index = where[..., None].expand(-1, -1, logits.shape[-1])
        return logits.gather(1, index)                    # (B, T, V)

    def check_inputs(self, src, tgt=None, src_valid_lens=None) -> None:
        """Raise an error naming the argument unless the ids are in the
        vocabulary, every length in ``[1, S]`` and the joined sequence
        fits the position table."""
        check_token_ids("src", src, self.vocab_size)
        check_valid_lens("src_valid_lens", src_valid_lens, src)
        if src_valid_lens is not None and bool((src_valid_lens < 1).any()):
            raise ValueError("src_valid_lens must be >= 1: the source's "
                             "last token is the separator")
        if tgt is not None:
            check_token_ids("tgt", tgt, self.vocab_size)
            if tgt.shape[0] != src.shape[0]:
                raise ValueError(f"src and tgt must share the batch size, "
                                 f"got {src.shape[0]} and {tgt.shape[0]}")
            length = src.shape[1] + tgt.shape[1] - 1
            if length > self.config.max_len:
                raise ValueError(f"src and tgt join into {length} "
                                 f"positions, more than max_len="
                                 f"{self.config.max_len}")

    def attention_layers(self) -> dict[str, list[nn.Module]]:
        """Its one kind of attention, ``self``: one layer per block."""
        return {"self": [blk.attention for blk in self.stack.blks]}

    @torch.no_grad()
    def attention_maps(self, src, tgt, src_valid_lens=None) -> dict:
        """``{"self": [weights of each block]}`` over the joined sequences,
        each ``(B, heads, S+T-1, S+T-1)``, in evaluation mode."""
        from .record import record_attention

        self.check_inputs(src, tgt, src_valid_lens)
        with training_mode(self, False), record_attention(self) as maps:
            self.logits(src, tgt, src_valid_lens)
        return {"self": [maps.of(layer)[0]
                         for layer in self.attention_layers()["self"]]}

    def num_parameters(self) -> int:
        return count_parameters(self)
