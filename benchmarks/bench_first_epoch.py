"""Why the everyday recipe's first epoch is the slow one on a GPU: the cost
of a training step on a batch whose shape the device has not seen yet,
against the same batch again.

On an NVIDIA H100 the recipe's first epoch took 96.6 s and each of the
nine others 15.6 to 18.7 s (records/everyday-h100/README.md). Its batches
are cut by size, so they come in many shapes (B, S) x (B, T), each new to
the device somewhere in the first epoch. This times, one synchronised step
at a time, ``--batches`` batches of the first epoch whose shapes are all
new, then the same batches again (both by ``train_step`` alone, with all of
torch's fused attention kernels), then, on a GPU, as many other new shapes
with the attention kernels ``fit`` trains with, cuDNN's left out
(``attention_kernels_for_many_shapes``), and prints the mean step of each
pass and their ratios. A ratio near 1 says new shapes cost nothing; well
above 1 says they do, and the third pass says whether cuDNN's attention is
where. On that H100 (40 batches): 484.5 ms, 24.6 ms and 31.8 ms a step,
19.72x, 1.00x and 1.30x.

Run:  python benchmarks/bench_first_epoch.py [--batches 40] [--device cuda]

(about a minute on a GPU, most of it the recipe's data; the epoch has 176
shapes, so --batches can be at most 85 there (five warm up, then two sets
of new shapes). On this project's 2-core CPU a pass of 40 batches takes
over a minute: use --batches 10.)
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.translation.data import BatchLoader
from transformer_lib.translation.recipes import RECIPES
from transformer_lib.translation.training import (
    attention_kernels_for_many_shapes, autocast_dtype, learning_rate,
    make_optimizer, pick_device, train_step)


def shape_of(batch):
    return tuple(batch.src.shape), tuple(batch.tgt_in.shape)


def new_shapes(batches, seen, count):
    """The first ``count`` batches whose shapes are not in ``seen``, nor
    each other's (``seen`` grows by theirs)."""
    chosen = []
    for batch in batches:
        if len(chosen) == count:
            break
        if shape_of(batch) not in seen:
            seen.add(shape_of(batch))
            chosen.append(batch)
    if len(chosen) < count:
        raise SystemExit(f"the first epoch has {len(chosen)} batches of "
                         f"new shapes left, not {count}: lower --batches")
    return chosen


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--batches", type=int, default=40)
    args = ap.parse_args()
    recipe = RECIPES["everyday"]
    split, vocab, _ = recipe.load_data(args.data_dir)
    device = pick_device(args.device)
    dtype = autocast_dtype("auto", device)
    loader = BatchLoader(split.train, vocab, vocab, recipe.batch_size,
                         seed=recipe.train.seed,
                         max_tokens=recipe.max_tokens)
    epoch = list(loader)
    shapes = {shape_of(b) for b in epoch}
    print(f"{device}, {dtype or torch.float32}; the first epoch: "
          f"{len(epoch)} batches in {len(shapes)} shapes")
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(len(vocab), len(vocab),
                                          **recipe.model)).to(device)
    optimizer = make_optimizer(model, recipe.train)
    lr = learning_rate(recipe.train, recipe.train.warmup_steps, 0.0)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def seconds_per_step(batches):
        times = []
        for batch in batches:
            sync()
            start = time.perf_counter()
            train_step(model, batch.to(device), optimizer, lr, recipe.train,
                       dtype=dtype)
            sync()
            times.append(time.perf_counter() - start)
        return times

    seen = set()
    seconds_per_step(new_shapes(epoch, seen, 5))  # the device's first steps
    first = new_shapes(epoch, seen, args.batches)
    passes = {"new shapes": seconds_per_step(first),
              "the same again": seconds_per_step(first)}
    if device.type == "cuda":   # cuDNN's attention is a GPU kernel
        others = new_shapes(epoch, seen, args.batches)
        with attention_kernels_for_many_shapes(device):   # as fit trains
            passes["new shapes, no cuDNN attention"] = seconds_per_step(
                others)
    again = statistics.mean(passes["the same again"])
    for name, times in passes.items():
        mean = statistics.mean(times)
        print(f"{name:<32} mean {mean * 1e3:7.1f} ms a step, median "
              f"{statistics.median(times) * 1e3:7.1f} ms; "
              f"{mean / again:5.2f}x the repeated pass")
    extra = (statistics.mean(passes["new shapes"]) - again) * len(shapes)
    print(f"if each of the epoch's {len(shapes)} shapes costs that extra "
          f"once: {extra:.0f} s")


if __name__ == "__main__":
    main()
