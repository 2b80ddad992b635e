"""Host time of every public function of tilec.quant, tilec.transpose, tilec.moe, tilec.engram
and tilec.modeling.mhc.ops at decode sizes (1 and 128 tokens by default): the whole Python call
(argument checks, shape derivations, output allocation, the kernel lookup, the launch's argument
marshalling and validation, the driver's launch call), per call, next to torch.add on the same
tensors in the same run.

Two ways to run it:

* On a CUDA machine (torch with CUDA, a GPU): CUDA tensors, the real driver. Each repetition is
  ``--batch`` asynchronous calls after a synchronisation (fewer than the driver's launch queue
  holds, so that a launch never waits for the GPU); the figure is the wall time per call, the
  median of ``--reps`` repetitions. torch.add(x, x) on the function's first tensor is the
  baseline (a launch through torch's dispatcher and caching allocator).

* Without a GPU (``--fake``, the default when torch has no CUDA): the runtime's test double of the
  driver (tests/runtime/fake_cuda.c, built as build/tests/runtime/libfake_cuda.so, loaded through
  TILEC_LIBCUDA) stands in for libcuda. torch's CPU tensors play the device tensors: the shipped
  library's runtime for the CPU key is a runtime over the stand-in driver (``device_key=-1``), so
  kernels are compiled for sm_90 as on an H200 and launched with ``cuLaunchKernel``, which the
  stand-in answers after checking the parameter count and grid (no kernel runs). What this
  includes: every line of the Python call, torch's allocation of the outputs (CPU allocator, not
  CUDA's caching allocator), the _native marshalling, the runtime's validation and binding, and
  the call into the driver. What it does not include: the real driver's own cost of cuLaunchKernel
  (the CUDA run includes it), torch's CUDA caching allocator (a CPU allocation costs about
  the same), the current-stream query (0 on the CPU), and the GPU's time. The baselines are
  torch.add(x, x) on the same CPU tensor (it also computes the sum on the CPU, shape noted per
  row; float8 tensors are added as uint8) and torch.add of one-element tensors (torch's dispatch
  and output allocation with almost no arithmetic: its host floor per operation).

Usage: python bench/host_overhead.py [--fake [LIB]] [--tokens 1,128] [--reps 7] [--batch 300]
           [--only NAME,...] [--json FILE] [--profile NAME]
Over the stand-in driver the clock is the thread's CPU time (time.thread_time: nothing waits for a
device, and a shared machine's other processes are not counted); on CUDA the wall time.
Columns: "full" is the call with argument plans turned off (every check and derivation in
Python, as before plans), "plan" the call as it runs from the third call of a shape on (the
replay of tilec._plan), both in the same run; then torch.add on the same tensor, and on
one-element tensors. (--profile runs cProfile over the calls of one function.)
"""
import argparse
import json
import os
import statistics
import sys
import time

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def _path():
    """The tilec package: $TILEC_BUILD_PYTHON, else build/python, else dist/python."""
    for cand in (os.environ.get("TILEC_BUILD_PYTHON"), os.path.join(_root, "build", "python"),
                 os.path.join(os.environ.get("TILEC_DIST", os.path.join(_root, "dist")), "python")):
        if cand and os.path.isdir(os.path.join(cand, "tilec")):
            return cand
    return os.path.join(_root, "dist", "python")


sys.path.insert(0, _path())

import torch  # noqa: E402

E_TOTAL, EP, K, H = 256, 8, 8, 7168
M = 4


def use_fake_driver(lib):
    """The shipped library's CPU runtime becomes one over the stand-in driver, taking CPU tensors."""
    os.environ["TILEC_LIBCUDA"] = lib
    os.environ.setdefault("TILEC_CACHE_DIR", os.path.join(_root, "build", "bench-host-cache"))
    from tilec import _native, _runtime
    _runtime._runtimes[_runtime.CPU] = _native.Runtime(cache_dir=os.environ["TILEC_CACHE_DIR"], device=0,
                                                       device_key=_runtime.CPU)


