#!/usr/bin/env python3
"""run_golden.py — runs tilec's golden tests: .tl files that carry their own expectations.

In a test file:
  // RUN: tilec ARGS        the command (default `tilec check %s`); %s is the file's name and the
                            command runs in the file's folder, so paths in the output are short;
                            several RUN lines run in order, their outputs joined. Substitutions:
                            %S the file's folder (absolute), %t an empty temporary folder of the
                            test's own (removed afterwards). The command may start with VAR=value
                            words, which it gets in its environment; every command also gets
                            TILEC=<the tilec under test>, so that the command may be a script
                            (given by path) that runs it
  // REQUIRES: cuda         the test needs the CUDA toolkit at /usr/local/cuda (the fake toolkits
                            of tests/lang/cli/fakecuda hand on to its programs); without it the
                            test is skipped, with the reason printed (exit status 77 when every
                            file given was skipped)
  // EXIT: N                expected exit status (default 1 if an error is expected, else 0)
  // MEMORY: N              each command may use at most N MiB (default 4096): a regression fails
                            instead of swapping. An address-space limit (RLIMIT_AS), or, when
                            $TILEC_TEST_SANITIZED is set (the sanitizers reserve terabytes of address
                            space), ASan's hard_rss_limit_mb at four times N
  expected-error: MSG       in a `//` comment: a diagnostic with exactly this message on this line;
  expected-warning: MSG     `expected-error@+1: MSG` / `@-2` for a nearby line, `@FILE:N` for a line
  expected-note: MSG        of another file (an import), `@none` for one without a location
  // CHECK: TEXT            stdout contains TEXT (spaces around it ignored) on a later line than
                            the previous CHECK;
  // CHECK-NEXT: TEXT       ... on the very next line
  //> LINE                  the exact standard error, line by line (source lines and carets
                            included); required whenever standard error is not empty
A test fails on a wrong exit status, a missing or unexpected diagnostic, a CHECK not found, or
any difference in standard error (a diff is printed).

usage:
  run_golden.py --tilec BIN [--update] PATH...   run the tests in the files / folders given
                                                 (--update rewrites the //> lines from the actual
                                                 output, once the expected-* lines all match)
  run_golden.py --tilec BIN --stress             generated pathological inputs, each within a limit
                                                 of processor time (scaled by
                                                 $TILEC_TEST_TIME_FACTOR) and the default memory limit
  run_golden.py --coverage                       every diagnostic in compiler/ has a test
                                                 (for a message of several lines, its first
                                                 line: the rest is checked by //> lines)
"""
import glob
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENC = dict(encoding='utf-8', errors='surrogateescape')
DIAG_RE = re.compile(r'^(.+?):(\d+):(\d+): (error|warning|note): (.*)$')
NOLOC_RE = re.compile(r'^tilec: (error|warning|note): (.*)$')
ANNOT_RE = re.compile(r'expected-(error|warning|note)(?:@(none|[+-]\d+|[^:\s]+:\d+))?: (.*?)\s*$')


# ---------------------------------------------------------------- running one test
def parse_diags(stderr):
    """(file, line, level, message) for each diagnostic line; file and line are None for
    diagnostics without a location."""
    out = []
    for ln in stderr.splitlines():
        m = DIAG_RE.match(ln)
        if m and not ln.startswith('tilec: '):
            out.append((m.group(1), int(m.group(2)), m.group(4), m.group(5)))
            continue
        m = NOLOC_RE.match(ln)
        if m:
            out.append((None, None, m.group(1), m.group(2)))
    return out


