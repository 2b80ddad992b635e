#!/usr/bin/env python3
"""The quality of the generated PTX over a sample of the shipped specialisations: for each one,
its PTX instruction count and the registers, spill bytes and stack frame ptxas reports
(`ptxas -v`), against the values recorded in tests/codegen/ptx_quality.txt. A change to the
compiler's pipeline may move code around but must not make it bigger or hungrier: the test fails
when an instruction count or a register count differs from its record by more than 1 %, or when
spills or a stack frame appear.

    tests/codegen/ptx_quality.py --tilec build/compiler/tilec            # check against the record
    tests/codegen/ptx_quality.py --tilec build/compiler/tilec --record   # write the record anew
    tests/codegen/ptx_quality.py --record --all --out FILE         # every sm_90a specialisation
    tests/codegen/ptx_quality.py --compare FILE                    # checked against that record

--record takes every 8th specialisation of each arch from `tilec build`'s manifest (so every
kernel family is in the sample), --record --all every sm_90a one. The PTX is compiled through
libtilec, ptxas is the CUDA toolkit's."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ptx_quality.txt")
TOLERANCE = 0.01

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ptx_digest import compile_ptx, manifest_entries  # noqa: E402


def find_ptxas():
    """ptxas where tilec looks for it: TILEC_CUDA_HOME alone when set, else CUDA_HOME and
    /usr/local/cuda."""
    only = os.environ.get("TILEC_CUDA_HOME")
    for cand in [only] if only else [os.environ.get("CUDA_HOME"), "/usr/local/cuda"]:
        if cand and os.access(os.path.join(cand, "bin", "ptxas"), os.X_OK):
            return os.path.join(cand, "bin", "ptxas")
    return None


def count_instructions(ptx):
    return sum(1 for ln in ptx.split("\n") if ln.startswith("\t") and not ln.startswith(("\t.", "\t//"))
               and ln.strip() not in ("{", "}"))


def ptxas_stats(ptxas, ptx, arch, tmp, name):
    path = os.path.join(tmp, name + ".ptx")
    with open(path, "w") as f:
        f.write(ptx)
    r = subprocess.run([ptxas, "-v", f"-arch={arch}", "-O3", path, "-o", os.path.join(tmp, name + ".cubin")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ptx_quality: ptxas failed on {name}:\n{r.stderr[-2000:]}")
    regs = re.search(r"Used (\d+) registers", r.stderr)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
    stack = re.search(r"(\d+) bytes stack frame", r.stderr)
    return (int(regs.group(1)) if regs else 0, int(spill.group(1)) + int(spill.group(2)) if spill else 0,
            int(stack.group(1)) if stack else 0)


def parse_line(line):
    m = re.match(r"^(\w+)<(.*)> (\S+)", line)
    gens = [g for g in m.group(2).split(",") if g]
    fields = dict(kv.split("=") for kv in line.split()[2:] if "=" in kv)
    return m.group(1), gens, m.group(3), {k: int(v) for k, v in fields.items()}


def all_sm90(tilec, source, jobs):
    """(kernel, generics, arch, _) of every declared specialisation for sm_90a."""
    return [e for e in manifest_entries(tilec, source, jobs) if e[2] == "sm_90a"]


def measure(lib_path, source, ptxas, entries, jobs):
    ptxs = [p.decode() for p in compile_ptx(lib_path, source, entries, "ptx_quality")]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(jobs) as pool:
        stats = list(pool.map(lambda i: ptxas_stats(ptxas, ptxs[i], entries[i][2], tmp, f"s{i}"), range(len(entries))))
    lines = []
    for (kernel, gens, arch, _), ptx, (regs, spill, stack) in zip(entries, ptxs, stats):
        lines.append(f"{kernel}<{','.join(gens)}> {arch} instructions={count_instructions(ptx)} registers={regs} "
                     f"spill={spill} stack={stack}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tilec", default=os.path.join(ROOT, "build", "compiler", "tilec"))
    ap.add_argument("--source", default=os.path.join(ROOT, "kernels.tl"))
    ap.add_argument("--record", action="store_true", help="write the record instead of checking it")
    ap.add_argument("--all", action="store_true", help="--record: every sm_90a specialisation, not the sample")
    ap.add_argument("--compare", default=RECORD, help="the record to check against (default: the shipped one)")
    ap.add_argument("--out", default=RECORD, help="--record: where to write")
    ap.add_argument("-j", type=int, default=2)
    a = ap.parse_args()
    ptxas = find_ptxas()
    if not ptxas:
        print("ptx_quality: no ptxas; skipped")
        return 77
    lib = os.path.join(os.path.dirname(os.path.abspath(a.tilec)), "libtilec.so")
    if a.record:
        if a.all:
            entries = all_sm90(a.tilec, a.source, a.j)
        else:
            every = manifest_entries(a.tilec, a.source, a.j)
            entries = [e for arch in ("sm_90a", "sm_100a") for e in [x for x in every if x[2] == arch][::8]]
        lines = measure(lib, a.source, ptxas, entries, a.j)
        with open(a.out, "w") as f:
            f.write("# tests/codegen/ptx_quality.py --record: PTX instructions and ptxas -v figures of a sample\n")
            f.write("\n".join(lines) + "\n")
        print(f"ptx_quality: recorded {len(lines)} specialisations in {a.out}")
        return 0
    recorded = [parse_line(ln) for ln in open(a.compare).read().split("\n") if ln and not ln.startswith("#")]
    lines = measure(lib, a.source, ptxas, recorded, a.j)
    bad = 0
    d_instr = d_regs = 0
    for entry, line in zip(recorded, lines):
        kernel, gens, arch, now = parse_line(line)
        old = entry[3]
        d_instr += now["instructions"] - old["instructions"]
        d_regs += now["registers"] - old["registers"]
        why = []
        for key in ("instructions", "registers"):
            if abs(now[key] - old[key]) > TOLERANCE * old[key]:
                why.append(f"{key} {old[key]} -> {now[key]}")
        for key in ("spill", "stack"):
            if now[key] > old[key]:
                why.append(f"{key} {old[key]} -> {now[key]}")
        if why:
            bad += 1
            print(f"{kernel}<{','.join(gens)}> {arch}: " + ", ".join(why))
    print(f"ptx_quality: {len(lines)} specialisations, {bad} outside 1 % of the record "
          f"(instructions {d_instr:+d}, registers {d_regs:+d} in total)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
