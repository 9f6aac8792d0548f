"""Named training recipes: data subset, model size and training settings
in one place, shared by the command line, the benchmarks and the
translator chapter."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace

from .data import (Split, TestGroup, Vocab, d2l_split, grouped_split,
                   load_pairs, load_raw_pairs)
from .training import TrainConfig, autocast_dtype, pick_device


def _gru_sizes():
    return dict(embed_size=256, num_hiddens=256, num_layers=2, dropout=0.1)


@dataclass
class Recipe:
    subset: str
    model: dict  # TransformerConfig fields other than the vocabulary sizes
    train: TrainConfig
    batch_size: int = 128
    min_freq: int = 2
    num_test_sources: int = 500
    num_val_sources: int = 300
    split_seed: int = 0
    notes: str = ""
    gru: dict = field(default_factory=_gru_sizes)  # GRUConfig fields
    # epochs where the matrix products run in float32, about 4 times
    # slower than bf16 on a CPU (None: the same as train.epochs)
    float32_epochs: int | None = None
    # "words": d2l's preprocessing and a word vocabulary per language;
    # "bpe": the raw sentences in byte-level BPE pieces, one vocabulary of
    # vocab_size tokens for both (a model may then tie its embeddings)
    tokenizer: str = "words"
    vocab_size: int = 8000
    max_tokens: int | None = None  # batches by size (BatchLoader)
    # a recipe whose test sources come first in this one's test set, so
    # that both models are scored on the same sentences
    test_sources_of: str | None = None

    def __post_init__(self):
        if self.tokenizer not in ("words", "bpe"):
            raise ValueError(f"tokenizer must be 'words' or 'bpe', got "
                             f"{self.tokenizer!r}")

    @property
    def label(self) -> str:
        """What a checkpoint of this recipe's model records of it: the
        subset, the seed, and a digest of every setting that shapes the
        weights (with ``for_precision``'s epochs), so that the model of an
        earlier version of the recipe is not taken for this one's."""
        settings = asdict(self.for_precision())
        del settings["notes"]
        for name in ("device", "log_every"):   # they leave the weights be
            del settings["train"][name]
        text = json.dumps(settings, sort_keys=True, default=str)
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        return f"{self.subset}, seed {self.train.seed}, settings {digest}"

    def with_train(self, **changes) -> Recipe:
        return replace(self, train=replace(self.train, **changes))

    def for_precision(self, device=None) -> Recipe:
        """This recipe, with ``float32_epochs`` where ``fit`` would train
        in float32 on ``device`` (default: ``train.device``, else the
        device ``pick_device`` picks)."""
        device = pick_device(device or self.train.device)
        float32 = autocast_dtype(self.train.precision, device) is None
        if float32 and self.float32_epochs is not None:
            return self.with_train(epochs=self.float32_epochs)
        return self

    def load_data(self, data_dir=None):
        """``(split, src_vocab, tgt_vocab)`` for this recipe's subset.

        ``d2l`` keeps d2l's own split and builds the vocabularies from all
        641 pairs, as d2l does; the other subsets use the grouped split and
        training-set vocabularies.
        """
        if self.tokenizer == "bpe":
            return self._load_subwords(data_dir)
        pairs = load_pairs(self.subset, data_dir)
        if self.subset == "d2l":
            split, vocab_pairs = d2l_split(pairs), pairs
        else:
            split = grouped_split(pairs, seed=self.split_seed,
                                  num_test_sources=self.num_test_sources,
                                  num_val_sources=self.num_val_sources)
            vocab_pairs = split.train
        return (split, Vocab([s for s, _ in vocab_pairs], self.min_freq),
                Vocab([t for _, t in vocab_pairs], self.min_freq))

    def raw_split(self, data_dir=None) -> Split:
        """The subset's raw sentence pairs, split by source (sources that
        preprocess to the same words are one), with the test sources of
        ``test_sources_of`` first: what a ``"bpe"`` recipe tokenizes."""
        def words(text):
            return tuple(Vocab.tokenize(text))

        forced = ()
        if self.test_sources_of is not None:
            other, _, _ = RECIPES[self.test_sources_of].load_data(data_dir)
            forced = [tuple(g.src) for g in other.test]
        return grouped_split(load_raw_pairs(self.subset, data_dir),
                             seed=self.split_seed, key=words,
                             num_test_sources=self.num_test_sources,
                             num_val_sources=self.num_val_sources,
                             test_sources=forced)

    def _load_subwords(self, data_dir=None):
        """:meth:`raw_split`, a BPE vocabulary learnt from both sides of
        the training pairs, and every pair and reference in its pieces."""
        from .subwords import SubwordVocab

        split = self.raw_split(data_dir)
        vocab = SubwordVocab.train([text for pair in split.train
                                    for text in pair], self.vocab_size)

        split.train = in_pieces(split.train, vocab)
        split.val = in_pieces(split.val, vocab)
        split.test = in_pieces(split.test, vocab)
        return split, vocab, vocab


def in_pieces(items, vocab):
    """Raw sentence pairs ``[(source, target)]``, or test groups, in
    ``vocab``'s subword pieces."""
    return [TestGroup(vocab.tokenize(g.src),
                      [vocab.tokenize(r) for r in g.refs])
            if isinstance(g, TestGroup)
            else (vocab.tokenize(g[0]), vocab.tokenize(g[1]))
            for g in items]


def trained_transformer(recipe: Recipe, *, checkpoint=None):
    """``(model, src_vocab, tgt_vocab)``: the recipe's Transformer trained
    on its training split with ``for_precision``'s epochs: the weights
    ``python -m transformer_lib train`` gives (which also validates after
    each epoch; that draws no random numbers), without its validation.

    ``checkpoint``: a file written by
    :func:`~transformer_lib.translation.checkpoint.save_checkpoint` with
    ``extra={"recipe": recipe.label}`` (chapter 8's build writes one); when
    it exists and records this recipe and seed, its model is returned
    instead of training one (minutes on a CPU).  The model is in
    evaluation mode, on ``recipe.train.device`` (CPU if that is None and
    the checkpoint was used)."""
    from pathlib import Path

    from .checkpoint import load_checkpoint
    from .data import BatchLoader
    from ..model import Transformer, TransformerConfig
    from .training import fit, seed_everything

    if checkpoint is not None and Path(checkpoint).is_file():
        model, src_vocab, tgt_vocab, extra = load_checkpoint(
            checkpoint, recipe.train.device)
        if extra.get("recipe") == recipe.label:
            return model, src_vocab, tgt_vocab
    recipe = recipe.for_precision()
    split, src_vocab, tgt_vocab = recipe.load_data()
    seed_everything(recipe.train.seed)
    model = Transformer(TransformerConfig(len(src_vocab), len(tgt_vocab),
                                          **recipe.model))
    loader = BatchLoader(split.train, src_vocab, tgt_vocab,
                         recipe.batch_size, seed=recipe.train.seed,
                         max_tokens=recipe.max_tokens)
    fit(model, loader, None, recipe.train)
    return model.eval(), src_vocab, tgt_vocab


class _Recipes(dict):
    """The recipes by name; an unknown name lists the known ones."""

    def __missing__(self, name):
        raise KeyError(f"no recipe named {name!r}; the recipes are "
                       f"{', '.join(self)}")


RECIPES = _Recipes({
    # d2l's own demo (chapter "Transformer"): the same data, sizes and
    # optimiser settings.
    "d2l": Recipe(
        subset="d2l",
        model=dict(num_hiddens=256, ffn_num_hiddens=64, num_heads=4,
                   num_enc_blks=2, num_dec_blks=2, dropout=0.2, max_len=64),
        train=TrainConfig(epochs=30, lr=1e-3, warmup_steps=1,
                          schedule="constant", weight_decay=0.0,
                          label_smoothing=0.0, clip_norm=1.0),
        notes="d2l: MTFraEng(batch_size=128), 30 epochs, Adam lr 0.001, "
              "gradient clip 1",
    ),
    # The CPU recipe: about a minute of training on the book's 2-core
    # machine in bf16; fewer epochs in float32 (a CPU without native bf16).
    # The model has the size of the benchmark's torch peer.  The epochs,
    # the rate, its warm-up, the batch size and no dropout were chosen by
    # time to BLEU: the held-out BLEU of the recipe before them (12 epochs
    # at 1e-3 after 200 warm-up steps, dropout 0.1) in half its training
    # time (benchmarks/README.md, "Time to BLEU").
    "basic": Recipe(
        subset="basic",
        model=dict(num_hiddens=256, ffn_num_hiddens=1024, num_heads=4,
                   num_enc_blks=2, num_dec_blks=2, dropout=0.0, max_len=64),
        train=TrainConfig(epochs=7, lr=2.5e-3, warmup_steps=300,
                          schedule="linear", label_smoothing=0.1),
        batch_size=128,
        float32_epochs=4,
    ),
    # The book's published model (translation/everyday/, make everyday): all
    # pairs in 8,000 byte-level BPE pieces shared by both languages, with
    # basic's test sources first among its own, so that both models are
    # scored on the same sentences; tied embeddings and output layer;
    # batches of about 6,000 source and target tokens.  The size, the
    # vocabulary and the epochs were chosen by measurement
    # (docs/everyday-model.md); about 54 minutes on the book's 2-core
    # Zen 4 in bf16.
    "everyday": Recipe(
        subset="full",
        model=dict(num_hiddens=256, ffn_num_hiddens=1024, num_heads=4,
                   num_enc_blks=3, num_dec_blks=3, dropout=0.1,
                   max_len=128, tie_embeddings=True),
        train=TrainConfig(epochs=10, lr=1e-3, warmup_steps=400,
                          schedule="linear", label_smoothing=0.1),
        tokenizer="bpe", vocab_size=8000, test_sources_of="basic",
        batch_size=None, max_tokens=6000,
        num_test_sources=2000, num_val_sources=2000,
    ),
    # The GPU recipe: all 167,130 pairs, a larger model.
    "full": Recipe(
        subset="full",
        model=dict(num_hiddens=512, ffn_num_hiddens=2048, num_heads=8,
                   num_enc_blks=4, num_dec_blks=4, dropout=0.1,
                   max_len=128),
        train=TrainConfig(epochs=10, lr=5e-4, warmup_steps=2000,
                          schedule="linear", label_smoothing=0.1),
        batch_size=256,
        num_test_sources=2000,
        num_val_sources=2000,
    ),
})
