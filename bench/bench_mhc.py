"""The mHC ops on the GPU (spec moe-engram-mhc.md §3): expand_to_mhc, mhc_pre_apply_mix and
mhc_post, forward and backward, at n1 = 8192 tokens (n0 = 1), m = 4, H = 7168 and 2560, and at
decode sizes of 1 to 128 tokens (in µs); sinkhorn_normalize, mhc_pre_split_mixes and
mhc_head_compute_mix at 8192 tokens; mhc_pre_norm_fn (forward, and forward + backward),
mhc_pre_big_fuse and mhc_multilayer_recompute (L = 10, P = 9) at the same sizes. Each next to the PyTorch reference (tilec.torch.mhc; the
backward formulas of §3 written in torch below) and torch.compile of it, in the same run. Times as
bench_gpu.py measures them (a spin kernel ahead of each start event, median of many calls, inputs
rotated past the L2 cache); GB/s = bytes moved as the spec counts them (each input read once,
each output written once) / time, and for the bandwidth-bound ops the fraction of the
device-to-device copy ceiling measured in this run.

Usage: python bench/bench_mhc.py [--json FILE] [--quick] [--no-compile] [--only WORD,...]
(the table goes to stdout; --json defaults to $OUT/bench_mhc.json when $OUT is set)."""
import argparse
import os
import sys

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.environ.get("TILEC_DIST", os.path.join(_root, "dist")), "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from tilec.mhc.expand_kernel import _expand_bwd  # noqa: E402
from tilec.mhc.pre_apply_mix_kernel import _apply_mix_bwd  # noqa: E402
from tilec.modeling.mhc import ops as O  # noqa: E402
from tilec.modeling.mhc.ops.multilayer_recompute import mhc_multilayer_recompute  # noqa: E402
from tilec.testing import count_bytes  # noqa: E402
from tilec.torch import mhc as R  # noqa: E402
from bench_gpu import compiled, copy_ceiling, print_row, rotated, timed_row, write_results  # noqa: E402

M = 4
BOUND = {"expand_to_mhc", "expand_to_mhc bwd", "mhc_pre_apply_mix", "mhc_pre_apply_mix bwd", "mhc_post_fwd",
         "mhc_post_bwd", "mhc_pre_norm_fn", "mhc_pre_big_fuse", "mhc_multilayer_recompute"}


def expand_bwd_ref(g):
    return g.float().sum(-2).bfloat16()


def apply_mix_bwd_ref(x, mix, og, buf):
    """§3.5's backward in torch: the buffer updated in place, the mix gradient returned."""
    ogf = og.float().unsqueeze(-2)
    buf.copy_((buf.float() + mix * ogf).bfloat16())
    return (ogf * x.float()).sum(-1, keepdim=True)


