#!/usr/bin/env python3
"""tables.py — Markdown tables for docs/performance.md from the JSON files of the GPU benchmarks.

    python3 bench/tables.py bench/results/<date>/bench_gpu_<run>.json ...

Each file is one of bench_gpu.py / bench_quant.py / bench_moe.py --json; the kind is told apart
by its rows (MoE rows have `tokens`, quantisation rows `us`, the others `ms`). No dependencies.
"""
import json
import sys


def fmt(v, spec):
    return "—" if v is None or v != v else format(v, spec)


def pct(frac):
    return "—" if frac is None else f"{100 * frac:.1f} %"


def table_bandwidth(rows, scale):
    out = ["| function | shape | µs | GB/s | of ceiling | torch.compile GB/s |",
           "| --- | --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        t = r["ms"] * 1000 if scale == "ms" else r["us"]
        out.append(f"| {r['function']} | {r['shape']} | {t:.1f} | {r['GB/s']:.0f} | {pct(r['ceiling_frac'])} | "
                   f"{fmt(r.get('compile_GB/s'), '.0f')} |")
    return out


def table_moe(rows):
    out = ["| function | tokens | µs | GB/s | of ceiling | reference µs | torch.compile µs |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        c = r.get("compile_us")
        cs = "failed to compile" if c is None or c != c else f"{c:.1f}"
        out.append(f"| {r['function']} | {r['tokens']} | {r['us']:.1f} | {r['GB/s']:.0f} | {pct(r['ceiling_frac'])} | "
                   f"{fmt(r.get('ref_us'), '.1f')} | {cs} |")
    return out


def main(paths):
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        rows = d["rows"]
        print(f"<!-- {p}: {d.get('device')}, {d.get('date')}, copy ceiling {d['copy_ceiling_GBps']:.0f} GB/s -->")
        if rows and "tokens" in rows[0]:
            lines = table_moe(rows)
        else:
            lines = table_bandwidth(rows, "ms" if rows and "ms" in rows[0] else "us")
        print("\n".join(lines))
        print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
