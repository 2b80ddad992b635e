#!/usr/bin/env python3
"""runtime/cuda_abi.h (tilec's declarations of the CUDA Driver API, used where the toolkit is
missing) against the toolkit's cuda.h and cudaTypedefs.h:

  1. every CU*, cu* and PFN_* name the header declares is named in cuda_abi_check.c, and every
     field of its structs and unions is in the check's list of fields, so that nothing in the
     header goes unchecked;
  2. cuda_abi_check.c is compiled (C11, -Wall -Wextra -Werror -pedantic) with tilec's header; its
     static assertions hold each entry point's pointer type, each field's type and each handle's
     struct to the signatures written in it;
  3. it is compiled again with cuda.h, where the same assertions hold those signatures to NVIDIA's;
  4. both programs run, printing every constant, size, alignment, signedness, offset and linked
     symbol name, and the two outputs must be the same.

Without cuda.h (no toolkit) steps 1 and 2 run and the test exits 77 (skipped): there is nothing
to compare with.

    tests/runtime/cuda_abi.py --cc cc --cuda-include /usr/local/cuda/include --out DIR"""
import argparse
import difflib
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
HEADER = os.path.join(ROOT, "runtime", "cuda_abi.h")
CHECK = os.path.join(HERE, "cuda_abi_check.c")
FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"]


C_WORDS = {"_Alignas", "char", "const", "enum", "int", "long", "sizeof", "struct", "typedef", "uint64_t", "union",
           "unsigned", "void", "size_t"}


def declared_names(text):
    """The names the header's code declares: its CU*, cu* and PFN_* identifiers (of a
    `#define NAME SYMBOL` only NAME: the symbol is checked through the program's output), and the
    field names of its structs and unions (what is left once comments, preprocessor lines,
    parameter lists and C's own words are gone)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    names = re.sub(r"^(\s*#\s*define\s+\w+).*$", r"\1", text, flags=re.M)
    names = set(re.findall(r"\b(?:CU\w+|cu(?:[A-Z]|uint)\w*|PFN_\w+)\b", names))
    code = re.sub(r"^\s*#.*$", "", text, flags=re.M)
    while True:
        stripped = re.sub(r"\([^()]*\)", "", code)
        if stripped == code:
            break
        code = stripped
    fields = set(re.findall(r"\b[A-Za-z_]\w*\b", code)) - names - C_WORDS
    return sorted(names), sorted(fields)


def build_and_run(cc, args, exe):
    cmd = [cc] + FLAGS + args + [CHECK, "-o", exe]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("cuda_abi: compiling failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    r = subprocess.run([exe], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout:
        sys.exit("cuda_abi: %s exited %d:\n%s" % (exe, r.returncode, r.stderr))
    return r.stdout.splitlines()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", required=True, help="the C compiler")
    ap.add_argument("--cuda-include", required=True, help="the toolkit's include directory")
    ap.add_argument("--out", required=True, help="a directory for the two programs")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    with open(HEADER) as f:
        names, fields = declared_names(f.read())
    with open(CHECK) as f:
        check = f.read()
    unchecked = [n for n in names if not re.search(r"\b%s\b" % re.escape(n), check)]
    checked_fields = {part for f in re.findall(r"X\(CU\w+, ([\w.]+),", check) for part in f.split(".")}
    unchecked += [f for f in fields if f not in checked_fields]
    if unchecked:
        sys.exit("cuda_abi: runtime/cuda_abi.h declares names that tests/runtime/cuda_abi_check.c does not check: "
                 + ", ".join(unchecked))
    names += fields

    ours = build_and_run(a.cc, ["-DTILEC_NO_CUDA_H", "-I" + os.path.dirname(HEADER)],
                         os.path.join(a.out, "cuda_abi_tilec"))
    cuda_h = os.path.join(a.cuda_include, "cuda.h")
    if not os.path.exists(cuda_h):
        print("cuda_abi: %d names of runtime/cuda_abi.h checked against the signatures of cuda_abi_check.c; "
              "no %s (the CUDA toolkit is missing): nothing to compare the values with, skipped" % (len(names), cuda_h))
        return 77
    theirs = build_and_run(a.cc, ["-isystem", a.cuda_include], os.path.join(a.out, "cuda_abi_cuda"))
    if ours != theirs:
        diff = difflib.unified_diff(theirs, ours, "cuda.h", "runtime/cuda_abi.h", lineterm="")
        sys.exit("cuda_abi: runtime/cuda_abi.h differs from %s:\n%s" % (cuda_h, "\n".join(diff)))
    print("cuda_abi: runtime/cuda_abi.h matches %s: %d names, %d values, sizes, offsets and symbols, the "
          "signatures of %d entry points" % (cuda_h, len(names), len(ours), sum(l.startswith(("pointer ", "symbol "))
                                                                                 for l in ours)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
