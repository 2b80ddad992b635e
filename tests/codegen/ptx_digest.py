#!/usr/bin/env python3
"""The PTX of every declared specialisation of the kernel library, digested: one line per
(specialisation, arch) with the SHA-256 of its PTX, its instruction count and the registers
ptxas reports (from `tilec build`'s manifest). A change meant to leave the generated code alone
(a refactoring of the compiler) is checked by comparing two digests:

    tests/codegen/ptx_digest.py --tilec build/compiler/tilec > before.txt
    ... change, rebuild ...
    tests/codegen/ptx_digest.py --tilec build/compiler/tilec --compare before.txt

Needs ptxas (for the manifest's list of specialisations and registers). The PTX is compiled
through libtilec (next to the tilec executable, or --lib) once per specialisation."""
import argparse
import ctypes
import hashlib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Artifact(ctypes.Structure):
    _fields_ = [("ptx", ctypes.c_char_p), ("ptx_size", ctypes.c_size_t), ("object", ctypes.c_void_p),
                ("object_size", ctypes.c_size_t), ("signature", ctypes.c_char_p), ("entry", ctypes.c_char_p)]


class Target(ctypes.Structure):
    _fields_ = [("sm", ctypes.c_int), ("opt_level", ctypes.c_int), ("host", ctypes.c_int)]


def manifest_entries(tilec, source, jobs):
    """(kernel, generics, arch, registers) of every specialisation `tilec build` compiles."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "k.fatbin")
        subprocess.run([tilec, "build", source, "--arch", "sm_90a,sm_100a", "-j", str(jobs), "-o", out], check=True,
                       stdout=subprocess.DEVNULL)
        text = open(out + ".manifest").read()
    entries = []
    for block in text.split("# specialisation ")[1:]:
        regs = int(re.match(r"\d+: (\d+) registers", block).group(1))
        key = re.search(r"^key (\w+)<(.*)>$", block, re.M)
        arch = re.search(r"^arch (\S+)$", block, re.M).group(1)
        gens = [g for g in key.group(2).split(",") if g]
        entries.append((key.group(1), gens, arch, regs))
    return entries


def compile_ptx(lib_path, source, entries, who):
    """The PTX (bytes) of each (kernel, generics, arch, ...) of entries, compiled through
    libtilec's C API in one program; `who` names the caller in the error of one that fails."""
    lib = ctypes.CDLL(lib_path)
    lib.tilec_program_from_file.restype = ctypes.c_int
    lib.tilec_compile.restype = ctypes.c_int
    lib.tilec_compile.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
                                  ctypes.POINTER(Target), ctypes.POINTER(ctypes.POINTER(Artifact))]
    lib.tilec_program_destroy.argtypes = [ctypes.c_void_p]
    lib.tilec_artifact_destroy.argtypes = [ctypes.POINTER(Artifact)]
    prog = ctypes.c_void_p()
    if lib.tilec_program_from_file(source.encode(), None, ctypes.byref(prog)) != 0:
        sys.exit(f"{who}: {source} does not compile")
    ptxs = []
    for kernel, gens, arch, *_ in entries:
        arr = (ctypes.c_char_p * len(gens))(*[g.encode() for g in gens])
        tgt = Target(100 if arch == "sm_100a" else 90, 3, 0)
        art = ctypes.POINTER(Artifact)()
        if lib.tilec_compile(prog, kernel.encode(), arr, len(gens), ctypes.byref(tgt), ctypes.byref(art)) != 0:
            sys.exit(f"{who}: {kernel}<{','.join(gens)}> for {arch} does not compile")
        ptxs.append(ctypes.string_at(art.contents.ptx, art.contents.ptx_size))
        lib.tilec_artifact_destroy(art)
    lib.tilec_program_destroy(prog)
    return ptxs


def digest(tilec, lib_path, source, jobs):
    entries = manifest_entries(tilec, source, jobs)
    lines = []
    for (kernel, gens, arch, regs), ptx in zip(entries, compile_ptx(lib_path, source, entries, "ptx_digest")):
        instrs = sum(1 for ln in ptx.split(b"\n") if ln.startswith(b"\t") and not ln.startswith((b"\t.", b"\t//"))
                     and ln.strip() not in (b"{", b"}"))
        lines.append(f"{kernel}<{','.join(gens)}> {arch} {hashlib.sha256(ptx).hexdigest()[:16]} "
                     f"instructions={instrs} registers={regs}")
    return sorted(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tilec", default=os.path.join(ROOT, "build", "compiler", "tilec"))
    ap.add_argument("--lib", help="libtilec.so (default: next to the tilec executable)")
    ap.add_argument("--source", default=os.path.join(ROOT, "kernels.tl"))
    ap.add_argument("--compare", help="a digest written before: print the differences, exit 1 if any")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    lib = a.lib or os.path.join(os.path.dirname(os.path.abspath(a.tilec)), "libtilec.so")
    lines = digest(a.tilec, lib, a.source, a.j)
    if not a.compare:
        print("\n".join(lines))
        return 0
    old = set(open(a.compare).read().split("\n")) - {""}
    new = set(lines)
    for ln in sorted(old - new):
        print("- " + ln)
    for ln in sorted(new - old):
        print("+ " + ln)
    print(f"ptx_digest: {len(new)} specialisations, {len(old ^ new) // 2 if old ^ new else 0} changed", file=sys.stderr)
    return 1 if old != new else 0


if __name__ == "__main__":
    sys.exit(main())
