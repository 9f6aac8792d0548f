"""What the `full` recipe (all 167,130 pairs, d=512, 4+4 blocks, FFN 2048,
batch 256) needs in memory, measured on the CPU: the growth of this
process's peak resident memory over the first training step on the worst
batch (the 256 longest pairs) -- activations, gradients and AdamW's state
-- plus the weights.  fp32 throughout; on a GPU with mixed precision the
activations take less, and the CUDA context adds about half a GB.

Run:  python benchmarks/full_memory.py --data-dir ../shared/data  (~1 min)
"""

from __future__ import annotations

import argparse
import resource

import torch

from transformer_lib.translation.data import BatchLoader
from transformer_lib.model import Transformer, TransformerConfig
from transformer_lib.translation.recipes import RECIPES
from transformer_lib.translation.training import sequence_loss


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    recipe = RECIPES["full"]
    split, src_vocab, tgt_vocab = recipe.load_data(args.data_dir)
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(len(src_vocab), len(tgt_vocab),
                                          **recipe.model))
    n = model.num_parameters()
    by_length = sorted(split.train, key=lambda p: len(p[0]) + len(p[1]))
    longest = by_length[-recipe.batch_size:]
    batch = next(iter(BatchLoader(longest, src_vocab, tgt_vocab,
                                  recipe.batch_size, shuffle=False)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    before = peak_mb()
    logits = model(batch.src, batch.tgt_in, batch.src_valid_lens)
    loss = sequence_loss(logits, batch.tgt_out)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    growth = peak_mb() - before
    weights = n * 4 / 2**20
    print(f"full: {len(split.train):,} training pairs, vocabularies "
          f"{len(src_vocab):,} / {len(tgt_vocab):,}")
    print(f"parameters: {n:,} ({weights:,.0f} MB in fp32; gradients and "
          f"AdamW's two moments add {3 * weights:,.0f} MB)")
    print(f"worst batch: {tuple(batch.src.shape)} source, "
          f"{tuple(batch.tgt_in.shape)} target ids; peak growth over the "
          f"first training step: {growth:,.0f} MB")
    print(f"total: about {(weights + growth) / 1024:.1f} GB (+ ~0.5 GB CUDA "
          f"context on a GPU)")


if __name__ == "__main__":
    main()
