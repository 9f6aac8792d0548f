"""Subwords: one byte-pair-encoding vocabulary for both languages, built
with Hugging Face ``tokenizers`` (the page reads the same JSON file with
``@huggingface/tokenizers``).

Byte-pair encoding (Sennrich et al. 2016) starts from single characters
and merges the most frequent adjacent pair into a new token, again and
again, until the vocabulary has the size asked for.  Frequent words end as
one token, rare ones as a few pieces.  This one works on bytes (GPT-2's
byte-level alphabet), so every string has pieces and nothing is ever
``<unk>``; a piece that starts a word carries the space before it
(``Ġ``).  :class:`SubwordVocab` has :class:`~.data.Vocab`'s interface
(the four special tokens at ids 0-3, ``vocab[pieces]``, ``to_tokens``,
``decode``), so the loaders, training and decoding take it unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

from .._checks import check_positive_int
from .data import SPECIAL_TOKENS, Vocab


def _tokenizers():
    try:
        import tokenizers
    except ImportError as err:  # a clear message, not a deep traceback
        raise ImportError("subwords need Hugging Face's tokenizers: "
                          "pip install 'tokenizers>=0.20'") from err
    return tokenizers


class SubwordVocab:
    """A byte-level BPE vocabulary: text <-> pieces <-> ids.

    Build one with :meth:`train`, or read one with :meth:`from_json` /
    :meth:`load`.  ``pad, bos, eos, unk`` are ids 0-3, as in
    :class:`~.data.Vocab`.
    """

    pad, bos, eos, unk = Vocab.pad, Vocab.bos, Vocab.eos, Vocab.unk

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        specials = [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS]
        if specials != [0, 1, 2, 3]:
            raise ValueError(f"a subword vocabulary must give "
                             f"{SPECIAL_TOKENS} the ids 0-3, got "
                             f"{specials}")
        vocab = tokenizer.get_vocab(with_added_tokens=True)
        self.idx_to_token = [None] * len(vocab)
        for token, i in vocab.items():
            self.idx_to_token[i] = token
        self.token_to_idx = vocab

    @classmethod
    def train(cls, sentences, vocab_size: int, *,
              min_frequency: int = 2) -> SubwordVocab:
        """Learn the merges from ``sentences`` (raw text, e.g. both sides
        of the training pairs) until there are ``vocab_size`` tokens (the
        4 special ones, the 256 bytes and the merges), keeping only merges
        of pairs seen at least ``min_frequency`` times.  Deterministic:
        the same sentences give the same vocabulary."""
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("min_frequency", min_frequency)
        tk = _tokenizers()
        alphabet = tk.pre_tokenizers.ByteLevel.alphabet()
        smallest = len(SPECIAL_TOKENS) + len(alphabet)
        if vocab_size < smallest:
            raise ValueError(f"vocab_size must be at least {smallest} (the "
                             f"special tokens and the 256 bytes), got "
                             f"{vocab_size}")
        sentences = list(sentences)
        if not sentences:
            raise ValueError("sentences is empty: nothing to learn from")
        tokenizer = tk.Tokenizer(tk.models.BPE(unk_token=None))
        tokenizer.normalizer = tk.normalizers.NFC()
        tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(
            add_prefix_space=True)
        tokenizer.decoder = tk.decoders.ByteLevel()
        trainer = tk.trainers.BpeTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency,
            special_tokens=list(SPECIAL_TOKENS), initial_alphabet=alphabet,
            show_progress=False)
        tokenizer.train_from_iterator(sentences, trainer=trainer)
        return cls(tokenizer)

    # --- Vocab's interface ------------------------------------------------
    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __getitem__(self, pieces):
        """A piece's id (``<unk>``'s for a string that is no piece), or a
        list of ids for a list."""
        if isinstance(pieces, (list, tuple)):
            return [self.token_to_idx.get(p, self.unk) for p in pieces]
        return self.token_to_idx.get(pieces, self.unk)

    def to_tokens(self, ids) -> list[str]:
        return [self.idx_to_token[int(i)] for i in ids]

    def decode(self, ids) -> list[str]:
        """Ids -> pieces, stopping at ``<eos>``, dropping ``<bos>`` and
        ``<pad>`` (as :meth:`Vocab.decode`)."""
        return Vocab.decode(self, ids)

    unknown_share = Vocab.unknown_share   # always 0: every byte is a piece

    # --- text -------------------------------------------------------------
    def tokenize(self, text: str) -> list[str]:
        """A sentence -> its pieces (no special tokens)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got "
                            f"{type(text).__name__}")
        return self.tokenizer.encode(text, add_special_tokens=False).tokens

    def encode(self, text: str) -> list[int]:
        """A sentence -> its piece ids."""
        return self[self.tokenize(text)]

    def piece_texts(self, pieces) -> list[str]:
        """Each piece as the text it stands for (its bytes decoded; a
        piece that holds part of a character shows as U+FFFD)."""
        return [self.tokenizer.decode([self[p]], skip_special_tokens=False)
                for p in pieces]

    def detokenize(self, pieces) -> str:
        """Pieces -> text: the bytes joined back, the leading space (the
        one the encoding adds before the first word) dropped."""
        ids = self[list(pieces)]
        return self.tokenizer.decode(ids, skip_special_tokens=True).strip()

    # --- files ------------------------------------------------------------
    def to_json(self) -> str:
        """The tokenizer as Hugging Face's JSON (what the page reads)."""
        return self.tokenizer.to_str()

    @classmethod
    def from_json(cls, text: str) -> SubwordVocab:
        return cls(_tokenizers().Tokenizer.from_str(text))

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path) -> SubwordVocab:
        text = Path(path).read_text(encoding="utf-8")
        try:
            json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not a tokenizer's JSON: {err}") \
                from err
        return cls.from_json(text)
