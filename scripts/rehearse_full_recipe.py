"""Chapter 8's GPU branch, stepped on the CPU: the ``full`` recipe.

On a GPU, chapter 8 trains the ``full`` recipe (all 167,130 pairs, the
paper's base widths) under a time budget.  This script takes the same
library path on the CPU, with a budget of seconds instead of minutes: all
pairs loaded and split, the word vocabularies and the batches built, the
full-size model trained until the budget ends (a few steps), its loss on
some validation pairs, and greedy translations of a few test sources
scored with BLEU.  It prints what each part took and the process's peak
memory; with ``--json``, one JSON line of the same.  (The chapter's own
cells take that branch on the CPU too, in many more minutes:
``scripts/run_chapters.py 08 --set RECIPE='"full"' --set GPU_MINUTES=1``.)

Run:  python scripts/rehearse_full_recipe.py [--seconds 20] [--sources 5]
                                             [--json]

What it cannot show: the GPU's own speed and memory, and float16 with loss
scaling on CUDA (tests/test_float16.py rehearses that on the CPU with a
tiny model).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time

import torch

import transformer_lib as tl
from transformer_lib.translation import (
    RECIPES, BatchLoader, autocast_dtype, evaluate_bleu, fit, precision_name)

# of the recipe's validation split: all of it takes minutes on a CPU
VALIDATION_PAIRS = 256


def peak_memory_mb() -> float:
    """The process's peak resident memory so far, in MB (Linux reports
    KB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2 ** 20 if sys.platform == "darwin" else 2 ** 10)


def rehearse(seconds: float, sources: int) -> dict:
    """Chapter 8's GPU branch on the CPU, ``seconds`` of training."""
    timings = {}
    started = time.perf_counter()
    # what chapter 8 runs on a GPU, with GPU_MINUTES * 60 seconds of
    # training (and the loss logged at every step: there are few)
    recipe = RECIPES["full"].with_train(
        max_seconds=seconds, seed=0, device="cpu", log_every=1
    ).for_precision()
    split, src_vocab, tgt_vocab = recipe.load_data()
    timings["data"] = time.perf_counter() - started
    torch.manual_seed(0)
    model = tl.Transformer(tl.TransformerConfig(
        len(src_vocab), len(tgt_vocab), **recipe.model))
    train_loader = BatchLoader(split.train, src_vocab, tgt_vocab,
                               recipe.batch_size, seed=0)
    val_loader = BatchLoader(split.val[:VALIDATION_PAIRS], src_vocab,
                             tgt_vocab, 256, shuffle=False)
    t0 = time.perf_counter()
    history = fit(model, train_loader, val_loader, recipe.train,
                  progress=False)
    timings["training and validation"] = time.perf_counter() - t0
    val_loss = history.validation[-1].loss   # fit's, at the budget's end
    t0 = time.perf_counter()
    scores = evaluate_bleu(model, split.test[:sources], src_vocab,
                           tgt_vocab)
    timings["evaluation"] = time.perf_counter() - t0
    dtype = autocast_dtype(recipe.train.precision, torch.device("cpu"))
    return {
        "recipe": "full", "model": recipe.model,
        "batch_size": recipe.batch_size,
        "pairs": {"train": len(split.train), "val": len(split.val),
                  "test sources": len(split.test)},
        "vocabulary": {"source": len(src_vocab), "target": len(tgt_vocab)},
        "parameters": sum(p.numel() for p in model.parameters()),
        "precision": precision_name(dtype),
        "budget_seconds": seconds, "steps": history.steps_done,
        "steps_per_epoch": len(train_loader),
        "train_seconds": history.train_seconds,
        "train_loss": history.train_loss, "val_loss": val_loss,
        "bleu": {"sources": sources, "single": scores.single,
                 "multi": scores.multi},
        "translations": scores.hypotheses,
        "seconds": timings, "peak_memory_mb": peak_memory_mb(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="training budget, as chapter 8's "
                             "GPU_MINUTES * 60 (default 20)")
    parser.add_argument("--sources", type=int, default=5,
                        help="test sources translated and scored "
                             "(default 5)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON line")
    args = parser.parse_args(argv)
    if not (args.seconds > 0 and math.isfinite(args.seconds)):
        parser.error(f"--seconds must be a positive number, "
                     f"got {args.seconds}")
    if args.sources < 1:
        parser.error(f"--sources must be at least 1, got {args.sources}")
    result = rehearse(args.seconds, args.sources)
    if args.json:
        print(json.dumps(result))
        return 0
    losses = [round(x, 3) for x in result["train_loss"]]
    print(f"full recipe: {result['pairs']} pairs, vocabularies "
          f"{result['vocabulary']}, {result['parameters']:,} parameters, "
          f"batches of {result['batch_size']}")
    print(f"trained {result['steps']} of {result['steps_per_epoch']} steps "
          f"an epoch in {result['train_seconds']:.1f} s "
          f"({result['precision']}); losses {losses}; validation loss "
          f"{result['val_loss']:.3f} on {VALIDATION_PAIRS} pairs")
    print(f"BLEU on {args.sources} test sources: "
          f"{result['bleu']['single']:.1f} single, "
          f"{result['bleu']['multi']:.1f} multi; first translation: "
          f"{result['translations'][0][:60]!r}")
    print("seconds:", {k: round(v, 1) for k, v in result["seconds"].items()})
    print(f"peak memory: {result['peak_memory_mb']:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
