#!/usr/bin/env python3
"""emu_vs_gpu.py — runs every shipped kernel on the GPU and on the CPU emulator with the same
inputs and compares the outputs byte for byte: the emulator's promise that it computes what the
GPU computes, checked on every shipped kernel.

Self-contained given an install tree: it needs DIST/lib/libtilec_runtime.so (built with the
compiler), DIST/share/tilec/kernels.tl, Python 3 and libcuda. No numpy, no torch. Both devices go
through the same runtime API (the GPU runtime and one made with TILEC_RT_CPU), so argument binding
and grids are identical; only the device differs.

    python3 tests/gpu/emu_vs_gpu.py --dist dist            # on the H200
    python3 tests/gpu/emu_vs_gpu.py --dist dist --cpu-only  # no GPU: runs the emulator half only

Cases:
  kernels   every declared specialisation of kernels.tl (plus one-scale-per-row and packed-UE8M0
            per_token_cast, and more Sinkhorn rounds) on shapes with ragged tails; must match.
  specials  the same kernels on inputs with NaN (several payloads), infinities, subnormals and
            signed zeros; must match too, but are reported apart: a mismatch there points at the
            emulator's model of NaN encodings rather than at a kernel.
  probes    tests/gpu/emu_probe.tl: arithmetic on special values, min/max of signed zeros, exp /
            exp2 / rsqrt (the MUFU tables built into the library), f32 <-> f64 NaNs, atomic adds
            of subnormals, f64 arithmetic and conversions of NaNs, the FP4 encoder on every f16
            and decoder on every byte (probe_fp4, not yet run on a GPU). Informational: each line says
            which detail differs. The run of 2026-11-30 is kept in tests/gpu/recorded/ and
            the emulator now matches it; probe_f64 and probe_f64_order were recorded in later runs (tests/gpu/recorded/
            h200-2026-11-30-f64).

Exit status: 0 when every `kernels` and `specials` case matches, 1 otherwise, 2 on setup errors;
with --cpu-only (a CTest, emu_vs_gpu_cpu_only): 0 when every case ran on the emulator.
"""
import argparse
import ctypes as C
import os
import random
import struct
import sys
import time

# ---- tilec/runtime.h ----------------------------------------------------------------------

DT = {n: i for i, n in enumerate(
    "bool i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64 e4m3 e5m2 e2m1 ue8m0".split())}
ESIZE = {"bool": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8,
         "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "e4m3": 1, "e5m2": 1, "ue8m0": 1,
         "e2m1": 1}  # e2m1: two elements per byte (T counts bytes; outputs are compared byte by byte)
RT_CPU, RT_NO_DISK_CACHE, RT_QUIET = 4, 1, 2
ARG_TENSOR, ARG_SCALAR, ARG_ABSENT = 1, 2, 3


class RtTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("dtype", C.c_int), ("rank", C.c_int),
                ("shape", C.c_int64 * 8), ("strides", C.c_int64 * 8)]


class RtScalarV(C.Union):
    _fields_ = [("i", C.c_int64), ("u", C.c_uint64), ("f", C.c_double), ("bits", C.c_uint64)]


class RtScalar(C.Structure):
    _fields_ = [("dtype", C.c_int), ("v", RtScalarV)]


class RtArgU(C.Union):
    _fields_ = [("tensor", RtTensor), ("scalar", RtScalar)]


class RtArg(C.Structure):
    _fields_ = [("kind", C.c_int), ("u", RtArgU)]


class RtOptions(C.Structure):
    _fields_ = [("cache_dir", C.c_char_p), ("device", C.c_int), ("flags", C.c_uint),
                ("opt_level", C.c_int), ("sm", C.c_int)]


class RtLibOptions(C.Structure):
    _fields_ = [("source", C.c_char_p), ("include_dirs", C.POINTER(C.c_char_p)), ("ninclude", C.c_int),
                ("defines", C.POINTER(C.c_char_p)), ("ndefines", C.c_int), ("fatbin", C.c_char_p),
                ("manifest", C.c_char_p)]


class RtLaunchOptions(C.Structure):
    _fields_ = [("stream", C.c_void_p), ("num_sms", C.c_int)]


