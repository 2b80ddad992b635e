"""A/B of kernel configurations on the GPU: each case is a public function at a benchmark shape,
timed once per variant in the same process, where a variant replaces or adds generics of one
kernel's specialisation (tilec._runtime.kernel is wrapped for the run). Every variant's outputs
must equal the first variant's byte for byte, so a configuration that changes results is
reported, not timed. Cases for bandwidth-bound functions also time torch's copy of the same number
of bytes (half read, half written): the copy ceiling at that size, beside the 1 GiB one.

Usage: python bench/ab_generics.py [--only SUBSTRING] [--json FILE] [--defaults]
"""
import argparse
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
from bench_gpu import copy_ceiling, rotated, time_fn, write_results  # noqa: E402

import torch  # noqa: E402

import tilec  # noqa: E402
import tilec.torch as R  # noqa: E402
from tilec import _runtime  # noqa: E402
from tilec.testing import count_bytes  # noqa: E402

Q = tilec.quant
M = tilec.moe
_EXTRA = {}
_orig_kernel = _runtime.kernel


def _patched_kernel(name, gens):
    extra = _EXTRA.get(name)
    if extra:
        d = dict(g.split("=", 1) for g in gens)
        d.update(extra)
        gens = tuple(f"{k}={v}" for k, v in d.items())
    return _orig_kernel(name, gens)


_runtime.kernel = _patched_kernel


def _flat(res):
    if isinstance(res, torch.Tensor):
        return [res]
    out = []
    for r in res:
        out += _flat(r) if r is not None else []
    return out


def _bytes(t):
    return t.contiguous().reshape(-1).view(torch.uint8)


def _same(a, b):
    fa, fb = _flat(a), _flat(b)
    return len(fa) == len(fb) and all(x.shape == y.shape and torch.equal(_bytes(x), _bytes(y)) for x, y in zip(fa, fb))