def parse_test(path):
    text = open(path, newline='', **ENC).read()  # keep \r\n: a test may be about it
    lines = text.split('\n')
    name = os.path.basename(path)
    t = dict(runs=[], exit=None, annots=[], checks=[], out=None, lines=lines, requires=[], memory=DEFAULT_MEMORY_MB)
    out = []
    for i, ln in enumerate(lines, 1):
        if ln.startswith('//>'):
            ln = ln.rstrip('\r')  # tilec never prints \r, so a \r here is the file's line end
            out.append(ln[4:] if ln.startswith('//> ') else ln[3:])
            continue
        m = re.search(r'//\s*RUN:\s*(.*?)\s*$', ln)
        if m:
            t['runs'].append(m.group(1))
        m = re.search(r'//\s*REQUIRES:\s*(.*?)\s*$', ln)
        if m:
            t['requires'].append(m.group(1))
        m = re.search(r'//\s*EXIT:\s*(\d+)', ln)
        if m:
            t['exit'] = int(m.group(1))
        m = re.search(r'//\s*MEMORY:\s*(\d+)', ln)
        if m:
            t['memory'] = int(m.group(1))
        m = re.search(r'//\s*(CHECK|CHECK-NEXT):\s*(.*?)\s*$', ln)
        if m:
            t['checks'].append((m.group(1), m.group(2)))
        m = ANNOT_RE.search(ln)
        if m and '//' in ln[:m.start()]:
            where = m.group(2)
            if where is None:
                loc = (name, i)
            elif where == 'none':
                loc = (None, None)
            elif where[0] in '+-':
                loc = (name, i + int(where))
            else:
                f, n = where.rsplit(':', 1)
                loc = (f, int(n))
            t['annots'].append((loc[0], loc[1], m.group(1), m.group(3)))
    if out:
        t['out'] = '\n'.join(out) + '\n'
    if t['exit'] is None:
        t['exit'] = 1 if any(a[2] == 'error' for a in t['annots']) else 0
    return t


ENV_WORD = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)=(.*)$')
CUDA_PTXAS = '/usr/local/cuda/bin/ptxas'
# what each REQUIRES: feature needs, and the reason printed when a test is skipped without it
FEATURES = {'cuda': (lambda: os.access(CUDA_PTXAS, os.X_OK), 'no CUDA toolkit (%s)' % CUDA_PTXAS)}


DEFAULT_MEMORY_MB = 4096


def memory_limit(env, mb):
    """The preexec function (or the sanitizer option in env) that holds a command to mb MiB."""
    if os.environ.get('TILEC_TEST_SANITIZED'):
        opts = env.get('ASAN_OPTIONS', '')
        env['ASAN_OPTIONS'] = (opts + ':' if opts else '') + 'hard_rss_limit_mb=%d' % (4 * mb)
        return None
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))
    return limit


def run_cmd(tilec, cmd, cwd, timeout=20, memory=DEFAULT_MEMORY_MB):
    args = cmd.split()
    env = dict(os.environ, TILEC=tilec)
    while args and ENV_WORD.match(args[0]):
        name, value = ENV_WORD.match(args.pop(0)).groups()
        env[name] = value
    if args and args[0] == 'tilec':
        args[0] = tilec
    try:
        p = subprocess.run(args, cwd=cwd, capture_output=True, timeout=timeout, env=env,
                           preexec_fn=memory_limit(env, memory))
    except subprocess.TimeoutExpired:
        return None, '', 'TIMEOUT after %d s\n' % timeout
    return p.returncode, p.stdout.decode(**ENC), p.stderr.decode(**ENC)


def missing_features(t):
    """Reasons why the test cannot run here (empty: it can)."""
    out = []
    for feature in t['requires']:
        if feature not in FEATURES:
            out.append('unknown REQUIRES feature %r' % feature)
        elif not FEATURES[feature][0]():
            out.append(FEATURES[feature][1])
    return out


def check_annotations(t, diags):
    """Messages for expected diagnostics that did not appear and for unexpected ones."""
    errs = []
    left = list(diags)
    for a in t['annots']:
        if a in left:
            left.remove(a)
        else:
            errs.append('missing %s at %s:%s: %s' % (a[2], a[0] or '-', a[1] or '-', a[3]))
    for d in left:
        errs.append('unexpected %s at %s:%s: %s' % (d[2], d[0] or '-', d[1] or '-', d[3]))
    return errs


def check_stdout(t, stdout):
    errs = []
    lines = stdout.split('\n')
    pos = -1
    for kind, pat in t['checks']:
        if kind == 'CHECK-NEXT':
            if pos + 1 < len(lines) and pat in lines[pos + 1]:
                pos += 1
                continue
            errs.append('CHECK-NEXT not on the next line (%d): %s' % (pos + 2, pat))
            break
        found = next((k for k in range(pos + 1, len(lines)) if pat in lines[k]), None)
        if found is None:
            errs.append('CHECK not found after line %d: %s' % (pos + 1, pat))
            break
        pos = found
    return errs


