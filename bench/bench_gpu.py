"""Bandwidth of tilec kernels on the GPU, next to the device-to-device copy ceiling measured in
the same run and torch.compile of the PyTorch reference on the same inputs.

GB/s = bytes moved (inputs read once + outputs written once, logical sizes) / median time.
Times: CUDA events around each call after warm-up (a spin kernel ahead of each start event hides
the host's overhead), median of many calls, inputs rotated over enough copies to exceed the L2
cache. Usage: python bench_gpu.py [--json FILE] [--quick]
"""
import argparse
import json
import os
import statistics
import sys
import time

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.environ.get("TILEC_DIST", os.path.join(_root, "dist")), "python"))

import torch  # noqa: E402

# every (flags, n) case compiles the reference lambda again; past dynamo's default limit of 8 it
# would silently fall back to eager mode and the "torch.compile" column would time eager PyTorch
for _name in ("recompile_limit", "cache_size_limit"):
    if hasattr(torch._dynamo.config, _name):
        setattr(torch._dynamo.config, _name, 256)

import tilec  # noqa: E402
from tilec import _runtime  # noqa: E402
from tilec.testing import count_bytes  # noqa: E402

L2_BYTES = 60 << 20


def patch_kernel_generics(table):
    """Wraps tilec._runtime.kernel so that a kernel named in `table` (name -> {generic: value},
    read at each call, so the caller may change it between calls) gets those generic values added
    to or replacing its wrapper's; keys with a dot are not generics and are skipped. For A/B runs
    and profiles of configurations (bench/ab_generics.py, bench/profile_one.py)."""
    orig = _runtime.kernel

    def patched(name, gens, t):
        extra = {k: v for k, v in table.get(name, {}).items() if "." not in k}
        if extra:
            d = dict(g.split("=", 1) for g in gens)
            d.update(extra)
            gens = tuple(f"{k}={v}" for k, v in d.items())
        return orig(name, gens, t)
    _runtime.kernel = patched


