"""The MoE family on the GPU: each function at decode (128 tokens) and prefill (4001 and 16384
tokens) sizes, next to its PyTorch reference (tilec.torch) and torch.compile of that reference,
in the same run. GPU times as bench_gpu.py measures them (a spin kernel ahead of each start event,
median of many calls, inputs rotated past the L2 cache), after about 20 ms of spinning that brings
the clocks back up after the baselines' compiles; GB/s = bytes moved (inputs read once, outputs
written once) / time, and for the bandwidth-bound functions (expand_to_fused*, reduce_fused) the
fraction of the device-to-device copy ceiling. The expands and reduce_fused count only the rows
they read: x rows of tokens with at least one valid slot, expert rows of valid slots.

Usage: python bench/bench_moe.py [--json FILE] [--quick] [--no-compile]
(the table goes to stdout; --json defaults to $OUT/bench_moe.json when $OUT is set)."""
import argparse
import os
import sys

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.environ.get("TILEC_DIST", os.path.join(_root, "dist")), "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import tilec  # noqa: E402
from tilec.testing import count_bytes  # noqa: E402
import tilec.torch as ref  # noqa: E402
from bench_gpu import compiled, copy_ceiling, print_row, rotated, timed_row, write_results  # noqa: E402

E_TOTAL, EP, K, H = 256, 8, 8, 7168      # DeepSeek-V3-like routing; 32 local experts per EP rank
BOUND = {"expand_to_fused", "expand_to_fused_with_sf", "reduce_fused"}