def cases(T, dev):
    """(name, function, args, kwargs) of every public function at T tokens."""
    import tilec
    import tilec.torch as R
    from tilec.torch import engram as RE
    Q, MO, EG, moe, TR = tilec.quant, tilec.modeling.mhc.ops, tilec.engram, tilec.moe, tilec.transpose
    g = torch.Generator().manual_seed(T)

    def bf(*s):
        return torch.randn(s, generator=g).bfloat16().to(dev)

    def f32(*s):
        return torch.randn(s, generator=g).to(dev)

    def q(t, h, fmt="e4m3", n=128, **kw):
        d, s = R.cast(torch.randn((t, h), generator=g), fmt, (1, n), **kw)
        return d.to(dev), s.to(dev)

    def local_idx(t, k=K, e=E_TOTAL // EP):
        idx = torch.rand((t, E_TOTAL), generator=g).topk(k, dim=-1).indices
        return torch.where(idx >= e, torch.full_like(idx, -1), idx).contiguous().to(dev)

    E = E_TOTAL // EP
    idx = local_idx(T)
    n_slots = T * K + E * 15
    m = R.get_fused_mapping(idx.cpu(), E, n_slots, 16)
    p2e, ptt, ttp = m[0].to(dev), m[2].to(dev), m[3].to(dev)
    TC = 128   # the per-channel casts group tokens by 128: one group at decode
    PK = dict(use_tma_aligned_col_major_sf=True, round_sf=True, use_packed_ue8m0=True)
    c = [
        ("quant.per_token_cast", Q.per_token_cast, (bf(T, H), "e4m3", 128), {}),
        ("quant.per_token_cast packed", Q.per_token_cast, (bf(T, H), "e4m3", 128), PK),
        ("quant.per_token_cast_with_sf_only", Q.per_token_cast_with_sf_only, (bf(T, H), "e4m3", 128), {}),
        ("quant.per_token_cast_with_precomputed_sf", Q.per_token_cast_with_precomputed_sf,
         (bf(T, H), "e4m3", 128, torch.ones(T, H // 128, device=dev)), {}),
        ("quant.per_block_cast", Q.per_block_cast, (bf(T, H), "e4m3", (128, 128)), {}),
        ("quant.per_block_cast_with_sf_only", Q.per_block_cast_with_sf_only, (bf(T, H), "e4m3", (128, 128)), {}),
        ("quant.per_block_cast_with_precomputed_sf", Q.per_block_cast_with_precomputed_sf,
         (bf(T, H), "e4m3", (128, 128), torch.ones((T + 127) // 128, H // 128, device=dev)), {}),
        ("quant.per_block_cast_lossless", Q.per_block_cast_lossless,
         (q(T, H, "e2m1", 32, round_sf=True), "e4m3", (1, 32), (128, 128)), {}),
        ("quant.cast_back", Q.cast_back, (q(T, H), "bf16", (1, 128)), {}),
        ("quant.per_token_cast_back", Q.per_token_cast_back, (q(T, H), "bf16", 128), {}),
        ("quant.per_channel_cast", Q.per_channel_cast, (bf(TC, H), "e4m3", 128), {}),
        ("quant.per_channel_cast_fused", Q.per_channel_cast_fused, (bf(TC, H), "e4m3", 128), {}),
        ("quant.per_channel_cast_and_transpose", Q.per_channel_cast_and_transpose, (bf(TC, H), "e4m3", 128), {}),
        ("quant.swiglu_forward_and_per_token_cast", Q.swiglu_forward_and_per_token_cast,
         (bf(T, H), "e4m3", 128), {}),
        ("quant.swiglu_forward_and_per_channel_cast_and_transpose",
         Q.swiglu_forward_and_per_channel_cast_and_transpose, (bf(TC, H), "e4m3", 128), {}),
        ("quant.swiglu_backward_and_per_token_cast", Q.swiglu_backward_and_per_token_cast,
         (q(n_slots, H), bf(n_slots, H // 2), torch.rand(T, K, generator=g).to(dev), ptt, ttp, 128), {}),
        ("quant.unpack_from_e2m1fn_x2", Q.unpack_from_e2m1fn_x2, (q(T, H, "e2m1", 32)[0],), {}),
        ("transpose.transpose", TR.transpose, (bf(T if T % 8 == 0 else 64, H),), {}),
        ("transpose.batched_transpose", TR.batched_transpose, (bf(8, 64 if T < 64 else T, 512),), {}),
        ("moe.topk_gate", moe.topk_gate, (f32(T, E_TOTAL), K), {}),
        ("moe.topk_sum_and_topk_group_idx", moe.topk_sum_and_topk_group_idx, (f32(T, 8, 32), 2, 4), {}),
        ("moe.top2_sum_gate", moe.top2_sum_gate,
         (f32(T, E_TOTAL), f32(E_TOTAL), K, 4, 8, False, 0, 2.5, 0, 1, 0, 1, "sigmoid"), {}),
        ("moe.get_fused_mapping", moe.get_fused_mapping, (idx, E, n_slots, 16), {}),
        ("moe.expand_to_fused", moe.expand_to_fused, (bf(T, H), ttp, p2e), {}),
        ("moe.expand_to_fused_with_sf", moe.expand_to_fused_with_sf, (q(T, H), 128, ttp, p2e), {}),
        ("moe.reduce_fused", moe.reduce_fused, (bf(n_slots, H), torch.rand(T, K, generator=g).to(dev), ttp), {}),
        ("moe.normalize_weight", moe.normalize_weight, (torch.rand(T, K, generator=g).to(dev),), {}),
        ("moe.group_count", moe.group_count, (idx, E), {}),
        ("moe.aux_fi", moe.aux_fi, (idx, E, K), {}),
        ("moe.mask_indices_by_tp", moe.mask_indices_by_tp,
         (torch.randint(-1, E_TOTAL, (T, K), generator=g).to(dev), E_TOTAL, EP, 1, 4), {}),
        ("moe.inplace_unique_group_indices", moe.inplace_unique_group_indices,
         (torch.randint(-1, 8, (T, K), generator=g).to(dev), 8), {}),
    ]
    vocab = torch.randint(100000, 1000000, (2, 2, 8), dtype=torch.int32, generator=g)
    wh, we = bf(M, H), bf(M, H)
    wf = f32(M, H)
    c += [
        ("engram.engram_hash", EG.engram_hash,
         (torch.randint(0, 100000, (T, 3), dtype=torch.int32, generator=g).to(dev),
          torch.randint(0, 100000, (2, 3), generator=g).to(dev), vocab.to(dev), RE.make_offsets(vocab).to(dev)), {}),
        ("engram.fused_weight", EG.fused_weight, (wh, we), {}),
        ("engram.grad_w_reduce", EG.grad_w_reduce, (f32(tilec.get_num_sms(), M, H), wh, we, f32(M, H), f32(M, H)),
         {}),
        ("engram.engram_gate_fwd", EG.engram_gate_fwd, (bf(T, M, H), bf(T, M, H), bf(T, H), wf, 1e-20, 1e-6, True),
         {}),
        ("engram.engram_gate_bwd", EG.engram_gate_bwd,
         (bf(T, M, H), bf(T, M, H), bf(T, M, H), bf(T, H), wf, f32(T, M), torch.rand(T, M, generator=g).to(dev),
          torch.rand(T, M, generator=g).to(dev), torch.rand(T, M, generator=g).to(dev), 1e-6), {}),
    ]
    Lr, Pr = 10, 9
    c += [
        ("mhc.expand_to_mhc", MO.expand_to_mhc, (bf(1, T, H), M), {}),
        ("mhc.sinkhorn_normalize", MO.sinkhorn_normalize, (f32(1, T, M, M), 10, 1e-6), {}),
        ("mhc.mhc_pre_split_mixes", MO.mhc_pre_split_mixes, (f32(1, T, M * (M + 2)), f32(3), f32(M * (M + 2)), M,
                                                             2.0, 1e-2), {}),
        ("mhc.mhc_head_compute_mix", MO.mhc_head_compute_mix, (f32(1, T, M), f32(1), f32(M), 1e-2), {}),
        ("mhc.mhc_pre_apply_mix", MO.mhc_pre_apply_mix, (bf(1, T, M, H), torch.rand(1, T, M, 1, generator=g).to(dev)),
         {}),
        ("mhc.mhc_post", MO.mhc_post, (bf(1, T, H), bf(1, T, M, H), f32(1, T, M, 1), f32(1, T, M, M)), {}),
        ("mhc.mhc_post_fwd", MO.mhc_post_fwd, (bf(1, T, H), bf(1, T, M, H), f32(1, T, M, 1), f32(1, T, M, M)), {}),
        ("mhc.mhc_post_bwd", MO.mhc_post_bwd,
         (bf(1, T, H), bf(1, T, M, H), f32(1, T, M, 1), f32(1, T, M, M), bf(1, T, M, H)), dict(fuse_grad_acc=False)),
        ("mhc.mhc_pre_norm_fn", MO.mhc_pre_norm_fn, (bf(1, T, M, H), f32(24, M * H) * 1e-4, None, 1e-6), {}),
        ("mhc.mhc_pre_big_fuse", MO.mhc_pre_big_fuse,
         (bf(1, T, M, H), f32(24, M * H) * 1e-4, f32(3), f32(24), 1e-6, 1e-6, 1e-6, 1.0, 10), {}),
        ("mhc.mhc_multilayer_recompute", MO.mhc_multilayer_recompute,
         (bf(1, T, M, H), [f32(1, T, M, 1) for _ in range(Lr)], [bf(1, T, H) for _ in range(Pr)],
          [f32(1, T, M, 1) for _ in range(Pr)], [f32(1, T, M, M) for _ in range(Pr)],
          [bf(1, T, H) for _ in range(Lr)], [bf(1, T, M, H) for _ in range(Pr)]), {}),
    ]
    return c


def first_tensor(args):
    for a in args:
        if isinstance(a, torch.Tensor):
            return a
        if isinstance(a, (tuple, list)) and a and isinstance(a[0], torch.Tensor):
            return a[0]
    raise AssertionError("no tensor argument")


CLOCK = time.perf_counter   # the stand-in driver's runs: the thread's CPU time (main() sets it)


def per_call_us(fn, calls, reps, sync):
    for _ in range(min(calls, 50)):
        fn()
    times = []
    for _ in range(reps):
        sync()
        t0 = CLOCK()
        for _ in range(calls):
            fn()
        times.append((CLOCK() - t0) / calls * 1e6)
    sync()
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake", nargs="?", const="", default=None,
                    help="the stand-in driver (default build/tests/runtime/libfake_cuda.so)")
    ap.add_argument("--tokens", default="1,128")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--batch", type=int, default=300, help="calls timed together per repetition")
    ap.add_argument("--only", default="", help="comma-separated substrings of the functions to time")
    ap.add_argument("--json")
    ap.add_argument("--no-plans", action="store_true", help="every call in full in both columns")
    ap.add_argument("--profile", help="cProfile the calls of the function with this name (the first token count)")
    args = ap.parse_args()
    fake = args.fake is not None or not torch.cuda.is_available()
    if fake:
        lib = args.fake or os.path.join(_root, "build", "tests", "runtime", "libfake_cuda.so")
        if not os.path.exists(lib):
            sys.exit(f"host_overhead: no stand-in driver at {lib} (build the tests: cmake --build build)")
        use_fake_driver(lib)
        dev, sync = "cpu", (lambda: None)
        # nothing waits for a device here: the thread's CPU time is the host time, and unlike the
        # wall time it does not count the time other processes of a shared machine hold the cores
        global CLOCK
        CLOCK = time.thread_time
    else:
        dev, sync = "cuda", torch.cuda.synchronize
    from tilec import _plan
    if args.no_plans:
        _plan._MAX_PLANS = 0
    only = [s for s in args.only.split(",") if s]
    rows = []
    one = torch.ones(1, device=dev)
    print(f"{'function':56s} {'T':>4s} {'full us':>9s} {'plan us':>9s} {'add us':>8s} {'add(1)':>8s}")
    for T in [int(t) for t in args.tokens.split(",")]:
        for name, fn, a, kw in cases(T, dev):
            if only and not any(s in name for s in only):
                continue
            call = (lambda fn=fn, a=a, kw=kw: fn(*a, **kw))
            call()   # compile, load, and a first call of the shape
            if args.profile and args.profile == name:
                import cProfile
                import pstats
                pr = cProfile.Profile()
                pr.enable()
                for _ in range(2000):
                    call()
                pr.disable()
                pstats.Stats(pr).sort_stats("tottime").print_stats(25)
                return
            saved = _plan._MAX_PLANS
            _plan._MAX_PLANS = 0   # every call in full: the figure without argument plans, same run
            _plan.clear()
            t_full = per_call_us(call, args.batch, args.reps, sync)
            _plan._MAX_PLANS = saved
            t = per_call_us(call, args.batch, args.reps, sync)
            x = first_tensor(a)
            if x.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):   # no add for float8 on the CPU
                x = x.view(torch.uint8)
            t_add = per_call_us(lambda x=x: torch.add(x, x), args.batch, args.reps, sync)
            t_one = per_call_us(lambda o=one: torch.add(o, o), args.batch, args.reps, sync)
            row = {"function": name, "tokens": T, "us": t, "full_us": t_full, "add_us": t_add, "add_shape": list(x.shape),
                   "add_dtype": str(x.dtype).replace("torch.", ""), "add_one_us": t_one}
            rows.append(row)
            print(f"{name:56s} {T:4d} {t_full:9.2f} {t:9.2f} {t_add:8.2f} {t_one:8.2f}   (add on {tuple(x.shape)} "
                  f"{row['add_dtype']})", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"driver": "fake" if fake else "cuda", "date": time.strftime("%Y-%m-%d"), "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
