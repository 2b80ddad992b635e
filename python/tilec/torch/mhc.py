"""Reference mHC functions (``tile_kernels.torch.mhc``, spec moe-engram-mhc.md §3, §5.3), written
from the specification in the order of operations §3 makes normative for the kernels: the
fused multiply-adds of §3.3-§3.6 rounded once, sums in index order, eps where §3.2 puts it, the
projection of §3.7 on TF32 operands. §5.3's formulas are the same up to rounding. Plain tensor
code on any device; every function is differentiable, and float64 inputs stay float64 with no
narrowing (no bf16 outputs, no TF32 rounding), so that the backward formulas of §3 can be
checked against autograd exactly. Also round_to_tf32 (TileKernels has it in
tile_kernels.mhc.norm_fn_kernel)."""
from typing import Optional, Tuple

import torch

from .reduce_fused import fma_f32


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """§3.7: the f32 bits as int32 plus 0x1000. The 19 high bits are then x rounded to TF32 to
    nearest with ties away from zero; the low 13 are left as they come out, since the TF32
    tensor-core operation ignores them."""
    return (x.view(torch.int32) + 0x1000).view(torch.float32)


def _tf32(x: torch.Tensor) -> torch.Tensor:
    """The value a TF32 operation reads from round_to_tf32(x): its low 13 bits cleared."""
    return (round_to_tf32(x).view(torch.int32) & ~0x1FFF).view(torch.float32)


class _FmaF32(torch.autograd.Function):
    """a*b + c with one rounding (§0.4's contracted multiply-add), differentiable; broadcasting."""

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b)
        ctx.c_shape = c.shape
        return fma_f32(a, b, c)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g * b).sum_to_size(a.shape), (g * a).sum_to_size(b.shape), g.sum_to_size(ctx.c_shape)


def _fma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    if a.dtype == torch.float64:
        return a * b + c
    return _FmaF32.apply(a, b, c)


def _sigmoid(x: torch.Tensor) -> torch.Tensor:
    """§0.1: 1 / (1 + exp(-x)), an IEEE division."""
    return 1.0 / (1.0 + torch.exp(-x))


def _sum_in_order(x: torch.Tensor, dim: int, keepdim: bool = True) -> torch.Tensor:
    """Sum over dim as ((x0 + x1) + x2) + ...: the fixed order §3.2 asks of the n-element sums."""
    acc = x.select(dim, 0)
    for i in range(1, x.shape[dim]):
        acc = acc + x.select(dim, i)
    return acc.unsqueeze(dim) if keepdim else acc


def _narrow_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.bfloat16


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def expand_to_mhc_ref(hidden: torch.Tensor, mhc_mult: int) -> torch.Tensor:
    """§3.1: (..., H) -> (..., mhc_mult, H), every stream a copy of hidden; contiguous."""
    return hidden.unsqueeze(-2).expand(*hidden.shape[:-1], mhc_mult, hidden.shape[-1]).contiguous()


def sinkhorn_normalize_ref(x: torch.Tensor, repeat: int = 10, eps: float = 1e-6) -> torch.Tensor:
    """§3.2 on (..., n, n): a row softmax (exp(x - row max) / row sum, then + eps), a column
    normalisation P / (column sum + eps), then repeat - 1 times a row and a column one."""
    e = torch.exp(x - x.amax(dim=-1, keepdim=True).detach())   # the shift leaves softmax unchanged
    p = e / _sum_in_order(e, -1) + eps
    p = p / (_sum_in_order(p, -2) + eps)
    for _ in range(repeat - 1):
        p = p / (_sum_in_order(p, -1) + eps)
        p = p / (_sum_in_order(p, -2) + eps)
    return p


def mhc_head_compute_mix_ref(input_mix: torch.Tensor, mhc_scale: torch.Tensor, mhc_base: torch.Tensor,
                             mhc_pre_eps: float) -> torch.Tensor:
    """§3.4: sigmoid(fma(input_mix, scale[0], base[j])) + mhc_pre_eps on (..., m)."""
    z = _fma(input_mix, mhc_scale.reshape(-1)[:1], mhc_base)
    return _sigmoid(z) + mhc_pre_eps


