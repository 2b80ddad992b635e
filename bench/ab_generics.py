"""A/B of kernel configurations on the GPU: each case is a public function at a benchmark shape,
timed once per variant in the same process, where a variant replaces or adds generics of one
kernel's specialisation (tilec._runtime.kernel is wrapped for the run). Every variant's outputs
must equal the first variant's byte for byte, so a configuration that changes results is
reported, not timed. Cases for bandwidth-bound functions also time torch's copy of the same number
of bytes (half read, half written): the copy ceiling at that size, beside the 1 GiB one.

Usage: python bench/ab_generics.py [--only SUBSTRING] [--json FILE] [--defaults]
"""
import argparse
import importlib
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
from bench_gpu import copy_ceiling, patch_kernel_generics, rotated, time_fn, write_results  # noqa: E402

import torch  # noqa: E402

import tilec  # noqa: E402
import tilec.torch  # noqa: E402,F401
from tilec.testing import count_bytes  # noqa: E402

Q = tilec.quant
M = tilec.moe
_EXTRA = {}


def _set_module_attrs(var):
    """Variant keys with a dot ("tilec.quant.common.USE_SILU_LUT") set that module attribute for
    the variant; returns the old values, for restoring."""
    old = {}
    for key, val in var.items():
        if "." in key:
            mod, attr = key.rsplit(".", 1)
            m = importlib.import_module(mod)
            old[key] = getattr(m, attr)
            setattr(m, attr, val)
    return old


patch_kernel_generics(_EXTRA)


def _flat(res):
    if isinstance(res, torch.Tensor):
        return [res]
    out = []
    for r in res:
        out += _flat(r) if r is not None else []
    return out


def _bytes(t):
    return t.contiguous().reshape(-1).view(torch.uint8)


def _same(a, b, sums_rtol=0.0):
    """Byte equality of every output; with sums_rtol, f32 outputs (sums of atomics, whose order
    follows the tiling) may differ by that fraction of their largest magnitude instead (sums
    that cancel to near zero have no relative accuracy)."""
    fa, fb = _flat(a), _flat(b)

    def eq(x, y):
        if sums_rtol and x.dtype == torch.float32:
            return torch.allclose(x, y, rtol=0.0, atol=sums_rtol * float(x.abs().max()))
        return torch.equal(_bytes(x), _bytes(y))
    return len(fa) == len(fb) and all(x.shape == y.shape and eq(x, y) for x, y in zip(fa, fb))


