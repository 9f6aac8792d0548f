"""torch's fused attention on the CPU: its flash kernel against its math
kernel, forward and backward, in bf16 and in float32.

``F.scaled_dot_product_attention`` picks a kernel by itself; on a CPU it
takes the flash kernel when it can (no dropout on the weights) and the
math kernel (the formula, one operator at a time) otherwise.  This script
times both, forced with ``torch.nn.attention.sdpa_kernel``, on the shapes
of chapter 8's batches (4 heads of width 64; ``B x T`` about 1,000 to
2,000 tokens), with a causal mask and with a boolean padding mask, and
prints each time and the ratio flash / math.  ``fit`` trains with the
math kernel on a CPU in bf16 (``attention_kernel_for_cpu_bf16``).

Run:  python benchmarks/bench_sdpa_kernels.py [--repeats 30]   # ~20 s
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from transformer_lib.translation.provenance import cpu_name, matmul_gflops
from transformer_lib.translation.training import precision_name

SHAPES = [(128, 8), (128, 16), (64, 32), (32, 64), (16, 128)]  # (B, T)
HEADS, D_K = 4, 64


def seconds(function, repeats: int) -> float:
    """The median of ``repeats`` calls after three warm-up calls."""
    for _ in range(3):
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def forward_backward(kernel, q, k, v, mask):
    def run():
        with sdpa_kernel([kernel]):
            if mask is None:
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out.sum().backward()
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    print(f"{cpu_name()}, {torch.get_num_threads()} threads, torch "
          f"{torch.__version__}; 2048² matmul "
          f"{matmul_gflops(torch.bfloat16):,.0f} bf16 / "
          f"{matmul_gflops(torch.float32):,.0f} fp32 GFLOP/s\n")
    print("| dtype | B x T | mask | flash ms | math ms | flash / math |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for dtype in (torch.bfloat16, torch.float32):
        for B, T in SHAPES:
            q, k, v = (torch.randn(B, HEADS, T, D_K, dtype=dtype,
                                   requires_grad=True) for _ in range(3))
            padding = torch.ones(B, 1, T, T, dtype=torch.bool)
            padding[:, :, :, T - T // 4:] = False   # the last quarter
            for name, mask in [("causal", None), ("padding", padding)]:
                flash, math = (seconds(forward_backward(kernel, q, k, v,
                                                        mask), args.repeats)
                               for kernel in (SDPBackend.FLASH_ATTENTION,
                                              SDPBackend.MATH))
                print(f"| {precision_name(dtype)} | {B} x {T} | {name} "
                      f"| {1000 * flash:.2f} | {1000 * math:.2f} "
                      f"| {flash / math:.2f}× |")


if __name__ == "__main__":
    main()