def mhc_pre_split_mixes_ref(input_mixes: torch.Tensor, mhc_scale: torch.Tensor, mhc_base: torch.Tensor,
                            mhc_mult: int, mhc_post_mult_value: float,
                            mhc_pre_eps: float) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """§3.3 on (..., 2m + m^2) mixes: each z*a + b one fma, a = scale[0] for the first m, scale[1]
    for the next m, scale[2] for the m^2 last. Returns pre = sigmoid + eps (..., m, 1), post =
    sigmoid * post_mult (..., m, 1) and comb (..., m, m) row-major."""
    m = mhc_mult
    scale = mhc_scale.repeat_interleave(torch.tensor([m, m, m * m], device=mhc_scale.device))
    z = _fma(input_mixes, scale, mhc_base)
    lead = input_mixes.shape[:-1]
    pre = _sigmoid(z[..., :m]) + mhc_pre_eps
    post = _sigmoid(z[..., m:2 * m]) * mhc_post_mult_value
    comb = z[..., 2 * m:]
    return pre.reshape(*lead, m, 1), post.reshape(*lead, m, 1), comb.reshape(*lead, m, m)


def mhc_pre_apply_mix_ref(x: torch.Tensor, mix: torch.Tensor) -> torch.Tensor:
    """§3.5: x (..., m, H), mix (..., m, 1) -> bf16 (..., H) of acc = fma(mix_i, x_i, acc) over
    the streams i = 0..m-1 from acc = 0."""
    xf = x.to(_compute_dtype(mix))
    acc = torch.zeros_like(xf[..., 0, :])
    for i in range(x.shape[-2]):
        acc = _fma(mix[..., i, :], xf[..., i, :], acc)
    return acc.to(_narrow_dtype(x))


def mhc_post_ref(x: torch.Tensor, residual: torch.Tensor, post_layer_mix: torch.Tensor,
                 comb_res_mix: torch.Tensor) -> torch.Tensor:
    """§3.6: bf16 (..., m, H) new residual; output stream o is post[o]*x, then
    fma(comb[i, o], residual[i], acc) over the input streams i = 0..m-1."""
    cd = _compute_dtype(post_layer_mix)
    rf = residual.to(cd)
    acc = post_layer_mix * x.to(cd).unsqueeze(-2)                   # (..., m, H)
    for i in range(residual.shape[-2]):
        acc = _fma(comb_res_mix[..., i, :].unsqueeze(-1), rf[..., i:i + 1, :], acc)
    return acc.to(_narrow_dtype(residual))


class _Tf32Projection(torch.autograd.Function):
    """x (T, K) times fn (N, K) transposed as §3.7's TF32 GEMMs: fn read as round_to_tf32(fn)
    (x is bf16, exact in TF32), products accumulated in f32. Backward: g rounded the same way,
    x_grad = g_r fn_r and fn_grad = g_r^T x, the latter for the un-rounded fn (straight through)."""

    @staticmethod
    def forward(ctx, x, fn):
        fn_r = _tf32(fn)
        ctx.save_for_backward(x, fn_r)
        return x @ fn_r.T

    @staticmethod
    def backward(ctx, g):
        x, fn_r = ctx.saved_tensors
        g_r = _tf32(g.contiguous())
        return g_r @ fn_r, g_r.T @ x


def mhc_pre_norm_fn_ref(residual: torch.Tensor, mhc_fn: torch.Tensor, mhc_norm_weight: Optional[torch.Tensor],
                        mhc_norm_eps: float) -> torch.Tensor:
    """§3.7 with one RMS group, the whole flattened residual (..., m, H) -> X (T, K = m*H):
    fn' = mhc_fn * norm weight (column-wise, when given); out = (X fn'^T) * rsqrt(sum_k X^2 / K + eps),
    f32 (..., 2m + m^2). The projection reads fn' through round_to_tf32 as the kernel's TF32
    GEMM does (float64 inputs: exact)."""
    cd = _compute_dtype(mhc_fn)
    lead = residual.shape[:-2]
    K = residual.shape[-2] * residual.shape[-1]
    xf = residual.reshape(-1, K).to(cd)
    fn = mhc_fn if mhc_norm_weight is None else mhc_fn * mhc_norm_weight
    mul = xf @ fn.T if cd == torch.float64 else _Tf32Projection.apply(xf, fn)
    r = torch.rsqrt((xf * xf).sum(-1, keepdim=True) / K + mhc_norm_eps)
    return (mul * r).reshape(*lead, mhc_fn.shape[0])
