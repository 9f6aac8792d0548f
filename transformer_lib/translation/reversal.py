"""The toy task of chapters 7 and 10: reverse a sequence of digits.

Every output digit is a copy of one input digit, and we know which (the
digit at the mirror position), so the attention a trained model should
use is known in advance.  :func:`reversal_run` trains and scores one model
on it, the unit of chapter 10's comparisons.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch.nn.functional as F

from .._checks import check_count, check_positive_int
from ..model import EncoderDecoder
from .data import BatchLoader, Vocab
from .decoding import greedy_decode, greedy_decode_uncached
from .training import History, TrainConfig, fit

DIGITS = tuple("0123456789")


def reversal_pairs(count: int, rng: random.Random, min_digits: int,
                   max_digits: int, avoid=frozenset()) -> list:
    """``count`` (digits, reversed digits) pairs of ``min_digits`` to
    ``max_digits`` digits drawn with ``rng``; no digit sequence (a tuple)
    that is in ``avoid``."""
    _check_draw_arguments(count, rng, min_digits, max_digits, avoid)
    pairs = []
    while len(pairs) < count:
        length = rng.randint(min_digits, max_digits)
        x = [rng.choice(DIGITS) for _ in range(length)]
        if tuple(x) not in avoid:
            pairs.append((x, x[::-1]))
    return pairs


def _check_draw_arguments(count, rng, min_digits, max_digits, avoid) -> None:
    check_count("count", count)
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random (e.g. "
                        f"random.Random(0)), got {type(rng).__name__}")
    check_positive_int("min_digits", min_digits)
    check_positive_int("max_digits", max_digits)
    if max_digits < min_digits:
        raise ValueError(f"max_digits must be >= min_digits "
                         f"({min_digits}), got {max_digits}")
    possible = sum(len(DIGITS) ** n
                   for n in range(min_digits, max_digits + 1))
    if count and sum(min_digits <= len(x) <= max_digits
                     for x in avoid) >= possible:
        # drawing would never end: every sequence is to be avoided
        raise ValueError(
            f"avoid holds all {possible} sequences of {min_digits} to "
            f"{max_digits} digits, so no pair can be drawn; allow longer "
            f"sequences (max_digits) or train on fewer pairs")


def exact_matches(answers, tgt_out, pad_id: int = Vocab.pad):
    """``(B,)`` booleans: every token of ``tgt_out`` ``(B, T)`` (up to and
    including ``<eos>``; its padding not) equals the answer's ``(B, n)``
    at the same position."""
    T = tgt_out.shape[1]
    answers = F.pad(answers[:, :T], (0, T - min(T, answers.shape[1])),
                    value=pad_id)
    return ((answers == tgt_out) | (tgt_out == pad_id)).all(dim=1)


@dataclass
class ReversalTask:
    """The data of a reversal run: ``num_train`` training pairs, then
    ``num_val`` and ``num_test`` held-out pairs whose digits are no
    training pair's, all drawn from ``random.Random(seed)`` in that
    order."""

    min_digits: int = 3
    max_digits: int = 10
    num_train: int = 4000
    num_val: int = 500
    num_test: int = 1000
    seed: int = 0

    def __post_init__(self):
        for name in ("num_train", "num_val", "num_test"):
            check_positive_int(name, getattr(self, name))
        self.vocab = Vocab([DIGITS])
        rng = random.Random(self.seed)
        lengths = self.min_digits, self.max_digits
        self.train = reversal_pairs(self.num_train, rng, *lengths)
        seen = {tuple(x) for x, _ in self.train}
        self.val = reversal_pairs(self.num_val, rng, *lengths, avoid=seen)
        self.test = reversal_pairs(self.num_test, rng, *lengths, avoid=seen)


@dataclass
class ReversalResult:
    """What :func:`reversal_run` measured."""

    accuracy: float       # exact matches, greedy, over the test pairs
    val_loss: float       # after the last epoch, nats per target token
    train_seconds: float  # without validation
    history: History


def reversal_run(model, task: ReversalTask, config: TrainConfig,
                 batch_size: int = 32) -> ReversalResult:
    """Train ``model`` in place on ``task`` with ``fit`` (batches shuffled
    with ``config.seed``) and decode its test sources greedily, with
    :func:`greedy_decode` for an encoder-decoder and
    :func:`greedy_decode_uncached` for a decoder-only model."""
    check_positive_int("batch_size", batch_size)
    vocab = task.vocab
    train = BatchLoader(task.train, vocab, vocab, batch_size,
                        seed=config.seed)
    val = BatchLoader(task.val, vocab, vocab, len(task.val), shuffle=False)
    history = fit(model, train, val, config, progress=False)
    device = next(model.parameters()).device
    test = next(iter(BatchLoader(task.test, vocab, vocab, len(task.test),
                                 shuffle=False))).to(device)
    decode = (greedy_decode if isinstance(model, EncoderDecoder)
              else greedy_decode_uncached)
    answers = decode(model, test.src, test.src_valid_lens, bos_id=vocab.bos,
                     eos_id=vocab.eos, pad_id=vocab.pad,
                     max_len=task.max_digits + 1)
    right = exact_matches(answers, test.tgt_out)
    return ReversalResult(right.float().mean().item(),
                          history.validation[-1].loss,
                          history.train_seconds, history)
