#!/usr/bin/env python3
"""gpu_check.py — runs the tileops test kernels on a GPU (sm_90a) and compares with PyTorch.

Not part of CTest (the development machine has no GPU). On the H200 machine, with the tilec
install tree and torch:
    python3 gpu_check.py --tilec /path/to/bin/tilec [--bench]

Each kernel is compiled to PTX with `tilec emit --stage=ptx`, loaded with the CUDA driver API
(cuModuleLoadData, through ctypes) and launched on torch tensors following the kernel parameter
ABI (per tensor: pointer, then i32 extents, then i64 strides; scalars by value). Outputs are
poisoned before each launch. Inputs are small integers where the result must be exact (bf16,
fp8 and tf32 products of integers, integer prefix sums); the tf32 case also runs on random
normal inputs against a float64 reference of the operands with their low 13 bits cleared.
--bench times the 128 x 128 bf16 gemm at 8192^3 and the 1024-element scan (CUDA events,
median of 50 runs after warm-up). Exit status 0 only if every check passed.
"""
import argparse
import ctypes
import os
import re
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TILEC = None
cuda = ctypes.CDLL('libcuda.so.1')
for name, res, args in [
    ('cuModuleLoadData', ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]),
    ('cuModuleGetFunction', ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]),
    ('cuFuncSetAttribute', ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]),
    ('cuLaunchKernel', ctypes.c_int, [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p,
                                      ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]),
    ('cuGetErrorString', ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]),
]:
    f = getattr(cuda, name)
    f.restype = res
    f.argtypes = args
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


def check(rc, what):
    if rc != 0:
        s = ctypes.c_char_p()
        cuda.cuGetErrorString(rc, ctypes.byref(s))
        raise RuntimeError('%s failed: %d %s' % (what, rc, s.value.decode() if s.value else ''))


_cache = {}


def kernel(file, name, generics=()):
    """(function, threads, dynamic shared bytes) of a specialisation"""
    key = (file, name, tuple(generics))
    if key in _cache:
        return _cache[key]
    g = [a for x in generics for a in ('-g', x)]
    path = os.path.join(HERE, file)
    ptx = subprocess.run([TILEC, 'emit', '--stage=ptx', '--arch=sm_90a', path, '-k', name] + g,
                         check=True, capture_output=True).stdout
    tir = subprocess.run([TILEC, 'emit', '--stage=tir', path, '-k', name] + g, check=True, capture_output=True).stdout.decode()
    head = tir.split('\n')[0]
    threads = int(re.search(r'threads\((\d+)\)', head).group(1))
    m = re.search(r'smem\((\d+)\)', head)
    smem = int(m.group(1)) if m else 0
    entry = re.search(rb'\.entry\s+(\w+)\(', ptx).group(1)
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(mod), ptx + b'\0'), 'cuModuleLoadData')
    check(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, entry), 'cuModuleGetFunction')
    if smem > 48 * 1024:
        check(cuda.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem), 'cuFuncSetAttribute')
    _cache[key] = (fn, threads, smem)
    return _cache[key]


def launch(k, grid, tensors):
    fn, threads, smem = k
    vals = []
    for t in tensors:
        vals.append(ctypes.c_uint64(t.data_ptr()))
        vals += [ctypes.c_int32(d) for d in t.shape]
        vals += [ctypes.c_int64(s) for s in t.stride()]
    ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
    gx, gy = (grid + (1,))[:2]
    stream = torch.cuda.current_stream().cuda_stream
    check(cuda.cuLaunchKernel(fn, gx, gy, 1, threads, 1, 1, smem, ctypes.c_void_p(stream), ptrs, None), 'cuLaunchKernel')


def cdiv(a, b):
    return (a + b - 1) // b


FAILED = []


def report(what, ok, detail=''):
    print('%s %s%s' % ('ok  ' if ok else 'FAIL', what, (': ' + detail) if detail and not ok else ''))
    if not ok:
        FAILED.append(what)


def ints(shape, lo=-4, hi=4):
    return torch.randint(lo, hi + 1, shape, device='cuda')


def compare(what, got, want):
    same = torch.equal(got.double(), want.double())
    detail = ''
    if not same:
        diff = (got.double() - want.double()).abs()
        idx = (diff == diff.max()).nonzero()[0].tolist()
        detail = 'max |diff| %g at %s (got %g, want %g)' % (diff.max().item(), idx, got[tuple(idx)].item(),
                                                           want[tuple(idx)].item())
    report(what, same, detail)


def gemm_case(file, name, gen, dt, a_km, b_nk, M, N, K, bm, bn, cdt=torch.float32):
    A, B = ints((M, K)), ints((K, N))
    a = (A.t().contiguous() if a_km else A).float().to(dt)
    b = (B.t().contiguous() if b_nk else B).float().to(dt)
    c = torch.full((M, N), float('nan'), device='cuda', dtype=cdt)
    launch(kernel(file, name, gen), (cdiv(N, bn), cdiv(M, bm)), [a, b, c])
    torch.cuda.synchronize()
    compare('%s %s %s M=%d N=%d K=%d' % (file, name, ' '.join(gen), M, N, K), c, (A.double() @ B.double()).to(cdt))


