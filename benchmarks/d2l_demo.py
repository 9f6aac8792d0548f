"""d2l's Transformer demo, reproduced with transformer_lib: the `d2l`
subset (the first 512 training pairs of d2l's MTFraEng), d2l's sizes and
optimiser (recipe "d2l"), greedy decoding, and d2l's sentence BLEU (k=2) on
its four sentences, printed beside the scores in d2l's book.

Run:  python benchmarks/d2l_demo.py --data-dir ../shared/data   (< 1 min)

One difference is deliberate: our loss ignores padding, d2l's Seq2Seq
averages over it.
"""

from __future__ import annotations

import argparse

from transformer_lib.translation.data import BatchLoader
from transformer_lib.model import Transformer, TransformerConfig
from transformer_lib.translation.recipes import RECIPES
from transformer_lib.translation.training import fit, seed_everything
from transformer_lib.translation.translate import (D2L_EXAMPLES,
                                                   score_d2l_examples)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    recipe = RECIPES["d2l"].with_train(seed=args.seed, device="cpu")
    split, src_vocab, tgt_vocab = recipe.load_data(args.data_dir)
    seed_everything(args.seed)
    model = Transformer(TransformerConfig(len(src_vocab), len(tgt_vocab),
                                          **recipe.model))
    train = BatchLoader(split.train, src_vocab, tgt_vocab, recipe.batch_size,
                        seed=args.seed)
    val = BatchLoader(split.val, src_vocab, tgt_vocab, 256, shuffle=False)
    history = fit(model, train, val, recipe.train, progress=False)
    print(f"{recipe.notes}; trained {history.epochs_done:.0f} epochs in "
          f"{history.train_seconds:.1f} s ({history.precision}), "
          f"validation loss {history.validation[-1].loss:.3f}")
    print(f"{'English':<14} {'ours':<28} {'BLEU':>6} {'d2l printed':>12}")
    scores = score_d2l_examples(model, src_vocab, tgt_vocab)
    for (sentence, _, printed), (text, score) in zip(D2L_EXAMPLES, scores):
        print(f"{sentence:<14} {text:<28} {score:>6.3f} {printed:>12.3f}")


if __name__ == "__main__":
    main()
