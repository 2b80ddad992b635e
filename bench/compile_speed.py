"""JIT compile latency as a user sees it: the first `library().kernel(name, generics)` of each
specialisation that kernels.tl declares, with empty memory and disk caches (source to PTX in
tilec, PTX to cubin by the driver's linker, module load), one after another. Also the
ahead-of-time path: `tilec build` of the whole library with one job per CPU.

Usage: python bench/compile_speed.py [--dist DIST] [--limit N]
Prints medians and the slowest specialisations; the list comes from the manifest of `tilec build`.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dist", default=os.environ.get("TILEC_DIST", "dist"))
    ap.add_argument("--limit", type=int, default=0, help="time only the first N specialisations")
    args = ap.parse_args()
    dist = os.path.abspath(args.dist)
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    tilec_bin = os.path.join(dist, "bin", "tilec")

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "k.fatbin")
        t0 = time.perf_counter()
        jobs = os.cpu_count() or 1
        subprocess.run([tilec_bin, "build", os.path.join(root, "kernels.tl"), "-o", out, "-j", str(jobs)], check=True,
                       stdout=subprocess.DEVNULL)
        aot_s = time.perf_counter() - t0
        keys = re.findall(r"^key (\S+)$", open(out + ".manifest").read(), re.M)
        keys = list(dict.fromkeys(keys))  # one entry per specialisation

        os.environ["TILEC_CACHE_DIR"] = os.path.join(tmp, "cache")
        sys.path.insert(0, os.path.join(dist, "python"))
        import tilec  # noqa: E402,F401  (the package must import)
        from tilec import _runtime  # noqa: E402

        lib = _runtime.library(0)  # the GPU's library (CUDA device 0)
        lib.kernel("batched_transpose", ("T=bf16", "BX=64", "BY=64", "SA=16"))  # driver and context start-up
        times = []
        for key in keys[: args.limit or None]:
            m = re.match(r"([A-Za-z_0-9]+)<(.*)>$", key)
            name, gens = (m.group(1), tuple(g for g in m.group(2).split(",") if g)) if m else (key, ())
            t0 = time.perf_counter()
            lib.kernel(name, gens)
            times.append(((time.perf_counter() - t0) * 1e3, key))
    ms = [t for t, _ in times]
    print(f"{tilec_version(tilec_bin)}: {len(keys)} specialisations")
    print(f"AOT  tilec build -j {jobs}: {aot_s:.2f} s wall for {len(keys)} specialisations "
          "(PTX, ptxas, nvlink, fatbinary)")
    print(f"JIT  first launch lookup: median {statistics.median(ms):.1f} ms, mean {statistics.mean(ms):.1f} ms, "
          f"max {max(ms):.1f} ms over {len(ms)} specialisations")
    for t, k in sorted(times, reverse=True)[:5]:
        print(f"     {t:7.1f} ms  {k}")


def tilec_version(tilec_bin):
    return subprocess.run([tilec_bin, "--version"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
