"""Scale-factor layouts and argument plumbing shared by the quantisation functions (spec
quant-transpose.md §0.1, §1.4-§1.6): TileKernels' host helpers (the cast configurations,
get_sf_shape, alloc_scaling_factors, unpack_from_e2m1fn_x2), output allocation in the three
layouts, reading an input scale tensor's layout from its strides, FP4 views, the kernel-launch
helper, and the checks and launchers that several cast modules share."""
import ctypes
import functools
import struct
from dataclasses import dataclass
from typing import Optional, Tuple, Union

import torch

from .. import _runtime
from .._checks import check_bool, check_float, check_int
from .._runtime import pow2_divisor  # noqa: F401  (re-exported for the quant modules)
from ..config import _emulated
from ..utils import align, ceil_div
from .types import QuantTensor

FLOAT_IN = {torch.bfloat16: "bf16", torch.float32: "f32"}


def sf_grid(num_rows: int, hidden: int, block_size):
    """(sf rows, sf columns) of a (num_rows, hidden) tensor quantised in blocks of block_size."""
    bm, bn = block_size
    return ceil_div(num_rows, bm), ceil_div(hidden, bn)


def get_logical_hidden(hidden: int, dtype) -> int:
    """Columns in elements: packed FP4 (int8) holds two per byte."""
    return hidden * 2 if dtype == torch.int8 else hidden


def get_physical_hidden(hidden: int, dtype) -> int:
    return hidden // 2 if dtype == torch.int8 else hidden


def alloc_sf(nm: int, nk: int, use_tma_aligned_col_major_sf: bool, use_packed_ue8m0: bool, device,
                          kernel_pads_packed: bool = False):
    """The sf tensor in the layout of §1.4: row-major f32 (nm, nk); TMA-aligned column-major f32
    (strides (1, align(nm, 4))); or packed UE8M0, int32 (nm, cdiv(nk, 4)) column-major.
    Returns (sf view, storage): the storage is what kernels write through. Padding rows of the
    column-major storage are zeroed (TileKernels leaves them unwritten): here, or by the kernel
    for packed storage when ``kernel_pads_packed`` (dsl/quant.tl ue8m0_store), which saves a
    memset launch."""
    if not (use_packed_ue8m0 or use_tma_aligned_col_major_sf):
        sf = torch.empty((nm, nk), dtype=torch.float32, device=device)
        return sf, sf
    rows = align(nm, 4)
    # a symbolic row count (a traced graph, any token count) may have padding rows: zeros
    make = torch.zeros if isinstance(nm, torch.SymInt) or rows != nm else torch.empty
    if use_packed_ue8m0:
        make = torch.empty if kernel_pads_packed else make
        store = make((ceil_div(nk, 4), rows), dtype=torch.int32, device=device)
        return store[:, :nm].T, store
    store = make((nk, rows), dtype=torch.float32, device=device)
    return store[:, :nm].T, store


def packed_bytes(store: torch.Tensor) -> "_runtime.Arg":
    """The u8 view a kernel writes packed UE8M0 bytes through: [word column, 4 * row + byte]."""
    words, rows = store.shape
    return _runtime.view(store, "u8", (words, rows * 4), (rows * 4, 1))


def sf_out_args(sf: torch.Tensor, store: torch.Tensor, packed: bool):
    """(sf, sfp) kernel arguments for an output allocated by alloc_sf."""
    return (None, packed_bytes(store)) if packed else (sf, None)


def check_flags(fn: str, **flags):
    """Each of ``flags`` (name -> value) is a bool (an int, a string or None is not one)."""
    for name, v in flags.items():
        check_bool(fn, name, v)


def check_layout_flags(use_tma_aligned_col_major_sf: bool, round_sf: bool, use_packed_ue8m0: bool, fn: str):
    """The three scale-layout flags of a cast are bools, and packed UE8M0 goes with column-major,
    rounded scales (§1.4)."""
    check_flags(fn, use_tma_aligned_col_major_sf=use_tma_aligned_col_major_sf, round_sf=round_sf,
                use_packed_ue8m0=use_packed_ue8m0)
    if use_packed_ue8m0 and not use_tma_aligned_col_major_sf:
        raise ValueError(f"{fn}: use_packed_ue8m0 needs use_tma_aligned_col_major_sf=True (packed scales are column-major)")
    if use_packed_ue8m0 and not round_sf:
        raise ValueError(f"{fn}: use_packed_ue8m0 needs round_sf=True (UE8M0 holds powers of two only)")


