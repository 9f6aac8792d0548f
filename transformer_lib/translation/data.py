"""English-French sentence pairs: preprocessing, vocabularies, named
subsets, a grouped train/validation/test split, and length-bucketed
batches.

The pairs are d2l's ``fra-eng`` file (Tatoeba via manythings.org, CC-BY
2.0); see :mod:`transformer_lib.translation.download` for where it is
looked for.
"""

from __future__ import annotations

import contextlib
import gc
import random
import re
from collections import Counter
from dataclasses import dataclass, field

import torch

from .._checks import check_positive_int

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)  # ids 0, 1, 2, 3 in every vocabulary

# English openings of the `basic` subset (as in PyTorch's seq2seq
# tutorial: "he is" without a trailing space also takes "he isn't ...").
BASIC_PREFIXES = ("i am ", "i'm ", "he is", "he's ", "she is", "she's ",
                  "you are", "you're ", "we are", "we're ", "they are",
                  "they're ")
BASIC_MAX_TOKENS = 11  # per side, punctuation included, <eos> not counted
D2L_NUM_TRAIN, D2L_NUM_VAL = 512, 128
SUBSETS = ("d2l", "basic", "full")

Pair = tuple[list[str], list[str]]  # (English tokens, French tokens)


# between a character other than a space and one of , . ! ?
_BEFORE_PUNCTUATION = re.compile(r"(?<=[^ ])(?=[,.!?])")


def preprocess(text: str) -> str:
    """d2l's normalisation: non-breaking spaces become spaces, everything
    is lower-cased, and a space is put before ``, . ! ?`` when none is
    there (``"Go."`` -> ``"go ."``)."""
    text = text.replace("\u202f", " ").replace("\xa0", " ").lower()
    return _BEFORE_PUNCTUATION.sub(" ", text)


def tokenize(text: str) -> list[str]:
    """Split a preprocessed sentence into word tokens (no empty ones)."""
    return [token for token in text.split(" ") if token]


@contextlib.contextmanager
def _no_collection():
    """Python's cycle collector paused (a decorator here): building
    millions of lists and strings, none in a cycle, triggers collections
    that scan them all again and again (about half of parsing the whole
    file's time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@_no_collection()
def parse_pairs(raw_text: str, max_lines: int | None = None) -> list[Pair]:
    """``english<TAB>french`` lines -> token lists, after
    :func:`preprocess`.  ``max_lines`` reads lines ``0..max_lines``
    inclusive, as d2l's ``_tokenize`` does."""
    pairs = []
    for i, line in enumerate(preprocess(raw_text).split("\n")):
        if max_lines is not None and i > max_lines:
            break
        parts = line.split("\t")
        if len(parts) == 2:
            pairs.append((tokenize(parts[0]), tokenize(parts[1])))
    return pairs


def check_token_lists(name: str, sequences) -> None:
    """``sequences``: a list of token lists, not of strings (a string
    would be read one character at a time)."""
    if isinstance(sequences, str) or any(
            isinstance(tokens, str) for tokens in sequences):
        raise TypeError(f"{name} must be a list of token lists (e.g. "
                        f"[text.split() for text in texts]), not of strings")


