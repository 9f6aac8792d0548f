"""Greedy decoding of 64 tokens with and without the key/value cache, on
this machine's CPU (or a GPU: --device cuda).

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
    parser.add_argument("--device", default="cpu",
                        help="cpu (default), cuda, ...")
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=8000, tgt_vocab_size=8000,
                               num_hiddens=256, ffn_num_hiddens=1024,
                               num_heads=4, num_enc_blks=2, num_dec_blks=2)
    model = Transformer(config).eval().to(device)
    src = torch.randint(4, 8000, (args.batch, args.src_len), device=device)
    valid_lens = torch.randint(args.src_len // 2, args.src_len + 1,
                               (args.batch,), device=device)

    def run(use_cache):
        tokens = greedy_decode(model, src, valid_lens, bos_id=1,
                               max_len=args.steps, use_cache=use_cache)
        return tokens.cpu()       # waits for a GPU to finish

    same = torch.equal(run(True), run(False))  # also the warm-up
    times = {True: [], False: []}
    for _ in range(args.repeats):
        for use_cache in (True, False):
            start = time.perf_counter()
            run(use_cache)
            times[use_cache].append(time.perf_counter() - start)
    cached = statistics.median(times[True])
    full = statistics.median(times[False])
    where = (torch.cuda.get_device_name(device) if device.type == "cuda"
             else f"{torch.get_num_threads()} threads")
    print(f"torch {torch.__version__}, {device.type}: {where}; "
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
