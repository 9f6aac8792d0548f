"""Greedy decoding of 64 tokens with and without the key/value cache, on
this machine's CPU.

Run:  python benchmarks/bench_decode.py    (about half a minute on 2 cores)

The model is the translator's default size (d=256, 2+2 blocks, 4 heads,
FFN 1024) with random weights; no end-of-sequence token is used, so both
runs produce exactly 64 tokens, and the script checks that they produce the
*same* tokens before it prints the speed-up.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from transformer_lib import Transformer, TransformerConfig, greedy_decode


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--src-len", type=int, default=16)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=8000, tgt_vocab_size=8000,
                               num_hiddens=256, ffn_num_hiddens=1024,
                               num_heads=4, num_enc_blks=2, num_dec_blks=2)
    model = Transformer(config).eval()
    src = torch.randint(4, 8000, (args.batch, args.src_len))
    valid_lens = torch.randint(args.src_len // 2, args.src_len + 1,
                               (args.batch,))

    def run(use_cache):
        return greedy_decode(model, src, valid_lens, bos_id=1,
                             max_len=args.steps, use_cache=use_cache)

    same = torch.equal(run(True), run(False))  # also the warm-up
    times = {True: [], False: []}
    for _ in range(args.repeats):
        for use_cache in (True, False):
            start = time.perf_counter()
            run(use_cache)
            times[use_cache].append(time.perf_counter() - start)
    cached = statistics.median(times[True])
    full = statistics.median(times[False])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"batch {args.batch}, source length {args.src_len}, {args.steps} "
          f"greedy steps")
    print(f"{'decoder':<28} {'seconds':>8}")
    print(f"{'re-run on the whole prefix':<28} {full:8.3f}")
    print(f"{'key/value cache':<28} {cached:8.3f}")
    print(f"cache speed-up: {full / cached:.1f}x; identical tokens: {same}")
    if not same:
        raise SystemExit("cached and uncached decoding disagree")


if __name__ == "__main__":
    main()