class Vocab:
    """Token <-> id.  ``<pad> <bos> <eos> <unk>`` are always ids 0-3; the
    other tokens follow, most frequent first (ties alphabetical), keeping
    those seen at least ``min_freq`` times."""

    pad, bos, eos, unk = range(4)

    def __init__(self, sentences=(), min_freq: int = 1):
        sentences = list(sentences)     # it may be a generator
        check_token_lists("sentences", sentences)
        counts = Counter(token for tokens in sentences for token in tokens)
        kept = [t for t, c in counts.items()
                if c >= min_freq and t not in SPECIAL_TOKENS]
        kept.sort(key=lambda t: (-counts[t], t))
        self.idx_to_token = list(SPECIAL_TOKENS) + kept
        self.token_to_idx = {t: i for i, t in enumerate(self.idx_to_token)}

    @classmethod
    def from_tokens(cls, idx_to_token) -> Vocab:
        """Rebuild a vocabulary from its token list (from a checkpoint)."""
        idx_to_token = list(idx_to_token)
        if tuple(idx_to_token[:4]) != SPECIAL_TOKENS:
            raise ValueError(f"a vocabulary must start with "
                             f"{SPECIAL_TOKENS}, got {idx_to_token[:4]}")
        vocab = cls()
        vocab.idx_to_token = idx_to_token
        vocab.token_to_idx = {t: i for i, t in enumerate(idx_to_token)}
        return vocab

    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        """A token's id (``<unk>``'s for unknown tokens), or a list of ids
        for a list."""
        if isinstance(tokens, (list, tuple)):
            return [self.token_to_idx.get(t, self.unk) for t in tokens]
        return self.token_to_idx.get(tokens, self.unk)

    def to_tokens(self, ids) -> list[str]:
        """Ids (a list or a 1-D tensor) -> their tokens."""
        if isinstance(ids, torch.Tensor) and ids.dim() != 1:
            raise ValueError(f"ids must be one sequence (a 1-D tensor), "
                             f"got shape {tuple(ids.shape)}")
        ids = [int(i) for i in ids]
        if any(not 0 <= i < len(self) for i in ids):
            raise ValueError(f"ids must lie in [0, {len(self)}), got "
                             f"{min(ids)} to {max(ids)}")
        return [self.idx_to_token[i] for i in ids]

    @staticmethod
    def tokenize(text: str) -> list[str]:
        """A raw sentence -> its word tokens: d2l's :func:`preprocess`,
        then split at spaces (a :class:`~.subwords.SubwordVocab` has its
        own)."""
        return tokenize(preprocess(text))

    @staticmethod
    def detokenize(tokens) -> str:
        """Word tokens -> text, undoing the space that preprocessing put
        before ``, . ! ?`` (``"va !"`` -> ``"va!"``)."""
        if isinstance(tokens, str):
            raise TypeError(f"tokens must be a list of tokens, got the "
                            f"string {tokens!r:.40} (split it first)")
        return re.sub(r" ([,.!?])", r"\1", " ".join(tokens))

    def unknown_share(self, sentences) -> float:
        """The share of the raw ``sentences``' tokens (:meth:`tokenize`)
        that this vocabulary reads as ``<unk>``."""
        tokens = [t for s in sentences for t in self.tokenize(s)]
        if not tokens:
            raise ValueError("sentences hold no token")
        return sum(self[t] == self.unk for t in tokens) / len(tokens)

    def decode(self, ids) -> list[str]:
        """Ids -> tokens, stopping at ``<eos>``, dropping ``<bos>`` and
        ``<pad>``."""
        tokens = []
        for i in ids:
            i = int(i)
            if i == self.eos:
                break
            if i not in (self.pad, self.bos):
                tokens.append(self.idx_to_token[i])
        return tokens


@_no_collection()
def load_raw_pairs(subset: str = "basic", data_dir=None) -> list:
    """The ``(english, french)`` sentences of a named subset as the file
    has them (capitals, punctuation and all): the same pairs as
    :func:`load_pairs`, in the same order, before preprocessing."""
    from .download import read_fra_eng

    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {SUBSETS}, got {subset!r}")
    lines = read_fra_eng(data_dir).split("\n")
    if subset == "d2l":
        lines = lines[:D2L_NUM_TRAIN + D2L_NUM_VAL + 1]
    raw = [tuple(line.split("\t")) for line in lines
           if len(line.split("\t")) == 2]
    if subset == "basic":
        raw = [(en, fr) for en, fr in raw if _is_basic(
            tokenize(preprocess(en)), tokenize(preprocess(fr)))]
    return raw


