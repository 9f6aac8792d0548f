"""Where a training step of chapter 8's translator goes, on the CPU.

Trains ``--steps`` steps of a recipe (default ``basic``, chapter 8's) on
its own batches with ``train_step``, as ``fit`` does (with its attention
kernels), after ``--warmup`` steps, and prints:

- the mean wall time of a step, without the profiler;
- one table from torch's profiler: each kind of work, its milliseconds per
  step and its share of the profiled step. An operator's own time (not
  its children's) counts once, under the first of these that applies:

    the optimizer        inside AdamW's ``step`` and ``zero_grad``
    clipping             inside ``clip_grad_norm_``
    the loss             inside ``sequence_loss``, and its backward
    matrix products      mm, addmm, bmm, baddbmm (forward and backward)
    attention            inside torch's scaled_dot_product_attention,
                         forward (its backward counts by operator)
    softmax, LayerNorm, dropout   their kernels, forward and backward
    other operators      embeddings, additions, copies, masks, ...
    outside operators    the rest of the step's wall time: Python,
                         the batch's assembly and padding, the profiler

- the ``--top`` operators by their own time, each with its kind;
- the FLOPs of a step (``torch.utils.flop_counter`` on the first measured
  batch), the GFLOP/s they make at the mean step time, and that as a
  fraction of the host's 2048² matrix product in the training precision.

Run:  python benchmarks/bench_step_profile.py [--recipe basic]
      [--steps 30] [--warmup 5] [--top 12] [--precision auto|float32]

(about a minute on the book's 2-core CPU in bf16; ``--precision float32``
is the path of a CPU without native bf16.)
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import statistics
import time
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.flop_counter import FlopCounterMode

from transformer_lib import Transformer, TransformerConfig
from transformer_lib.translation import training
from transformer_lib.translation.data import BatchLoader
from transformer_lib.translation.provenance import cpu_name, matmul_gflops
from transformer_lib.translation.recipes import RECIPES

KINDS = ["the optimizer", "clipping", "the loss", "matrix products",
         "attention", "softmax, LayerNorm, dropout", "other operators",
         "outside operators"]
# labelled ranges, by the start of their names, and what they hold
RANGES = {"Optimizer.step#": "the optimizer",
          "Optimizer.zero_grad#": "the optimizer",
          "clip_grad_norm_": "clipping", "sequence_loss": "the loss",
          "autograd::engine::evaluate_function: SmoothedCrossEntropy":
              "the loss"}
MATMUL = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
NORMS = ("softmax", "layer_norm", "dropout", "bernoulli")


def labelled(function, name):
    """``function`` inside a profiler range called ``name``."""
    def run(*args, **kwargs):
        with record_function(name):
            return function(*args, **kwargs)
    return run


def kind_of(event) -> str:
    """The kind of work an operator's own time is (see the docstring)."""
    parent, attention = event, False
    while parent is not None:
        for start, kind in RANGES.items():
            if parent.name.startswith(start):
                return kind
        attention |= ("scaled_dot_product" in parent.name
                      or "flash_attention" in parent.name)
        parent = parent.cpu_parent
    if attention:
        return "attention"
    name = event.name
    if name in MATMUL:
        return "matrix products"
    if any(word in name for word in NORMS):
        return "softmax, LayerNorm, dropout"
    return "other operators"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipe", default="basic", choices=sorted(RECIPES))
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--precision", default="auto",
                    choices=["auto", "float32"])
    args = ap.parse_args()

    recipe = RECIPES[args.recipe]
    config = recipe.with_train(device="cpu", precision=args.precision).train
    device = torch.device("cpu")
    dtype = training.autocast_dtype(config.precision, device)
    split, src_vocab, tgt_vocab = recipe.load_data(args.data_dir)
    torch.manual_seed(config.seed)
    model = Transformer(TransformerConfig(len(src_vocab), len(tgt_vocab),
                                          **recipe.model)).train()
    optimizer = training.make_optimizer(model, config)
    loader = BatchLoader(split.train, src_vocab, tgt_vocab,
                         recipe.batch_size, seed=config.seed,
                         max_tokens=recipe.max_tokens)
    batches = itertools.cycle(loader)

    def step():
        batch = next(batches)  # assembled and padded here, as in fit
        training.train_step(model, batch, optimizer, config.lr, config,
                            dtype=dtype)
        return batch

    # every step below with the attention kernels fit trains with (on a CPU
    # in bf16: torch's math kernel)
    with training.attention_kernels_for_training(device, dtype):
        for _ in range(args.warmup):
            step()
        with FlopCounterMode(display=False) as flops, \
                training.autocast(device, dtype):
            batch = next(batches)
            logits = model.logits(batch.src, batch.tgt_in,
                                  batch.src_valid_lens)
            training.sequence_loss(logits, batch.tgt_out).backward()
        optimizer.zero_grad(set_to_none=True)
        step_flops = flops.get_total_flops()
        flop_tokens = batch.num_target_tokens

        seconds, tokens = [], []
        for _ in range(args.steps):
            start = time.perf_counter()
            batch = step()
            seconds.append(time.perf_counter() - start)
            tokens.append(batch.num_target_tokens)
        mean_s = statistics.mean(seconds)

        # the profiled steps, with the loss and the clipping labelled
        patched = {(training, "sequence_loss"), (torch.nn.utils,
                                                 "clip_grad_norm_")}
        with contextlib.ExitStack() as stack:
            for owner, name in patched:
                original = getattr(owner, name)
                setattr(owner, name, labelled(original, name))
                stack.callback(setattr, owner, name, original)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                start = time.perf_counter()
                for _ in range(args.steps):
                    step()
                profiled_s = (time.perf_counter() - start) / args.steps

    own, by_operator = defaultdict(float), defaultdict(float)
    for event in prof.events():
        if event.device_type.name == "CPU" and event.name.startswith(
                "aten::"):
            kind = kind_of(event)
            own[kind] += event.self_cpu_time_total / 1e6
            by_operator[event.name, kind] += event.self_cpu_time_total / 1e6
    per_step = {kind: own[kind] / args.steps for kind in KINDS}
    per_step["outside operators"] = max(
        0.0, profiled_s - sum(per_step.values()))

    peak = matmul_gflops(dtype=dtype or torch.float32)
    achieved = step_flops / mean_s / 1e9
    print(f"{cpu_name()}, {torch.get_num_threads()} threads, torch "
          f"{torch.__version__}; recipe {args.recipe!r}, "
          f"{training.precision_name(dtype)}")
    print(f"a step: {mean_s * 1e3:.1f} ms (mean of {args.steps}, "
          f"{statistics.mean(tokens):.0f} target tokens), "
          f"{statistics.mean(tokens) / mean_s:,.0f} target tokens/s")
    print(f"profiled: {profiled_s * 1e3:.1f} ms a step\n")
    print(f"| {'work':<28} | ms a step | share |")
    print(f"| {'-' * 28} | --------: | ----: |")
    for kind in KINDS:
        print(f"| {kind:<28} | {per_step[kind] * 1e3:9.1f} | "
              f"{per_step[kind] / profiled_s:5.0%} |")
    print(f"\nthe {args.top} operators with the most time of their own:")
    top = sorted(by_operator.items(), key=lambda item: -item[1])
    for (name, kind), total in top[:args.top]:
        print(f"  {total / args.steps * 1e3:6.1f} ms  {name}  ({kind})")
    print(f"\nFLOPs of a step: {step_flops / 1e9:.2f} G "
          f"({step_flops / flop_tokens / 1e6:.1f} M a target "
          f"token); {achieved:.0f} GFLOP/s at the mean step, "
          f"{achieved / peak:.0%} of this host's 2048² matmul "
          f"({peak:.0f} GFLOP/s in {training.precision_name(dtype)})")


if __name__ == "__main__":
    main()
