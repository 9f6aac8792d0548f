"""Time our MultiHeadAttention against torch.nn.MultiheadAttention on this machine's CPU.

Run:  python benchmarks/bench_attention.py        (about a minute on 2 cores)

Both modules get the same weights; each measurement is the median of several repeats, and
the two modules are timed alternately so that machine noise hits both alike.  Printed: the
time per call of each and the ratio ours / torch (< 1 means ours is faster).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from transformer_lib import MultiHeadAttention


def copy_into_torch(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        ref.out_proj.weight.copy_(ours.W_o.weight)


def median_time(fn, repeats: int, inner: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - start) / inner)
    return statistics.median(times)


def bench(B, T, D, heads, repeats, inner):
    torch.manual_seed(0)
    ours = MultiHeadAttention(D, heads)
    ref = nn.MultiheadAttention(D, heads, bias=False, batch_first=True)
    copy_into_torch(ours, ref)
    X = torch.randn(B, T, D)
    Xg = X.clone().requires_grad_(True)
    rows = []

    def case(name, fn_ours, fn_ref, grad):
        for f in (fn_ours, fn_ref):  # warm-up
            f()
        t_ours, t_ref = [], []
        for _ in range(repeats):  # interleave the two
            t_ours.append(median_time(fn_ours, 1, inner))
            t_ref.append(median_time(fn_ref, 1, inner))
        a, b = statistics.median(t_ours), statistics.median(t_ref)
        rows.append((f"B={B} T={T} D={D} h={heads}", name, a * 1e3, b * 1e3, a / b))

    for mod in (ours, ref):
        mod.eval()

    def fwd(weights):
        def o():
            with torch.no_grad():
                return ours(X, X, X, return_weights=weights)
        def r():
            with torch.no_grad():
                return ref(X, X, X, need_weights=weights, average_attn_weights=False)
        return o, r

    def fwd_bwd(weights):
        def o():
            out = ours(Xg, Xg, Xg, return_weights=weights)
            (out[0] if weights else out).sum().backward()
        def r():
            ref(Xg, Xg, Xg, need_weights=weights, average_attn_weights=False)[0].sum().backward()
        return o, r

    case("forward", *fwd(False), grad=False)
    case("forward, weights returned", *fwd(True), grad=False)
    case("forward+backward", *fwd_bwd(False), grad=True)
    case("forward+backward, weights returned", *fwd_bwd(True), grad=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    args = parser.parse_args()
    repeats = 2 if args.quick else args.repeats
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    rows = bench(32, 64, 256, 4, repeats, inner=5)
    rows += bench(32, 256, 512, 8, repeats, inner=2)
    print(f"{'size':<26} {'case':<36} {'ours ms':>9} {'torch ms':>9} {'ours/torch':>10}")
    for size, name, a, b, ratio in rows:
        print(f"{size:<26} {name:<36} {a:9.2f} {b:9.2f} {ratio:9.2f}x")


if __name__ == "__main__":
    main()
