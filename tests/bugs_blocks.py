"""Planted bugs for chapter 6's checker: a decoder block's forward."""

from __future__ import annotations

from planted_bugs import PlantedBug

from transformer_lib.instruments.exercises.blocks import check_decoder_block


def decoder_block(block, X, M, valid_lens):
    """A right answer, written as a reader would."""
    Y = block.addnorm1(X, block.attention1(X, X, X, causal=True))
    Z = block.addnorm2(Y, block.attention2(Y, M, M, valid_lens))
    return block.addnorm3(Z, block.ffn(Z))


def library_forward(block, X, M, valid_lens):
    return block(X, M, valid_lens)


def without_the_causal_mask(block, X, M, valid_lens):
    Y = block.addnorm1(X, block.attention1(X, X, X))  # BUG: not causal
    Z = block.addnorm2(Y, block.attention2(Y, M, M, valid_lens))
    return block.addnorm3(Z, block.ffn(Z))


def memory_padding_seen(block, X, M, valid_lens):
    Y = block.addnorm1(X, block.attention1(X, X, X, causal=True))
    Z = block.addnorm2(Y, block.attention2(Y, M, M))  # BUG: no valid_lens
    return block.addnorm3(Z, block.ffn(Z))


def residual_around_the_wrong_sublayer(block, X, M, valid_lens):
    Y = block.addnorm1(X, block.attention1(X, X, X, causal=True))
    # BUG: the residual of the cross-attention is X, not its input Y
    Z = block.addnorm2(X, block.attention2(Y, M, M, valid_lens))
    return block.addnorm3(Z, block.ffn(Z))


def cross_attention_queries_from_x(block, X, M, valid_lens):
    Y = block.addnorm1(X, block.attention1(X, X, X, causal=True))
    # BUG: the cross-attention's queries are the block's input X
    Z = block.addnorm2(Y, block.attention2(X, M, M, valid_lens))
    return block.addnorm3(Z, block.ffn(Z))


def causal_cross_attention(block, X, M, valid_lens):
    Y = block.addnorm1(X, block.attention1(X, X, X, causal=True))
    # BUG: a causal mask over the memory: target t sees source <= t
    Z = block.addnorm2(Y, block.attention2(Y, M, M, valid_lens,
                                           causal=True))
    return block.addnorm3(Z, block.ffn(Z))


def ffn_without_its_residual(block, X, M, valid_lens):
    Y = block.addnorm1(X, block.attention1(X, X, X, causal=True))
    Z = block.addnorm2(Y, block.attention2(Y, M, M, valid_lens))
    return block.addnorm3.ln(block.ffn(Z))  # BUG: LayerNorm(FFN(Z)) alone


def addnorm_arguments_swapped(block, X, M, valid_lens):
    # BUG: AddNorm(X, Y) drops out Y, the sub-layer's output; swapped, it
    # drops out the residual stream instead (the same without dropout)
    Y = block.addnorm1(block.attention1(X, X, X, causal=True), X)
    Z = block.addnorm2(block.attention2(Y, M, M, valid_lens), Y)
    return block.addnorm3(block.ffn(Z), Z)


CORRECT = [
    (check_decoder_block, library_forward,
     "tl.TransformerDecoderBlock's forward"),
    (check_decoder_block, decoder_block, "a reader's decoder_block"),
]

BUGS = [
    PlantedBug("no causal mask", check_decoder_block,
               without_the_causal_mask,
               "later target positions stay hidden"),
    PlantedBug("the memory's padding attended", check_decoder_block,
               memory_padding_seen, "the memory's padding stays hidden"),
    PlantedBug("the residual around the wrong sub-layer",
               check_decoder_block, residual_around_the_wrong_sublayer,
               "the output, against tl.TransformerDecoderBlock"),
    PlantedBug("cross-attention queries from X", check_decoder_block,
               cross_attention_queries_from_x,
               "the output, against tl.TransformerDecoderBlock"),
    PlantedBug("a causal mask on the cross-attention", check_decoder_block,
               causal_cross_attention,
               "the output, against tl.TransformerDecoderBlock"),
    PlantedBug("Add & Norm's arguments swapped", check_decoder_block,
               addnorm_arguments_swapped, "in training, with dropout",
               alone=True),
    PlantedBug("the FFN without its residual", check_decoder_block,
               ffn_without_its_residual,
               "the output, against tl.TransformerDecoderBlock"),
]