def time_fn(fn, inputs, iters=50, warmup=5):
    """Median ms of fn(*inputs[i % len(inputs)]) on the GPU.

    A spin kernel of about 200 us runs before each start event, so that the host has queued the
    call before the GPU reaches the event: the time is the GPU's, not the host's Python and launch
    overhead (bench/launch_overhead.py measures that). 40 us was too short for the wrappers that
    check many arguments and allocate several outputs: a call whose host time exceeds the spin
    is timed at its host time (SwiGLU backward at 4096 x 2 x 2048: 140 us for a ~25 us kernel)."""
    for i in range(warmup):
        fn(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    ts = []
    for i in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        args = inputs[i % len(inputs)]
        torch.cuda._sleep(400_000)
        a.record()
        fn(*args)
        b.record()
        ts.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(x.elapsed_time(y) for x, y in ts)


def warm_gpu():
    """About 20 ms of spinning before a function is timed. The torch.compile baselines keep the
    GPU idle for seconds while they compile; the clocks then drop, and the first few ms of the
    next timing (50 calls of a few us each fit in them) ran slow: 128-token normalize_weight and
    group_count measured 15 us right after a compile, 4-6 us elsewhere."""
    torch.cuda._sleep(40_000_000)
    torch.cuda.synchronize()


def compiled(fn):
    """torch.compile of a reference (dynamic shapes), or None where inductor is missing."""
    try:
        return torch.compile(fn, dynamic=True)
    except Exception as e:  # no inductor on this install: reported as missing
        print(f"torch.compile unavailable: {e}", file=sys.stderr)
        return None


def timed_row(name, T, inputs, ours, refn, comp, nbytes, ceiling, bound, ref_iters=10):
    """One benchmark row: ours, the eager reference and torch.compile of it (comp None: not
    timed) on the same rotated inputs, after warm_gpu; a baseline that fails is reported on
    stderr and left None. GB/s from nbytes; the fraction of the copy ceiling where `bound`."""
    warm_gpu()
    t_ours = time_fn(ours, inputs)
    t_ref = t_comp = None
    try:
        t_ref = time_fn(refn, inputs, iters=ref_iters, warmup=2)
    except Exception as e:
        print(f"{name} T={T}: reference failed: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
    if comp is not None:
        try:
            t_comp = time_fn(comp, inputs, iters=20, warmup=3)
        except Exception as e:  # a baseline that does not compile is reported, not fatal
            print(f"{name} T={T}: torch.compile failed: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
    gbs = nbytes / t_ours / 1e6
    return {"function": name, "tokens": T, "bytes": nbytes, "us": t_ours * 1e3, "GB/s": gbs,
            "ceiling_frac": gbs / ceiling if bound else None,
            "ref_us": t_ref * 1e3 if t_ref else None, "compile_us": t_comp * 1e3 if t_comp else None}


def print_row(row, label):
    """A row as the family benchmarks print it: `label` (name and sizes), time, GB/s, the fraction
    of the ceiling, the reference's and torch.compile's times."""
    frac = f"{100 * row['ceiling_frac']:5.1f}%" if row["ceiling_frac"] is not None else "      "
    print(f"{label} {row['us']:9.1f} us {row['GB/s']:8.0f} GB/s {frac}"
          f"   ref {row['ref_us'] or float('nan'):9.1f} us   compile {row['compile_us'] or float('nan'):9.1f} us",
          flush=True)


def write_results(path, ceiling, rows):
    """The run as JSON (bench/tables.py and bench/plot_performance.py read it)."""
    with open(path, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "device": torch.cuda.get_device_name(),
                   "copy_ceiling_GBps": ceiling, "rows": rows}, f, indent=1)


def rotated(make, nbytes):
    """Enough independent input sets that consecutive calls miss in L2."""
    n = max(1, min(16, (4 * L2_BYTES) // max(nbytes, 1) + 1))
    return [make() for _ in range(n)]


def copy_ceiling():
    n = (1 << 30) // 4
    a = torch.randn(n, device="cuda")
    b = torch.empty_like(a)
    ms = time_fn(lambda x, y: y.copy_(x), [(a, b)], iters=30)
    return 2 * a.numel() * 4 / ms / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile baselines")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    ceiling = copy_ceiling()
    rows = []

    def bench(name, shape_desc, make, ours, ref, out_bytes_of):
        sample = make()
        res = ours(*sample)
        nbytes = count_bytes(*sample) + out_bytes_of(res)
        inputs = rotated(make, count_bytes(*sample))
        t_ours = time_fn(ours, inputs)
        t_ref = None
        if ref is not None and not args.no_compile:
            try:
                t_ref = time_fn(ref, inputs)
            except Exception as e:  # a baseline that fails to compile is reported, not fatal
                print(f"torch.compile failed for {name} {shape_desc}: {e}", file=sys.stderr)
        gbs = nbytes / t_ours / 1e6
        row = {"function": name, "shape": shape_desc, "bytes": nbytes, "ms": t_ours, "GB/s": gbs,
               "ceiling_frac": gbs / ceiling, "compile_ms": t_ref,
               "compile_GB/s": nbytes / t_ref / 1e6 if t_ref else None}
        rows.append(row)
        print(f"{name:28s} {shape_desc:22s} {t_ours*1e3:9.1f} us {gbs:8.0f} GB/s {100*gbs/ceiling:5.1f}%"
              + (f"  torch.compile {t_ref*1e3:9.1f} us {nbytes/t_ref/1e6:8.0f} GB/s" if t_ref else ""), flush=True)

    # transposes
    tr_ref = torch.compile(lambda x: x.T.contiguous(), dynamic=False)
    btr_ref = torch.compile(lambda x: x.transpose(1, 2).contiguous(), dynamic=False)
    shapes = [(8064, 7168), (16384, 7168)] if args.quick else [(4032, 2048), (8064, 4096), (8064, 7168), (16384, 7168)]
    for dt in (torch.bfloat16, torch.float32, torch.float8_e4m3fn):
        for m, n in shapes:
            def make(m=m, n=n, dt=dt):
                v = torch.randn((m, n), device="cuda")
                return (v.to(dt),)
            bench("transpose", f"{m}x{n} {str(dt)[6:]}", make, tilec.transpose.transpose,
                  tr_ref if dt != torch.float8_e4m3fn else None, lambda r: count_bytes(r))
    for b, m, n in ([(8, 4032, 7168)] if args.quick else [(8, 4032, 7168), (32, 4032, 2048)]):
        def make(b=b, m=m, n=n):
            return (torch.randn((b, m, n), device="cuda").bfloat16(),)
        bench("batched_transpose", f"{b}x{m}x{n} bf16", make, tilec.transpose.batched_transpose, btr_ref,
              lambda r: count_bytes(r))
    # per-token cast (e4m3, packed UE8M0 scales as TileKernels benchmarks, and f32 scales)
    from tilec.torch import cast
    qshapes = [(16384, 7168), (8001, 7168)] if args.quick else [(4001, 2048), (8001, 4096), (8001, 7168), (16384, 7168)]
    for flags in ((True, True, True), (False, True, False)):
        col, rnd, packed = flags
        for n in (128,) if args.quick else (128, 32):
            ref = torch.compile(lambda x, n=n: cast(x, "e4m3", (1, n), round_sf=rnd, use_tma_aligned_col_major_sf=col,
                                                    use_packed_ue8m0=packed), dynamic=False)
            for t, h in qshapes:
                def make(t=t, h=h):
                    return (torch.randn((t, h), device="cuda").bfloat16(),)
                ours = lambda x, n=n: tilec.quant.per_token_cast(x, "e4m3", n, use_tma_aligned_col_major_sf=col,
                                                                 round_sf=rnd, use_packed_ue8m0=packed)
                bench(f"per_token_cast{'_packed' if packed else ''}", f"{t}x{h} n={n}", make, ours, ref,
                      lambda r: count_bytes(r))
    print(f"\ncopy ceiling (device-to-device, read+write): {ceiling:.0f} GB/s")
    if args.json:
        write_results(args.json, ceiling, rows)


if __name__ == "__main__":
    main()
