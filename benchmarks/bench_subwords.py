"""Words or subwords, and how many subwords: what each vocabulary does to
held-out sentences of all 167,130 pairs.

Run:  python benchmarks/bench_subwords.py     (about a minute on 2 cores)

The split is the everyday recipe's kind: all pairs, grouped by the English
sentence's preprocessed words (so "Go." and "go." are one source), with
the basic recipe's 500 test sources first among 2,000 test sources and
2,000 validation sources (seed 0).  For the word vocabularies (chapter 8's
kind: d2l's preprocessing, words seen at least twice in training) it
prints the share of held-out words and sentences that read ``<unk>``; for
byte-level BPE vocabularies of several sizes, trained on both sides of the
training pairs, the pieces per sentence and per word (what sequence
lengths, and so attention's cost, become) and the parameters of a tied
embedding at d = 256.  BPE never reads ``<unk>``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from transformer_lib.translation import SubwordVocab, TrainConfig, Vocab
from transformer_lib.translation.recipes import Recipe

# the split of the everyday kind (no model or training: only its data)
EVERYDAY_DATA = Recipe(subset="full", model={}, train=TrainConfig(),
                       tokenizer="bpe", test_sources_of="basic",
                       num_test_sources=2000, num_val_sources=2000)


def words_of(text):
    return tuple(Vocab.tokenize(text))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[2000, 4000, 8000, 16000, 32000])
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    split = EVERYDAY_DATA.raw_split(args.data_dir)
    pairs = len(split.train) + len(split.val) + sum(
        len(g.refs) for g in split.test)
    held_en = [g.src for g in split.test]
    held_fr = [ref for g in split.test for ref in g.refs]
    print(f"{pairs:,} pairs: {len(split.train):,} training, "
          f"{len(split.val):,} validation, {len(split.test):,} test sources "
          f"({len(held_fr):,} references)")

    print("\nword vocabularies (d2l's preprocessing, min_freq 2):")
    for side, train_texts, held in (
            ("English", [s for s, _ in split.train], held_en),
            ("French", [t for _, t in split.train], held_fr)):
        vocab = Vocab([words_of(t) for t in train_texts], min_freq=2)
        tokens = [words_of(t) for t in held]
        unknown = [sum(vocab[w] == vocab.unk for w in s) for s in tokens]
        total = sum(len(s) for s in tokens)
        print(f"  {side:<8} {len(vocab):>7,} words; held out: "
              f"{sum(unknown) / total:6.2%} of the words <unk>, "
              f"{sum(u > 0 for u in unknown) / len(tokens):6.2%} of the "
              f"sentences with one")

    print("\nbyte-level BPE, one vocabulary for both sides:")
    print(f"  {'size':>6} {'pieces/sentence en':>19} {'fr':>6} "
          f"{'pieces/word':>12} {'embedding d=256':>16} {'train s':>8}")
    corpus = [s for s, _ in split.train] + [t for _, t in split.train]
    for size in args.sizes:
        started = time.perf_counter()
        vocab = SubwordVocab.train(corpus, size)
        seconds = time.perf_counter() - started
        en = [len(vocab.tokenize(s)) for s in held_en]
        fr = [len(vocab.tokenize(s)) for s in held_fr]
        words = sum(len(s.split()) for s in held_en + held_fr)
        per_word = (sum(en) + sum(fr)) / words
        print(f"  {len(vocab):>6,} {statistics.mean(en):>19.2f} "
              f"{statistics.mean(fr):>6.2f} {per_word:>12.3f} "
              f"{len(vocab) * 256:>16,} {seconds:>8.1f}")


if __name__ == "__main__":
    main()
