#!/usr/bin/env python3
"""run_tests.py — the golden and ptxas tests of tests/codegen/tileops.

Golden tests are .tl files in the format of tests/run_golden.py (branch fetests), of which this
runner implements the part these tests use, so that it can be dropped once that runner is on
main:
  // RUN: tilec ARGS      the command (%s = this file; it runs in this folder)
  // EXIT: N              expected exit status (default 1 if an error is expected, else 0)
  // expected-error: MSG  (also -warning, -note; @+N / @-N for a nearby line): a diagnostic
  // CHECK: TEXT          stdout contains TEXT on a later line than the previous CHECK
  // CHECK-NEXT: TEXT     ... on the very next line
  //> LINE               the exact standard error, line by line (required when it is not empty)

ptxas acceptance: every `// PTXAS: -k KERNEL [-g NAME=VALUE]...` line of a .tl file is compiled
to PTX for sm_90a and sm_100a and assembled with `ptxas -v`, which must report no spill stores,
no spill loads and no stack frame.

usage: run_tests.py --tilec BIN [--ptxas BIN] [--update] [--golden | --ptxas-only] [FILES...]
"""
import argparse
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DIAG_RE = re.compile(r'^(.+?):(\d+):(\d+): (error|warning|note): (.*)$')
ANNOT_RE = re.compile(r'expected-(error|warning|note)(?:@([+-]\d+))?: (.*?)\s*$')


def parse(path):
    lines = open(path, encoding='utf-8').read().split('\n')
    t = dict(run=None, exit=None, annots=[], checks=[], err=[], ptxas=[])
    for i, ln in enumerate(lines, 1):
        if ln.startswith('//>'):
            t['err'].append(ln[4:] if ln.startswith('//> ') else ln[3:])
            continue
        m = re.search(r'//\s*RUN:\s*(.*?)\s*$', ln)
        if m:
            t['run'] = m.group(1)
        m = re.search(r'//\s*EXIT:\s*(\d+)', ln)
        if m:
            t['exit'] = int(m.group(1))
        m = re.search(r'//\s*(CHECK|CHECK-NEXT):\s?(.*?)\s*$', ln)
        if m:
            t['checks'].append((m.group(1), m.group(2)))
        m = re.search(r'//\s*PTXAS:\s*(.*?)\s*$', ln)
        if m:
            t['ptxas'].append(m.group(1).split())
        m = ANNOT_RE.search(ln)
        if m and '//' in ln[:m.start()]:
            line = i + int(m.group(2)) if m.group(2) else i
            t['annots'].append((os.path.basename(path), line, m.group(1), m.group(3)))
    if t['exit'] is None:
        t['exit'] = 1 if any(a[2] == 'error' for a in t['annots']) else 0
    return t


def run_golden(tilec, path, update):
    t = parse(path)
    if not t['run']:
        return []
    args = t['run'].replace('%s', os.path.basename(path)).split()
    if args[0] == 'tilec':
        args[0] = tilec
    p = subprocess.run(args, cwd=os.path.dirname(path), capture_output=True, text=True, timeout=60)
    errs = []
    if p.returncode != t['exit']:
        errs.append('exit %d, expected %d' % (p.returncode, t['exit']))
    diags = []
    for ln in p.stderr.splitlines():
        m = DIAG_RE.match(ln)
        if m:
            diags.append((os.path.basename(m.group(1)), int(m.group(2)), m.group(4), m.group(5)))
    left = list(diags)
    for a in t['annots']:
        if a in left:
            left.remove(a)
        else:
            errs.append('missing %s at line %d: %s' % (a[2], a[1], a[3]))
    for d in left:
        errs.append('unexpected %s at line %d: %s' % (d[2], d[1], d[3]))
    out = p.stdout.split('\n')
    pos = -1
    for kind, pat in t['checks']:
        if kind == 'CHECK-NEXT':
            if pos + 1 < len(out) and pat in out[pos + 1]:
                pos += 1
                continue
            errs.append('CHECK-NEXT not on line %d: %s' % (pos + 2, pat))
            break
        found = next((i for i in range(pos + 1, len(out)) if pat in out[i]), None)
        if found is None:
            errs.append('CHECK not found after line %d: %s' % (pos + 1, pat))
            break
        pos = found
    want = '\n'.join(t['err']) + '\n' if t['err'] else ''
    if p.stderr != want:
        if update and not any(e.startswith(('missing', 'unexpected')) for e in errs):
            text = open(path, encoding='utf-8').read().split('\n')
            text = [ln for ln in text if not ln.startswith('//>')]
            while text and text[-1] == '':
                text.pop()
            text += ['//> ' + ln if ln else '//>' for ln in p.stderr.rstrip('\n').split('\n')] if p.stderr else []
            open(path, 'w', encoding='utf-8').write('\n'.join(text) + '\n')
        else:
            errs.append('standard error differs from the //> lines:\n' + p.stderr)
    return errs


def run_ptxas(tilec, ptxas, path):
    errs = []
    for spec in parse(path)['ptxas']:
        for arch in ('sm_90a', 'sm_100a'):
            what = '%s %s %s' % (os.path.basename(path), ' '.join(spec), arch)
            p = subprocess.run([tilec, 'emit', '--stage=ptx', '--arch=' + arch, path] + spec, capture_output=True, text=True)
            if p.returncode != 0:
                errs.append('%s: tilec failed:\n%s' % (what, p.stderr))
                continue
            q = subprocess.run([ptxas, '-arch=' + arch, '-v', '-o', os.devnull, '-'], input=p.stdout,
                               capture_output=True, text=True)
            info = q.stdout + q.stderr
            if q.returncode != 0:
                errs.append('%s: ptxas failed:\n%s' % (what, info))
                continue
            m = re.search(r'(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads', info)
            regs = re.search(r'Used (\d+) registers', info)
            if not m or m.groups() != ('0', '0', '0'):
                errs.append('%s: stack frame or spills:\n%s' % (what, info))
            else:
                print('     %s: %s registers, no spills' % (what, regs.group(1) if regs else '?'))
    return errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tilec', required=True)
    ap.add_argument('--ptxas', default=None)
    ap.add_argument('--update', action='store_true')
    ap.add_argument('--golden', action='store_true', help='only the golden tests')
    ap.add_argument('--ptxas-only', action='store_true', help='only the ptxas tests')
    ap.add_argument('files', nargs='*')
    o = ap.parse_args()
    o.tilec = os.path.abspath(o.tilec)
    files = [os.path.abspath(f) for f in o.files] or sorted(glob.glob(os.path.join(HERE, '*.tl')))
    ptxas = o.ptxas
    if not o.golden and not ptxas:
        for home in (os.environ.get('CUDA_HOME'), '/usr/local/cuda'):
            if home and os.access(os.path.join(home, 'bin', 'ptxas'), os.X_OK):
                ptxas = os.path.join(home, 'bin', 'ptxas')
                break
        if not ptxas:
            print('ptxas not found (set CUDA_HOME)')
            return 77
    failed = 0
    for f in files:
        errs = []
        if not o.ptxas_only:
            errs += run_golden(o.tilec, f, o.update)
        if not o.golden:
            errs += run_ptxas(o.tilec, ptxas, f)
        print('%s %s' % ('FAIL' if errs else 'ok  ', os.path.basename(f)))
        for e in errs:
            print('     ' + e.replace('\n', '\n     '))
        failed += bool(errs)
    print('%d of %d files passed' % (len(files) - failed, len(files)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
