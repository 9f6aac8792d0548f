"""The everyday recipe's first two loss points (the mean label-smoothed loss
over steps 1-10 and 11-20) on one device, for several dropout seeds and
one other initialisation seed: the spread that sets the tolerance
tests/test_published.py allows a log trained with other dropout masks (a
GPU's, whose generator is not the CPU's).

Each run builds the model from the recipe's seed (or ``--other-init``),
batches in the recipe's order, and trains 20 steps with
``TrainConfig.seed`` (dropout only) set to each of ``--dropout-seeds``.
Prints one JSON line per run and the published and GPU logs' points.

Run:  python scripts/first_losses.py [--device cuda] [--dropout-seeds 0 1]
(on an NVIDIA H100: 14 s of data, 28 s for the first run, 3 s for each
other; on this project's 2-core CPU: 10 s of data, about 15 s a run.)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.translation import (RECIPES, BatchLoader, everyday_log,
                                         fit, seed_everything)
from transformer_lib.translation.published import EVERYDAY_DIR

GPU_RUN = Path(__file__).resolve().parents[1] / "records" / "everyday-h100"


class _Enough(Exception):
    pass


def first_points(split, vocab, device, dropout_seed, init_seed):
    """The first two log points of the everyday recipe's training (fewer
    if it ends first); tests/test_published.py calls it too."""
    recipe = RECIPES["everyday"]
    seed_everything(init_seed)
    model = Transformer(TransformerConfig(len(vocab), len(vocab),
                                          **recipe.model))
    loader = BatchLoader(split.train, vocab, vocab, recipe.batch_size,
                         seed=recipe.train.seed,
                         max_tokens=recipe.max_tokens)
    config = dataclasses.replace(recipe.train, seed=dropout_seed,
                                 device=device)
    points = []

    def stop_after_two(history):
        points[:] = history.train_loss
        if len(points) >= 2:
            raise _Enough

    try:
        fit(model, loader, None, config, callback=stop_after_two,
            progress=False)
    except _Enough:
        pass
    return points[:2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--dropout-seeds", type=int, nargs="+",
                    default=[0, 1, 2, 3, 4])
    ap.add_argument("--other-init", type=int, default=1,
                    help="an initialisation seed to compare (dropout 0)")
    args = ap.parse_args()
    for name, directory in (("published", EVERYDAY_DIR),
                            ("gpu record", GPU_RUN)):
        log = everyday_log(directory)
        print(json.dumps({"log": name,
                          "device": log["machine"]["device"],
                          "points": log["history"]["train_loss"][:2]}))
    start = time.perf_counter()
    split, vocab, _ = RECIPES["everyday"].load_data()
    print(f"data: {time.perf_counter() - start:.1f} s", flush=True)
    runs = [(seed, RECIPES["everyday"].train.seed)
            for seed in args.dropout_seeds]
    runs.append((0, args.other_init))
    for dropout_seed, init_seed in runs:
        start = time.perf_counter()
        points = first_points(split, vocab, args.device, dropout_seed,
                              init_seed)
        print(json.dumps({"dropout_seed": dropout_seed,
                          "init_seed": init_seed, "points": points,
                          "seconds": round(time.perf_counter() - start, 1)}),
              flush=True)


if __name__ == "__main__":
    main()