def sized_copy(nbytes):
    """GB/s of torch's copy moving nbytes in all (nbytes / 2 read, nbytes / 2 written)."""
    n = max(1, nbytes // 2 // 4)
    make = lambda: (torch.empty(n, device="cuda"), torch.empty(n, device="cuda"))  # noqa: E731
    inputs = rotated(make, n * 4)
    t = time_fn(lambda a, b: b.copy_(a), inputs)
    return 2 * n * 4 / t / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--json")
    ap.add_argument("--defaults", action="store_true",
                    help="each case with its default configuration only (for a kernel library given by TILEC_KERNELS)")
    args = ap.parse_args()
    ceiling = copy_ceiling()
    rows = []

    def case(title, kernel, variants, make, fn, in_bytes=None, sized=False):
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
            M._kernels.clear()
            label = " ".join(f"{k}={v}" for k, v in var.items()) or "default"
            try:
                res = fn(*sample)
                torch.cuda.synchronize()
            except Exception as e:  # a variant that does not compile or launch is reported
                print(f"{title:46s} {label:28s} failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            if ref is None:
                ref = res
            elif not _same(ref, res):
                print(f"{title:46s} {label:28s} DIFFERENT RESULTS", flush=True)
                rows.append({"function": title, "variant": label, "different": True})
                continue
            nbytes = (in_bytes(sample) if in_bytes else count_bytes(list(sample))) + count_bytes(_flat(res))
            t = time_fn(fn, inputs)
            gbs = nbytes / t / 1e6
            rows.append({"function": title, "variant": label, "bytes": nbytes, "us": t * 1e3, "GB/s": gbs,
                         "ceiling_frac": gbs / ceiling})
            print(f"{title:46s} {label:28s} {t * 1e3:8.1f} us {gbs:6.0f} GB/s {100 * gbs / ceiling:5.1f}%", flush=True)
        _EXTRA.clear()
        if sized and ref is not None:
            nbytes = (in_bytes(sample) if in_bytes else count_bytes(list(sample))) + count_bytes(_flat(ref))
            c = sized_copy(nbytes)
            rows.append({"function": title, "variant": "torch copy of the same bytes", "bytes": nbytes, "GB/s": c,
                         "ceiling_frac": c / ceiling})
            print(f"{title:46s} {'copy of the same bytes':28s}          {c:6.0f} GB/s {100 * c / ceiling:5.1f}%", flush=True)

    def randn(t, h):
        return lambda: (torch.randn((t, h), device="cuda").bfloat16(),)

    PK = dict(use_tma_aligned_col_major_sf=True, round_sf=True, use_packed_ue8m0=True)
    # per-channel cast: two passes over RB-row chunks (SH: the tile staged in shared memory)
    pc = [dict(RB=32, SH="false"), dict(RB=16, SH="false"), dict(RB=16, SH="false", BPS=3),
          dict(RB=32, SH="false", BPS=3), dict(RB=16, SH="true"), dict(RB=32, SH="true"),
          dict(RB=16, SH="true", BPS=3), dict(RB=32, SH="true", BPS=3), dict(RB=16, SH="true", BPS=4),
          dict(RB=64, SH="true"), dict(RB=16, SH="true", BK=64), dict(RB=32, SH="false", BK=64)]
    for t, h in ((16384, 7168), (4096, 2048)):
        case(f"per_channel_cast {t}x{h}", "per_channel_cast", pc, randn(t, h),
             lambda x: Q.per_channel_cast(x, "e4m3", 128, True))
    bps = [{}, dict(BPS=2), dict(BPS=3), dict(BPS=4)]
    case("per_channel_cast_and_transpose 16384x7168", "per_channel_cast_transpose", bps, randn(16384, 7168),
         lambda x: Q.per_channel_cast_and_transpose(x, "e4m3", 128, True))
    case("swiglu_fwd_per_channel_transpose 16384x2x3584", "per_channel_cast_transpose", bps + [dict(BK=64, BPS=3)],
         randn(16384, 7168), lambda x: Q.swiglu_forward_and_per_channel_cast_and_transpose(x, "e4m3", 128, True))
    case("per_block_cast e2m1 16384x7168", "per_block_cast", bps + [dict(NTH=256), dict(NTH=256, BPS=3)],
         randn(16384, 7168), lambda x: Q.per_block_cast(x, "e2m1", (128, 128), **PK))
    case("per_block_cast e4m3 16384x7168", "per_block_cast", bps, randn(16384, 7168),
         lambda x: Q.per_block_cast(x, "e4m3", (128, 128), **PK))
    case("per_block_cast_lossless 16384x7168", "per_block_cast_lossless", bps,
         lambda: (R.cast(torch.randn((16384, 7168), device="cuda"), "e2m1", (1, 32), **PK),),
         lambda x: Q.per_block_cast_lossless(x, "e4m3", (1, 32), (128, 128), **PK))
    case("per_token_cast e2m1 16384x7168", "per_token_cast", bps + [dict(BPS=6), dict(BPS=8)], randn(16384, 7168),
         lambda x: Q.per_token_cast(x, "e2m1", 32, **PK))
    case("per_token_cast e5m6 16384x7168", "per_token_cast_e5m6", bps + [dict(BPS=6)], randn(16384, 7168),
         lambda x: Q.per_token_cast(x, "e5m6", 7168, **PK))
    case("per_token_cast_back e2m1 16384x7168", "cast_back", bps + [dict(BPS=6), dict(BPS=8)],
         lambda: (R.cast(torch.randn((16384, 7168), device="cuda"), "e2m1", (1, 32), **PK),),
         lambda x: Q.per_token_cast_back(x, "bf16", 32))

    def mk_bwd(n=8192, hh=3584, k=4):
        xq = R.cast(torch.randn((n, 2 * hh), device="cuda"), "e4m3", (1, 128))
        ptt = torch.randperm(n, device="cuda").int()
        ttp = torch.empty(n, dtype=torch.int32, device="cuda")
        ttp[ptt.long()] = torch.arange(n, dtype=torch.int32, device="cuda")
        return (xq, torch.randn((n, hh), device="cuda").bfloat16(), torch.rand((n // k, k), device="cuda"), ptt,
                ttp.view(n // k, k))
    case("swiglu_backward_and_per_token_cast 8192x2x3584", "swiglu_backward_per_token_cast", bps, mk_bwd,
         lambda x, g, w, p, q: Q.swiglu_backward_and_per_token_cast(x, g, w, p, q, 128, True))

    # MoE at prefill sizes: block shapes of the expands and reduce_fused
    E_TOTAL, EP, K, H = 256, 8, 8, 7168

    def topk_idx(T, k=K, e_local=E_TOTAL // EP):
        s = torch.rand((T, E_TOTAL), device="cuda")
        idx = torch.topk(s, k, dim=-1).indices
        return torch.where(idx >= e_local, torch.full_like(idx, -1), idx).contiguous()

    def routed_rows(ttp):
        return int((ttp >= 0).any(dim=1).sum())

    for T in (4001, 16384):
        def make_map(T=T):
            p2e, _, _, ttp, *_ = M.get_fused_mapping(topk_idx(T), E_TOTAL // EP, 0, 16)
            return ttp, p2e
        exp_v = [{}, dict(BH=1792, NT=64), dict(BH=512, NT=128), dict(BH=3584, NT=224), dict(BH=1792, NT=224),
                 dict(BH=896, NT=224)]
        case(f"expand_to_fused {T}", "expand_to_fused", exp_v,
             lambda T=T: (torch.randn((T, H), device="cuda").bfloat16(), *make_map(T)), M.expand_to_fused,
             in_bytes=lambda s: count_bytes(s[1], s[2]) + routed_rows(s[1]) * H * 2, sized=True)
        exps_v = [{}, dict(BH=1792, NT=224), dict(BH=896, NT=224), dict(BH=448, NT=112), dict(BH=1792, NT=448)]
        case(f"expand_to_fused_with_sf {T}", "expand_to_fused_with_sf", exps_v,
             lambda T=T: (torch.randn((T, H), device="cuda").to(torch.float8_e4m3fn),
                          torch.rand((T, H // 128), device="cuda"), *make_map(T)),
             lambda x, s, t, p: M.expand_to_fused_with_sf((x, s), 128, t, p),
             in_bytes=lambda s: count_bytes(s[2], s[3]) + routed_rows(s[2]) * (H + H // 128 * 4), sized=True)

        def make_r(T=T, k=6):
            _, _, _, ttp, *_ = M.get_fused_mapping(topk_idx(T, k), E_TOTAL // EP, T * k, 1)
            return torch.randn((T * k, H), device="cuda").bfloat16(), torch.rand((T, k), device="cuda"), ttp
        red_v = [{}, dict(NT=224, V=2), dict(NT=224, V=1), dict(NT=448, V=2), dict(NT=112, V=4),
                 dict(NT=224, V=4, BPS=6), dict(NT=224, V=2, BPS=8)]
        case(f"reduce_fused {T}", "reduce_fused", red_v, make_r, lambda x, w, t: M.reduce_fused(x, w, t),
             in_bytes=lambda s: count_bytes(s[1], s[2]) + int((s[2] >= 0).sum()) * H * 2, sized=True)

    # mask_indices_by_tp against torch.compile of its reference (R=n/ep, NTP generics since session 11)
    c = torch.compile(lambda i: R.moe.mask_indices_by_tp(i, E_TOTAL, EP, 1, 4), dynamic=True)
    for T in (128, 4001, 16384):
        ins = [(torch.randint(-1, E_TOTAL, (T, K), device="cuda"),) for _ in range(4)]
        t_ours = time_fn(lambda i: M.mask_indices_by_tp(i, E_TOTAL, EP, 1, 4), ins)
        t_c = time_fn(c, ins)
        print(f"mask_indices_by_tp {T:6d}: tilec {t_ours * 1e3:5.2f} us, torch.compile {t_c * 1e3:5.2f} us", flush=True)
        rows.append({"function": "mask_indices_by_tp", "variant": str(T), "us": t_ours * 1e3,
                     "compile_us": t_c * 1e3})
    print(f"\ncopy ceiling (1 GiB device-to-device): {ceiling:.0f} GB/s")
    if args.json:
        write_results(args.json, ceiling, rows)


if __name__ == "__main__":
    main()