def _is_basic(src, tgt) -> bool:
    return (" ".join(src).startswith(BASIC_PREFIXES)
            and len(src) <= BASIC_MAX_TOKENS
            and len(tgt) <= BASIC_MAX_TOKENS)


@_no_collection()  # a subset frees the whole file's lists before it resumes
def load_pairs(subset: str = "basic", data_dir=None) -> list[Pair]:
    """The token pairs of a named subset.

    ``d2l``:   exactly what d2l's ``MTFraEng()`` reads by default (lines
               0..640 of the file; d2l trains on the first 512 and
               validates on the rest).
    ``basic``: English starting with one of :data:`BASIC_PREFIXES`, both
               sides at most :data:`BASIC_MAX_TOKENS` tokens (14,669 pairs).
    ``full``:  every pair (167,130).
    """
    from .download import read_fra_eng

    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {SUBSETS}, got {subset!r}")
    raw = read_fra_eng(data_dir)
    if subset == "d2l":
        return parse_pairs(raw, max_lines=D2L_NUM_TRAIN + D2L_NUM_VAL)
    pairs = parse_pairs(raw)
    if subset == "basic":
        pairs = [(s, t) for s, t in pairs if _is_basic(s, t)]
    return pairs


@dataclass
class TestGroup:
    """One held-out English source with *every* French translation of it
    in the data."""

    __test__ = False  # not a pytest test class, despite the name

    src: list[str]
    refs: list[list[str]]


@dataclass
class Split:
    train: list[Pair] = field(default_factory=list)
    val: list[Pair] = field(default_factory=list)
    test: list[TestGroup] = field(default_factory=list)


def group_by_source(pairs) -> dict:
    """``{source sentence (tuple of tokens): [target token lists...]}``,
    in first-seen order."""
    groups: dict = {}
    for src, tgt in pairs:
        groups.setdefault(tuple(src), []).append(list(tgt))
    return groups


@_no_collection()
def grouped_split(pairs, *, num_test_sources: int = 500,
                  num_val_sources: int = 300, seed: int = 0, key=tuple,
                  test_sources=()) -> Split:
    """Split by *English source sentence*, so that no test source is ever
    seen in training.

    Sources are shuffled with ``seed``; the first ``num_test_sources`` go
    to the test set (with all their translations as references), the next
    ``num_val_sources`` to validation, the rest to training.

    key: what makes two sources one (default: the source itself, as a
    tuple of tokens); e.g. raw sentences grouped by their preprocessed
    tokens.  A group's source is the first one seen.
    test_sources: keys that go to the test set first, before the drawn
    ones (e.g. another split's test sources, so that two models are scored
    on the same sentences); each must be a key of ``pairs``.
    """
    groups: dict = {}  # key -> (the first source, [targets])
    for src, tgt in pairs:
        groups.setdefault(key(src), (src, []))[1].append(tgt)
    forced = list(dict.fromkeys(test_sources))
    missing = [k for k in forced if k not in groups]
    if missing:
        raise ValueError(f"test_sources must be keys of pairs' sources; "
                         f"{len(missing)} are not, e.g. {missing[0]!r}")
    if len(forced) > num_test_sources:
        raise ValueError(f"num_test_sources ({num_test_sources}) must be at "
                         f"least the {len(forced)} test_sources")
    chosen = set(forced)
    sources = [k for k in groups if k not in chosen]
    n_test, n_val = num_test_sources - len(forced), num_val_sources
    if n_test + n_val >= len(sources):
        raise ValueError(
            f"num_test_sources + num_val_sources ({num_test_sources} + "
            f"{n_val}) must be below the number of distinct sources "
            f"({len(groups)})")
    random.Random(seed).shuffle(sources)
    test = forced + sources[:n_test]
    val = sources[n_test:n_test + n_val]
    train = sources[n_test + n_val:]

    def source(k):
        src = groups[k][0]
        return src if isinstance(src, str) else list(src)

    return Split(
        train=[(source(k), t) for k in train for t in groups[k][1]],
        val=[(source(k), t) for k in val for t in groups[k][1]],
        test=[TestGroup(source(k), groups[k][1]) for k in test],
    )