def tf32_random_case(M, N, K):
    x = torch.randn(M, K, device='cuda')
    w = torch.randn(N, K, device='cuda')
    c = torch.full((M, N), float('nan'), device='cuda')
    launch(kernel('gemm_tf32.tl', 'gemm_tf32_nt', ['S=2']), (cdiv(N, 32), cdiv(M, 32)), [x, w, c])
    torch.cuda.synchronize()
    trunc = lambda t: (t.view(torch.int32) & ~0x1FFF).view(torch.float32).double()
    want = trunc(x) @ trunc(w).t()
    scale = trunc(x).abs() @ trunc(w).abs().t()  # f32 accumulation errors scale with this
    err = ((c.double() - want).abs() / scale).max().item()
    report('gemm_tf32_nt random normal M=%d N=%d K=%d (operands truncated to tf32)' % (M, N, K), err < 1e-4,
           'max error / sum of |products| = %g' % err)


def cumsum_case(name, gen, n, exclusive):
    x = torch.randint(-1000000, 1000000, (n,), device='cuda', dtype=torch.int32)
    y = torch.full((n,), 0x5A5A5A5A, device='cuda', dtype=torch.int32)
    launch(kernel('cumsum.tl', name, gen), (1,), [x, y])
    torch.cuda.synchronize()
    want = torch.cumsum(x.long(), 0)
    if exclusive:
        want = want - x.long()
    compare('cumsum.tl %s %s' % (name, ' '.join(gen)), y, want.to(torch.int32))


def cumsum2d_case(name, R, C, dim, dt, odt, exclusive):
    x = ints((R, C), -50, 50).to(dt) if R > 1 else ints((C,), 0, 255).to(dt)
    y = torch.full(x.shape, 0x7F if odt == torch.uint8 else -7777, device='cuda', dtype=odt)
    launch(kernel('cumsum.tl', name), (1,), [x, y])
    torch.cuda.synchronize()
    want = torch.cumsum(x.long() if not dt.is_floating_point else x.double(), dim if R > 1 else 0)
    if exclusive:
        want = want - (x.long() if not dt.is_floating_point else x.double())
    if odt == torch.uint8:
        want = want % 256
    compare('cumsum.tl %s' % name, y, want.to(odt))


def pipe_sum_case(name, gen, R, C):
    x = ints((R, C), -100, 100).float()
    y = torch.full((R,), float('nan'), device='cuda')
    launch(kernel('pipe_sum.tl', name, gen), (cdiv(R, 32),), [x, y])
    torch.cuda.synchronize()
    compare('pipe_sum.tl %s %s R=%d C=%d' % (name, ' '.join(gen), R, C), y, x.double().sum(1).float())


