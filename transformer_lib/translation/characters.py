"""The English side of the pairs as one stream of characters: a language
model's data, and the two baselines it must beat.

Each distinct English sentence appears once, as the file writes it
(capitals and punctuation kept); the sentences are shuffled and split
into training and validation sentences, and each side is one stream of
character ids in which ``<eos>`` ends every sentence.  A model reads
windows of the stream and is scored on every next character, ``<eos>``
included, in bits per character.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

import torch

from .._checks import check_count, check_positive_int
from .data import Batch, Vocab


@dataclass
class CharacterText:
    """Training and validation streams, ``(N,)`` ids each, and what made
    them."""

    vocab: Vocab
    train: torch.Tensor
    val: torch.Tensor
    train_sentences: list[str]
    val_sentences: list[str]

    def encode(self, text: str) -> list[int]:
        """Characters -> ids (``<unk>`` for a character the vocabulary
        lacks)."""
        return self.vocab[list(text)]

    def decode(self, ids) -> str:
        """Ids -> characters, stopping at ``<eos>``."""
        return "".join(self.vocab.decode(ids))


def character_text(sentences, *, num_val: int = 4000, min_freq: int = 20,
                   seed: int = 0) -> CharacterText:
    """Split the distinct ``sentences`` (raw strings) into ``num_val``
    validation sentences and the rest, in an order shuffled with
    ``seed``; the vocabulary holds the training sentences' characters
    seen at least ``min_freq`` times (rarer ones read as ``<unk>``)."""
    sentences = list(dict.fromkeys(sentences))        # distinct, in order
    if not all(isinstance(s, str) and s for s in sentences):
        raise ValueError("sentences must be non-empty strings")
    check_count("num_val", num_val)
    check_positive_int("min_freq", min_freq)
    if num_val >= len(sentences):
        raise ValueError(f"num_val must be below the number of distinct "
                         f"sentences, {len(sentences)}, got {num_val}")
    random.Random(seed).shuffle(sentences)
    val, train = sentences[:num_val], sentences[num_val:]
    vocab = Vocab([list(s) for s in train], min_freq=min_freq)

    def stream(part):
        ids = [i for s in part for i in vocab[list(s)] + [vocab.eos]]
        return torch.tensor(ids, dtype=torch.long)

    return CharacterText(vocab, stream(train), stream(val), train, val)


class TextWindows:
    """Batches of windows of one stream, as :class:`~.data.Batch`es with
    an empty source: ``tgt_in`` holds ``window`` ids, ``tgt_out`` the
    same window one id later (every position is scored).

    ``batches_per_epoch=None``: the stream cut into consecutive windows,
    in order (validation).  Otherwise each epoch draws that many batches
    of windows at random starts, from ``seed`` and the epoch
    (:meth:`set_epoch`, which ``fit`` calls).
    """

    def __init__(self, ids: torch.Tensor, window: int, batch_size: int, *,
                 batches_per_epoch: int | None = None, seed: int = 0):
        if not (isinstance(ids, torch.Tensor) and ids.dim() == 1):
            raise ValueError("ids must be a 1-D tensor of token ids")
        check_positive_int("window", window)
        check_positive_int("batch_size", batch_size)
        if batches_per_epoch is not None:
            check_positive_int("batches_per_epoch", batches_per_epoch)
        if len(ids) < window + 1:
            raise ValueError(f"the stream has {len(ids)} ids, fewer than "
                             f"one window of {window} and its next id")
        self.ids, self.window, self.batch_size = ids, window, batch_size
        self.batches_per_epoch, self.seed, self.epoch = (batches_per_epoch,
                                                         seed, 0)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        if self.batches_per_epoch is not None:
            return self.batches_per_epoch
        windows = (len(self.ids) - 1) // self.window
        return math.ceil(windows / self.batch_size)

    def starts(self) -> torch.Tensor:
        """The first position of every window of this epoch, in order."""
        if self.batches_per_epoch is None:
            windows = (len(self.ids) - 1) // self.window
            return torch.arange(windows) * self.window
        generator = torch.Generator().manual_seed(self.seed * 1000003
                                                  + self.epoch)
        count = self.batches_per_epoch * self.batch_size
        return torch.randint(len(self.ids) - self.window, (count,),
                             generator=generator)

    def __iter__(self):
        offsets = torch.arange(self.window + 1)
        for first in self.starts().split(self.batch_size):
            rows = self.ids[first[:, None] + offsets]   # (B, window + 1)
            B = len(rows)
            yield Batch(rows.new_zeros(B, 0), rows.new_zeros(B),
                        rows[:, :-1], rows[:, 1:], B * self.window)


def ngram_bits(train: torch.Tensor, loader: TextWindows, order: int,
               vocab_size: int) -> float:
    """Bits per character of a unigram (``order=1``) or bigram
    (``order=2``) model with add-one smoothing, counted on the ``train``
    stream and scored on every ``tgt_out`` id of ``loader``, the ids a
    language model is scored on."""
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    check_positive_int("vocab_size", vocab_size)
    if order == 1:
        counts = torch.bincount(train, minlength=vocab_size).double() + 1
        log_p = (counts / counts.sum()).log()             # (V,)
    else:
        pairs = train[:-1] * vocab_size + train[1:]
        counts = torch.bincount(pairs, minlength=vocab_size ** 2)
        counts = counts.double().view(vocab_size, vocab_size) + 1
        log_p = (counts / counts.sum(1, keepdim=True)).log()  # (V, V)
    total, n = 0.0, 0
    for batch in loader:
        if order == 1:
            total += log_p[batch.tgt_out].sum().item()
        else:
            total += log_p[batch.tgt_in, batch.tgt_out].sum().item()
        n += batch.tgt_out.numel()
    return -total / n / math.log(2)


@torch.no_grad()
def window_bits(model, loader: TextWindows) -> torch.Tensor:
    """Each window's bits per character, ``(num_windows,)``: the mean of
    ``-log2 p(next id)`` over the window's scored ids, in evaluation mode
    (two models scored on one loader give paired values)."""
    from ..model import training_mode

    device = next(model.parameters()).device
    per_window = []
    with training_mode(model, False):
        for batch in loader:
            batch = batch.to(device)
            logits = model.logits(batch.src, batch.tgt_in).float()
            nats = torch.nn.functional.cross_entropy(
                logits.transpose(1, 2), batch.tgt_out, reduction="none")
            per_window.append(nats.mean(1).cpu() / math.log(2))
    return torch.cat(per_window)


def mean_interval(values: torch.Tensor, *, samples: int = 1000,
                  seed: int = 0) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of ``values`` ``(n,)`` and its 95 %
    bootstrap interval (``samples`` resamplings of the n values)."""
    if not (isinstance(values, torch.Tensor) and values.dim() == 1
            and len(values) > 1):
        raise ValueError("values must be a 1-D tensor of at least 2")
    check_positive_int("samples", samples)
    values = values.double()
    generator = torch.Generator().manual_seed(seed)
    picks = torch.randint(len(values), (samples, len(values)),
                          generator=generator)
    means = values[picks].mean(1)
    low, high = torch.quantile(means, torch.tensor(
        [0.025, 0.975], dtype=torch.float64)).tolist()
    return values.mean().item(), low, high


def share_seen(samples, sentences) -> float:
    """The share of ``samples`` (strings) found verbatim among
    ``sentences``."""
    samples = list(samples)
    if not samples:
        raise ValueError("samples is empty")
    known = set(sentences)
    return sum(s in known for s in samples) / len(samples)


def distinct_ngrams(samples, n: int) -> float:
    """Distinct character n-grams over all n-grams of ``samples``: 1 when
    no n-gram repeats, near 0 for text that repeats itself."""
    check_positive_int("n", n)
    grams = Counter(s[i:i + n] for s in samples
                    for i in range(len(s) - n + 1))
    total = sum(grams.values())
    if not total:
        raise ValueError(f"samples hold no {n}-gram")
    return len(grams) / total