def diff(expected, actual):
    import difflib
    return ''.join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                        'expected (//> lines)', 'actual stderr'))


class Skipped(Exception):
    pass


def run_test(tilec, path, update=False, tries=3):
    """Returns a list of failure messages (empty: the test passed); raises Skipped when the test
    needs what this machine lacks."""
    t = parse_test(path)
    why = missing_features(t)
    if why and not any(w.startswith('unknown') for w in why):
        raise Skipped('; '.join(why))
    if why:
        return why
    cwd = os.path.dirname(os.path.abspath(path))
    errs, out, err = [], '', ''
    tmp = tempfile.mkdtemp(prefix='tilec-test-')
    try:
        for cmd in t['runs'] or ['tilec check %s']:
            line = cmd.replace('%s', os.path.basename(path)).replace('%S', cwd).replace('%t', tmp)
            rc, o, e = run_cmd(tilec, line, cwd, memory=t['memory'])
            out, err = out + o, err + e
            if rc != t['exit']:
                errs.append('%s: exit status %s, expected %d' % (cmd, rc, t['exit']))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if 'internal compiler error' in err or 'Sanitizer' in err or 'runtime error:' in err:
        errs.append('crash or internal error')
    errs += check_annotations(t, parse_diags(err))
    errs += check_stdout(t, out)
    if update and tries and not errs and (t['out'] or '') != err:
        write_block(path, t, err)
        return run_test(tilec, path, update, tries - 1)  # line numbers may move: run until stable
    if (t['out'] or '') != err:
        errs.append('standard error differs:\n' + diff(t['out'] or '', err))
    return errs


def write_block(path, t, err):
    """Puts the //> lines in place of the old ones, or after the leading comment lines (before
    any expected-* line among them, whose @+N offsets must not change)."""
    lines = [ln for ln in t['lines'] if not ln.startswith('//>')]
    block = ['//> ' + ln if ln else '//>' for ln in err.rstrip('\n').split('\n')] if err else []
    old = [i for i, ln in enumerate(t['lines']) if ln.startswith('//>')]
    at = old[0] if old else next((i for i, ln in enumerate(lines)
                                  if not ln.startswith('//') or 'expected-' in ln), len(lines))
    lines[at:at] = block
    with open(path, 'w', newline='', **ENC) as f:
        f.write('\n'.join(lines))