def bench(fn, runs=50):
    for _ in range(5):
        fn()
    times = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return sorted(times)[len(times) // 2]


def main():
    global TILEC
    ap = argparse.ArgumentParser()
    ap.add_argument('--tilec', required=True)
    ap.add_argument('--bench', action='store_true')
    o = ap.parse_args()
    TILEC = os.path.abspath(o.tilec)
    torch.manual_seed(1)
    torch.zeros(1, device='cuda')  # creates the primary context the driver calls use

    for t in ('T=128', 'T=256', 'T=1024'):
        cumsum_case('cumsum_i32', [t], 1024, False)
    for t in ('T=256', 'T=1024'):
        cumsum_case('cumsum_i32_exclusive', [t], 1024, True)
    cumsum2d_case('cumsum_rows', 16, 64, 1, torch.float32, torch.float32, False)
    cumsum2d_case('cumsum_cols', 64, 16, 0, torch.float32, torch.float32, False)
    cumsum2d_case('cumsum_cols_i64', 64, 16, 0, torch.int64, torch.int64, False)
    cumsum2d_case('cumsum_mma', 64, 64, 1, torch.float32, torch.float32, False)
    cumsum2d_case('cumsum_mma_cols', 64, 64, 0, torch.float32, torch.float32, False)
    cumsum2d_case('cumsum_bf16_exclusive', 8, 256, 1, torch.bfloat16, torch.float32, True)
    cumsum2d_case('cumsum_u8', 1, 64, 0, torch.uint8, torch.uint8, False)
    x = ints((32, 64), -100, 100).float()
    y = torch.full((32,), float('nan'), device='cuda')
    launch(kernel('cumsum.tl', 'cumsum_of_rowsums'), (1,), [x, y])
    torch.cuda.synchronize()
    compare('cumsum.tl cumsum_of_rowsums', y, torch.cumsum(x.double().sum(1), 0).float())

    bf, f16, f32 = torch.bfloat16, torch.float16, torch.float32
    for s, shape in (('S=1', (64, 64, 64)), ('S=1', (128, 192, 128)), ('S=2', (100, 72, 136)), ('S=3', (64, 64, 200)),
                     ('S=3', (1000, 1016, 1008))):
        gemm_case('gemm_bf16.tl', 'gemm_bf16', [s], bf, False, False, *shape, 64, 64)
    gemm_case('gemm_bf16.tl', 'gemm_bf16_out', [], bf, False, False, 64, 64, 64, 64, 64, bf)
    gemm_case('gemm_bf16.tl', 'gemm_bf16_any', [], bf, False, False, 64, 72, 104, 64, 64)
    gemm_case('gemm_bf16.tl', 'gemm_bf16_any', [], bf, False, False, 70, 66, 71, 64, 64)
    gemm_case('gemm_bf16.tl', 'gemm_f16_tt', [], f16, True, True, 64, 128, 96, 64, 64)
    for g in (['BM=128', 'BN=128', 'BK=32', 'S=3', 'T=256'], ['BM=128', 'BN=256', 'BK=32', 'S=4', 'T=256'],
              ['BM=128', 'BN=128', 'BK=64', 'S=3', 'T=128']):
        bm, bn = int(g[0][3:]), int(g[1][3:])
        gemm_case('gemm_bf16.tl', 'gemm_tile', g, bf, False, False, 520, 776, 512, bm, bn, bf)
    gemm_case('gemm_tf32.tl', 'gemm_tf32_nt', ['S=2'], f32, False, True, 32, 24, 512, 32, 32)
    gemm_case('gemm_tf32.tl', 'gemm_tf32_nt', ['S=1'], f32, False, True, 64, 32, 96, 32, 32)
    gemm_case('gemm_tf32.tl', 'gemm_tf32_tn', [], f32, True, False, 64, 64, 64, 32, 32)
    gemm_case('gemm_tf32.tl', 'gemm_tf32_k256', [], f32, False, True, 40, 48, 600, 32, 24)
    tf32_random_case(4096, 24, 7168)
    gemm_case('gemm_fp8.tl', 'gemm_e4m3', ['S=2'], torch.float8_e4m3fn, False, True, 64, 64, 128, 64, 64)
    gemm_case('gemm_fp8.tl', 'gemm_e5m2_nn', [], torch.float8_e5m2, False, False, 64, 32, 128, 32, 32)
    gemm_case('gemm_frag.tl', 'gemm_frag', [], bf, False, False, 32, 32, 64, 32, 32)
    gemm_case('gemm_frag.tl', 'gemm_small', [], bf, False, False, 16, 8, 16, 16, 8)
    for name, s, R, C in (('pipe_row_sum16', 'S=2', 64, 256), ('pipe_row_sum16', 'S=2', 50, 200),
                          ('pipe_row_sum16', 'S=3', 40, 100), ('pipe_row_sum', 'S=2', 32, 37),
                          ('pipe_row_sum', 'S=2', 48, 96), ('pipe_row_sum', 'S=3', 70, 161), ('pipe_row_sum', 'S=1', 40, 100)):
        pipe_sum_case(name, [s], R, C)
    x = ints((70, 50), -100, 100).to(torch.bfloat16)
    y = torch.full((50,), float('nan'), device='cuda')
    launch(kernel('pipe_sum.tl', 'pipe_col_sum_t'), (cdiv(50, 32),), [x, y])
    torch.cuda.synchronize()
    compare('pipe_sum.tl pipe_col_sum_t R=50 C=70', y, x.double().sum(0).float())

    if o.bench:
        n = 8192
        a, b = torch.randn(n, n, device='cuda').to(bf), torch.randn(n, n, device='cuda').to(bf)
        c = torch.empty(n, n, device='cuda', dtype=bf)
        for g in (['BM=128', 'BN=128', 'BK=32', 'S=3', 'T=256'], ['BM=128', 'BN=256', 'BK=32', 'S=4', 'T=256']):
            k = kernel('gemm_bf16.tl', 'gemm_tile', g)
            bm, bn = int(g[0][3:]), int(g[1][3:])
            ms = bench(lambda: launch(k, (cdiv(n, bn), cdiv(n, bm)), [a, b, c]))
            print('bench gemm_tile %s 8192^3 bf16: %.3f ms, %.0f TFLOP/s' % (' '.join(g), ms, 2 * n ** 3 / ms / 1e9))
        ms = bench(lambda: torch.matmul(a, b))
        print('bench torch.matmul 8192^3 bf16: %.3f ms, %.0f TFLOP/s' % (ms, 2 * n ** 3 / ms / 1e9))
        x = torch.randint(0, 100, (1024,), device='cuda', dtype=torch.int32)
        y = torch.empty_like(x)
        for t in ('T=256', 'T=1024'):
            k = kernel('cumsum.tl', 'cumsum_i32', [t])
            print('bench cumsum_i32 %s (1024 elements, one block, launch included): %.4f ms' %
                  (t, bench(lambda: launch(k, (1,), [x, y]))))
    print('%d failed' % len(FAILED))
    return 1 if FAILED else 0


if __name__ == '__main__':
    sys.exit(main())
