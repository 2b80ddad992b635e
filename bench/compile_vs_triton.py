"""Compile time per specialisation, tilec against Triton, on the same machine in the same run.

The kernel is the per-token FP8 cast (a row block's amax, its scale, optionally rounded to a
power of two, and the e4m3 values): tilec's declared `per_token_cast` specialisations through
`bench/compile_speed --only =per_token_cast` (source -> PTX and source -> cubin, in one process,
empty caches), and the same computation written in Triton, compiled for sm_90a without a GPU
(`triton.compile` on an `ASTSource`, a fresh cache directory per compile) over block sizes
32..512 with and without the rounding. Triton's time to PTX is its time to cubin less the time
ptxas takes on its PTX (timed apart with the ptxas Triton ships). The two alternate for ROUNDS
rounds so that a change of the machine's load falls on both; medians over all rounds.

Usage (Triton in its own environment, as it is not a dependency of tilec):
    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install triton
    /tmp/tv/bin/python bench/compile_vs_triton.py [--compile-speed build/bench/compile_speed] [--rounds 3]
        [--json FILE] [--plot FILE.png]      (the plot needs matplotlib in that environment)
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def tilec_round(binary, arch):
    """(ms to PTX, ms to cubin) of each specialisation in one compile_speed run."""
    out = subprocess.run([binary, os.path.join(_root, "kernels.tl"), arch, "1", "--only", "=per_token_cast", "--each"],
                         check=True, capture_output=True, text=True).stdout
    rows = re.findall(r"^per_token_cast\s+([\d.]+)\s+([\d.]+)$", out, re.M)
    return [float(a) for a, _ in rows], [float(b) for _, b in rows]


def triton_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def per_token_cast(x_ptr, q_ptr, s_ptr, H, BLOCK: tl.constexpr, ROUND: tl.constexpr):
        row = tl.program_id(0)
        blk = tl.program_id(1)
        offs = blk * BLOCK + tl.arange(0, BLOCK)
        m = offs < H
        x = tl.load(x_ptr + row * H + offs, mask=m, other=0.0).to(tl.float32)
        amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-4)
        s = amax / 448.0
        if ROUND:
            s = tl.exp2(tl.ceil(tl.log2(s)))
        tl.store(q_ptr + row * H + offs, (x / s).to(tl.float8e4nv), mask=m)
        tl.store(s_ptr + row * tl.cdiv(H, BLOCK) + blk, s)
    return per_token_cast


def triton_round(kernel, ptxas, sm):
    """Lists of (ms to cubin, ms of ptxas on the PTX) over the Triton specialisations."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    total, assemble = [], []
    for block in (32, 64, 128, 256, 512):
        for rnd in (0, 1):
            src = ASTSource(fn=kernel, signature={"x_ptr": "*bf16", "q_ptr": "*fp8e4nv", "s_ptr": "*fp32", "H": "i32",
                                                  "BLOCK": "constexpr", "ROUND": "constexpr"},
                            constexprs={"BLOCK": block, "ROUND": rnd})
            with tempfile.TemporaryDirectory() as cache:
                os.environ["TRITON_CACHE_DIR"] = cache
                t0 = time.perf_counter()
                k = triton.compile(src, target=GPUTarget("cuda", sm, 32))
                total.append((time.perf_counter() - t0) * 1e3)
                ptx = os.path.join(cache, "k.ptx")
                with open(ptx, "w") as f:
                    f.write(k.asm["ptx"])
                t0 = time.perf_counter()
                subprocess.run([ptxas, f"-arch=sm_{sm}a", ptx, "-o", os.path.join(cache, "k.cubin")], check=True,
                               stderr=subprocess.DEVNULL)
                assemble.append((time.perf_counter() - t0) * 1e3)
    return total, assemble


def plot(path, t_ptx, t_cubin, r_ptx, r_cubin, version):
    """Each specialisation's time, sorted, one line per compiler and stage."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for vals, label, style in ((t_ptx, "tilec, source to PTX", "-"), (t_cubin, "tilec, source to cubin", "--"),
                               (r_ptx, f"Triton {version}, source to PTX", "-"),
                               (r_cubin, f"Triton {version}, source to cubin", "--")):
        v = sorted(vals)
        ax.plot([100 * (i + 0.5) / len(v) for i in range(len(v))], v, style, label=label,
                color="C0" if label.startswith("tilec") else "C1")
    ax.set_xlabel("specialisations (percentile)")
    ax.set_ylabel("ms per specialisation")
    ax.set_title("Compile time of the per-token FP8 cast, sm_90a")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-speed", default=os.path.join(_root, "build", "bench", "compile_speed"))
    ap.add_argument("--ptxas", help="the ptxas timed on Triton's PTX (default: the one Triton ships and uses)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write every specialisation's times here")
    ap.add_argument("--plot", help="write a PNG of the times per specialisation (needs matplotlib)")
    args = ap.parse_args()
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    try:
        kernel = triton_kernel()
    except ImportError as e:
        sys.exit(f"compile_vs_triton: Triton is not importable here ({e}); see the usage in this file")
    if not args.ptxas:   # Triton ships two; the one that takes the PTX version its LLVM writes
        import triton.backends.nvidia as nv
        bins = os.path.join(os.path.dirname(nv.__file__), "bin")
        for name in ("ptxas-blackwell", "ptxas"):
            args.ptxas = os.path.join(bins, name)
            try:
                triton_round(kernel, args.ptxas, 90)   # the backend's one-time set-up, not counted
                break
            except subprocess.CalledProcessError:
                continue
        else:
            sys.exit("compile_vs_triton: no ptxas of Triton's takes its PTX; pass --ptxas")
    else:
        triton_round(kernel, args.ptxas, 90)
    t_ptx, t_cubin, r_total, r_ptxas = [], [], [], []
    for r in range(args.rounds):
        ptx, cubin = tilec_round(args.compile_speed, "sm_90a")
        t_ptx += ptx
        t_cubin += cubin
        total, assemble = triton_round(kernel, args.ptxas, 90)
        r_total += total
        r_ptxas += assemble
        print(f"round {r + 1}: tilec {statistics.median(ptx):.1f} / {statistics.median(cubin):.1f} ms "
              f"(PTX / cubin, median of {len(ptx)}); "
              f"Triton {statistics.median(total):.1f} ms to cubin, ptxas {statistics.median(assemble):.1f} ms "
              f"(median of {len(total)})", flush=True)
    tp, tc = statistics.median(t_ptx), statistics.median(t_cubin)
    rc = statistics.median(r_total)
    r_ptx = [a - b for a, b in zip(r_total, r_ptxas)]
    rp = statistics.median(r_ptx)
    import triton
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump({"triton": triton.__version__, "arch": "sm_90a", "cpus": os.cpu_count(), "rounds": args.rounds,
                       "tilec_ptx_ms": t_ptx, "tilec_cubin_ms": t_cubin, "triton_ptx_ms": r_ptx,
                       "triton_cubin_ms": r_total}, f, indent=1)
    if args.plot:
        plot(args.plot, t_ptx, t_cubin, r_ptx, r_total, triton.__version__)
    print(f"\nper specialisation, median over {args.rounds} rounds (Triton {triton.__version__}, sm_90a, "
          f"{os.cpu_count()} CPUs):")
    print(f"  to PTX:   tilec {tp:7.1f} ms   Triton {rp:7.1f} ms   Triton / tilec {rp / tp:5.2f}")
    print(f"  to cubin: tilec {tc:7.1f} ms   Triton {rc:7.1f} ms   Triton / tilec {rc / tc:5.2f}")


if __name__ == "__main__":
    main()
