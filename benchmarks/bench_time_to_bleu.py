"""Time to BLEU: chapter 8's translator trained by several recipes, side
by side in one run on one host, each to its held-out greedy BLEU.

Each variant is the ``basic`` recipe with some settings changed, written
``name:key=value,key=value``; the keys are ``TrainConfig`` fields
(``epochs``, ``lr``, ``warmup_steps``, ``schedule``, ``weight_decay``,
``label_smoothing``, ...), ``batch_size``, ``max_tokens`` and the model's
fields (``dropout``, ...).  The default compares the recipe the book used
before (``before``: 12 epochs, AdamW peaking at 1e-3 after 200 warm-up
steps, batch 128) with the ``basic`` recipe as it is now.

For every variant and seed the script trains through ``fit`` (validation
after each epoch, not counted in the training seconds), then decodes the
500 held-out sources greedily and prints a row: epochs, steps, training
seconds, target tokens per second, the last validation loss, and greedy
multi-reference sacreBLEU with its 95 % bootstrap interval (1,000
resamples of the sentences).  The variants run in turn, seed by seed (all
variants for seed 0, then seed 1, ...), so a machine whose speed drifts
treats them alike.  Last, per variant, the mean over the seeds and, for
each variant after the first, its training seconds over the first's.

Run:  python benchmarks/bench_time_to_bleu.py [--seeds 0 1 2]
      [--variants NAME:KEY=VALUE,... ...] [--precision auto|float32]
      [--data-dir DIR]

(about 4 minutes a seed for the default pair on the book's 2-core Zen 4
in bf16; ``--precision float32`` is the path of a CPU without native bf16,
whose recipe trains ``float32_epochs``.)
"""

from __future__ import annotations

import argparse
import os
import statistics
from dataclasses import fields, replace

import torch

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.translation.bleu import bootstrap_bleu
from transformer_lib.translation.data import BatchLoader
from transformer_lib.translation.provenance import cpu_name, matmul_gflops
from transformer_lib.translation.recipes import RECIPES, Recipe
from transformer_lib.translation.training import (TrainConfig,
                                                  autocast_dtype, fit,
                                                  pick_device,
                                                  precision_name,
                                                  seed_everything)
from transformer_lib.translation.translate import evaluate_bleu

# the basic recipe as the book trained it before its time to BLEU was
# measured: 12 epochs in bf16, 6 in float32
BEFORE = "before:epochs=12,float32_epochs=6,lr=1e-3,warmup_steps=200," \
         "batch_size=128,dropout=0.1"
TRAIN_FIELDS = {f.name for f in fields(TrainConfig)}
RECIPE_FIELDS = {"batch_size", "max_tokens", "float32_epochs"}


def number(text: str):
    """``"12"`` -> 12, ``"1e-3"`` -> 0.001, ``"none"`` -> None, else the
    text (a schedule's name)."""
    if text.lower() == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_variant(text: str, base: Recipe) -> tuple[str, Recipe]:
    """``"name:key=value,..."`` -> ``(name, recipe)``."""
    name, _, settings = text.partition(":")
    recipe = base
    model = dict(recipe.model)
    for item in filter(None, settings.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"variant {name!r}: {item!r} is not key=value")
        value = number(value)
        if key in TRAIN_FIELDS:
            recipe = recipe.with_train(**{key: value})
        elif key in RECIPE_FIELDS:
            recipe = replace(recipe, **{key: value})
        elif key in model:
            model[key] = value
        else:
            raise SystemExit(f"variant {name!r}: unknown setting {key!r}")
    return name, replace(recipe, model=model)


def train_and_score(recipe: Recipe, data, seed: int) -> dict:
    split, src_vocab, tgt_vocab, val_loader = data
    recipe = recipe.with_train(seed=seed).for_precision()
    seed_everything(seed)
    model = Transformer(TransformerConfig(len(src_vocab), len(tgt_vocab),
                                          **recipe.model))
    loader = BatchLoader(split.train, src_vocab, tgt_vocab,
                         recipe.batch_size, seed=seed,
                         max_tokens=recipe.max_tokens)
    history = fit(model, loader, val_loader, recipe.train, progress=False)
    model.eval()
    score = evaluate_bleu(model, split.test, src_vocab, tgt_vocab)
    references = [[tgt_vocab.detokenize(r) for r in g.refs]
                  for g in split.test]
    low, high = bootstrap_bleu(score.hypotheses, references)
    return dict(epochs=history.epochs_done, steps=history.steps_done,
                seconds=history.train_seconds,
                tokens_per_second=history.tokens_per_second,
                val_loss=history.validation[-1].loss, bleu=score.multi,
                low=low, high=high)


def row(name, seed, r) -> str:
    return (f"| {name} | {seed} | {r['epochs']:.0f} | {r['steps']} | "
            f"{r['seconds']:.1f} | {r['tokens_per_second']:,.0f} | "
            f"{r['val_loss']:.3f} | {r['bleu']:.1f} "
            f"({r['low']:.1f}-{r['high']:.1f}) |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+",
                        default=[BEFORE, "now:"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--precision", default="auto",
                        choices=["auto", "float32", "bfloat16"])
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    if args.data_dir:
        os.environ["TRANSFORMER_LIB_DATA"] = args.data_dir

    base = RECIPES["basic"].with_train(precision=args.precision)
    variants = [parse_variant(text, base) for text in args.variants]
    device = pick_device(base.train.device)
    dtype = autocast_dtype(args.precision, device)
    split, src_vocab, tgt_vocab = base.load_data()
    val_loader = BatchLoader(split.val, src_vocab, tgt_vocab, 256,
                             shuffle=False)
    data = split, src_vocab, tgt_vocab, val_loader
    precision = precision_name(dtype)
    gflops = matmul_gflops(dtype or torch.float32, device=device)
    print(f"{cpu_name()}, {torch.get_num_threads()} threads, torch "
          f"{torch.__version__}; {precision}, 2048² matmul {gflops:,.0f} "
          f"GFLOP/s")
    for text in args.variants:
        print(f"  {text}")
    print()
    print("| variant | seed | epochs | steps | training s | target tokens/s "
          "| val. loss | greedy multi-ref BLEU (95 % interval) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    results = {name: [] for name, _ in variants}
    for seed in args.seeds:
        for name, recipe in variants:
            result = train_and_score(recipe, data, seed)
            results[name].append(result)
            print(row(name, seed, result), flush=True)
    print()
    first = variants[0][0]
    first_seconds = statistics.mean(r["seconds"] for r in results[first])
    for name, _ in variants:
        rs = results[name]
        seconds = statistics.mean(r["seconds"] for r in rs)
        bleu = statistics.mean(r["bleu"] for r in rs)
        loss = statistics.mean(r["val_loss"] for r in rs)
        ratio = ("" if name == first else
                 f", {seconds / first_seconds:.2f}× {first}'s seconds")
        print(f"{name}: mean over {len(rs)} seed(s): {seconds:.1f} s, "
              f"val. loss {loss:.3f}, BLEU {bleu:.1f}{ratio}")
    print(f"2048² matmul after the runs: "
          f"{matmul_gflops(dtype or torch.float32, device=device):,.0f} "
          f"GFLOP/s")


if __name__ == "__main__":
    main()
