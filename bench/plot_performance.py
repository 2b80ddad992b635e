"""Plots achieved bandwidth per function and shape against the copy ceiling measured in the same
run, from the JSON files bench_gpu.py / bench_quant.py / bench_moe.py write.

Usage: python bench/plot_performance.py OUT.png RESULTS.json [RESULTS.json ...]
Rows without a bandwidth (latency-bound MoE functions) are left out. Needs matplotlib.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows_of(path):
    d = json.load(open(path))
    ceiling = d["copy_ceiling_GBps"]
    for r in d["rows"]:
        if r.get("GB/s") is None or r.get("ceiling_frac") is None:
            continue
        shape = r.get("shape") or "T=%s" % r.get("tokens")
        base = r.get("compile_GB/s")
        if base is None and r.get("compile_us"):
            base = r["bytes"] / (r["compile_us"] * 1e3)
        yield "%s  %s" % (r["function"], shape), r["GB/s"], base, ceiling


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    rows = []
    ceilings = []
    for p in sys.argv[2:]:
        for label, gbs, base, ceiling in rows_of(p):
            rows.append((label, gbs, base))
            ceilings.append(ceiling)
    ceiling = sum(ceilings) / len(ceilings)
    rows.reverse()
    fig, ax = plt.subplots(figsize=(11, 0.26 * len(rows) + 1.5))
    y = range(len(rows))
    ax.barh([i + 0.2 for i in y], [r[1] for r in rows], height=0.4, label="tilec", color="#2b6cb0")
    ax.barh([i - 0.2 for i in y], [r[2] or 0 for r in rows], height=0.4, label="torch.compile of the reference",
            color="#bbbbbb")
    ax.axvline(ceiling, color="#c53030", linestyle="--", label="copy ceiling (%.0f GB/s)" % ceiling)
    ax.axvline(0.9 * ceiling, color="#c53030", linestyle=":", label="90 % of the ceiling")
    ax.set_yticks(list(y))
    ax.set_yticklabels([r[0] for r in rows], fontsize=7)
    ax.set_xlabel("GB/s (bytes read once + written once / median GPU time)")
    ax.set_title("tilec on an H200: achieved bandwidth per function and shape", pad=28)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8, frameon=False)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=90)
    return 0


if __name__ == "__main__":
    sys.exit(main())
