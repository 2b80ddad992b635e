"""Helpers shared by the Engram modules: argument checks and the tiling of the gate kernels."""
import math
from typing import Tuple

import torch

from .._checks import check_bool, check_float, check_no_overlap, check_tensor  # noqa: F401
from ..utils import align, ceil_div

# elements of one chunk over all heads: with 512 threads a chunk frag is 8 registers a thread
CHUNK_ELEMENTS = 4096
# the backward keeps a block's weight gradient of every column in registers: hc * D values over
# at most 512 threads, 56 registers each (4 x 7168, TileKernels' largest size, fits)
BWD_MAX_ELEMENTS = 28672
# shared memory of one block and of an SM (an H200's; sm_100 the same)
SMEM_PER_BLOCK = 232448
SMEM_PER_SM = 233472
SMEM_SLACK = 256       # alignment of the tiles
# registers a forward thread needs (ptxas: 84 at 4 x 7168 with 512 threads), for the blocks per SM
FWD_REGISTERS = 96


def check_strided(fn, name, t, dim):
    """A bf16 tensor of ``dim`` dimensions whose last dimension is contiguous (other strides free)."""
    check_tensor(fn, name, t, (torch.bfloat16,), dim, contiguous=False)
    if t.shape[-1] > 1 and t.stride(-1) != 1:
        raise ValueError(f"{fn}: {name} must have stride 1 along the hidden dimension (stride(-1) == 1), "
                         f"got strides {tuple(t.stride())}")


def check_shape(fn, name, t, shape, dims, like=None):
    """``t`` has ``shape``, named by its dimensions ``dims`` (and the argument it must match)."""
    if tuple(t.shape) != tuple(shape):
        also = f" like {like}" if like else ""
        raise ValueError(f"{fn}: {name} must be {dims} = {tuple(shape)}{also}, got {tuple(t.shape)}")


def _fits(nt: int, vr: int, hc: int) -> bool:
    """Whether nt threads cover a (hc, vr vectors) chunk frag exactly as they cover the
    (chunks, hc, vr vectors) weight-gradient frag of the backward: the threads spread over a
    row's vectors (gcd(nt, vr) of them), the rest over whole heads, none left over for the
    chunk dimension (layout_default in compiler/layout_algebra.c)."""
    along = math.gcd(nt, vr)
    rest = nt // along
    return math.gcd(rest, hc) == rest


def _threads(hc: int, chunk: int) -> int:
    vr = chunk // 8
    for nt in range(min(512, align(vr * hc, 32)), 31, -32):
        if nt <= vr * hc and _fits(nt, vr, hc):
            return nt
    return 0


def gate_tiling(hc: int, d: int) -> Tuple[int, int]:
    """(C, NT): the chunk of hidden columns a pipeline stage holds (a multiple of 8) and the
    block's threads, for hc heads of d columns. C divides d where it can (no masked tail), about
    CHUNK_ELEMENTS / hc columns (d itself up to that), and NT gives every thread whole vectors
    of 8 elements, one per chunk frag at TileKernels' sizes: (1024, 512) for 4 x 7168."""
    cap = max(8, CHUNK_ELEMENTS // hc // 8 * 8)
    if d <= cap:
        cands = [align(d, 8)]
    else:
        cands = [c for c in range(cap, 7, -8) if d % c == 0 and c >= cap // 2]
    for c in cands + [min(max(256, cap // 256 * 256), align(d, 256))]:
        nt = _threads(hc, c)
        if nt:
            return c, nt
    return 256, 32   # unreachable: 32 threads always cover a row of 32 vectors


def _scratch(hc: int, chunk: int, nt: int) -> int:
    """The reductions' shared scratch: a word per thread for each head it holds."""
    vr = chunk // 8
    rows = max(1, nt // math.gcd(nt, vr))
    return 4 * nt * max(1, ceil_div(hc, rows))


def fwd_smem(hc: int, d: int, chunk: int, nt: int, stages: int, resident: bool) -> int:
    """Shared memory of engram_gate_fwd: a token's x (rx), wf when resident (rw), the stages'
    chunks of x, k, v (bf16) and, when not resident, wf (f32)."""
    cols = ceil_div(d, chunk) * chunk
    kept = 2 * hc * cols + (4 * hc * cols if resident else 0)
    stage = 4 * hc * chunk + 2 * chunk + (0 if resident else 4 * hc * chunk)
    return kept + stages * stage + 4 * hc + _scratch(hc, chunk, nt) + SMEM_SLACK


def fwd_blocks_per_sm(nt: int, smem: int) -> int:
    """Forward blocks that fit an SM together (shared memory, threads, registers), at most 4:
    the persistent grid has this many per SM, and the kernel asks ptxas to leave room for them."""
    return max(1, min(4, SMEM_PER_SM // (smem + 1024), 2048 // nt, 65536 // (nt * FWD_REGISTERS)))


def bwd_smem(hc: int, d: int, chunk: int, nt: int, stages: int, resident: bool) -> int:
    """Shared memory of engram_gate_bwd: a token's grad_out (rgo), wf when resident (rw), the
    stages' chunks of grad_out, v, x, k (bf16) and, when not resident, wf (f32)."""
    cols = ceil_div(d, chunk) * chunk
    kept = 2 * hc * cols + (4 * hc * cols if resident else 0)
    stage = 6 * hc * chunk + 2 * chunk + (0 if resident else 4 * hc * chunk)
    return kept + stages * stage + 12 * hc + _scratch(hc, chunk, nt) + SMEM_SLACK


def gate_stages(hc: int, d: int, chunk: int, nt: int, smem) -> Tuple[int, bool]:
    """(S, WRES): three pipeline stages with wf resident in shared memory where they fit, else
    three with wf streamed from L2, else two; (0, False) when nothing fits."""
    for stages, resident in ((3, True), (3, False), (2, False)):
        if smem(hc, d, chunk, nt, stages, resident) <= SMEM_PER_BLOCK:
            return stages, resident
    return 0, False