def check_block(block, name: str, fn: str):
    if (not isinstance(block, (tuple, list)) or len(block) != 2 or
            not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in block)):
        raise ValueError(f"{fn}: {name} must be a pair of positive integers, got {block!r}")
    return int(block[0]), int(block[1])


def data_arg(q: torch.Tensor, fn: str, name: str = "x"):
    """A quantised data tensor as a kernel argument: e4m3 as is, int8 as packed e2m1 with its
    logical shape and strides (two elements per byte)."""
    if q.dtype == torch.int8:
        if q.stride(1) != 1:
            raise ValueError(f"{fn}: {name} must have unit stride along the hidden dimension")
        return _runtime.view(q, "e2m1", (q.size(0), 2 * q.size(1)), (2 * q.stride(0), 1))
    return q


def input_sf_args(x_sf: torch.Tensor, nm: int, nk: int, fn: str, name: str = "x_sf"):
    """(isf, isfp) kernel arguments for an input scale tensor, its layout read from its strides
    (§1.5): stride(0) == 1 is column-major (int32: packed UE8M0 words), otherwise row-major f32.
    Checks the shape (nm, nk), or (nm, cdiv(nk, 4)) for packed words."""
    if not isinstance(x_sf, torch.Tensor) or x_sf.dim() != 2:
        raise ValueError(f"{fn}: {name} must be a 2-D tensor")
    if x_sf.dtype == torch.int32:
        if x_sf.stride(0) != 1 and x_sf.size(0) > 1:
            raise ValueError(f"{fn}: packed UE8M0 {name} (int32) must be column-major (stride(0) == 1), "
                             f"got strides {tuple(x_sf.stride())}")
        if tuple(x_sf.shape) != (nm, ceil_div(nk, 4)):
            raise ValueError(f"{fn}: packed {name} must have shape {(nm, ceil_div(nk, 4))}, got {tuple(x_sf.shape)}")
        words = x_sf.size(1)
        rows = x_sf.stride(1) if words > 1 else max(x_sf.stride(1), nm)
        if words > 1 and rows < nm:
            raise ValueError(f"{fn}: packed {name}'s column stride ({rows}) is below its row count ({nm})")
        return None, _runtime.view(x_sf, "u8", (words, rows * 4), (rows * 4, 1))
    if x_sf.dtype != torch.float32:
        raise ValueError(f"{fn}: {name} must be float32 or int32 (packed UE8M0), got {x_sf.dtype}")
    if tuple(x_sf.shape) != (nm, nk):
        raise ValueError(f"{fn}: {name} must have shape {(nm, nk)}, got {tuple(x_sf.shape)}")
    if x_sf.stride(0) != 1 and x_sf.stride(1) != 1 and x_sf.numel() > 1:
        raise ValueError(f"{fn}: {name} must be row-major or column-major, got strides {tuple(x_sf.stride())}")
    return x_sf, None


def f32(x: float) -> float:
    """x rounded to f32 (to nearest, inf beyond the range), as a kernel's f32 scalar receives it."""
    return ctypes.c_float(x).value


def is_bf16_value(x: float) -> bool:
    """Whether x is exactly a bf16 value (an f32 whose low 16 bits are zero); NaN is not."""
    v = f32(x)
    return v == x and struct.unpack("<I", struct.pack("<f", v))[0] & 0xFFFF == 0


def _gen_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


_generic_strings = {}


def kernel(name: str, t: torch.Tensor, **generics):
    """The specialisation of kernel `name` on tensor ``t``'s device; a tensor-presence generic is
    given as has_NAME=True/False. The "NAME=VALUE" strings of each configuration are built once
    (they were a third of a call's host time); the kernel itself comes from the runtime's cache."""
    if _runtime.faking():   # shapes may be symbolic there, and nothing is launched
        return _runtime._NO_LAUNCH
    key = (name, *generics.items())
    gens = _generic_strings.get(key)
    if gens is None:
        parts = []
        for k, v in generics.items():
            if k.startswith("has_"):
                parts.append(f"{k[4:]}={'present' if v else 'absent'}")
            else:
                parts.append(f"{k}={_gen_value(v)}")
        gens = _generic_strings[key] = tuple(parts)
    return _runtime.kernel(name, gens, t)


