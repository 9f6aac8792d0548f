"""Time our MultiHeadAttention against torch.nn.MultiheadAttention on this
machine's CPU (or a GPU: --device cuda).

Run:  python benchmarks/bench_attention.py      (about a minute on 2 cores)

Both modules get the same weights; each measurement is the median of
several repeats, and the two modules are timed alternately so that machine
noise hits both alike.  Printed: the time per call of each and the ratio
ours / torch (< 1 means ours is faster).  "weights" rows return torch's
weights (need_weights=True) and record ours (tl.record_attention).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from transformer_lib import MultiHeadAttention, record_attention


def copy_into_torch(ours: MultiHeadAttention,
                    ref: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        qkv = [ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]
        ref.in_proj_weight.copy_(torch.cat(qkv))
        ref.out_proj.weight.copy_(ours.W_o.weight)


def synchronize(device: torch.device) -> None:
    """Wait for a GPU's queued kernels, so that the clock sees them."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def seconds_per_call(fn, inner: int, device: torch.device) -> float:
    synchronize(device)
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    synchronize(device)
    return (time.perf_counter() - start) / inner


def bench(B, T, D, heads, repeats, inner, device):
    torch.manual_seed(0)
    ours = MultiHeadAttention(D, heads).eval()
    ref = nn.MultiheadAttention(D, heads, bias=False,
                                batch_first=True).eval()
    copy_into_torch(ours, ref)
    ours, ref = ours.to(device), ref.to(device)
    X = torch.randn(B, T, D, device=device)
    Xg = X.clone().requires_grad_(True)
    size = f"B={B} T={T} D={D} h={heads}"
    rows = []

    def case(name, fn_ours, fn_ref):
        fn_ours(), fn_ref()  # warm-up
        t_ours, t_ref = [], []
        for _ in range(repeats):  # interleave the two
            t_ours.append(seconds_per_call(fn_ours, inner, device))
            t_ref.append(seconds_per_call(fn_ref, inner, device))
        a, b = statistics.median(t_ours), statistics.median(t_ref)
        rows.append((size, name, a * 1e3, b * 1e3, a / b))

    def ours_call(X, weights):
        if not weights:
            return ours(X, X, X)
        with record_attention(ours):
            return ours(X, X, X)

    def ref_call(X, weights):
        return ref(X, X, X, need_weights=weights,
                   average_attn_weights=False)[0]

    for weights in (False, True):
        suffix = ", weights" if weights else ""

        @torch.no_grad()
        def fwd_ours(weights=weights):
            ours_call(X, weights)

        @torch.no_grad()
        def fwd_ref(weights=weights):
            ref_call(X, weights)

        case("forward" + suffix, fwd_ours, fwd_ref)
        case("forward+backward" + suffix,
             lambda w=weights: ours_call(Xg, w).sum().backward(),
             lambda w=weights: ref_call(Xg, w).sum().backward())
    return rows


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats (a smoke run)")
    parser.add_argument("--device", default="cpu",
                        help="cpu (default), cuda, ...")
    args = parser.parse_args()
    repeats = 2 if args.quick else args.repeats
    device = torch.device(args.device)
    where = (torch.cuda.get_device_name(device) if device.type == "cuda"
             else f"{torch.get_num_threads()} threads")
    print(f"torch {torch.__version__}, {device.type}: {where}")
    # a GPU's calls take microseconds: more of them per timing
    inner = 50 if device.type == "cuda" else 1
    rows = bench(32, 64, 256, 4, repeats, 5 * inner, device)
    rows += bench(32, 256, 512, 8, repeats, 2 * inner, device)
    print(f"{'size':<21} {'case':<25} {'ours ms':>8} {'torch ms':>8} "
          f"{'ratio':>6}")
    for size, name, a, b, ratio in rows:
        print(f"{size:<21} {name:<25} {a:8.2f} {b:8.2f} {ratio:5.2f}x")


if __name__ == "__main__":
    main()