def post_bwd_ref(x, res, post, comb, d_o):
    """§3.6's backward in torch: (d_x, d_residual, d_post, d_comb)."""
    g = d_o.float()
    d_res = torch.einsum("stio,stod->stid", comb, g).bfloat16()
    d_x = (post * g).sum(-2).bfloat16()
    d_comb = torch.einsum("stid,stod->stio", res.float(), g)
    d_post = (x.float().unsqueeze(-2) * g).sum(-1, keepdim=True)
    return d_x, d_res, d_post, d_comb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(os.environ["OUT"], "bench_mhc.json") if os.environ.get("OUT") else None)
    ap.add_argument("--quick", action="store_true", help="H = 7168 and the decode size 1 only")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines")
    ap.add_argument("--only", default="", help="only the functions whose name contains one of these comma-separated words")
    args = ap.parse_args()
    only = [w for w in args.only.split(",") if w]
    ceiling = copy_ceiling()
    hiddens = [7168] if args.quick else [7168, 2560]
    tokens = [8192, 1] if args.quick else [8192, 128, 16, 1]
    rows = []

    def bench(name, T, H, make, ours, refn, comp, nbytes):
        if only and not any(w in name for w in only):
            return
        row = timed_row(name, T, rotated(make, nbytes), ours, refn, None if args.no_compile else comp, nbytes,
                        ceiling, name in BOUND)
        row.update(family="mhc", hidden=H)
        rows.append(row)
        print_row(row, f"{name:24s} {T:>6} {H or '':>6}")

    print(f"{'function':24s} {'T':>6s} {'H':>6s} {'time':>12s} {'bandwidth':>13s} {'ceil':>6s}")
    bf = lambda *s: torch.randn(s, device="cuda").bfloat16()  # noqa: E731
    f32 = lambda *s: torch.randn(s, device="cuda")  # noqa: E731

    for H in hiddens:
        for T in tokens:
            bench("expand_to_mhc", T, H, lambda: (bf(1, T, H),), lambda x: O.expand_to_mhc(x, M),
                  lambda x: R.expand_to_mhc_ref(x, M), compiled(lambda x: R.expand_to_mhc_ref(x, M)),
                  count_bytes(bf(1, T, H), bf(1, T, M, H)))
            bench("expand_to_mhc bwd", T, H, lambda: (bf(T, M, H), bf(T, H)), _expand_bwd,
                  lambda g, o: expand_bwd_ref(g), compiled(lambda g, o: expand_bwd_ref(g)),
                  count_bytes(bf(T, M, H), bf(T, H)))

            def make_apply():
                return bf(1, T, M, H), torch.softmax(f32(1, T, M, 1), -2)
            bench("mhc_pre_apply_mix", T, H, make_apply, O.mhc_pre_apply_mix, R.mhc_pre_apply_mix_ref,
                  compiled(R.mhc_pre_apply_mix_ref), count_bytes(*make_apply()) + count_bytes(bf(T, H)))

            def make_apply_bwd():
                x, mix = make_apply()
                return x, mix, bf(1, T, H), bf(1, T, M, H)
            s = make_apply_bwd()
            bench("mhc_pre_apply_mix bwd", T, H, make_apply_bwd,
                  lambda x, mix, og, buf: _apply_mix_bwd(x.view(T, M, H), mix.view(T, M), og.view(T, H),
                                                         buf.view(T, M, H), torch.empty(T, M, device="cuda")),
                  apply_mix_bwd_ref, compiled(apply_mix_bwd_ref), count_bytes(*s) + count_bytes(s[3], s[1]))

            def make_post():
                return bf(1, T, H), bf(1, T, M, H), f32(1, T, M, 1), f32(1, T, M, M)
            s = make_post()
            bench("mhc_post_fwd", T, H, make_post, O.mhc_post_fwd, R.mhc_post_ref, compiled(R.mhc_post_ref),
                  count_bytes(*s) + count_bytes(s[1]))

            def make_post_bwd():
                return (*make_post(), bf(1, T, M, H))
            s = make_post_bwd()
            bench("mhc_post_bwd", T, H, make_post_bwd,
                  lambda *a: O.mhc_post_bwd(*a, fuse_grad_acc=False), post_bwd_ref, compiled(post_bwd_ref),
                  count_bytes(*s) + count_bytes(*s[:4]))

            # the projection: the residual and fn read, the mixes written (the spec's count; the
            # saved projection and sums of squares are 100 bytes a token more)
            def make_norm():
                return bf(1, T, M, H), f32(24, M * H) * 1e-4
            s = make_norm()
            bench("mhc_pre_norm_fn", T, H, make_norm, lambda r, f: O.mhc_pre_norm_fn(r, f, None, 1e-6),
                  lambda r, f: R.mhc_pre_norm_fn_ref(r, f, None, 1e-6),
                  compiled(lambda r, f: R.mhc_pre_norm_fn_ref(r, f, None, 1e-6)),
                  count_bytes(*s) + count_bytes(f32(T, 24)))

            def make_big():
                return bf(1, T, M, H), f32(24, M * H) * 1e-4, f32(3), f32(24)
            s = make_big()
            big = lambda r, f, a, b: O.mhc_pre_big_fuse(r, f, a, b, 1e-6, 1e-6, 1e-6, 1.0, 10)  # noqa: E731

            def big_ref(r, f, a, b):
                mixes = R.mhc_pre_norm_fn_ref(r, f, None, 1e-6)
                pre, post, comb = R.mhc_pre_split_mixes_ref(mixes, a, b, M, 1.0, 1e-6)
                return post, R.sinkhorn_normalize_ref(comb, 10, 1e-6), R.mhc_pre_apply_mix_ref(r, pre)
            bench("mhc_pre_big_fuse", T, H, make_big, big, big_ref, compiled(big_ref),
                  count_bytes(*s) + count_bytes(f32(T, M), f32(T, M, M), bf(T, H)))

            Lr, Pr = 10, 9

            def make_rec():
                return (bf(1, T, M, H), [f32(1, T, M, 1) for _ in range(Lr)], [bf(1, T, H) for _ in range(Pr)],
                        [f32(1, T, M, 1) for _ in range(Pr)], [f32(1, T, M, M) for _ in range(Pr)],
                        [bf(1, T, H) for _ in range(Lr)], [bf(1, T, M, H) for _ in range(Pr)])

            def rec_ref(r, pre, outs, post, comb, lin, res):
                for i in range(Lr):
                    lin[i].copy_(R.mhc_pre_apply_mix_ref(r, pre[i]))
                    if i < Pr:
                        r = R.mhc_post_ref(outs[i], r, post[i], comb[i])
                        res[i].copy_(r)
            n = T
            rec_bytes = (n * M * H * 2 + Lr * (n * M * 4 + n * H * 2)
                         + Pr * (n * H * 2 + n * M * 4 + n * M * M * 4 + n * M * H * 2))
            bench("mhc_multilayer_recompute", T, H, make_rec, mhc_multilayer_recompute, rec_ref, compiled(rec_ref),
                  rec_bytes)

    T = 8192
    bench("sinkhorn_normalize", T, None, lambda: (f32(1, T, M, M),), O.sinkhorn_normalize, R.sinkhorn_normalize_ref,
          compiled(R.sinkhorn_normalize_ref), 2 * count_bytes(f32(1, T, M, M)))

    def make_split():
        return f32(1, T, M * (M + 2)), f32(3), f32(M * (M + 2))
    split = lambda z, a, b: O.mhc_pre_split_mixes(z, a, b, M, 2.0, 1e-2)  # noqa: E731
    split_ref = lambda z, a, b: R.mhc_pre_split_mixes_ref(z, a, b, M, 2.0, 1e-2)  # noqa: E731
    bench("mhc_pre_split_mixes", T, None, make_split, split, split_ref, compiled(split_ref),
          2 * count_bytes(f32(1, T, M * (M + 2))))
    head = lambda z, a, b: O.mhc_head_compute_mix(z, a, b, 1e-2)  # noqa: E731
    head_ref = lambda z, a, b: R.mhc_head_compute_mix_ref(z, a, b, 1e-2)  # noqa: E731
    bench("mhc_head_compute_mix", T, None, lambda: (f32(1, T, M), f32(1), f32(M)), head, head_ref, compiled(head_ref),
          2 * count_bytes(f32(1, T, M)))

    print(f"\ncopy ceiling (device-to-device, read+write): {ceiling:.0f} GB/s")
    for r in rows:
        if r["compile_us"] and r["us"] > r["compile_us"]:
            print(f"slower than torch.compile: {r['function']} T={r['tokens']} H={r['hidden']}: {r['us']:.1f} us vs "
                  f"{r['compile_us']:.1f} us")
    if args.json:
        write_results(args.json, ceiling, rows)


if __name__ == "__main__":
    main()
