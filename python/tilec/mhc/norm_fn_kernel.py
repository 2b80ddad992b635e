"""mhc_pre_norm_fn's kernels (spec moe-engram-mhc.md §3.7): the projection of the flattened
residual on the TF32 tensor cores, split along K into n_splits parts (mhc_pre_big_fuse runs the
same kernel with the same splits), the normalisation of the mixes, and the backward's
normalisation and two gemms; round_to_tf32 as in TileKernels."""
import torch

from ..utils import ceil_div
from ._common import launch

BK = 64       # K columns of a forward step
MAX_MIXES = 32  # the accumulator's columns


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """The f32 tensor x with 0x1000 added to its bits as int32 (spec §3.7): the 19 high bits are x
    rounded to TF32 to nearest, ties away from zero; the 13 low ones are what the addition leaves,
    ignored by a TF32 tensor-core operation. A new tensor of x's shape."""
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
        got = type(x).__name__ if not isinstance(x, torch.Tensor) else str(x.dtype).replace("torch.", "")
        raise ValueError(f"round_to_tf32: x must be a float32 tensor, got {got}")
    return (x.contiguous().view(torch.int32) + 0x1000).view(torch.float32)


def _splits(K: int, n_splits: int) -> int:
    """The K splits of the projection: n_splits, at most one a BK-column step."""
    return max(1, min(n_splits, ceil_div(K, BK)))


def _fwd_mul(x, fn_r, n_splits):
    """(mul_part (S, T, 32), sq_part (S, T)) of x bf16 (T, K) and fn_r f32 (M3, K)."""
    T, K = x.shape
    ns = _splits(K, n_splits)
    mul_part = torch.empty((ns, T, MAX_MIXES), dtype=torch.float32, device=x.device)
    sq_part = torch.empty((ns, T), dtype=torch.float32, device=x.device)
    if T:
        launch("mhc_norm_fn_fwd_mul", (f"BK={BK}",), x, x, fn_r, mul_part, sq_part)
    return mul_part, sq_part


def _fwd_norm(mul_part, sq_part, M3, K, eps):
    """(mul (T, M3), sq (T,), out (T, M3)) from the partials."""
    _, T, _ = mul_part.shape
    mul = torch.empty((T, M3), dtype=torch.float32, device=mul_part.device)
    sq = torch.empty((T,), dtype=torch.float32, device=mul_part.device)
    out = torch.empty((T, M3), dtype=torch.float32, device=mul_part.device)
    if T:
        launch("mhc_norm_fn_fwd_norm", (), mul_part, mul_part, sq_part, mul, sq, out, float(K), eps)
    return mul, sq, out


def _bwd(out_grad, mul, sq, x, fn_r, buf, eps):
    """The backward: buf (T, K) bf16 updated in place with the residual's gradient, and the
    gradient of fn (M3, K) returned (straight through the TF32 rounding)."""
    T, K = x.shape
    M3 = fn_r.shape[0]
    gmul = torch.empty((T, MAX_MIXES), dtype=torch.float32, device=x.device)
    gsq = torch.empty((T,), dtype=torch.float32, device=x.device)
    fn_grad = torch.empty((M3, K), dtype=torch.float32, device=x.device)
    if T == 0:
        return fn_grad.zero_()
    launch("mhc_norm_fn_bwd_norm", (), x, out_grad, mul, sq, gmul, gsq, float(K), eps)
    launch("mhc_norm_fn_bwd_mul", (), x, gmul, gsq, x, fn_r, buf, fn_grad)
    return fn_grad
