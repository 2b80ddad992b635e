"""Code-generation checks over the shipped kernels (no GPU):
  build        -- `tilec build` of every declared specialisation for sm_90a and sm_100a; ptxas
                  (via the manifest) reports no spills and no stack frame for any of them, except
                  small ones (<= 128 bytes) where the specialisation asks for blocks per SM (a
                  generic BPS > 0: fewer registers traded for occupancy, measured faster)
  vectors      -- the PTX of each of the first kernels (FIVE) uses 16-byte global accesses where the
                  data allows (and the instructions the kernel must contain)
  determinism  -- two compiles of the same specialisation give byte-identical PTX
Usage: check_kernels.py TILEC KERNELS.TL WORKDIR {build|vectors|determinism}
`build` exits 77 (CTest: skipped) where the CUDA toolkit's ptxas, nvlink or fatbinary is missing."""
import os
import re
import subprocess
import sys

tilec, kernels, work, what = sys.argv[1:5]
os.makedirs(work, exist_ok=True)


def emit(kernel, generics, arch="sm_90a", stage="ptx"):
    cmd = [tilec, "emit", f"--stage={stage}", f"--arch={arch}", kernels, "-k", kernel]
    for g in generics:
        cmd += ["-g", g]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"emit {kernel} {generics} failed:\n{r.stderr}")
    return r.stdout


# 16-byte accesses: LLVM writes them as v4.b32 or (sm_100a) v2.b64
LD16 = r"ld\.global\.nc\.(v4\.b32|v2\.b64)"
ST16 = r"st\.global\.(v4\.b32|v2\.b64)"

# kernel, generics, instructions that must appear in the PTX (regular expressions)
FIVE = [
    ("batched_transpose", ["T=bf16", "BX=128", "BY=128", "SA=8"],
     [LD16, ST16, r"ld\.shared\.v4\.b32", r"st\.shared\.v4\.b32", r"bar\.sync"]),
    ("batched_transpose", ["T=f32", "BX=64", "BY=128", "SA=4"],
     [LD16, ST16]),
    # bytes: micro-tiles of 16 rows of 8 bytes, so 16-byte writes too, transposed by prmt
    ("batched_transpose", ["T=u8", "BX=256", "BY=256", "SA=16"],
     [LD16, ST16, r"prmt\.b32"]),
    ("per_token_cast", ["T=bf16", "O=e4m3", "H=7168", "G=128", "ROUND=true", "XA=8", "out=present", "sf=present",
                        "sfp=absent", "psf=absent", "isf=absent", "isfp=absent"],
     [LD16, r"cvt\.rn\.satfinite\.e4m3x2\.f32", r"shfl\.sync\.bfly", r"div\.rn\.f32|mul\.rn\.f32"]),
    ("per_token_cast", ["T=f32", "O=e4m3", "H=4096", "G=64", "ROUND=false", "XA=4", "out=present", "sfp=absent",
                        "sf=present", "psf=absent", "isf=absent", "isfp=absent"],
     [LD16, r"div\.rn\.f32"]),
    ("topk_gate", ["E=256", "K=8"], [r"shfl\.sync\.bfly", r"st\.global\.b64"]),
    ("engram_hash", ["MN=3", "B=8"], [r"mul\.lo\.s64", r"rem\.s64"]),
    ("mhc_sinkhorn", ["H=4"], [LD16, ST16, r"ex2\.approx\.ftz\.f32",
                               r"div\.rn\.f32", r"fma\.rm\.f32"]),
]

def cuda_tool(name):
    """The CUDA tool NAME where tilec looks for it (TILEC_CUDA_HOME alone when set, else CUDA_HOME
    and /usr/local/cuda), or None."""
    only = os.environ.get("TILEC_CUDA_HOME")
    homes = [only] if only else [os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    for home in homes:
        path = os.path.join(home, "bin", name) if home else None
        if path and os.access(path, os.X_OK):
            return path
    return None


if what == "build":
    missing = [t for t in ("ptxas", "nvlink", "fatbinary") if not cuda_tool(t)]
    if missing:
        print(f"codegen.build: skipped, no {', '.join(missing)} (the CUDA 13 toolkit)")
        sys.exit(77)
    out = os.path.join(work, "kernels.fatbin")
    r = subprocess.run([tilec, "build", kernels, "--arch=sm_90a,sm_100a", "-j", "2", "-o", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"tilec build failed:\n{r.stderr[-4000:]}")
    manifest = open(out + ".manifest").read()
    notes = re.findall(r"# specialisation (\d+): (\d+) registers, (\d+) bytes spilled, (\d+) bytes of stack\n"
                       r"tilec-sig 1\nkernel \S+\nentry \S+\nkey (\S+)", manifest)
    sigs = manifest.count("tilec-sig 1")
    if not notes or len(notes) != sigs:
        sys.exit(f"manifest: {len(notes)} notes for {sigs} signatures")
    def asks(n):
        return re.search(r"[<,]BPS=[1-9]", n[4]) is not None

    bad = [n for n in notes if (int(n[2]) or int(n[3])) and not (asks(n) and int(n[2]) <= 128 and int(n[3]) <= 128)]
    if bad:
        sys.exit(f"{len(bad)} specialisations spill or use a stack frame: {bad[:5]}")
    archs = set(re.findall(r"^arch (\S+)", manifest, re.M))
    if archs != {"sm_90a", "sm_100a"}:
        sys.exit(f"manifest archs {archs}")
    spilling = [f"{n[4]}: {n[2]} bytes" for n in notes if asks(n) and int(n[2])]
    print(f"build: {len(notes)} specialisations for sm_90a and sm_100a, no spills, no stack frames "
          f"except {len(spilling)} that ask for blocks per SM; max registers {max(int(n[1]) for n in notes)}")
    for s in spilling:
        print("  spills (blocks_per_sm requested):", s)
elif what == "vectors":
    for kernel, gens, needles in FIVE:
        for arch in ("sm_90a", "sm_100a"):
            ptx = emit(kernel, gens, arch)
            for n in needles:
                if not re.search(n, ptx):
                    sys.exit(f"{kernel} {gens} {arch}: no '{n}' in the PTX")
            # no 64-bit float math and no local memory (spills show up as local loads)
            if re.search(r"\bld\.local|\bst\.local", ptx):
                sys.exit(f"{kernel} {gens} {arch}: local memory in the PTX")
    print(f"vectors: {len(FIVE)} specialisations x 2 archs have their 16-byte accesses and instructions")
elif what == "determinism":
    for kernel, gens, _ in FIVE:
        a, b = emit(kernel, gens), emit(kernel, gens)
        if a != b:
            sys.exit(f"{kernel} {gens}: two compiles differ")
        ta, tb = emit(kernel, gens, stage="tir"), emit(kernel, gens, stage="tir")
        if ta != tb:
            sys.exit(f"{kernel} {gens}: two TIR dumps differ")
    print(f"determinism: {len(FIVE)} specialisations give identical PTX and TIR twice")
else:
    sys.exit(f"unknown check {what}")