def d2l_split(pairs) -> Split:
    """d2l's split of the ``d2l`` subset: the first 512 pairs train, the
    rest validate; the validation sources also serve as the test set
    (d2l has none)."""
    train, val = pairs[:D2L_NUM_TRAIN], pairs[D2L_NUM_TRAIN:]
    test = [TestGroup(list(s), refs)
            for s, refs in group_by_source(val).items()]
    return Split(train=train, val=val, test=test)


@dataclass
class Batch:
    src: torch.Tensor             # (B, S) source ids, <eos>, then <pad>
    src_valid_lens: torch.Tensor  # (B,) real source lengths (with <eos>)
    tgt_in: torch.Tensor          # (B, T) <bos> + target: decoder inputs
    tgt_out: torch.Tensor         # (B, T) target + <eos>: the labels
    num_target_tokens: int        # labels that are not <pad>

    def to(self, device) -> Batch:
        tensors = (self.src, self.src_valid_lens, self.tgt_in, self.tgt_out)
        moved = (t.to(device, non_blocking=True) for t in tensors)
        return Batch(*moved, self.num_target_tokens)


def encode_source(tokens, vocab: Vocab) -> list[int]:
    return vocab[list(tokens)] + [vocab.eos]


def pad_batch(sequences, pad_id: int = Vocab.pad) -> torch.Tensor:
    width = max(len(s) for s in sequences)
    padded = [list(s) + [pad_id] * (width - len(s)) for s in sequences]
    return torch.tensor(padded, dtype=torch.long)


def _check_pairs(pairs) -> None:
    """(source tokens, target tokens) pairs, each side a token list."""
    for i, pair in enumerate(pairs):
        if (isinstance(pair, str) or not hasattr(pair, "__len__")
                or len(pair) != 2 or isinstance(pair[0], str)
                or isinstance(pair[1], str)):
            raise TypeError(f"pairs must be (source tokens, target tokens) "
                            f"pairs of token lists; pairs[{i}] is "
                            f"{pair!r:.60}")


