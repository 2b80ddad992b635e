"""GPU time (CUDA events, a spin kernel queued ahead, as bench_gpu.py measures) of calls that do
almost nothing, to separate launch cost from kernel work: a tilec kernel on 8 indices
(mask_indices_by_tp), torch's eager neg on 8 elements, and torch.compile (inductor, a Triton
kernel) of neg and of the mask_indices_by_tp reference on the same 8 indices.

Usage: python bench/launch_gpu_time.py"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import time_fn  # noqa: E402

import torch  # noqa: E402

import tilec  # noqa: E402
import tilec.torch as R  # noqa: E402


def main():
    idx = torch.randint(-1, 256, (1, 8), device="cuda")
    x = torch.randn(8, device="cuda")
    neg_c = torch.compile(lambda t: -t)
    mask_c = torch.compile(lambda i: R.moe.mask_indices_by_tp(i, 256, 8, 1, 4))
    calls = {
        "tilec mask_indices_by_tp, 8 indices": (lambda: tilec.moe.mask_indices_by_tp(idx, 256, 8, 1, 4)),
        "torch neg (eager), 8 elements": (lambda: torch.neg(x)),
        "torch.compile neg, 8 elements": (lambda: neg_c(x)),
        "torch.compile mask_indices_by_tp reference, 8 indices": (lambda: mask_c(idx)),
    }
    for f in calls.values():
        f()
    for rep in range(2):
        for name, f in calls.items():
            torch.cuda._sleep(40_000_000)
            t = time_fn(f, [()], iters=200)
            print(f"{name:56s} {t * 1e3:6.2f} us", flush=True)


if __name__ == "__main__":
    main()
