"""Bandwidth of the quantisation and transpose kernels on the GPU: GB/s (logical bytes read +
written, spec quant-transpose.md §3.2 count_bytes) against the device-to-device copy ceiling
measured in the same run, and against torch.compile of the tilec.torch reference on the same
inputs (one shape per function by default; --full compiles every shape, which takes minutes).

Usage: python bench/bench_quant.py [--json FILE] [--full] [--no-compile]
A table is printed; --json writes the rows. Shapes: 16384x7168 and TileKernels' 8001x7168 /
8001x4096 (per-token, per-block, cast-back), 8064x7168 (per-channel), MoE-like rows for SwiGLU.
"""
import argparse
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
from bench_gpu import copy_ceiling, rotated, time_fn, write_results  # noqa: E402  (also puts dist/python on the path)

import torch  # noqa: E402

import tilec  # noqa: E402
import tilec.torch as R  # noqa: E402
from tilec.testing import count_bytes  # noqa: E402

Q = tilec.quant


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--full", action="store_true", help="torch.compile baselines at every shape")
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    ceiling = copy_ceiling()
    rows = []
    compiled = {}

    def bench(name, shape, make, ours, ref, first_shape):
        sample = make()
        res = ours(*sample)
        torch.cuda.synchronize()
        nbytes = count_bytes(list(sample)) + count_bytes(res if isinstance(res, (tuple, list)) else [res])
        inputs = rotated(make, count_bytes(list(sample)))
        t = time_fn(ours, inputs)
        tc = None
        if ref is not None and not args.no_compile and (args.full or first_shape):
            try:
                if name not in compiled:
                    compiled[name] = torch.compile(ref, dynamic=False)
                tc = time_fn(compiled[name], inputs, iters=20)
            except Exception as e:  # a baseline that does not compile is reported, not fatal
                print(f"  torch.compile failed for {name}: {type(e).__name__}: {str(e)[:120]}", file=sys.stderr)
        gbs = nbytes / t / 1e6
        row = {"function": name, "shape": shape, "bytes": nbytes, "us": t * 1e3, "GB/s": gbs,
               "ceiling_frac": gbs / ceiling, "compile_us": tc * 1e3 if tc else None,
               "compile_GB/s": nbytes / tc / 1e6 if tc else None}
        rows.append(row)
        cmp = f"  compile {tc * 1e3:8.1f} us {nbytes / tc / 1e6:6.0f} GB/s x{tc / t:4.2f}" if tc else ""
        print(f"{name:44s} {shape:28s} {t * 1e3:8.1f} us {gbs:6.0f} GB/s {100 * gbs / ceiling:5.1f}%{cmp}", flush=True)

    PK = dict(use_tma_aligned_col_major_sf=True, round_sf=True, use_packed_ue8m0=True)
    big = [(16384, 7168), (8001, 7168), (8001, 4096)]

    def randn(t, h, dt=torch.bfloat16):
        return lambda: (torch.randn((t, h), device="cuda").to(dt),)

    # per-token casts (packed UE8M0 scales, as TileKernels benchmarks)
    for fmt, n in (("e4m3", 128), ("e2m1", 32)):
        for i, (t, h) in enumerate(big):
            bench(f"per_token_cast {fmt} n={n}", f"{t}x{h} bf16", randn(t, h),
                  lambda x, f=fmt, n=n: Q.per_token_cast(x, f, n, **PK),
                  lambda x, f=fmt, n=n: R.cast(x, f, (1, n), **PK), i == 0)
    for i, (t, h) in enumerate(big[:2]):
        bench("per_token_cast e5m6", f"{t}x{h} bf16", randn(t, h), lambda x, h=h: Q.per_token_cast(x, "e5m6", h, **PK),
              lambda x, h=h: R.cast_to_e5m6(x, h, **PK), args.full and i == 0)
    for i, (t, h) in enumerate(big[:2]):
        def mk(t=t, h=h):
            return (R.cast(torch.randn((t, h), device="cuda"), "e4m3", (128, 128), **PK),)
        bench("per_token_cast e4m3(128x128)->e4m3", f"{t}x{h}", mk,
              lambda x: Q.per_token_cast(x, "e4m3", 128, x_block_size=(128, 128), **PK),
              lambda x: R.cast(x, "e4m3", (1, 128), x_block_size=(128, 128), **PK), args.full and i == 0)
    # per-block casts
    for fmt in ("e4m3", "e2m1"):
        for i, (t, h) in enumerate(big[:2]):
            bench(f"per_block_cast {fmt} 128x128", f"{t}x{h} bf16", randn(t, h),
                  lambda x, f=fmt: Q.per_block_cast(x, f, (128, 128), **PK),
                  lambda x, f=fmt: R.cast(x, f, (128, 128), **PK), i == 0)
    for i, (t, h) in enumerate(big[:2]):
        def mk(t=t, h=h):
            return (R.cast(torch.randn((t, h), device="cuda"), "e2m1", (1, 32), **PK),)
        bench("per_block_cast_lossless (1,32)->(128,128)", f"{t}x{h}", mk,
              lambda x: Q.per_block_cast_lossless(x, "e4m3", (1, 32), (128, 128), **PK), None, i == 0)
    # cast back
    for fmt, n in (("e4m3", 128), ("e2m1", 32)):
        for i, (t, h) in enumerate(big[:2]):
            def mk(t=t, h=h, fmt=fmt, n=n):
                return (R.cast(torch.randn((t, h), device="cuda"), fmt, (1, n), **PK),)
            bench(f"per_token_cast_back {fmt} -> bf16", f"{t}x{h}", mk,
                  lambda x, n=n: Q.per_token_cast_back(x, "bf16", n), lambda x, n=n: R.cast_back(x, "bf16", (1, n)),
                  i == 0)
    # per-channel
    for i, (t, h) in enumerate([(16384, 7168), (8064, 7168), (4096, 2048)]):
        bench("per_channel_cast", f"{t}x{h} bf16", randn(t, h), lambda x: Q.per_channel_cast(x, "e4m3", 128, True),
              lambda x: R.cast(x, "e4m3", (128, 1), round_sf=True), i == 0)
        bench("per_channel_cast_and_transpose npt=128", f"{t}x{h} bf16", randn(t, h),
              lambda x: Q.per_channel_cast_and_transpose(x, "e4m3", 128, True),
              lambda x: (lambda r: (r[0].T.contiguous(), r[1]))(R.cast(x, "e4m3", (128, 1), round_sf=True)), i == 0)
    # SwiGLU
    for i, (t, hh) in enumerate([(16384, 3584), (8192, 2048)]):
        bench("swiglu_forward_and_per_token_cast n=128", f"{t}x2x{hh} bf16", randn(t, 2 * hh),
              lambda x: Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, **PK),
              lambda x: R.cast(R.swiglu_forward(x), "e4m3", (1, 128), **PK), i == 0)
        bench("swiglu_forward_and_per_channel_cast_and_transpose", f"{t}x2x{hh} bf16", randn(t, 2 * hh),
              lambda x: Q.swiglu_forward_and_per_channel_cast_and_transpose(x, "e4m3", 128, True),
              lambda x: (lambda r: (r[0].T.contiguous(), r[1]))(
                  R.cast(R.swiglu_forward(x).bfloat16(), "e4m3", (128, 1), round_sf=True)), i == 0)
    # the other forms of the spec's benchmark grid (num_per_tokens 32, without_transpose), at one shape each
    bench("per_channel_cast_and_transpose npt=32", "8064x7168 bf16", randn(8064, 7168),
          lambda x: Q.per_channel_cast_and_transpose(x, "e4m3", 32, True), None, False)
    for npt, wt in ((32, False), (128, True), (32, True)):
        bench(f"swiglu_forward_and_per_channel_cast npt={npt}{' without_transpose' if wt else ''}", "8064x2x3584 bf16",
              randn(8064, 2 * 3584),
              lambda x, npt=npt, wt=wt: Q.swiglu_forward_and_per_channel_cast_and_transpose(x, "e4m3", npt, True,
                                                                                             without_transpose=wt),
              None, False)
    for i, (t, hh, k) in enumerate([(8192, 3584, 4), (4096, 2048, 8)]):
        def mk(t=t, hh=hh, k=k):
            n = t
            xq = R.cast(torch.randn((n, 2 * hh), device="cuda"), "e4m3", (1, 128))
            ptt = torch.randperm(n, device="cuda").int()
            ttp = torch.empty(n, dtype=torch.int32, device="cuda")
            ttp[ptt.long()] = torch.arange(n, dtype=torch.int32, device="cuda")
            return (xq, torch.randn((n, hh), device="cuda").bfloat16(), torch.rand((n // k, k), device="cuda"), ptt,
                    ttp.view(n // k, k))
        bench("swiglu_backward_and_per_token_cast n=128", f"{t}x2x{hh}", mk,
              lambda x, g, w, p, q: Q.swiglu_backward_and_per_token_cast(x, g, w, p, q, 128, True),
              None, i == 0)
    # transposes (1-, 2- and 4-byte elements)
    for dt in (torch.float8_e4m3fn, torch.bfloat16, torch.float32):
        for i, (m, n) in enumerate([(16384, 7168), (8064, 4096)]):
            def mk(m=m, n=n, dt=dt):
                return (torch.randn((m, n), device="cuda").to(dt),)
            bench(f"transpose {str(dt)[6:]}", f"{m}x{n}", mk, tilec.transpose.transpose,
                  R.transpose if dt != torch.float8_e4m3fn else None, i == 0)
    bench("batched_transpose bf16", "8x4032x7168", lambda: (torch.randn((8, 4032, 7168), device="cuda").bfloat16(),),
          tilec.transpose.batched_transpose, R.batched_transpose, True)
    print(f"\ncopy ceiling (device-to-device, read + write): {ceiling:.0f} GB/s")
    if args.json:
        write_results(args.json, ceiling, rows)


if __name__ == "__main__":
    main()
