"""CUDA's expf for the references that the emulator tests compare with. The kernels use CUDA's
accurate expf (spec quant-transpose.md §0.3), which the emulator reproduces bit for bit; the CPU's
torch.exp differs from it in about a third of the inputs by an ulp. Inside `cuda_math()`,
torch.exp is libtilec's tl_num_expf with the H200's measured ex2 table installed (as the
emulator does)."""
import contextlib
import ctypes
import glob
import os

import pytest
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_expf = None


def _libtilec():
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libtilec.so"):
                return ctypes.CDLL(path)
    return None


def cuda_exp(x):
    global _expf
    if _expf is None:
        lib = _libtilec()
        tables = sorted(glob.glob(os.path.join(ROOT, "numerics", "data", "mufu_ex2*.bin")))
        assert lib is not None and tables, "libtilec (loaded by tilec._native) or the MUFU tables are missing"
        err = ctypes.create_string_buffer(256)
        for path in tables:
            with open(path, "rb") as f:
                blob = f.read()
            assert lib.tl_num_mufu_install(blob, len(blob), err, len(err)) == 0, err.value
        lib.tl_num_ex2_is_exact.restype = ctypes.c_bool
        assert lib.tl_num_ex2_is_exact()
        _expf = lib.tl_num_expf
        _expf.restype, _expf.argtypes = ctypes.c_uint32, [ctypes.c_uint32]
    xf = x.float().contiguous()
    if torch.equal(xf.bfloat16().float().view(torch.int32), xf.view(torch.int32)):
        # bf16 values (the usual case): one lookup in the table of all 65536
        return _bf16_table()[xf.bfloat16().view(torch.int16).long() & 0xFFFF].view(x.shape)
    bits = xf.view(torch.int32)
    uniq, inv = torch.unique(bits, return_inverse=True)
    vals = torch.tensor([_expf(u & 0xFFFFFFFF) for u in uniq.tolist()], dtype=torch.int64)
    return vals.to(torch.int32).view(torch.float32)[inv].view(x.shape)


_table = None


def _bf16_table():
    """expf of every bf16 value, indexed by its 16 bits (f32 results)."""
    global _table
    if _table is None:
        vals = [_expf((b << 16) & 0xFFFFFFFF) for b in range(65536)]
        _table = torch.tensor(vals, dtype=torch.int64).to(torch.int32).view(torch.float32)
    return _table


@contextlib.contextmanager
def cuda_math():
    """torch.exp as CUDA's expf while a reference runs."""
    mp = pytest.MonkeyPatch()
    mp.setattr(torch, "exp", cuda_exp)
    try:
        yield
    finally:
        mp.undo()