def topk_idx(T, k=K, e_local=E_TOTAL // EP):
    """Routing indices of one EP rank for T tokens: top-k over all experts, other ranks' -1."""
    s = torch.rand((T, E_TOTAL), device="cuda")
    idx = torch.topk(s, k, dim=-1).indices
    return torch.where(idx >= e_local, torch.full_like(idx, -1), idx).contiguous()


def routed_rows(ttp):
    """Tokens with at least one valid slot: the rows of x that expand_to_fused actually reads (a
    token routed to no local expert is never read, so counting all of x would overstate GB/s)."""
    return int((ttp >= 0).any(dim=1).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(os.environ["OUT"], "bench_moe.json") if os.environ.get("OUT") else None)
    ap.add_argument("--quick", action="store_true", help="prefill 16384 only, besides decode")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines")
    args = ap.parse_args()
    ceiling = copy_ceiling()
    sizes = [128, 16384] if args.quick else [128, 4001, 16384]
    rows = []

    def bench(name, T, make, ours, refn, comp, out_bytes=None, in_bytes=None):
        sample = make()
        res = ours(*sample)
        nbytes = (in_bytes(sample) if in_bytes else count_bytes(*sample)) + \
            (out_bytes(sample, res) if out_bytes else count_bytes(res))
        row = timed_row(name, T, rotated(make, count_bytes(*sample)), ours, refn, None if args.no_compile else comp,
                        nbytes, ceiling, name in BOUND, ref_iters=20)
        rows.append(row)
        print_row(row, f"{name:30s} {T:6d}")

    print(f"{'function':30s} {'T':>6s} {'time':>12s} {'bandwidth':>13s} {'ceil':>6s}")
    m = tilec.moe

    # gates
    c_topk = compiled(lambda s: ref.stable_topk(s, K))
    for T in sizes:
        bench("topk_gate", T, lambda T=T: (torch.randn((T, E_TOTAL), device="cuda"),),
              lambda s: m.topk_gate(s, K), lambda s: ref.stable_topk(s, K), c_topk)
    gate_args = (K, 4, 8, False, 0, 2.5, 0, 1, 0, 1, "sigmoid")
    c_gate = compiled(lambda l, b: ref.top2_sum_gate(l, b, *gate_args))
    for T in sizes:
        bench("top2_sum_gate", T,
              lambda T=T: (torch.randn((T, E_TOTAL), device="cuda"), torch.randn(E_TOTAL, device="cuda") * 0.1),
              lambda l, b: m.top2_sum_gate(l, b, *gate_args), lambda l, b: ref.top2_sum_gate(l, b, *gate_args),
              c_gate, out_bytes=lambda s, r: 0)
    c_grp = compiled(lambda s: ref.topk_sum_and_topk_group_idx(s, 2, 4))
    for T in sizes:
        bench("topk_sum_and_topk_group_idx", T, lambda T=T: (torch.randn((T, 8, 32), device="cuda"),),
              lambda s: m.topk_sum_and_topk_group_idx(s, 2, 4), lambda s: ref.topk_sum_and_topk_group_idx(s, 2, 4),
              c_grp)

    # fused layout (no host sync: the upper-bound size, as a CUDA-graph caller would use)
    E = E_TOTAL // EP
    c_map = compiled(lambda i: ref.get_fused_mapping(i, E, 0, 128, True)[:7])
    for T in sizes:
        bench("get_fused_mapping", T, lambda T=T: (topk_idx(T),),
              lambda i: m.get_fused_mapping(i, E, 0, 128, True)[:7],
              lambda i: ref.get_fused_mapping(i, E, 0, 128, True)[:7], c_map)
    c_exp = compiled(ref.expand_to_fused)
    c_exps = compiled(lambda x, s, t, p: ref.expand_to_fused_with_sf((x, s), 128, t, p))
    c_red = compiled(lambda x, w, t: ref.reduce_fused(x, w, t))
    for T in sizes:
        def make_map(T=T):
            i = topk_idx(T)
            p2e, _, _, ttp, *_ = m.get_fused_mapping(i, E, 0, 16)
            return ttp, p2e
        bench("expand_to_fused", T,
              lambda T=T: (torch.randn((T, H), device="cuda").bfloat16(), *make_map(T)),
              m.expand_to_fused, ref.expand_to_fused, c_exp,
              in_bytes=lambda s: count_bytes(s[1], s[2]) + routed_rows(s[1]) * H * 2)

        def make_q(T=T):
            x = torch.randn((T, H), device="cuda").to(torch.float8_e4m3fn)
            return (x, torch.rand((T, H // 128), device="cuda"), *make_map(T))
        bench("expand_to_fused_with_sf", T, make_q,
              lambda x, s, t, p: m.expand_to_fused_with_sf((x, s), 128, t, p),
              lambda x, s, t, p: ref.expand_to_fused_with_sf((x, s), 128, t, p), c_exps,
              in_bytes=lambda s: count_bytes(s[2], s[3]) + routed_rows(s[2]) * (H + H // 128 * 4))

        def make_r(T=T, k=6):
            i = topk_idx(T, k)
            _, _, _, ttp, *_ = m.get_fused_mapping(i, E, T * k, 1)
            return torch.randn((T * k, H), device="cuda").bfloat16(), torch.rand((T, k), device="cuda"), ttp
        bench("reduce_fused", T, make_r, lambda x, w, t: m.reduce_fused(x, w, t),
              lambda x, w, t: ref.reduce_fused(x, w, t), c_red,
              in_bytes=lambda s: count_bytes(s[1], s[2]) + int((s[2] >= 0).sum()) * H * 2)

    # utilities
    c_norm = compiled(ref.normalize_weight)
    c_cnt = compiled(lambda i: ref.group_count(i, E))
    c_aux = compiled(lambda i: ref.aux_fi(i, E, K))
    c_mask = compiled(lambda i: ref.mask_indices_by_tp(i, E_TOTAL, EP, 1, 4))
    c_uniq = compiled(lambda g: ref.inplace_unique_group_indices(g, 8))
    for T in sizes:
        bench("normalize_weight", T, lambda T=T: (torch.rand((T, K), device="cuda"),), m.normalize_weight,
              ref.normalize_weight, c_norm)
        bench("group_count", T, lambda T=T: (topk_idx(T),), lambda i: m.group_count(i, E),
              lambda i: ref.group_count(i, E), c_cnt, out_bytes=lambda s, r: 0)
        bench("aux_fi", T, lambda T=T: (topk_idx(T),), lambda i: m.aux_fi(i, E, K), lambda i: ref.aux_fi(i, E, K),
              c_aux, out_bytes=lambda s, r: 0)
        bench("mask_indices_by_tp", T, lambda T=T: (torch.randint(-1, E_TOTAL, (T, K), device="cuda"),),
              lambda i: m.mask_indices_by_tp(i, E_TOTAL, EP, 1, 4),
              lambda i: ref.mask_indices_by_tp(i, E_TOTAL, EP, 1, 4), c_mask)
        bench("inplace_unique_group_indices", T, lambda T=T: (torch.randint(-1, 8, (T, K), device="cuda"),),
              lambda g: m.inplace_unique_group_indices(g, 8), lambda g: ref.inplace_unique_group_indices(g, 8),
              c_uniq, out_bytes=lambda s, r: 0)

    print(f"\ncopy ceiling (device-to-device, read+write): {ceiling:.0f} GB/s")
    slower = [r for r in rows if r["compile_us"] and r["us"] > r["compile_us"]]
    for r in slower:
        print(f"slower than torch.compile: {r['function']} T={r['tokens']}: {r['us']:.1f} us vs {r['compile_us']:.1f} us")
    over = [r for r in rows if r["tokens"] == 128 and r["us"] > 10]
    for r in over:
        print(f"decode above 10 us: {r['function']}: {r['us']:.1f} us")
    if args.json:
        write_results(args.json, ceiling, rows)


if __name__ == "__main__":
    main()