class Runtime:
    """One tilec runtime (GPU or CPU emulator) with kernels.tl and the probe file open."""

    def __init__(self, lib, cpu, sources):
        self.lib, self.cpu = lib, cpu
        o = RtOptions(None, 0, RT_NO_DISK_CACHE | RT_QUIET | (RT_CPU if cpu else 0), 3, 0)
        self.rt = C.c_void_p()
        self.check(lib.tilec_rt_create(C.byref(o), C.byref(self.rt)), "tilec_rt_create")
        self.libs = {}
        for name, path in sources.items():
            lo = RtLibOptions(path.encode(), None, 0, None, 0, None, None)
            h = C.c_void_p()
            self.check(lib.tilec_rt_library_open(self.rt, C.byref(lo), C.byref(h)), "opening " + path)
            self.libs[name] = h
        self.kernels = {}

    def check(self, status, what):
        if status != 0:
            msg = self.lib.tilec_rt_last_error().decode(errors="replace")
            raise RuntimeError("%s (%s): %s" % (what, "cpu" if self.cpu else "gpu", msg))

    def kernel(self, src, name, generics):
        key = (src, name, tuple(generics))
        if key not in self.kernels:
            arr = (C.c_char_p * max(1, len(generics)))(*[g.encode() for g in generics])
            k = C.c_void_p()
            self.check(self.lib.tilec_rt_get_kernel(self.libs[src], name.encode(), arr, len(generics),
                                                    C.byref(k)), "compiling %s<%s>" % (name, ",".join(generics)))
            self.kernels[key] = k
        return self.kernels[key]

    def launch(self, k, args, what):
        lo = RtLaunchOptions(None, 132)
        self.check(self.lib.tilec_rt_launch(k, args, len(args), C.byref(lo)), "launching " + what)


def load_runtime(path):
    lib = C.CDLL(path)
    lib.tilec_rt_last_error.restype = C.c_char_p
    for f in ("tilec_rt_create", "tilec_rt_library_open", "tilec_rt_get_kernel", "tilec_rt_launch"):
        getattr(lib, f).restype = C.c_int
    return lib


# ---- the CUDA driver, for device memory ---------------------------------------------------------

class Cuda:
    def __init__(self):
        self.cu = C.CDLL(os.environ.get("TILEC_LIBCUDA", "libcuda.so.1"))
        self.ok(self.cu.cuInit(0), "cuInit")
        dev = C.c_int()
        self.ok(self.cu.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet")
        self.ctx = C.c_void_p()
        self.ok(self.cu.cuDevicePrimaryCtxRetain(C.byref(self.ctx), dev), "cuDevicePrimaryCtxRetain")
        self.ok(self.cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")  # the runtime adopts it
        name = C.create_string_buffer(256)
        self.cu.cuDeviceGetName(name, 256, dev)
        self.name = name.value.decode()

    def ok(self, r, what):
        if r != 0:
            raise RuntimeError("%s failed: CUDA error %d" % (what, r))

    def alloc(self, data):
        p = C.c_uint64()
        self.ok(self.cu.cuMemAlloc_v2(C.byref(p), C.c_size_t(max(len(data), 16))), "cuMemAlloc")
        if data:
            buf = (C.c_char * len(data)).from_buffer(data)
            self.ok(self.cu.cuMemcpyHtoD_v2(p, buf, C.c_size_t(len(data))), "cuMemcpyHtoD")
        return p.value

    def read(self, p, n):
        out = bytearray(n)
        if n:
            buf = (C.c_char * n).from_buffer(out)
            self.ok(self.cu.cuMemcpyDtoH_v2(buf, C.c_uint64(p), C.c_size_t(n)), "cuMemcpyDtoH")
        return out

    def sync(self):
        self.ok(self.cu.cuCtxSynchronize(), "cuCtxSynchronize (a kernel fault shows here)")

    def free(self, p):
        self.cu.cuMemFree_v2(C.c_uint64(p))


# ---- arguments ----------------------------------------------------------------------------------

class T:
    """A tensor argument: dtype, shape, strides (elements; None = contiguous), initial bytes."""

    def __init__(self, dtype, shape, data=None, strides=None, out=False, absent=False):
        self.dtype, self.shape, self.out, self.absent = dtype, list(shape), out, absent
        if strides is None:
            strides, s = [0] * len(shape), 1
            for d in range(len(shape) - 1, -1, -1):
                strides[d] = s
                s *= shape[d]
        self.strides = list(strides)
        span = 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides)) if all(self.shape) else 0
        self.nbytes = (span + 1) // 2 if dtype == "e2m1" else span * ESIZE[dtype]
        if data is None:
            data = bytearray([0xEE]) * self.nbytes  # outputs: a sentinel both devices start from
        assert len(data) == self.nbytes, (dtype, shape, len(data), self.nbytes)
        self.data = bytearray(data)


class S:
    def __init__(self, dtype, value):
        self.dtype, self.value = dtype, value