def sized_copy(nbytes):
    """GB/s of torch's copy moving nbytes in all (nbytes / 2 read, nbytes / 2 written)."""
    n = max(1, nbytes // 2 // 4)
    make = lambda: (torch.empty(n, device="cuda"), torch.empty(n, device="cuda"))  # noqa: E731
    inputs = rotated(make, n * 4)
    t = time_fn(lambda a, b: b.copy_(a), inputs)
    return 2 * n * 4 / t / 1e6


def cases(case, randn, PK):
    """The cases last measured (H200, 2026-12-01): the small transposes with more resident blocks
    (Nsight Compute, `scripts/gpu_ncu.sh transpose_f32_small:...` on the same date: the 4032 x 2048
    f32 transpose's 64 x 64 tiles held 5 blocks of 256 threads per SM, limited by 48 registers,
    51 % achieved occupancy, against torch.compile's 32 x 32 tiles of 128 threads at 85 %), each
    beside torch.compile of the reference in the same process. Every output compared byte for byte
    within each run. The cases measured before are in this file's git history; what they found is
    in docs/performance.md ("Tried and not kept", "History")."""
    T = tilec.transpose
    tr = torch.compile(lambda x: x.T.contiguous(), dynamic=False)
    btr = torch.compile(lambda x: x.transpose(1, 2).contiguous(), dynamic=False)
    for m, n in ((4032, 2048), (4032, 1024)):
        case(f"transpose {m}x{n} f32", "batched_transpose",
             [{}, {"BPS": 8}, {"BX": 32, "BY": 64, "BPS": 8}, {"BX": 32, "BY": 32, "NTH": 128, "BPS": 16},
              {"BX": 64, "BY": 64, "NTH": 128, "BPS": 16}, {"BX": 32, "BY": 64, "NTH": 128, "BPS": 16},
              {"BX": 64, "BY": 32, "NTH": 128, "BPS": 16}],
             lambda m=m, n=n: (torch.randn((m, n), device="cuda"),), T.transpose, baseline=tr)
    case("transpose 4032x2048 bf16", "batched_transpose",
         [{}, {"BPS": 8}, {"NTH": 128, "BPS": 16}, {"BX": 32, "BY": 64, "NTH": 128, "BPS": 16}],
         lambda: (torch.randn((4032, 2048), device="cuda").bfloat16(),), T.transpose, baseline=tr)
    case("batched_transpose 32x4032x2048 bf16", "batched_transpose", [{}, {"BPS": 4}, {"NTH": 256, "BPS": 8}],
         lambda: (torch.randn((32, 4032, 2048), device="cuda").bfloat16(),), T.batched_transpose, baseline=btr)
    case("transpose 16384x7168 f32", "batched_transpose", [{}, {"BPS": 8}],
         lambda: (torch.randn((16384, 7168), device="cuda"),), T.transpose, baseline=tr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--json")
    ap.add_argument("--defaults", action="store_true",
                    help="each case with its default configuration only (for a kernel library given by TILEC_KERNELS)")
    args = ap.parse_args()
    ceiling = copy_ceiling()
    rows = []

    def record(title, label, nbytes, t):
        gbs = nbytes / t / 1e6
        rows.append({"function": title, "variant": label, "bytes": nbytes, "us": t * 1e3, "GB/s": gbs,
                     "ceiling_frac": gbs / ceiling})
        print(f"{title:46s} {label:28s} {t * 1e3:8.1f} us {gbs:6.0f} GB/s {100 * gbs / ceiling:5.1f}%", flush=True)

    def case(title, kernel, variants, make, fn, in_bytes=None, sized=False, sums_rtol=0.0, baseline=None):
        if args.only and args.only not in title:
            return
        if args.defaults:
            variants = [{}]
        sample = make()
        inputs = rotated(make, count_bytes(list(sample)))
        ref = None
        for var in variants:
            _EXTRA.clear()
            _EXTRA[kernel] = var
            label = " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in var.items()) or "default"
            saved = _set_module_attrs(var)
            try:
                res = fn(*sample)
                torch.cuda.synchronize()
            except Exception as e:  # a variant that does not compile or launch is reported
                print(f"{title:46s} {label:28s} failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
                _set_module_attrs(saved)
                continue
            if ref is None:
                ref = res
            elif not _same(ref, res, sums_rtol):
                print(f"{title:46s} {label:28s} DIFFERENT RESULTS", flush=True)
                rows.append({"function": title, "variant": label, "different": True})
                _set_module_attrs(saved)
                continue
            nbytes = (in_bytes(sample) if in_bytes else count_bytes(list(sample))) + count_bytes(_flat(res))
            t = time_fn(fn, inputs)
            _set_module_attrs(saved)
            record(title, label, nbytes, t)
        _EXTRA.clear()
        if ref is None:
            return
        nbytes = (in_bytes(sample) if in_bytes else count_bytes(list(sample))) + count_bytes(_flat(ref))
        if baseline is not None:
            record(title, "torch.compile", nbytes, time_fn(baseline, inputs))
        if sized:
            c = sized_copy(nbytes)
            rows.append({"function": title, "variant": "torch copy of the same bytes", "bytes": nbytes, "GB/s": c,
                         "ceiling_frac": c / ceiling})
            print(f"{title:46s} {'copy of the same bytes':28s}          {c:6.0f} GB/s {100 * c / ceiling:5.1f}%", flush=True)

    def randn(t, h):
        return lambda: (torch.randn((t, h), device="cuda").bfloat16(),)

    PK = dict(use_tma_aligned_col_major_sf=True, round_sf=True, use_packed_ue8m0=True)
    cases(case, randn, PK)
    print(f"\ncopy ceiling (1 GiB device-to-device): {ceiling:.0f} GB/s")
    if args.json:
        write_results(args.json, ceiling, rows)


if __name__ == "__main__":
    main()