def find_tests(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(f for f in glob.glob(os.path.join(p, '**', '*.tl'), recursive=True)
                            if '/inc/' not in f.replace(os.sep, '/'))
        else:
            files.append(p)
    return files


# ---------------------------------------------------------------- generated inputs
def kernel(body):
    return 'kernel k(x: f32[N]) grid(1) threads(32) {\n' + body + '\n}\n'


def import_chain(n):
    files = {'t.tl': 'import "m1.tl";\n'}
    for i in range(1, n):
        files['m%d.tl' % i] = 'import "m%d.tl";\n' % (i + 1)
    files['m%d.tl' % n] = 'const LAST = 1;\n'
    return files


TOO_DEEP = 'nesting is deeper than 200 levels'
TOO_LONG = "this expression has more than 500 operations inside one another; split it with 'let'"
CODE_SIZE = ("the code of this kernel would be more than 65536 operations after lowering and unrolling (the limit: "
             "LLVM's time and memory grow faster than the code); most of it is made here")
TOO_DEEP_INLINED = ("expressions and statements nest more than 1000 levels deep here, counting the bodies of the fns "
                    "called (each is inlined at its call); split the expression with 'let' or call fewer fns inside "
                    "one another")


def fn_chain(n, body):
    """fns g0 .. g{n-1}, each calling the next at the bottom of body (which holds CALL once),
    the last one returning x; a kernel calls g0"""
    out = ['fn g%d(x: f32) -> f32 { %s }' % (i, body.replace('CALL', 'g%d(x)' % (i + 1))) for i in range(n)]
    out.append('fn g%d(x: f32) -> f32 { return x; }' % n)
    out.append(kernel('if thread.x == 0 { x[0] = g0(x[1]); }'))
    return {'t.tl': '\n'.join(out) + '\n'}
TOO_MANY = ('error', 'too many errors (20); stopping')
# name, files ('t.tl' is checked), command, [(level, message)] in order (None: not checked)
STRESS = [
    ('parens-1MB', {'t.tl': 'const X = ' + '(' * (1 << 20)}, None, [('error', TOO_DEEP)]),
    ('parens-toplevel-1MB', {'t.tl': '(' * (1 << 20)}, None, [('error', "unexpected '('")]),
    ('balanced-parens-100k', {'t.tl': 'const X = ' + '(' * 100000 + '1' + ')' * 100000 + ';'},
     None, [('error', TOO_DEEP)]),
    ('nested-blocks-100k', {'t.tl': kernel('{' * 100000 + '}' * 100000)}, None, [('error', TOO_DEEP)]),
    ('nested-ifs-100k', {'t.tl': kernel('if true {' * 100000 + '}' * 100000)}, None,
     [('error', TOO_DEEP)]),
    ('nested-index-100k', {'t.tl': kernel('let y = ' + 'x[' * 100000 + '0' + ']' * 100000 + ';')},
     None, [('error', TOO_DEEP)]),
    ('unary-chain-100k', {'t.tl': 'const X = ' + '-' * 100000 + '1;'}, None, [('error', TOO_DEEP)]),
    ('sum-100k-terms', {'t.tl': 'const X = ' + '+'.join(['1'] * 100000) + ';'}, None,
     [('error', TOO_LONG)]),
    ('sum-500-terms', {'t.tl': 'const X = ' + '+'.join(['1'] * 500) + ';'}, None, []),
    ('sum-501-terms', {'t.tl': 'const X = ' + '+'.join(['1'] * 501) + ';'}, None, [('error', TOO_LONG)]),
    ('parens-of-sums', {'t.tl': kernel('x[0] = ' + '(x[1] + x[1] + ' * 190 + 'x[1]' + ')' * 190 + ';')},
     'tilec emit --stage=ptx t.tl', []),
    # fn bodies are inlined: their nesting adds up along a chain of calls (g0 alone and the kernel)
    ('sums-through-fns', fn_chain(4, 'return CALL' + ' + x' * 300 + ';'), None,
     [('error', TOO_DEEP_INLINED), ('note', "in this call of 'g3'"), ('note', "in this call of 'g2'"),
      ('note', "in this call of 'g1'")] * 2 + [('note', "in this call of 'g0'")]),
    ('blocks-through-fns', fn_chain(6, 'if x > 0.0 {' * 190 + ' return CALL; ' + '}' * 190 + ' return x;'), None,
     [('error', TOO_DEEP_INLINED), ('note', "in this call of 'g3'"), ('note', "in this call of 'g2'"),
      ('note', "in this call of 'g1'")] * 2 + [('note', "in this call of 'g0'")]),
    ('deepest-accepted', fn_chain(2, 'if x > 0.0 {' * 196 + ' return CALL' + ' + x' * 290 + '; ' + '}' * 196
                                  + ' return x;'), 'tilec emit --stage=ptx t.tl', []),
    ('call-chain-100k', {'t.tl': kernel('let y = f' + '()' * 100000 + ';')}, None, [('error', TOO_DEEP)]),
    ('member-chain-100k', {'t.tl': kernel('let y = a' + '.b' * 100000 + ';')}, None, [('error', TOO_DEEP)]),
    ('errors-10k', {'t.tl': kernel('x[0] = nope;\n' * 10000)}, None,
     [('error', "unknown name 'nope'")] * 20 + [TOO_MANY]),
    ('syntax-errors-10k', {'t.tl': kernel('x[0] = 1 +;\n' * 10000)}, None,
     [('error', "unexpected ';'")] * 20 + [TOO_MANY]),
    ('warnings-20k', {'t.tl': kernel('frag f: f32[32];\nshared t: f32[32];\n' + 'copy(t, f, other = 0.0);\n' * 20000)},
     None, [('warning', "'other' has no effect: only reads of a global tensor can fall outside it")] * 20
     + [('warning', 'too many warnings (20); not showing the others'), ('error', CODE_SIZE)]),
    ('lex-errors-10k', {'t.tl': '$' * 10000}, None, [('error', "unexpected character '$'")] * 20 + [TOO_MANY]),
    ('lets-100k-distinct', {'t.tl': kernel(''.join('let v%d = %d;\n' % (i, i) for i in range(100000)))},
     None, []),
    ('lets-100k-same', {'t.tl': kernel('let v = 1;' * 100000)}, None,
     [('error', "'v' is already declared in this scope"), ('note', 'previous declaration is here')] * 20
     + [TOO_MANY]),
    ('consts-100k', {'t.tl': ''.join('const C%d = %d;\n' % (i, i) for i in range(100000))}, None, []),
    ('kernels-20k', {'t.tl': ''.join('kernel k%d() grid(1) threads(32) {}\n' % i for i in range(20000))},
     None, []),
    # tilec list expands each specialize declaration once, not once per kernel
    ('list-20k-specialised', {'t.tl': ''.join('kernel k%d<T: type>(x: T[N]) grid(1) threads(32) {}\n'
                                              'specialize k%d<T = (f32, bf16)>;\n' % (i, i) for i in range(20000))},
     'tilec list t.tl', []),
    # and prints each kernel once: documentation, generics, optional tensors, requirements
    ('list-4000-documented', {'t.tl': ''.join('/// kernel %d\n/// of many\nkernel k%d<T: type = f32, B: int = 64>(x: T[N], '
                                              'y: T[N]?, s: f32) grid(cdiv(N, B)) threads(128) {\n'
                                              '    require N %% 4 == 0, "N %%%% 4";\n}\n' % (i, i)
                                              for i in range(4000))},
     'tilec list t.tl', []),
    ('params-100k', {'t.tl': 'fn f(' + ', '.join('p%d: f32' % i for i in range(100000)) + ') {}'},
     None, None),
    ('call-args-100k', {'t.tl': kernel('printf("x"' + ', 1' * 100000 + ');')}, None,
     [('error', "'printf' takes 1 to 32 arguments, 100001 given")]),
    ('named-args-100k', {'t.tl': kernel('printf("x"' + ', a = 1' * 100000 + ');')}, None, None),
    ('let-tuple-100k', {'t.tl': kernel('let (' + ', '.join('a%d' % i for i in range(100000)) + ') = 1;')},
     None, None),
    ('unterminated-comments', {'t.tl': '/*' * 100000}, None,
     [('error', "unexpected '*'"), ('error', 'unterminated block comment')]),
    ('unterminated-string-1MB', {'t.tl': 'const S = "' + 'a' * (1 << 20)}, None,
     [('error', 'unterminated string literal'), ('error', "expected ';', found end of file")]),
    ('long-identifier-1MB', {'t.tl': 'const ' + 'a' * (1 << 20) + ' = 1;'}, None,
     [('error', 'identifier is longer than 128 characters')]),
    ('long-number-1MB', {'t.tl': 'const X = ' + '9' * (1 << 20) + ';'}, None,
     [('error', 'integer literal is too large (the limit is 2^63 - 1)')]),
    ('long-float-1MB', {'t.tl': 'const X = 1.' + '5' * (1 << 20) + ';'}, None, []),
    ('nul-byte', {'t.tl': 'const X = 1;\0'}, None,
     [('error', "'t.tl' contains a NUL byte; it is not a text file")]),
    ('file-over-8MiB', {'t.tl': '//' + 'x' * (8 << 20)}, None,
     [('error', "cannot read 't.tl': file is larger than 8 MiB")]),
    ('import-over-8MiB', {'t.tl': 'import "big.tl";\n', 'big.tl': '//' + 'x' * (8 << 20)}, None,
     [('error', "cannot read import 'big.tl': file is larger than 8 MiB")]),
    ('imports-33-deep', import_chain(33), None, [('error', 'imports nest deeper than 32 levels')]),
    ('imports-300-files', dict([('t.tl', ''.join('import "m%d.tl";\n' % i for i in range(300)))] +
                               [('m%d.tl' % i, 'const C%d = 1;\n' % i) for i in range(300)]), None,
     [('error', 'too many source files (the limit is 256)')] * 20 + [TOO_MANY]),
    ('import-cycle', {'t.tl': 'import "a.tl";\nconst T = 1;\n', 'a.tl': 'import "t.tl";\nconst A = 1;\n'},
     None, []),
    ('unroll-4096', {'t.tl': kernel('for unroll i in 0 .. 4096 { }')}, None, []),
    ('unroll-nest-4096x4096', {'t.tl': kernel('for unroll i in 0 .. 4096 { for unroll j in 0 .. 4096 { x[i] = x[j]; } }')},
     'tilec emit --stage=ptx t.tl', [('error', "this 'unroll' loop of 4096 iterations inside others of 4096 makes "
                                              "16777216 copies of its body; the limit for a nest is 4096")]),
    ('unroll-code-size', {'t.tl': kernel('for unroll i in 0 .. 4096 { x[i] = x[i + 1] * x[i + 2] + x[i + 3]; }')},
     'tilec emit --stage=ptx t.tl', [('error', CODE_SIZE)]),
    ('parallel-1M-elements', {'t.tl': kernel('local l: f32[1 << 20];\nparallel (i) in l { l[i] = 1.0; }')}, None,
     [('error', CODE_SIZE)]),
    ('specialize-4096', {'t.tl': 'kernel k<A: int, B: int>() grid(1) threads(32) {}\n'
                         'specialize k<A = (' + ', '.join(str(i) for i in range(64)) + '), B = ('
                         + ', '.join(str(i) for i in range(64)) + ')>;\n'}, None, []),
    ('fn-inline-chain-32', {'t.tl': ''.join('fn f%d(x: f32) -> f32 { return f%d(x) + f%d(x); }\n'
                                            % (i, i + 1, i + 1) for i in range(40))
                            + 'fn f40(x: f32) -> f32 { return x; }\n'}, None, None),
    ('inline-total', {'t.tl': 'fn m(v: f32) -> f32 {\n' + ''.join('    let a%d = v * 2.0;\n' % i for i in range(110))
                      + '    return v;\n}\n' + ''.join('kernel k%d() grid(1) threads(32) {\n' % i
                      + ''.join('    let r%d = m(1.0);\n' % j for j in range(110)) + '}\n' for i in range(24))},
     None,
     [('error', "this compilation checks more than 2097152 syntax nodes (a kernel once per specialisation, a fn "
                "once per call); stopping here")]),
    ('specialized-checks', {'t.tl': 'kernel k<A: int, B: int>() grid(1) threads(32) {\n'
                            + ''.join('    let a%d = A * %d + B;\n' % (i, i) for i in range(2000)) + '}\n'
                            + 'specialize k<A = (%s), B = (%s)>;\n' % (', '.join(map(str, range(64))),
                                                                       ', '.join(map(str, range(64))))},
     None, [('error', "this compilation checks more than 2097152 syntax nodes (a kernel once per specialisation, a fn "
                      "once per call); stopping here"), ('note', 'in the specialisation k<A=2,B=46> declared here')]),
    # no cap on repeated options (there was one of 64 for -I, -g and -D, the last reported silently)
    ('many-I', {'t.tl': ''}, 'tilec check' + ' -I .' * 1000 + ' t.tl', []),
    ('many-D', {'t.tl': ''}, 'tilec check' + ''.join(' -D C%d=%d' % (i, i) for i in range(1000)) + ' t.tl', []),
    ('many-g', {'t.tl': 'kernel k<' + ', '.join('G%d: int' % i for i in range(16)) + '>() grid(1) threads(32) { }'},
     'tilec emit --stage=tir' + ''.join(' -g G%d=%d' % (i, i) for i in range(16)) + ' t.tl', []),
]


def run_stress(tilec, only=None):
    factor = float(os.environ.get('TILEC_TEST_TIME_FACTOR', '1'))
    limit = 1.0 * factor
    failed = 0
    for name, files, cmd, want in STRESS:
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as d:
            for fn, text in files.items():
                with open(os.path.join(d, fn), 'w', **ENC) as f:
                    f.write(text)
            # the time limit is on the processor time tilec takes (user + system), so that a busy
            # machine does not fail the test; the wall clock only has the timeout
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            rc, out, err = run_cmd(tilec, cmd or 'tilec check t.tl', d, timeout=max(10, 20 * factor))
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            dt = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
        got = [(lv, msg) for _, _, lv, msg in parse_diags(err)]
        errs = []
        if rc is None or rc not in (0, 1) or 'Sanitizer' in err or 'internal compiler error' in err:
            errs.append('exit status %s' % rc)
        if want is not None and got != want:
            errs.append('diagnostics differ: expected %r, got %r' % (want[:4], got[:4]))
        if want is None and rc == 1 and not got:
            errs.append('exit status 1 without a diagnostic')
        if dt > limit:
            errs.append('took %.2f s, the limit is %.2f s' % (dt, limit))
        if len(err) > 200000:
            errs.append('printed %d bytes of diagnostics' % len(err))
        print('%s %-26s %.3f s  %d diagnostic(s)' % ('FAIL' if errs else 'ok  ', name, dt, len(got)))
        for e in errs:
            print('     ' + e)
        failed += bool(errs)
    return failed


# ---------------------------------------------------------------- message coverage
CALL_FMT_ARG = {'diag_error': 2, 'diag_warning': 2, 'diag_note': 2, 'ERR': 1, 'fail_usage': 0, 'fprintf': 1}
CLI_ERROR = 'tilec: error: '  # how the command line's own messages start (fprintf to stderr)
# messages no test can produce (no input to tilec, on the machines the tests run on), with the reason
EXEMPT = {
    'cannot start the scanner': 'only when flex cannot allocate its state (out of memory)',
    '%s: nesting too deep to parse': 'only when flex cannot allocate the scan buffer (out of memory)',
    'a tensor needs at least one dimension': 'the grammar requires an extent between the brackets',
    'a slice can only appear inside [...]': 'the grammar builds slices only inside [...]',
    "elements of a frag can only be written inside a 'parallel' loop":
        "check_index() has already said 'elements of a frag can only be accessed inside ...'",
    "'%s' takes a float, found %s": 'unify() has already rejected every operand that is not a float',
    'the host (emulator) target needs an x86-64 Linux machine; this one is %s':
        'only on a host that is not x86-64 Linux; the tests run on one',
    "'gemm' has no tensor-core instruction for %s operands":
        "sema has already said \"'gemm' takes f16, bf16, f32 (as tf32), e4m3 or e5m2 operands, not ...\"",
    'copy of part of a frag is not supported':
        "the layout pass has already said 'copy from (into) part of a frag is not supported; ...' and "
        "stopped the compilation; no later pass makes a copy",
    "'cumsum' has no 'group' argument":
        "check_named() has already said \"'cumsum' has no argument 'group'; it takes 'dim', 'exclusive'\"",
    "'cumsum' along dimension %d: '%s' is spread over threads in a way the scan does not handle; "
    "give it a default layout":
        'every layout tilec makes (default, layout(...), mma operand or accumulator, reduction result) '
        'numbers the positions of each dimension with contiguous digits; a guard for future layouts',
}
# messages built at run time rather than from one format string, as regular expressions
BUILT = {'%s': [r'expected .+, found .+', r'unexpected .+']}


def split_args(src, i):
    """Top-level arguments of the call whose '(' is at src[i]."""
    depth, args, cur, j = 0, [], '', i
    while j < len(src):
        c = src[j]
        if c in '"\'':
            k = j + 1
            while src[k] != c:
                k += 2 if src[k] == '\\' else 1
            cur += src[j:k + 1]
            j = k + 1
            continue
        if c in '([{':
            depth += 1
            if depth == 1:
                j += 1
                continue
        elif c in ')]}':
            depth -= 1
            if depth == 0:
                return args + [cur]
        elif c == ',' and depth == 1:
            args.append(cur)
            cur = ''
            j += 1
            continue
        cur += c
        j += 1
    return args


def c_unescape(s):
    return re.sub(r'\\(.)', lambda m: {'n': '\n', 't': '\t'}.get(m.group(1), m.group(1)), s)


def source_messages():
    """(file:line, kind, format) for every diagnostic format string in compiler/."""
    out = []
    for f in sorted(glob.glob(os.path.join(ROOT, 'compiler', '*.[cly]'))):
        src = open(f, **ENC).read()
        where = lambda pos: '%s:%d' % (os.path.basename(f), src.count('\n', 0, pos) + 1)
        for m in re.finditer(r'\b(diag_error|diag_warning|diag_note|ERR|fail_usage|fprintf)\s*\(', src):
            if src[max(0, m.start() - 8):m.start()].endswith('define '):
                continue
            args = split_args(src, m.end() - 1)
            if len(args) <= CALL_FMT_ARG[m.group(1)]:
                continue
            # a format argument may hold several literals (`cond ? "a" : "b"`); adjacent ones join
            lits, cur = [], None
            for t in re.finditer(r'"((?:[^"\\]|\\.)*)"|(\S)', args[CALL_FMT_ARG[m.group(1)]]):
                if t.group(1) is not None:
                    cur = (cur or '') + t.group(1)
                elif cur is not None:
                    lits.append(cur)
                    cur = None
            lits += [cur] if cur is not None else []
            for lit in lits:
                lit = c_unescape(lit)
                if m.group(1) == 'fprintf':
                    if args[0].strip() != 'stderr' or not lit.startswith(CLI_ERROR):
                        continue
                    lit = lit[len(CLI_ERROR):]
                    lit = lit[:-1] if lit.endswith('\n') else lit
                out.append((where(m.start()), m.group(1), lit))
    return out


def format_regex(fmt, kind):
    pat = ''
    for tok in re.split(r'(%%|%\.\*s|%[-0-9]*(?:ll)?[sdcxu])', fmt):
        if tok == '%%':
            pat += '%'
        elif tok.startswith('%') and tok.endswith('s'):
            pat += '.*'
        elif tok.startswith('%') and tok[-1] in 'du':
            pat += r'-?\d+'
        elif tok.startswith('%') and tok.endswith('c'):
            pat += '.'
        elif tok.startswith('%') and tok.endswith('x'):
            pat += '[0-9a-f]+'
        else:
            pat += re.escape(tok)
    if kind == 'fail_usage':
        pat += '(: .*)?'
    return re.compile(pat + r'\Z', re.S)


def tested_messages():
    msgs = set()
    tl_files = glob.glob(os.path.join(ROOT, 'tests', 'lang', '**', '*.tl'), recursive=True)
    tl_files += glob.glob(os.path.join(ROOT, 'tests', 'codegen', '**', '*.tl'), recursive=True)
    for f in tl_files:
        for ln in open(f, **ENC):
            m = ANNOT_RE.search(ln)
            if m and not ln.startswith('//>'):
                msgs.add(m.group(3))
    for _, _, _, want in STRESS:
        msgs.update(msg for _, msg in want or [])
    for f in glob.glob(os.path.join(ROOT, 'tests', 'lang', '*.c')):
        for m in re.finditer(r'EXPECT_DIAG\([^"]*"((?:[^"\\]|\\.)*)"', open(f, **ENC).read()):
            msgs.add(c_unescape(m.group(1)))
    return msgs


def run_coverage():
    msgs = tested_messages()
    seen, missing, exempt = set(), [], 0
    for where, kind, fmt in source_messages():
        if fmt in seen:
            continue
        seen.add(fmt)
        if fmt in EXEMPT:
            exempt += 1
            continue
        # a message of several lines is checked by its first line (expected-* lines hold one line)
        first = fmt.split('\n')[0]
        pats = [re.compile(p + r'\Z') for p in BUILT[fmt]] if fmt in BUILT else [format_regex(first, kind)]
        for p in pats:
            if not any(p.match(m) for m in msgs):
                missing.append('%s: %s' % (where, p.pattern if fmt in BUILT else fmt))
    for m in missing:
        print('no test for the message at ' + m)
    print('%d messages in compiler/, %d exempt (no test can produce them), %d without a test'
          % (len(seen), exempt, len(missing)))
    return 1 if missing else 0


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tilec')
    ap.add_argument('--update', action='store_true')
    ap.add_argument('--stress', nargs='*', metavar='CASE')
    ap.add_argument('--coverage', action='store_true')
    ap.add_argument('paths', nargs='*')
    a = ap.parse_args(argv)
    if a.coverage:
        return run_coverage()
    if not a.tilec:
        ap.error('--tilec is required')
    tilec = os.path.abspath(a.tilec)
    if a.stress is not None:
        return 1 if run_stress(tilec, a.stress) else 0
    files = find_tests(a.paths)
    failed = skipped = 0
    for f in files:
        try:
            errs = run_test(tilec, f, a.update)
        except Skipped as why:
            skipped += 1
            print('skipped %s: %s' % (f, why))
            continue
        if errs:
            failed += 1
            print('FAIL %s' % f)
            for e in errs:
                print('  ' + e.replace('\n', '\n  ').rstrip())
    print('%d test file(s), %d failed, %d skipped' % (len(files), failed, skipped))
    if failed:
        return 1
    return 77 if files and skipped == len(files) else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
