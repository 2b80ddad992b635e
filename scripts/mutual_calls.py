#!/usr/bin/env python3
"""mutual_calls.py — the pairs of source files that call into each other, from the object files of
a build: file A references a symbol that file B defines, and B one that A defines. Such a pair is
usually a definition in the room of its first user (docs/architecture.md); the sema trio (sema.c, sema_expr.c,
sema_stmt.c) is one recursive descent split in three and is allowed.

usage: scripts/mutual_calls.py [BUILD_DIR] [--dirs compiler,runtime] [--check]
  prints every pair (and, with -v, the symbols of each direction); --check: exit status 1 if a
  pair outside the allowed ones is found (what CTest runs)"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOWED = {frozenset(p) for p in [("compiler/sema.c", "compiler/sema_expr.c"),
                                   ("compiler/sema.c", "compiler/sema_stmt.c"),
                                   ("compiler/sema_expr.c", "compiler/sema_stmt.c")]}


def objects(build, dirs):
    """{source path relative to the checkout: object path} for the objects built from DIRS"""
    out = {}
    for top, _, files in os.walk(build):
        if "CMakeFiles" not in top:
            continue
        for f in files:
            if not f.endswith(".c.o"):
                continue
            obj = os.path.join(top, f)
            rel = os.path.relpath(obj, build)
            sub, _, inside = rel.partition("/CMakeFiles/")
            inside = inside.split("/", 1)[1]  # past TARGET.dir
            src = os.path.normpath(os.path.join(sub, inside.replace("__", "..")))[:-2]
            # a source of the checkout, or one the build generates; not the stale object of a
            # file that moved or went away
            there = os.path.exists(os.path.join(ROOT, src)) or os.path.exists(os.path.join(build, src))
            if there and src.split("/")[0] in dirs:
                out.setdefault(src, obj)   # a file compiled into two targets counts once
    return out


def symbols(obj):
    defined, undefined = set(), set()
    text = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper():          # global: T D B R C W V
            defined.add(name)
    return defined, undefined


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--dirs", default="compiler,runtime")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    objs = objects(a.build, set(a.dirs.split(",")))
    if not objs:
        sys.exit(f"mutual_calls: no object files of {a.dirs} under {a.build}")
    syms = {src: symbols(obj) for src, obj in sorted(objs.items())}
    refs = {}   # (a, b): symbols of b that a references
    for x, (_, ux) in syms.items():
        for y, (dy, _) in syms.items():
            if x != y and ux & dy:
                refs[(x, y)] = sorted(ux & dy)
    pairs = sorted({tuple(sorted(p)) for p in refs if (p[1], p[0]) in refs})
    bad = 0
    for x, y in pairs:
        allowed = frozenset((x, y)) in ALLOWED
        bad += not allowed
        print(f"{x} <-> {y}{'  (allowed)' if allowed else ''}")
        if a.v:
            print(f"    {x} -> {y}: {', '.join(refs[(x, y)])}")
            print(f"    {y} -> {x}: {', '.join(refs[(y, x)])}")
    print(f"mutual_calls: {len(objs)} files, {len(pairs)} mutual pairs, {bad} not allowed")
    return 1 if a.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
