"""The Engram family on the GPU: the gate's forward (save and no-save modes) and backward at
T = 4096 and 16384 tokens, hc = 4, D = 7168 (and the small kernels: engram_hash, fused_weight,
grad_w_reduce), next to the PyTorch reference (tilec.torch.engram; the backward's formulas of
spec §2.5 written in torch below) and torch.compile of it, in the same run. Times as bench_gpu.py
measures them (a spin kernel ahead of each start event, median of many calls, inputs rotated past
the L2 cache); GB/s = bytes moved as the spec counts them (§2.1-§2.5: each input read once, each
output written once) / time, and for the gate kernels the fraction of the device-to-device copy
ceiling measured in this run.

Usage: python bench/bench_engram.py [--json FILE] [--quick] [--no-compile]
(the table goes to stdout; --json defaults to $OUT/bench_engram.json when $OUT is set)."""
import argparse
import os
import sys

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.environ.get("TILEC_DIST", os.path.join(_root, "dist")), "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import tilec  # noqa: E402
from tilec.testing import count_bytes  # noqa: E402
from tilec.torch import engram as R  # noqa: E402
from bench_gpu import compiled, copy_ceiling, print_row, rotated, timed_row, write_results  # noqa: E402

HC, D = 4, 7168
EPS, CLAMP = 1e-20, 1e-6
BOUND = {"engram_gate_fwd", "engram_gate_fwd (no save)", "engram_gate_bwd"}


def gate_bwd_ref(go, x, k, v, wf, dot, gate, rstd_x, rstd_k, clamp_value):
    """The backward of spec §2.5 in torch, f32 from the saved tensors: (grad_x, grad_k, grad_v,
    the weight_fused gradient summed over tokens)."""
    d = x.shape[-1]
    gof, xf, kf, vf = go.float(), x.float(), k.float(), v.float()
    dldg = (gof * vf[:, None, :]).sum(-1)
    srr = d ** -0.5 * rstd_x * rstd_k
    mag = dot.abs()
    G = torch.where((mag * srr < clamp_value) | (mag == 0), torch.zeros_like(mag),
                    dldg * gate * (1 - gate) * 0.5 * torch.sqrt(srr / mag))[..., None]
    cx, ck = (dot * rstd_x * rstd_x / d)[..., None], (dot * rstd_k * rstd_k / d)[..., None]
    grad_x = (gof + G * (kf * wf - xf * cx)).bfloat16()
    grad_k = (G * (xf * wf - kf * ck)).bfloat16()
    grad_v = (gof * gate[..., None]).sum(1).bfloat16()
    return grad_x, grad_k, grad_v, (G * xf * kf).sum(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(os.environ["OUT"], "bench_engram.json") if os.environ.get("OUT") else None)
    ap.add_argument("--quick", action="store_true", help="T = 16384 only")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines")
    args = ap.parse_args()
    ceiling = copy_ceiling()
    sizes = [16384] if args.quick else [4096, 16384]
    rows = []

    def bench(name, T, make, ours, refn, comp, nbytes):
        """One row; T is the token count (None for the kernels whose size is not in tokens)."""
        row = timed_row(name, T, rotated(make, nbytes), ours, refn, None if args.no_compile else comp, nbytes,
                        ceiling, name in BOUND)
        row["family"] = "engram"
        rows.append(row)
        print_row(row, f"{name:26s} {T or '':>6}")

    print(f"{'function':26s} {'T':>6s} {'time':>12s} {'bandwidth':>13s} {'ceil':>6s}")
    E = tilec.engram
    bf = lambda *s: torch.randn(s, device="cuda").bfloat16()  # noqa: E731

    # the gate forward: x, k, v, wf read, out (+ dot, gate, rstd_x, rstd_k) written
    for save in (True, False):
        name = "engram_gate_fwd" if save else "engram_gate_fwd (no save)"
        refn = lambda x, k, v, wh, we, wf, save=save: R.engram_gate_ref(x, k, v, wh, we, CLAMP, EPS, save)  # noqa: E731
        comp = compiled(refn)
        for T in sizes:
            def make(T=T):
                wh, we = bf(HC, D), bf(HC, D)
                return bf(T, HC, D), bf(T, HC, D), bf(T, D), wh, we, E.fused_weight(wh, we)
            s = make()
            res = E.engram_gate_fwd(s[0], s[1], s[2], s[5], EPS, CLAMP, save)
            nbytes = count_bytes(s[0], s[1], s[2], s[5]) + count_bytes(res)
            bench(name, T, make, lambda x, k, v, wh, we, wf, save=save: E.engram_gate_fwd(x, k, v, wf, EPS, CLAMP, save),
                  refn, comp, nbytes)

    # the gate backward: grad_out, x, k, v, wf and the four saved tensors read; grad_x, grad_k,
    # grad_v and the two weight gradients written (the spec's count; the kernel writes the
    # per-block partials, num_sms x hc x D f32, which grad_w_reduce turns into them)
    comp = compiled(gate_bwd_ref)
    for T in sizes:
        def make(T=T):
            x, k, v, wh, we = bf(T, HC, D), bf(T, HC, D), bf(T, D), bf(HC, D), bf(HC, D)
            wf = E.fused_weight(wh, we)
            _, dot, gate, rx, rk = E.engram_gate_fwd(x, k, v, wf, EPS, CLAMP)
            return bf(T, HC, D), x, k, v, wf, dot, gate, rx, rk, CLAMP
        s = make()
        nbytes = count_bytes(*s[:9]) + count_bytes(s[1], s[2], s[3]) + 2 * count_bytes(s[4])
        bench("engram_gate_bwd", T, make, E.engram_gate_bwd, gate_bwd_ref, comp, nbytes)

    # the small kernels
    P = tilec.get_num_sms()

    def make_red():
        return (torch.randn((P, HC, D), device="cuda"), bf(HC, D), bf(HC, D), torch.zeros((HC, D), device="cuda"),
                torch.zeros((HC, D), device="cuda"))

    def red_ref(part, wh, we, gh, ge):
        s = part.sum(0)
        gh.addcmul_(s, we.float())
        ge.addcmul_(s, wh.float())
    bench(f"grad_w_reduce ({P} rows)", None, make_red, E.grad_w_reduce, red_ref, compiled(red_ref), count_bytes(*make_red()))
    bench("fused_weight", None, lambda: (bf(HC, D), bf(HC, D)), E.fused_weight, lambda a, b: a.float() * b.float(),
          compiled(lambda a, b: a.float() * b.float()), 2 * 2 * HC * D + 4 * HC * D)
    for T in sizes:
        def make_hash(T=T):
            vocab = torch.randint(100000, 1000000, (2, 2, 8), dtype=torch.int32, device="cuda")
            return (torch.randint(0, 100000, (T, 3), dtype=torch.int32, device="cuda"),
                    torch.randint(0, 100000, (2, 3), device="cuda"), vocab, R.make_offsets(vocab))
        s = make_hash()
        bench("engram_hash", T, make_hash, E.engram_hash, R.engram_hash_ref, compiled(R.engram_hash_ref),
              count_bytes(*s) + count_bytes(E.engram_hash(*s)))

    print(f"\ncopy ceiling (device-to-device, read+write): {ceiling:.0f} GB/s")
    for r in rows:
        if r["compile_us"] and r["us"] > r["compile_us"]:
            print(f"slower than torch.compile: {r['function']} T={r['tokens']}: {r['us']:.1f} us vs "
                  f"{r['compile_us']:.1f} us")
    if args.json:
        write_results(args.json, ceiling, rows)


if __name__ == "__main__":
    main()