class BatchLoader:
    """Length-bucketed batches of ``(src, tgt)`` pairs, shuffled anew for
    every epoch.

    Pairs are sorted by length (random order among equal lengths) and cut
    into batches of ``batch_size`` pairs, so a batch holds sentences of
    similar length and little padding; the order of the batches is then
    shuffled.  The order depends on ``seed`` and on the epoch, set with
    :meth:`set_epoch` (``fit`` does); iterating does not change it.

    ``max_tokens``: cut batches by size instead: each holds as many pairs
    as keep rows x (longest source + longest target, with ``<eos>``)
    within ``max_tokens`` (a pair longer than that alone is a batch of
    one), and at most ``batch_size`` pairs (``None``: no cap).  Short
    sentences then come in many, long ones in few.  The cuts depend on the
    lengths only, so every epoch has the same number of batches.
    """

    def __init__(self, pairs, src_vocab: Vocab, tgt_vocab: Vocab,
                 batch_size: int | None = 128, *, shuffle: bool = True,
                 seed: int = 0, max_tokens: int | None = None):
        if batch_size is None and max_tokens is None:
            raise ValueError("give batch_size, max_tokens or both")
        if batch_size is not None:
            check_positive_int("batch_size", batch_size)
        if max_tokens is not None:
            check_positive_int("max_tokens", max_tokens)
        if not pairs:
            raise ValueError("pairs is empty: there is nothing to batch")
        _check_pairs(pairs)
        for name, vocab in [("src_vocab", src_vocab),
                            ("tgt_vocab", tgt_vocab)]:
            if not hasattr(vocab, "eos"):
                raise TypeError(f"{name} must be a vocabulary (Vocab), got "
                                f"{type(vocab).__name__}")
        self.src = [encode_source(s, src_vocab) for s, _ in pairs]
        self.tgt = [tgt_vocab[list(t)] for _, t in pairs]
        self.tgt_eos = tgt_vocab.eos
        self.batch_size, self.shuffle, self.seed = batch_size, shuffle, seed
        self.max_tokens = max_tokens
        self.epoch = 0
        # the cuts depend on the lengths only: the same every epoch
        everything = self._by_length(range(len(pairs)))
        self._num_batches = len(self._cut(everything))

    def __len__(self) -> int:
        return self._num_batches

    def _by_length(self, order) -> list[int]:
        # a stable sort: pairs of equal lengths stay in the given order
        return sorted(order, key=lambda i: (len(self.src[i]),
                                            len(self.tgt[i])))

    def _cut(self, order) -> list[list[int]]:
        """Length-sorted pair indices -> the batches' indices."""
        if self.max_tokens is None:
            size = self.batch_size
            return [order[i:i + size] for i in range(0, len(order), size)]
        batches, current, S, T = [], [], 0, 0
        for i in order:
            s, t = len(self.src[i]), len(self.tgt[i]) + 1   # with <eos>
            wider = (len(current) + 1) * (max(S, s) + max(T, t))
            full = self.batch_size is not None and \
                len(current) == self.batch_size
            if current and (wider > self.max_tokens or full):
                batches.append(current)
                current, S, T = [], 0, 0
            current.append(i)
            S, T = max(S, s), max(T, t)
        batches.append(current)
        return batches

    def set_epoch(self, epoch: int) -> None:
        """Use the order of epoch ``epoch`` (0, 1, ...) from now on."""
        self.epoch = epoch

    def _batch(self, idx) -> Batch:
        src = [self.src[i] for i in idx]
        tgt = [self.tgt[i] for i in idx]
        return Batch(
            src=pad_batch(src),
            src_valid_lens=torch.tensor([len(s) for s in src]),
            tgt_in=pad_batch([[Vocab.bos] + t for t in tgt]),
            tgt_out=pad_batch([t + [self.tgt_eos] for t in tgt]),
            num_target_tokens=sum(len(t) + 1 for t in tgt),
        )

    def __iter__(self):
        rng = random.Random(self.seed + self.epoch)
        order = list(range(len(self.src)))
        if self.shuffle:
            rng.shuffle(order)
        batches = self._cut(self._by_length(order))
        if self.shuffle:
            rng.shuffle(batches)
        for idx in batches:
            yield self._batch(idx)


def show_batch(batch, src_vocab: Vocab, tgt_vocab: Vocab) -> None:
    """Print a :class:`BatchLoader` batch as tokens, one row per sentence:
    ``src`` (B, S), ``src_valid_lens`` (B,), ``tgt_in`` and ``tgt_out``
    (B, T).  Each column is as wide as its longest token, ``tgt_in``'s and
    ``tgt_out``'s alike, so that the shift by one lines up."""
    src = [src_vocab.to_tokens(row) for row in batch.src.tolist()]
    tgt_in = [tgt_vocab.to_tokens(row) for row in batch.tgt_in.tolist()]
    tgt_out = [tgt_vocab.to_tokens(row) for row in batch.tgt_out.tolist()]

    def rows(name, shape, table, widths):
        print(f"{name} {tuple(shape)}:")
        for row in table:
            print("   " + " ".join(f"{t:>{w}}" for t, w in zip(row, widths)))

    src_widths = [max(map(len, column)) for column in zip(*src)]
    tgt_widths = [max(map(len, column)) for column in zip(*tgt_in, *tgt_out)]
    rows("src", batch.src.shape, src, src_widths)
    print("src_valid_lens:", batch.src_valid_lens.tolist())
    rows("tgt_in", batch.tgt_in.shape, tgt_in, tgt_widths)
    rows("tgt_out", batch.tgt_out.shape, tgt_out, tgt_widths)