def make_args(spec, ptrs):
    args = (RtArg * len(spec))()
    for i, a in enumerate(spec):
        if isinstance(a, S):
            args[i].kind = ARG_SCALAR
            args[i].u.scalar.dtype = DT[a.dtype]
            if a.dtype in ("f32", "f64"):
                args[i].u.scalar.v.f = a.value
            else:
                args[i].u.scalar.v.i = a.value
        elif a.absent:
            args[i].kind = ARG_ABSENT
        else:
            args[i].kind = ARG_TENSOR
            t = args[i].u.tensor
            t.data, t.dtype, t.rank = ptrs[i], DT[a.dtype], len(a.shape)
            for d in range(len(a.shape)):
                t.shape[d], t.strides[d] = a.shape[d], a.strides[d]
    return args


def run_cpu(rt, k, spec, what):
    bufs = [None if isinstance(a, S) or a.absent else (C.c_char * max(1, a.nbytes)).from_buffer(
        a.data if a.nbytes else bytearray(1)) for a in spec]
    ptrs = [C.addressof(b) if b is not None else None for b in bufs]
    rt.launch(k, make_args(spec, ptrs), what)
    return [bytes(a.data) if isinstance(a, T) and a.out and not a.absent else None for a in spec]


def run_gpu(rt, cuda, k, spec, what):
    ptrs = [None if isinstance(a, S) or a.absent else cuda.alloc(bytearray(a.data)) for a in spec]
    try:
        rt.launch(k, make_args(spec, ptrs), what)
        cuda.sync()
        return [bytes(cuda.read(p, a.nbytes)) if isinstance(a, T) and a.out and not a.absent else None
                for a, p in zip(spec, ptrs)]
    finally:
        for p in ptrs:
            if p:
                cuda.free(p)


# ---- input data ---------------------------------------------------------------------------------

SPECIAL_F32 = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x00000001, 0x80000001, 0x00800000,
               0x00400000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC12345,
               0xFFC00001, 0x7F800001, 0xFFA00000, 0x3F000000, 0x40400000, 0x0000B5C2, 0x42F6E979,
               0xC0E80000, 0x3EAAAAAB, 0xC2FE0000, 0xC2FC0000, 0x42B20000]


def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def pack_f32(bits_list):
    return bytearray(struct.pack("<%dI" % len(bits_list), *bits_list))


def bf16_of(bits):
    if (bits & 0x7FFFFFFF) > 0x7F800000:
        return (bits >> 16) | 0x40
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 & 0xFFFF