def fmt_dtype(fmt: str):
    return torch.float8_e4m3fn if fmt == "e4m3" else torch.int8


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


@functools.lru_cache(maxsize=None)
def tile_shape(bk: int, nthreads: int = 256, max_elems: int = 4096, vecs=(8, 4, 2, 1)):
    """(rows, vector width) of a tile with bk columns such that the default frag layout (runs of
    `vec` along a row, threads over the runs of a row first, then over rows) gives every thread
    its own elements, with no replicated threads: the widest vector first, then the fewest rows,
    at most max_elems elements."""
    for vec in vecs:
        if bk % vec:
            continue
        bm = 1
        while bm * bk <= max_elems:
            t1 = _gcd(nthreads, bk // vec)
            if t1 * _gcd(nthreads // t1, bm) == nthreads:
                return bm, vec
            bm *= 2
    return 1, 1


# ---- the host helpers of tile_kernels.quant.common, with its signatures -------------------------

# the quantised formats: torch dtype of the data, the dtype name the kernels use, the largest
# finite value (MAX) and the default amax clamp minimum (CMIN) of §1.1
_FORMATS = {
    "e4m3": (torch.float8_e4m3fn, "e4m3", 448.0, 1e-4),
    "e2m1": (torch.int8, "e2m1", 6.0, 6.0 * 2.0 ** -126),
    "e5m6": (torch.uint8, "e5m6", 65024.0, 1e-4),
}
_DATA_NAMES = {dt: name for dt, name, _, _ in _FORMATS.values()}
_CMIN = {dt: cmin for dt, _, _, cmin in _FORMATS.values()}
# bytes per element; packed FP4 holds two per byte
_NAME_BYTES = {"e2m1": 0.5, "e4m3": 1, "e5m2": 1, "ue8m0": 1, "u8": 1, "i8": 1, "bool": 1, "bf16": 2, "f16": 2,
               "i16": 2, "u16": 2, "f32": 4, "i32": 4, "u32": 4, "f64": 8, "i64": 8, "u64": 8}


def get_best_vectorize_size(dtype) -> int:
    """Elements of ``dtype`` (a torch dtype or a tilec dtype name) in one vectorised access of a
    thread: 16 bytes, 32 on sm_100 and newer (§1.6). The emulator counts as an H200 (sm_90)."""
    size = _NAME_BYTES[dtype] if isinstance(dtype, str) else torch.empty((), dtype=dtype).element_size()
    width = 16
    if not _emulated() and torch.cuda.get_device_capability()[0] >= 10:
        width = 32
    return int(width // size)


@dataclass(frozen=True)
class BaseCastConfig:
    """A quantised tensor's data dtype and scale layout: blocks of ``sf_block`` (rows, columns)
    share one scale, stored as in §1.4 by the two flags."""
    torch_dtype: torch.dtype = torch.float8_e4m3fn
    sf_block: Tuple[int, int] = (1, 1)
    use_tma_aligned_col_major_sf: bool = False
    use_packed_ue8m0: bool = False

    @property
    def dtype(self) -> str:
        """The data's dtype as tilec names it ('e4m3', 'e2m1' for packed FP4 in int8, 'e5m6' for
        its uint8 bytes, 'bf16', 'f32', ...)."""
        return _DATA_NAMES.get(self.torch_dtype) or _runtime._DTYPES[self.torch_dtype]

    @property
    def sf_torch_dtype(self) -> torch.dtype:
        """The scale tensor's torch dtype: int32 words of four UE8M0 bytes when packed, else f32."""
        return torch.int32 if self.use_packed_ue8m0 else torch.float32

    @property
    def sf_dtype(self) -> str:
        """One scale's dtype as the kernels hold it: a UE8M0 byte ('u8') when packed, else 'f32'."""
        return "u8" if self.use_packed_ue8m0 else "f32"


@dataclass(frozen=True)
class CastInputConfig(BaseCastConfig):
    """The configuration of a cast's input; ``with_sf`` False for a plain float tensor."""
    with_sf: bool = True


@dataclass(frozen=True)
class CastOutputConfig(BaseCastConfig):
    """The configuration of a cast's output: scales rounded up to powers of two with ``round_sf``;
    ``custom_clamp_min_value`` replaces the format's amax clamp minimum (§1.1)."""
    round_sf: bool = False
    custom_clamp_min_value: Optional[float] = None

    @property
    def clamp_min_value(self) -> float:
        if self.custom_clamp_min_value is not None:
            return self.custom_clamp_min_value
        return _CMIN[self.torch_dtype]


def get_cast_input_and_config(x: Union[torch.Tensor, QuantTensor], sf_block: Optional[Tuple[int, int]]):
    """(data, sf or None, CastInputConfig) of a cast's input: a float tensor, or a QuantTensor
    whose scale layout is read from its strides (§1.5): stride(0) == 1 is column-major (int32:
    packed UE8M0), otherwise row-major f32. ``sf_block`` is the QuantTensor's block."""
    fn = "get_cast_input_and_config"
    if not isinstance(x, tuple):
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"{fn}: x must be a tensor or a (data, sf) QuantTensor")
        block = (1, 1) if sf_block is None else check_block(sf_block, "sf_block", fn)
        return x, None, CastInputConfig(torch_dtype=x.dtype, sf_block=block, with_sf=False)
    if len(x) != 2:
        raise ValueError(f"{fn}: a QuantTensor x is a (data, sf) pair")
    q, q_sf = x
    if q.dtype not in _DATA_NAMES:
        raise ValueError(f"{fn}: QuantTensor data must be float8_e4m3fn, int8 (packed e2m1) or uint8 (e5m6), "
                         f"got {q.dtype}")
    if sf_block is None:
        raise ValueError(f"{fn}: sf_block is required for QuantTensor input")
    block = check_block(sf_block, "sf_block", fn)
    if q_sf.stride(0) == 1:
        if q_sf.dtype not in (torch.int32, torch.float32):
            raise ValueError(f"{fn}: a column-major sf must be float32 or int32 (packed UE8M0), got {q_sf.dtype}")
        col, packed = True, q_sf.dtype == torch.int32
    else:
        if q_sf.stride(1) != 1 or q_sf.dtype != torch.float32:
            raise ValueError(f"{fn}: sf must be column-major, or row-major float32, got {q_sf.dtype} with strides "
                             f"{tuple(q_sf.stride())}")
        col = packed = False
    return q, q_sf, CastInputConfig(torch_dtype=q.dtype, sf_block=block, use_tma_aligned_col_major_sf=col,
                                    use_packed_ue8m0=packed, with_sf=True)


def get_cast_output_config(fmt: str, sf_block: Tuple[int, int], use_tma_aligned_col_major_sf: bool = False,
                           round_sf: bool = False, use_packed_ue8m0: bool = False,
                           custom_clamp_min_value: Optional[float] = None) -> CastOutputConfig:
    """The CastOutputConfig of a cast to ``fmt`` ('e4m3', 'e2m1' or 'e5m6') in blocks of
    ``sf_block``, with the layout rules of §1.4 checked."""
    fn = "get_cast_output_config"
    if fmt not in _FORMATS:
        raise ValueError(f"{fn}: fmt must be 'e4m3', 'e2m1' or 'e5m6', got {fmt!r}")
    block = check_block(sf_block, "sf_block", fn)
    check_layout_flags(use_tma_aligned_col_major_sf, round_sf, use_packed_ue8m0, fn)
    if custom_clamp_min_value is not None:
        custom_clamp_min_value = check_float(fn, "custom_clamp_min_value", custom_clamp_min_value)
    return CastOutputConfig(torch_dtype=_FORMATS[fmt][0], sf_block=block,
                            use_tma_aligned_col_major_sf=use_tma_aligned_col_major_sf,
                            use_packed_ue8m0=use_packed_ue8m0, round_sf=round_sf,
                            custom_clamp_min_value=custom_clamp_min_value)


def get_sf_shape(shape: Tuple[int, int], config: BaseCastConfig) -> Tuple[int, int]:
    """The scale tensor's shape for data of ``shape`` (rows, logical hidden): (cdiv(rows, bm),
    cdiv(hidden, bn)), its columns in int32 words of four (cdiv of that by 4) when packed."""
    nm, nk = sf_grid(shape[0], shape[1], config.sf_block)
    return (nm, ceil_div(nk, 4)) if config.use_packed_ue8m0 else (nm, nk)


def alloc_scaling_factors(shape: Tuple[int, int], out_config: BaseCastConfig, device="cuda") -> torch.Tensor:
    """A fresh scale tensor for data of ``shape`` (rows, logical hidden) in the layout of
    ``out_config`` (§1.4): row-major f32, TMA-aligned column-major f32 or packed UE8M0 int32, the
    column-major storage's padding rows zeroed."""
    nm, nk = sf_grid(shape[0], shape[1], out_config.sf_block)
    sf, _ = alloc_sf(nm, nk, out_config.use_tma_aligned_col_major_sf, out_config.use_packed_ue8m0, device)
    return sf


_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def unpack_from_e2m1fn_x2(x: torch.Tensor, out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Decodes packed FP4: byte i holds element 2i in its low nibble and 2i+1 in its high nibble;
    code bits: sign (bit 3), exponent (bits 2-1), mantissa (bit 0). Shape (..., L) -> (..., 2L)."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"unpack_from_e2m1fn_x2: x must be a tensor, got {type(x).__name__}")
    if x.dtype not in (torch.int8, torch.uint8):
        raise ValueError(f"unpack_from_e2m1fn_x2: x must be int8 or uint8 (packed FP4), got {x.dtype}")
    if not isinstance(out_dtype, torch.dtype) or not out_dtype.is_floating_point:
        raise ValueError(f"unpack_from_e2m1fn_x2: out_dtype must be a floating-point torch.dtype, got {out_dtype!r}")
    if x.dim() == 0:
        raise ValueError("unpack_from_e2m1fn_x2: a 0-d tensor has no bytes to unpack")
    b = x.view(torch.uint8).to(torch.int32)
    codes = torch.stack((b & 0xF, (b >> 4) & 0xF), dim=-1).flatten(-2)
    table = torch.tensor(_E2M1_VALUES, dtype=torch.float32, device=x.device)
    mag = table[(codes & 7).long()]
    sign = torch.where((codes & 8) != 0, -1.0, 1.0).to(torch.float32)
    return (mag * sign).to(out_dtype)


# ---- checks and launchers that several cast modules share ---------------------------------------

def check_float_x(x, fn: str):
    """A float input of the per-token casts: bf16/f32, 2-D, unit stride along the hidden dimension."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{fn}: x must be a tensor or a (data, sf) QuantTensor")
    if x.dtype not in FLOAT_IN:
        raise ValueError(f"{fn}: x must be bfloat16 or float32, got {x.dtype}")
    if x.dim() != 2:
        raise ValueError(f"{fn}: x must be 2-D (num_tokens, hidden), got {x.dim()}-D")
    if x.stride(1) != 1 and x.size(1) > 1:
        raise ValueError(f"{fn}: x must have unit stride along the hidden dimension, got {x.stride(1)}")


def check_x2d(x, fn: str):
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{fn}: x must be a tensor")
    if x.dim() != 2:
        raise ValueError(f"{fn}: x must be 2-D (num_tokens, hidden), got {x.dim()}-D")
    if not x.is_contiguous():
        raise ValueError(f"{fn}: x must be contiguous")


def alloc_data_out(T: int, H: int, fmt: str, device):
    """The data output and its kernel argument (FP4: int8 bytes, passed as e2m1 elements)."""
    if fmt == "e4m3":
        out = torch.empty((T, H), dtype=torch.float8_e4m3fn, device=device)
        return out, out
    out = torch.empty((T, H // 2), dtype=torch.int8, device=device)
    return out, _runtime.view(out, "e2m1", (T, H), (H, 1))


def row_tile(hh: int, n: int, target: int):
    """Columns per tile: a whole row (n == hh) or the widest of 1024..n dividing hh."""
    if n == hh:
        return hh
    bk = target
    while bk > n and (hh % bk or bk % n):
        bk //= 2
    return bk


def int_vector(t, name, n, fn):
    if not isinstance(t, torch.Tensor) or t.dtype != torch.int32 or t.dim() != 1:
        raise ValueError(f"{fn}: {name} must be a 1-D int32 tensor")
    if t.numel() != n:
        raise ValueError(f"{fn}: {name} must have {n} entries (one per row of x), got {t.numel()}")
    if not t.is_contiguous():
        raise ValueError(f"{fn}: {name} must be contiguous")


CAST_BACK_OUT = {"bf16": (torch.bfloat16, "bf16"), "fp32": (torch.float32, "f32")}


def check_cast_back_input(x, x_block_size, fn: str):
    """(data, sf, bm, bn) of a dequantisation's QuantTensor input, after the checks every data
    format shares."""
    if not isinstance(x, tuple) or len(x) != 2:
        raise ValueError(f"{fn}: x must be a QuantTensor (data, sf)")
    bm, bn = check_block(x_block_size, "x_block_size", fn)
    q, q_sf = x
    if not isinstance(q, torch.Tensor) or q.dim() != 2:
        raise ValueError(f"{fn}: x's data must be a 2-D tensor")
    if not q.is_contiguous():
        raise ValueError(f"{fn}: x's data must be contiguous")
    return q, q_sf, bm, bn


def transpose_cast(x, npt, round_sf, without_transpose, clamp, swiglu, fn):
    """The per-channel e4m3 cast with one scale per ``npt`` rows, transposed unless
    ``without_transpose``, of x or (``swiglu``) of the SwiGLU of its halves: the one kernel
    behind per_channel_cast_and_transpose and swiglu_forward_and_per_channel_cast_and_transpose."""
    check_flags(fn, round_sf=round_sf, without_transpose=without_transpose)
    if clamp is not None:
        check_float(fn, "swiglu_clamp_value", clamp)
    check_x2d(x, fn)
    if x.dtype != torch.bfloat16:
        raise ValueError(f"{fn}: x must be bfloat16, got {x.dtype}")
    check_int(fn, "num_per_tokens", npt)
    if npt not in (32, 128):
        raise ValueError(f"{fn}: num_per_tokens must be 32 or 128, got {npt}")
    T, HX = x.shape
    if T % 128:
        raise ValueError(f"{fn}: num_tokens must be a multiple of 128, got {T}")
    if swiglu and HX % 128:
        raise ValueError(f"{fn}: x.shape[1] must be a multiple of 128, got {HX}")
    if not swiglu and HX % 64:
        raise ValueError(f"{fn}: hidden must be a multiple of 64, got {HX}")
    HO = HX // 2 if swiglu else HX
    out = torch.empty((T, HO) if without_transpose else (HO, T), dtype=torch.float8_e4m3fn, device=x.device)
    sf = torch.empty((T // npt, HO), dtype=torch.float32, device=x.device)
    if T == 0 or HO == 0:
        return out, sf
    # H200, 16384 rows, % of the copy ceiling (2026-11-30, bench/ab_generics.py): one scale
    # per 128 rows without SwiGLU: 128 x 128 tiles, persistent blocks with 3 tiles in flight, 88.7
    # (81.9 one tile per block with blocks_per_sm(3)); with SwiGLU: 128 x 64 tiles, persistent
    # with 2 stages and 2 blocks per SM, 54.1 (53.5 one per block with blocks_per_sm(3), 45.8 with
    # 128 x 32 tiles; 56.7 before the kernel became a loop over tiles); one scale per 32
    # rows: persistent, 2 stages, 2 blocks per SM, 31.8 (22.3 one tile per block). Otherwise
    # 128 x 64 one per block (32 columns measured slower). With silu() (same date and command):
    # SwiGLU one tile per block with blocks_per_sm(3), 56.4 (persistent 53.9; 8192 x 2 x 2048:
    # 48.9 against 47.2). With bf16 widened by integer arithmetic and paired roundings (same date
    # and command): persistent again, 63.7 against 60.7 one tile per block (8192 x 2 x 2048: 55.9
    # against 51.3). 2026-12-01 (bench/ab_generics.py): without SwiGLU, the persistent blocks'
    # tiles in y-major order (down the rows, so the blocks at work together write whole rows of
    # the transposed output): 91.9 against 88.3 (8064 rows: 85.9 against 84.7; one scale per 32
    # rows 45.6 against 45.1); with SwiGLU 0.6-0.9 points slower, not taken.
    # SwiGLU untransposed with one scale per 128 rows: persistent with the table 80.6 against 37.4
    # one tile per block (65.5 persistent without it; 2026-12-01, bench/ab_generics.py).
    # With one scale per 32 rows each thread holds runs of 8 rows (the kernel's row_run), which
    # leaves 74 registers instead of 93: 3 persistent blocks per SM of 128 x 64 tiles, 86.4
    # against 77.5 with 2 (8064 rows: 82.1 against 74.2; 49.7 / 51.7 before the runs); 128 x 128
    # tiles as for one scale per 128 rows 89.1 against 87.7 (8064 rows: 83.5 against 82.4)
    # (2026-12-01, bench/ab_generics.py, against the kernels before the runs: OLD=1
    # scripts/gpu_ab.sh).
    cfg = dict(BK=64)
    if not swiglu and HO % 128 == 0:
        cfg = dict(BK=128, STAGES=3, WAVES=1, YMAJOR=not without_transpose)
    elif npt == 32 or swiglu:
        cfg = dict(BK=64, STAGES=2, WAVES=3 if npt == 32 and not swiglu else 2,
                   YMAJOR=not swiglu and not without_transpose)
    # SwiGLU in persistent blocks: the SiLU of the gate half looked up in a table of its values in
    # shared memory (loaded once per block), when the clamped gate is still a bf16 value: 77.5
    # against 64.4 % of the copy ceiling at 16384 x 2 x 3584, 64.2 against 56.3 at 8192 x 2 x 2048
    # (H200, 2026-12-01, bench/ab_generics.py); one scale per 32 rows untransposed 49.4 against
    # 47.9; transposed with one scale per 32 rows 39.0 against 46.1, but with the runs of 8 rows
    # 78.2 against 66.0 (8064 rows: 71.5 against 61.4; same date and command). Every SwiGLU
    # configuration above is persistent, which the table (loaded once per block) needs.
    lut = None
    if USE_SILU_LUT and swiglu and (clamp is None or is_bf16_value(float(clamp))):
        lut = silu_lut(x.device)
    k = kernel("per_channel_cast_transpose", x, SWIGLU=swiglu, NPT=npt, ROUND=round_sf, CLAMP=clamp is not None, **cfg,
               has_outt=not without_transpose, has_outn=without_transpose, has_silu_lut=lut is not None)
    k.launch(x, sf, None if without_transpose else out, out if without_transpose else None, lut,
             float(clamp) if clamp is not None else 0.0, stream=_runtime.stream(x))
    return out, sf


USE_SILU_LUT = True   # False: silu() computed (for A/B runs)
SILU_LUT_SIZE = 8196   # dsl/quant.tl
_silu_luts = {}


def silu_lut(device: torch.device) -> torch.Tensor:
    """The SiLU table of the per-channel SwiGLU cast on ``device`` (dsl/quant.tl, SILU_LUT_SIZE:
    silu() of the 8192 bf16 values 2^-25 <= |l| < 2^7 and the multipliers of l outside that
    range), computed once by the kernel silu_table, so that a lookup gives the bits the kernels'
    silu() computes."""
    if _runtime.faking():   # a fake implementation: a table of the right size, nothing computed or kept
        return torch.empty(SILU_LUT_SIZE, dtype=torch.float32, device=device)
    key = (device.type, device.index)
    t = _silu_luts.get(key)
    if t is None:
        t = torch.empty(SILU_LUT_SIZE, dtype=torch.float32, device=device)
        kernel("silu_table", t).launch(t, stream=_runtime.stream(t))
        _silu_luts[key] = t
    return t
