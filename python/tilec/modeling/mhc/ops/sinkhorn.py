"""sinkhorn_normalize (spec moe-engram-mhc.md §3.2)."""
import torch

from ...._ops import kernel_op
from ....mhc._common import check_float, check_int, check_tensor
from ....mhc.sinkhorn_kernel import _sinkhorn_bwd, _sinkhorn_fwd

MAX_N = 16


@kernel_op(name="sinkhorn_normalize_bwd", returns="tensor")
def _sinkhorn_normalize_bwd(x: torch.Tensor, grad: torch.Tensor, repeat: int, eps: float) -> torch.Tensor:
    """x's gradient (contiguous, x's shape) through sinkhorn_normalize(x, repeat, eps) given the
    output's, the forward's steps recomputed from x."""
    x = x.contiguous()
    n = x.shape[-1]
    x_grad = torch.empty_like(x)
    _sinkhorn_bwd(x.view(-1, n, n), grad.contiguous().view(-1, n, n), x_grad.view(-1, n, n), repeat, eps)
    return x_grad


def _save(ctx, x, repeat, eps):
    ctx.save_for_backward(x)
    ctx.repeat, ctx.eps = repeat, eps


def _x_grad(ctx, grad):
    (x,) = ctx.saved_tensors
    return _sinkhorn_normalize_bwd(x, grad, ctx.repeat, ctx.eps)


class _SinkhornNormalize(torch.autograd.Function):
    """Sinkhorn on (..., n, n); saves the input, the backward recomputes the forward's steps."""

    @staticmethod
    def forward(ctx, x, repeat, eps):
        _save(ctx, x, repeat, eps)
        return sinkhorn_normalize(x, repeat, eps)

    @staticmethod
    def backward(ctx, grad):
        return _x_grad(ctx, grad), None, None


@kernel_op(returns="tensor", autograd=(lambda ctx, a, r: _save(ctx, a["x"], a["repeat"], float(a["eps"])),
                                       lambda ctx, grads: {"x": _x_grad(ctx, grads[0])}))
def sinkhorn_normalize(x: torch.Tensor, repeat: int = 10, eps: float = 1e-6) -> torch.Tensor:
    """Each n x n matrix of x (f32 (..., n, n), any strides) made nearly doubly stochastic: a row
    softmax, eps added, a column normalisation P / (column sum + eps), then repeat - 1 rounds of
    row and column normalisation (spec §3.2). Returns a contiguous tensor of x's shape.
    Differentiable (backward: tilec::sinkhorn_normalize_bwd)."""
    fn = "sinkhorn_normalize"
    check_tensor(fn, "x", x, torch.float32, min_dim=2, contiguous=False)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fn}: x must hold square matrices (x.shape[-2] == x.shape[-1]), got {tuple(x.shape)}")
    if not 1 <= x.shape[-1] <= MAX_N:
        raise ValueError(f"{fn}: x's matrices must be n x n with 1 <= n <= {MAX_N}, got n = {x.shape[-1]}")
    check_int(fn, "repeat", repeat, 1)
    eps = check_float(fn, "eps", eps)
    x = x.contiguous()
    n = x.shape[-1]
    out = torch.empty_like(x)
    _sinkhorn_fwd(x.view(-1, n, n), out.view(-1, n, n), repeat, eps)
    return out