def float_data(rng, n, dtype, specials=False, scale=1.0):
    bits = []
    for i in range(n):
        if specials and i % 5 == 0:
            b = SPECIAL_F32[(i // 5) % len(SPECIAL_F32)]
        else:
            b = f32_bits(rng.gauss(0.0, 1.0) * scale * (2.0 ** rng.randint(-3, 3)))
        bits.append(b)
    if dtype == "f32":
        return pack_f32(bits)
    return bytearray(struct.pack("<%dH" % n, *[bf16_of(b) for b in bits]))


def strided_float(rng, rows, cols, stride, dtype, specials=False, scale=1.0):
    """rows x cols floats in storage with row stride `stride` (padding bytes random too)"""
    flat = float_data(rng, (rows - 1) * stride + cols, dtype, specials, scale)
    return flat


# ---- cases --------------------------------------------------------------------------------------

def product(**axes):
    keys = list(axes)
    out = [{}]
    for k in keys:
        out = [dict(d, **{k: v}) for d in out for v in axes[k]]
    return out


def cases(rng, specials):
    """(kind, label, source, kernel, generics, args) for the shipped kernels"""
    out = []
    kind = "specials" if specials else "kernels"
    # batched_transpose: declared T x BX x BY with SA = 16
    for g in product(T=["u8", "bf16", "f32"], BX=[64, 128], BY=[64, 128]):
        es = ESIZE[g["T"]]
        for (B, M, N, sm) in ([(2, 192, 320, 320), (3, 128, 192, 384)] if not specials else [(1, 128, 128, 128)]):
            x = T(g["T"], [B, M, N], bytearray(rng.randbytes(((B - 1) * M * sm + (M - 1) * sm + N) * es)),
                  strides=[M * sm, sm, 1])
            y = T(g["T"], [B, N, M], out=True)
            gen = ["T=%s" % g["T"], "BX=%d" % g["BX"], "BY=%d" % g["BY"], "SA=16"]
            out.append((kind, "batched_transpose<%s> %dx%dx%d rs=%d" % (",".join(gen), B, M, N, sm), "kernels",
                        "batched_transpose", gen, [x, y]))
    # per_token_cast: declared, plus G == H and packed UE8M0 scales
    decl = product(T=["bf16", "f32"], H=[576, 2048, 4096, 7168], G=[32, 64, 128], ROUND=["false", "true"])
    extra = [dict(T="f32", H=576, G=576, ROUND="false"), dict(T="bf16", H=2048, G=2048, ROUND="true")]
    for i, g in enumerate(decl + extra + [dict(T="bf16", H=576, G=128, ROUND="true", packed=True),
                                          dict(T="f32", H=2048, G=32, ROUND="true", packed=True)]):
        if specials and i % 4:
            continue
        H, G = g["H"], g["G"]
        M = 67 if H <= 2048 else 13
        sx = H * (2 if i % 2 else 1)
        NG = -(-H // G)
        Ma = -(-M // 4) * 4
        x = T(g["T"], [M, H], strided_float(rng, M, H, sx, g["T"], specials, 1.0 if i % 3 else 300.0),
              strides=[sx, 1])
        q = T("e4m3", [M, H], out=True)
        packed = g.get("packed", False)
        colmajor = i % 2 == 1
        sf = T("f32", [M, NG], strides=[1, Ma] if colmajor else [NG, 1], out=True, absent=packed)
        NP, SP = -(-NG // 4), 4 * Ma
        sfp = T("u8", [NP, SP], out=True, absent=not packed)
        gen = ["T=%s" % g["T"], "O=e4m3", "H=%d" % H, "G=%d" % G, "ROUND=%s" % g["ROUND"], "XA=8", "out=present",
               "sf=%s" % ("absent" if packed else "present"), "sfp=%s" % ("present" if packed else "absent"),
               "psf=absent", "isf=absent", "isfp=absent"]
        psf = T("f32", [M, NG], absent=True)
        isf = T("f32", [M, H], absent=True)
        isfp = T("u8", [1, 1], absent=True)
        out.append((kind, "per_token_cast<%s> M=%d SX=%d%s" % (",".join(gen), M, sx, " colmajor" if colmajor else ""),
                     "kernels", "per_token_cast", gen, [x, q, sf, sfp, psf, isf, isfp]))
    # topk_gate: declared E x K
    for g in product(E=[16, 32, 36, 64, 72, 96, 108, 128, 144, 256], K=[6, 8]):
        if specials and g["K"] == 8:
            continue
        Tn, E = 37, g["E"]
        vals = []
        for t in range(Tn):
            for e in range(E):
                if specials and (t * E + e) % 7 == 0:
                    vals.append(SPECIAL_F32[(t + e) % len(SPECIAL_F32)])
                elif t % 4 == 1:
                    vals.append(f32_bits(float(rng.randint(-1, 1))))  # ties
                elif t % 4 == 2 and rng.random() < 0.7:
                    vals.append(0xFF800000)  # -inf
                else:
                    vals.append(f32_bits(rng.gauss(0, 1)))
        s = T("f32", [Tn, E], pack_f32(vals))
        idx = T("i64", [Tn, g["K"]], out=True)
        gen = ["E=%d" % E, "K=%d" % g["K"]]
        out.append((kind, "topk_gate<%s>" % ",".join(gen), "kernels", "topk_gate", gen, [s, idx]))
    # engram_hash: declared MN x B
    if not specials:
        for g in product(MN=[2, 3, 4], B=[4, 8]):
            MN, B, Tn, L = g["MN"], g["B"], 45, 2
            NC = (MN - 1) * B
            ids = [rng.randint(-100000, 100000) for _ in range(Tn * MN)]
            mult = [rng.randint(-2 ** 62, 2 ** 62) for _ in range(L * MN)]
            vocab = [rng.choice([1, 2, 3, rng.randint(100000, 999999)]) for _ in range(L * NC)]
            offs = []
            for l in range(L):
                acc = 0
                for c in range(NC):
                    offs.append(acc)
                    acc = (acc + vocab[l * NC + c]) & 0x7FFFFFFF
            args = [T("i32", [Tn, MN], bytearray(struct.pack("<%di" % len(ids), *ids))),
                    T("i64", [L, MN], bytearray(struct.pack("<%dq" % len(mult), *mult))),
                    T("i32", [L, MN - 1, B], bytearray(struct.pack("<%di" % len(vocab), *vocab))),
                    T("i32", [L, NC], bytearray(struct.pack("<%di" % len(offs), *offs))),
                    T("i32", [L, Tn, NC], out=True)]
            gen = ["MN=%d" % MN, "B=%d" % B]
            out.append((kind, "engram_hash<%s>" % ",".join(gen), "kernels", "engram_hash", gen, args))
    # mhc_sinkhorn (the design notes' frag form): the declared specialisation and other round counts
    for rep in ([10, 1, 3] if not specials else [10]):
        N = 70
        x = T("f32", [N, 4, 4], float_data(rng, N * 16, "f32", specials, 3.0))
        o = T("f32", [N, 4, 4], out=True)
        gen = ["H=4", "BLOCK=32", "REPEAT=%d" % rep]
        out.append((kind, "mhc_sinkhorn<%s>" % ",".join(gen), "kernels", "mhc_sinkhorn", gen,
                    [x, o, S("f32", 1e-6)]))
    # mhc_sinkhorn_fwd / _bwd (sinkhorn_normalize's: one thread per matrix, the repeat count a
    # launch argument) at several round counts
    for rep in ([10, 1, 3] if not specials else [10]):
        N = 170
        x = T("f32", [N, 4, 4], float_data(rng, N * 16, "f32", specials, 3.0))
        gen = ["N=4"]
        out.append((kind, "mhc_sinkhorn_fwd<N=4> repeat=%d" % rep, "kernels", "mhc_sinkhorn_fwd", gen,
                    [x, T("f32", [N, 4, 4], out=True), S("i32", rep), S("f32", 1e-6)]))
        if not specials:
            g = T("f32", [N, 4, 4], float_data(rng, N * 16, "f32", False, 1.0))
            out.append((kind, "mhc_sinkhorn_bwd<N=4> repeat=%d" % rep, "kernels", "mhc_sinkhorn_bwd", gen,
                        [x, g, T("f32", [N, 4, 4], out=True), S("i32", rep), S("f32", 1e-6)]))
    # the other mHC kernels at m = 4, 37 tokens (not a multiple of 32) and H = 300 (ragged chunks)
    Tn, H, M = 37, 300, 4
    bf = lambda *shape: T("bf16", list(shape), float_data(rng, _prod(shape), "bf16", specials))  # noqa: E731
    fl = lambda *shape: T("f32", list(shape), float_data(rng, _prod(shape), "f32", specials))  # noqa: E731
    g4 = ["M=4"]
    out.append((kind, "mhc_expand_fwd<M=4>", "kernels", "mhc_expand_fwd", g4 + ["BH=128"],
                [bf(Tn, H), T("bf16", [Tn, M, H], out=True)]))
    out.append((kind, "mhc_expand_bwd<M=4>", "kernels", "mhc_expand_bwd", g4 + ["BH=128"],
                [bf(Tn, M, H), T("bf16", [Tn, H], out=True)]))
    out.append((kind, "mhc_apply_mix_fwd<M=4>", "kernels", "mhc_apply_mix_fwd", g4 + ["BH=512"],
                [bf(Tn, M, H), fl(Tn, M), T("bf16", [Tn, H], out=True)]))
    for ns in (1, 2):   # the hidden columns of a token in one block and split over two
        out.append((kind, "mhc_apply_mix_bwd<M=4> splits=%d" % ns, "kernels", "mhc_apply_mix_bwd",
                    g4 + ["BH=256", "S=2"],
                    [bf(Tn, M, H), fl(Tn, M), bf(Tn, H), bf(Tn, M, H), T("f32", [Tn, ns, M], out=True)]))
    out.append((kind, "mhc_post_fwd<M=4>", "kernels", "mhc_post_fwd", g4 + ["BH=512"],
                [bf(Tn, H), bf(Tn, M, H), fl(Tn, M), fl(Tn, M, M), T("bf16", [Tn, M, H], out=True)]))
    for ns in (1, 2):
        out.append((kind, "mhc_post_bwd<M=4> splits=%d" % ns, "kernels", "mhc_post_bwd", g4 + ["BH=256", "S=2"],
                    [bf(Tn, H), bf(Tn, M, H), fl(Tn, M), fl(Tn, M, M), bf(Tn, M, H), T("bf16", [Tn, H], out=True),
                     T("bf16", [Tn, M, H], out=True), T("f32", [Tn, ns, M], out=True),
                     T("f32", [Tn, ns, M, M], out=True)]))
    out.append((kind, "mhc_split_mixes_fwd<M=4>", "kernels", "mhc_split_mixes_fwd", g4,
                [fl(Tn, 24), fl(3), fl(24), T("f32", [Tn, M], out=True), T("f32", [Tn, M], out=True),
                 T("f32", [Tn, M * M], out=True), S("f32", 2.0), S("f32", 1e-2)]))
    out.append((kind, "mhc_head_mix_fwd<M=4>", "kernels", "mhc_head_mix_fwd", g4,
                [fl(Tn, M), fl(1), fl(M), T("f32", [Tn, M], out=True), S("f32", 1e-2)]))
    G = 3
    out.append((kind, "mhc_mixes_bwd<M=4,HEAD=false>", "kernels", "mhc_mixes_bwd",
                g4 + ["HEAD=false", "W=4", "post=present", "gpost=present", "gcomb=present"],
                [fl(Tn, 24), fl(Tn, M), fl(Tn, M), fl(Tn, M), fl(Tn, M * M), fl(3), fl(24), T("f32", [Tn, 24], out=True),
                 T("f32", [G, 3], out=True), T("f32", [G, 24], out=True), S("f32", 2.0)]))
    out.append((kind, "mhc_mixes_bwd<M=4,HEAD=true>", "kernels", "mhc_mixes_bwd",
                g4 + ["HEAD=true", "W=4", "post=absent", "gpost=absent", "gcomb=absent"],
                [fl(Tn, M), fl(Tn, M), T("f32", [Tn, M], absent=True), T("f32", [Tn, M], absent=True),
                 T("f32", [Tn, M * M], absent=True), fl(1), fl(M), T("f32", [Tn, M], out=True),
                 T("f32", [G, 1], out=True), T("f32", [G, M], out=True), S("f32", 1.0)]))
    # mhc_pre_norm_fn's kernels and mhc_big_fuse (TF32 gemms), 37 tokens, K = 4 x 300, 3 splits
    K, NS = M * H, 3
    w = T("f32", [24, K], float_data(rng, 24 * K, "f32", specials, 0.01))
    xk = bf(Tn, K)
    out.append((kind, "mhc_norm_fn_fwd_mul", "kernels", "mhc_norm_fn_fwd_mul", ["BK=64"],
                [xk, w, T("f32", [NS, Tn, 32], out=True), T("f32", [NS, Tn], out=True)]))
    mp = T("f32", [NS, Tn, 32], float_data(rng, NS * Tn * 32, "f32", specials))
    sp = T("f32", [NS, Tn], pack_f32([f32_bits(abs(rng.gauss(0, 30))) for _ in range(NS * Tn)]))  # sums of squares
    out.append((kind, "mhc_norm_fn_fwd_norm", "kernels", "mhc_norm_fn_fwd_norm", [],
                [mp, sp, T("f32", [Tn, 24], out=True), T("f32", [Tn], out=True), T("f32", [Tn, 24], out=True),
                 S("f32", float(K)), S("f32", 1e-6)]))
    sq = T("f32", [Tn], pack_f32([f32_bits(abs(rng.gauss(0, 30)) + 1.0) for _ in range(Tn)]))
    out.append((kind, "mhc_norm_fn_bwd_norm", "kernels", "mhc_norm_fn_bwd_norm", [],
                [fl(Tn, 24), fl(Tn, 24), sq, T("f32", [Tn, 32], out=True), T("f32", [Tn], out=True),
                 S("f32", float(K)), S("f32", 1e-6)]))
    out.append((kind, "mhc_norm_fn_bwd_mul", "kernels", "mhc_norm_fn_bwd_mul", [],
                [fl(Tn, 32), fl(Tn), xk, w, bf(Tn, K), T("f32", [24, K], out=True)]))
    out.append((kind, "mhc_big_fuse<M=4>", "kernels", "mhc_big_fuse", ["M=4", "BH=512"],
                [mp, sp, fl(3), fl(24), bf(Tn, M, H), T("f32", [Tn, M], out=True), T("f32", [Tn, M, M], out=True),
                 T("bf16", [Tn, H], out=True), S("f32", float(K)), S("f32", 1e-6), S("f32", 1e-6), S("f32", 1e-6),
                 S("f32", 1.0), S("i32", 10)]))
    return out


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def probe_cases(rng):
    sp = SPECIAL_F32
    a = [x for x in sp for _ in sp]
    b = [y for _ in sp for y in sp]
    n = len(a)
    out = [("probes", "probe_arith (+ - * / fma sqrt neg abs min max on special pairs)", "probe", "probe_arith", [],
            [T("f32", [n], pack_f32(a)), T("f32", [n], pack_f32(b)), T("f32", [n, 10], out=True)])]
    xs = sp + [f32_bits(v) for v in (-127.5, -126.3, -140.0, -149.9, 88.7, 89.0, -87.3, -103.9)] + \
        [f32_bits(rng.uniform(-150, 130)) for _ in range(4000)]
    out.append(("probes", "probe_math (exp exp2 rsqrt sigmoid floor rint)", "probe", "probe_math", [],
                [T("f32", [len(xs)], pack_f32(xs)), T("f32", [len(xs), 6], out=True)]))
    ds = [struct.unpack("<d", struct.pack("<Q", q))[0] for q in (0x7FF8000000000000, 0x7FF0000000000001,
                                                                   0xFFF8000000012345, 0x0000000000000001)]
    ds += [rng.uniform(-1e38, 1e38) for _ in range(len(sp) - len(ds))]
    out.append(("probes", "probe_cvt (f32->f64, f64->f32, bf16, f16, i32 of specials)", "probe", "probe_cvt", [],
                [T("f32", [len(sp)], pack_f32(sp)), T("f64", [len(sp)], bytearray(struct.pack("<%dd" % len(ds), *ds))),
                 T("f64", [len(sp)], out=True), T("f32", [len(sp)], out=True), T("u16", [len(sp), 2], out=True),
                 T("i32", [len(sp), 2], out=True)]))
    acc0 = [0x00000000, 0x00000001, 0x80000000, 0x007FFFFF, 0x3F800000] * 8
    adds = [0x00000001, 0x00000000, 0x80000001, 0x00000001, 0x00400000] * 8
    out.append(("probes", "probe_atomic (atomic_add with subnormals, global and shared)", "probe", "probe_atomic",
                [], [T("f32", [len(adds)], pack_f32(adds)), T("f32", [len(acc0)], pack_f32(acc0), out=True),
                     T("f32", [len(acc0)], pack_f32(acc0), out=True)]))
    out.append(("probes", "probe_sign (copysign ceil trunc clamp on special pairs)", "probe", "probe_sign", [],
                [T("f32", [n], pack_f32(a)), T("f32", [n], pack_f32(b)), T("f32", [n, 4], out=True)]))
    # f64 special pairs, and NaNs with payload bits high enough to survive f64 -> f32; f16 / bf16
    # NaNs widened to f64; NaN sums of f32 atomic adds
    sp64 = [0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0xBFF0000000000000, 0x0000000000000001,
            0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000000, 0x7FF123456789ABCD,
            0xFFFC0000E0000000, 0x7FFFFFFFFFFFFFFF, 0x4000000000000000]
    a64 = [x for x in sp64 for _ in sp64]
    b64 = [y for _ in sp64 for y in sp64]
    hs = [0x7E00, 0x7C01, 0xFE55, 0x7FFF, 0x3C00, 0x7FC0, 0xFF81, 0x7F80] * (len(a64) // 8 + 1)
    out.append(("probes", "probe_f64 (f64 + * fma sqrt neg abs min max, f64 -> f32/f16/bf16, f16/bf16 -> f64, "
                "atomic NaN)", "probe", "probe_f64", [],
                [T("f64", [len(a64)], bytearray(struct.pack("<%dQ" % len(a64), *a64))),
                 T("f64", [len(b64)], bytearray(struct.pack("<%dQ" % len(b64), *b64))),
                 T("u16", [len(a64)], bytearray(struct.pack("<%dH" % len(a64), *hs[:len(a64)]))),
                 T("f64", [len(a64), 10], out=True), T("f32", [len(a64)], out=True), T("u16", [len(a64), 2], out=True),
                 T("f32", [len(a64)], pack_f32([0x3F800000, 0xFF800000, 0x7FC12345, 0x00000001] * (len(a64) // 4 + 1))[:4 * len(a64)],
                   out=True)]))
    out.append(("probes", "probe_f64_order (f64 / - fma(x,x,y) fma(x,2,y) floor: which NaN operand wins)",
                "probe", "probe_f64_order", [],
                [T("f64", [len(a64)], bytearray(struct.pack("<%dQ" % len(a64), *a64))),
                 T("f64", [len(b64)], bytearray(struct.pack("<%dQ" % len(b64), *b64))),
                 T("f64", [len(a64)], bytearray(struct.pack("<%dd" % len(a64), *([2.0] * len(a64))))),
                 T("f64", [len(a64), 5], out=True)]))
    # every f16 pattern once (256 rows of 256), every byte value of e2m1 pairs 128 times
    h = bytearray(struct.pack("<65536H", *range(65536)))
    c = bytearray((i * 7) & 0xFF for i in range(256 * 128))
    out.append(("probes", "probe_fp4 (f16 -> e2m1 of every f16, e2m1 -> f32 / f16 of every byte)", "probe",
                "probe_fp4", [],
                [T("f16", [256, 256], h), T("e2m1", [256, 256], out=True), T("e2m1", [256, 256], c),
                 T("f32", [256, 256], out=True), T("f16", [256, 256], out=True)]))
    return out


# ---- comparing ----------------------------------------------------------------------------------

def describe(spec, gpu, emu):
    """the first differing element of each output"""
    notes = []
    for a, g, e in zip(spec, gpu, emu):
        if g is None or g == e:
            continue
        es = ESIZE[a.dtype]
        nd = sum(1 for i in range(0, len(g), es) if g[i:i + es] != e[i:i + es])
        first = next(i for i in range(0, len(g), es) if g[i:i + es] != e[i:i + es])
        notes.append("%d of %d %s elements differ; first at element %d: gpu %s, emu %s" % (
            nd, len(g) // es, a.dtype, first // es, g[first:first + es][::-1].hex(), e[first:first + es][::-1].hex()))
    return notes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dist", default="dist", help="install tree (lib/libtilec_runtime.so, share/tilec/kernels.tl)")
    ap.add_argument("--lib", help="the runtime library (default: DIST/lib/libtilec_runtime.so)")
    ap.add_argument("--kernels", help="the kernel library source (default: DIST/share/tilec/kernels.tl)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cpu-only", action="store_true", help="run only the emulator half (no GPU needed)")
    ap.add_argument("-k", default="", help="only cases whose label contains this text")
    ap.add_argument("--dump", metavar="DIR", help="write the inputs and both devices' outputs of every probe case "
                    "that differs (up to 2 MiB of data) into DIR: <kind>_<n>.txt says what it is, "
                    "<kind>_<n>.{in,gpu,emu}.<arg>.bin hold the bytes; for fixing the emulator offline")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    sources = {"kernels": args.kernels or os.path.join(args.dist, "share", "tilec", "kernels.tl"),
               "probe": os.path.join(here, "emu_probe.tl")}
    try:
        lib = load_runtime(args.lib or os.path.join(args.dist, "lib", "libtilec_runtime.so"))
        cuda = None if args.cpu_only else Cuda()
        gpu = None if args.cpu_only else Runtime(lib, False, sources)
        emu = Runtime(lib, True, sources)
    except (OSError, RuntimeError) as e:
        print("setup failed:", e)
        return 2
    print("device: %s; emulator MUFU tables: %s" % ("none (--cpu-only)" if args.cpu_only else cuda.name,
                                                    os.environ.get("TILEC_EMU_MUFU", "built in (H200)")))
    rng = random.Random(args.seed)
    all_cases = cases(rng, False) + cases(rng, True) + probe_cases(rng)
    results = {"kernels": [0, 0], "specials": [0, 0], "probes": [0, 0]}
    dumped = [0]
    t0 = time.time()
    for kind, label, src, name, gen, spec in all_cases:
        if args.k and args.k not in label:
            continue
        try:
            out_e = run_cpu(emu, emu.kernel(src, name, gen), [copy_arg(a) for a in spec], label)
            if args.cpu_only:
                results[kind][0] += 1
                continue
            out_g = run_gpu(gpu, cuda, gpu.kernel(src, name, gen), [copy_arg(a) for a in spec], label)
        except RuntimeError as e:
            results[kind][1] += 1
            print("ERROR  %-8s %s\n       %s" % (kind, label, str(e).replace("\n", "\n       ")))
            continue
        notes = describe(spec, out_g, out_e)
        if notes and args.dump and sum(len(a.data) for a in spec if isinstance(a, T) and not a.absent) < (2 << 20):
            dump_case(args.dump, "%s_%d" % (kind, dumped[0]), label, spec, out_g, out_e)
            dumped[0] += 1
        results[kind][0 if not notes else 1] += 1
        if notes:
            print("DIFF   %-8s %s" % (kind, label))
            for n in notes:
                print("       " + n)
        elif kind == "probes":
            print("same   %-8s %s" % (kind, label))
    print("\n%.1f s" % (time.time() - t0))
    for kind, (ok, bad) in results.items():
        print("%-9s %4d identical%s, %d different or failed" % (kind, ok, " (emulator ran)" if args.cpu_only else "",
                                                                bad))
    if args.cpu_only:  # every case must have run, probes included
        return 0 if all(bad == 0 for _, bad in results.values()) else 1
    return 0 if results["kernels"][1] == 0 and results["specials"][1] == 0 else 1


def dump_case(d, name, label, spec, gpu, emu):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name + ".txt"), "w") as f:
        f.write(label + "\n")
        for i, a in enumerate(spec):
            if isinstance(a, T):
                f.write("arg %d: %s %s%s\n" % (i, a.dtype, a.shape, " out" if a.out else ""))
            else:
                f.write("arg %d: scalar %s %r\n" % (i, a.dtype, a.value))
    for i, a in enumerate(spec):
        if isinstance(a, T) and not a.absent:
            with open(os.path.join(d, "%s.in.%d.bin" % (name, i)), "wb") as f:
                f.write(bytes(a.data))
        for tag, outs in (("gpu", gpu), ("emu", emu)):
            if outs[i] is not None:
                with open(os.path.join(d, "%s.%s.%d.bin" % (name, tag, i)), "wb") as f:
                    f.write(outs[i])


def copy_arg(a):
    if isinstance(a, S):
        return a
    c = T.__new__(T)
    c.__dict__.update(a.__dict__)
    c.data = bytearray(a.data)
    return c


if __name__ == "__main__":
    sys.exit(main())
