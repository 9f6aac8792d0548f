"""The checker of chapter 6's exercise: a decoder block's ``forward``,
written from its sub-modules.

What the reader writes:

    decoder_block(block, X, M, valid_lens)
        block: a tl.TransformerDecoderBlock (its attention1, addnorm1,
        attention2, addnorm2, ffn, addnorm3); X (B, T, d) the decoder's
        inputs; M (B, S, d) the memory, real up to valid_lens (B,).
        Returns (B, T, d), what block(X, M, valid_lens) returns.
"""

from __future__ import annotations

import torch

from ...model import TransformerDecoderBlock
from .core import (Case, Checker, Mismatch, expect_close, expect_tensor,
                   generator, seeded)

B, S, T, D, HEADS, D_FF = 2, 5, 6, 16, 4, 32


def _block(dropout: float = 0.0) -> TransformerDecoderBlock:
    with seeded(0):
        return TransformerDecoderBlock(D, D_FF, HEADS, dropout).eval()


def _inputs(seed: int):
    gen = generator(seed)     # one generator: M comes after X
    X = torch.randn(B, T, D, generator=gen)
    M = torch.randn(B, S, D, generator=gen)
    return X, M, torch.tensor([3, 5])


def _run(decoder_block, block, X, M, valid_lens):
    with torch.no_grad():
        out = decoder_block(block, X, M, valid_lens)
    return expect_tensor(out, "the output", (B, T, D), X.dtype)


def _later_positions_hidden(decoder_block):
    """The leakage test: the output at t must not move when the inputs
    after t change."""
    block = _block()
    X, M, lens = _inputs(1)
    before = _run(decoder_block, block, X, M, lens)
    for t in range(T - 1):
        changed = X.clone()
        changed[:, t + 1:] = torch.randn(
            B, T - t - 1, D, generator=generator(t))
        after = _run(decoder_block, block, changed, M, lens)
        moved = (after[:, :t + 1] - before[:, :t + 1]).abs().max().item()
        if moved > 1e-5:
            seen = f"positions 0-{t}" if t else "position 0"
            raise Mismatch(
                f"changing the inputs at positions {t + 1}-{T - 1} moved "
                f"the output at {seen} by up to {moved:.3g}: "
                f"the self-attention sees later positions (is it "
                f"causal?)")


def _memory_padding_hidden(decoder_block):
    block = _block()
    X, M, lens = _inputs(2)
    before = _run(decoder_block, block, X, M, lens)
    changed = M.clone()
    changed[0, lens[0]:] = 100.0      # batch item 0's padding
    after = _run(decoder_block, block, X, changed, lens)
    moved = (after - before).abs().max().item()
    if moved > 1e-5:
        raise Mismatch(
            f"changing the memory's padding (positions {lens[0]}-{S - 1} "
            f"of batch item 0) moved the output by up to {moved:.3g}: the "
            f"cross-attention must not see past valid_lens")


def _against_the_library(seed: int):
    def run(decoder_block):
        block = _block()
        X, M, lens = _inputs(seed)
        got = _run(decoder_block, block, X, M, lens)
        with torch.no_grad():
            want = block(X, M, lens)
        expect_close(got, want, "the output (against the block's own "
                     "forward)")
    return run


def _in_training(decoder_block):
    """With dropout on, the reader's forward draws its masks in the
    block's order (the data decide it): the same numbers, if each
    Add & Norm drops out its sub-layer's output, not the residual."""
    block = _block(dropout=0.2).train()
    X, M, lens = _inputs(4)
    with seeded(1):
        got = _run(decoder_block, block, X, M, lens)
    with seeded(1), torch.no_grad():
        want = block(X, M, lens)
    expect_close(got, want, "the output in training (dropout 0.2, the "
                 "same random draws as the block's forward)")


DECODER_BLOCK_CASES = [
    Case("later target positions stay hidden", _later_positions_hidden),
    Case("the memory's padding stays hidden", _memory_padding_hidden),
    Case("the output, against tl.TransformerDecoderBlock",
         _against_the_library(3)),
    Case("in training, with dropout", _in_training),
]
check_decoder_block = Checker(6, "decoder_block", DECODER_BLOCK_CASES)
