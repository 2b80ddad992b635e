#!/usr/bin/env python3
"""tables.py — Markdown tables for docs/performance.md from the JSON files of the GPU benchmarks.

    python3 bench/tables.py [--family quant|transpose|moe|engram|mhc] bench/results/<date>/bench_*.json

Each file is one of bench_gpu.py / bench_quant.py / bench_moe.py / bench_engram.py / bench_mhc.py
--json; the kind is told apart by its rows (MoE, Engram and mHC rows have `tokens`, Engram and mHC
rows also `"family"` (mHC rows their hidden size too), quantisation rows `us`, the others `ms`). One table per file,
headed by a comment with the file, the device, the date and the copy ceiling of that run. The
last column is torch.compile's time over ours (above 1: tilec is faster), where torch.compile was
measured. --family keeps the rows of one family: transpose (transpose, batched_transpose), moe
(the rows of bench_moe.py), engram (bench_engram.py's), mhc (bench_mhc.py's), quant (the others). No dependencies.
"""
import json
import sys


def fmt(v, spec):
    return "—" if v is None or v != v else format(v, spec)


def pct(frac):
    return "—" if frac is None else f"{100 * frac:.1f} %"


def ratio(num, den):
    """num / den as "1.23×"; "—" where either is missing (torch.compile not measured or failed)."""
    if num is None or den is None or num != num or den != den or not den:
        return "—"
    return f"{num / den:.2f}×"


def family(row):
    if "family" in row:
        return row["family"]
    if "tokens" in row:
        return "moe"
    return "transpose" if row["function"].split()[0] in ("transpose", "batched_transpose") else "quant"


def table_bandwidth(rows, scale):
    out = ["| function | shape | µs | GB/s | of ceiling | torch.compile GB/s | vs torch.compile |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        t = r["ms"] * 1000 if scale == "ms" else r["us"]
        out.append(f"| {r['function']} | {r['shape']} | {t:.1f} | {r['GB/s']:.0f} | {pct(r['ceiling_frac'])} | "
                   f"{fmt(r.get('compile_GB/s'), '.0f')} | {ratio(r['GB/s'], r.get('compile_GB/s'))} |")
    return out


def table_moe(rows):
    out = ["| function | tokens | µs | GB/s | of ceiling | reference µs | torch.compile µs | vs torch.compile |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        c = r.get("compile_us")
        cs = "failed to compile" if c is None or c != c else f"{c:.1f}"
        name = r["function"] + (f" (H = {r['hidden']})" if r.get("hidden") else "")
        out.append(f"| {name} | {fmt(r['tokens'], 'd')} | {r['us']:.1f} | {r['GB/s']:.0f} | {pct(r['ceiling_frac'])} | "
                   f"{fmt(r.get('ref_us'), '.1f')} | {cs} | {ratio(c, r['us'])} |")
    return out


def main(argv):
    fam = None
    if len(argv) >= 2 and argv[0] == "--family":
        fam, argv = argv[1], argv[2:]
        if fam not in ("quant", "transpose", "moe", "engram", "mhc"):
            sys.exit(f"tables.py: unknown family {fam!r} (quant, transpose, moe, engram, mhc)")
    if not argv:
        sys.exit(__doc__)
    for p in argv:
        with open(p) as f:
            d = json.load(f)
        rows = [r for r in d["rows"] if fam is None or family(r) == fam]
        if not rows:
            continue
        print(f"<!-- {p}: {d.get('device')}, {d.get('date')}, copy ceiling {d['copy_ceiling_GBps']:.0f} GB/s -->")
        if "tokens" in rows[0]:
            lines = table_moe(rows)
        else:
            lines = table_bandwidth(rows, "ms" if "ms" in rows[0] else "us")
        print("\n".join(lines))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
