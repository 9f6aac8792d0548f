"""The `basic` recipe trained in float32 and in the library's default
precision (bf16 autocast on a CPU with native bf16), for the same number
of steps, in one run: target tokens/s of each and their ratio, the
validation loss, and held-out BLEU (greedy, multi-reference).

Run:  python benchmarks/bench_precision.py --data-dir ../shared/data

(about 8 minutes on the 2-core build machine: two full trainings.)  Both
runs start from the same weights, see the same batches and use the same
seed; only ``TrainConfig.precision`` differs.  Because a time-shared
machine's speed drifts over minutes, a second measurement alternates short
stretches of the two (``--alternations`` x ``--steps`` steps each, after a
warm-up) and prints their ratio too.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace

import torch

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.translation.data import BatchLoader
from transformer_lib.translation.recipes import RECIPES
from transformer_lib.translation.training import (autocast_dtype, fit,
                                                  pick_device)
from transformer_lib.translation.translate import evaluate_bleu


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--epochs", type=int,
                    help="override the recipe's epochs (fewer: quicker)")
    ap.add_argument("--alternations", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    recipe = RECIPES["basic"]
    if args.epochs:
        recipe = recipe.with_train(epochs=args.epochs)
    split, src_vocab, tgt_vocab = recipe.load_data(args.data_dir)
    device = pick_device(recipe.train.device)
    default = autocast_dtype("auto", device)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{device}; the default precision here: "
          f"{default or torch.float32}")
    config = TransformerConfig(len(src_vocab), len(tgt_vocab),
                               **recipe.model)

    def train(precision, *, pairs=split.train, epochs=None, val=True):
        torch.manual_seed(0)
        model = Transformer(config)
        settings = recipe.train if epochs is None else replace(
            recipe.train, epochs=epochs)
        loader = BatchLoader(pairs, src_vocab, tgt_vocab,
                             recipe.batch_size, seed=0)
        val_loader = (BatchLoader(split.val, src_vocab, tgt_vocab, 256,
                                  shuffle=False) if val else None)
        history = fit(model, loader, val_loader,
                      replace(settings, precision=precision),
                      progress=False)
        return model, history

    results = {}
    for precision in ("float32", "auto"):
        model, history = train(precision)
        bleu = evaluate_bleu(model, split.test, src_vocab, tgt_vocab)
        results[precision] = (history, bleu)
        print(f"{history.precision}: {history.steps_done} steps, "
              f"{history.tokens_per_second:,.0f} target tokens/s, "
              f"validation loss {history.validation[-1].loss:.3f}, greedy "
              f"multi-reference BLEU {bleu.multi:.1f}", flush=True)

    stretch = split.train[:recipe.batch_size * args.steps]
    alternated = {"float32": [], "auto": []}
    train("auto", pairs=stretch, epochs=1, val=False)  # warm-up
    for _ in range(args.alternations):
        for precision, speeds in alternated.items():
            history = train(precision, pairs=stretch, epochs=1, val=False)[1]
            speeds.append(history.tokens_per_second)

    (h32, b32), (h, b) = results["float32"], results["auto"]
    print()
    print(f"{'precision':<10} {'tokens/s':>9} {'alternated':>11} "
          f"{'val loss':>9} {'greedy multi-ref BLEU':>22}")
    for name, (hist, bleu) in (("float32", results["float32"]),
                               (h.precision, results["auto"])):
        key = "float32" if name == "float32" else "auto"
        median = statistics.median(alternated[key])
        print(f"{name:<10} {hist.tokens_per_second:>9,.0f} {median:>11,.0f} "
              f"{hist.validation[-1].loss:>9.3f} {bleu.multi:>22.1f}")
    ratio = h.tokens_per_second / h32.tokens_per_second
    alt_ratio = (statistics.median(alternated["auto"])
                 / statistics.median(alternated["float32"]))
    print(f"\nspeed-up of {h.precision} over float32: {ratio:.2f}x over "
          f"the whole runs, {alt_ratio:.2f}x alternated; BLEU difference "
          f"{b.multi - b32.multi:+.1f} points")


if __name__ == "__main__":
    main()
