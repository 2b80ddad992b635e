"""sinkhorn_normalize's kernels (spec moe-engram-mhc.md §3.2): one thread per n x n matrix, the
forward through the normalisation that mhc_pre_big_fuse shares, the backward by recomputing
each step's input from x."""
import torch

from ._common import launch


def _sinkhorn_fwd(x: torch.Tensor, out: torch.Tensor, repeat: int, eps: float) -> None:
    """x, out f32 (B, n, n) contiguous."""
    B, n, _ = x.shape
    if B * n:
        launch("mhc_sinkhorn_fwd", (f"N={n}",), x, x, out, repeat, eps)


def _sinkhorn_bwd(x: torch.Tensor, grad: torch.Tensor, x_grad: torch.Tensor, repeat: int, eps: float) -> None:
    """x_grad (B, n, n) = the gradient through the forward of x given the output's grad."""
    B, n, _ = x.shape
    if B * n:
        launch("mhc_sinkhorn_bwd", (f"N={n}",), x, x, grad, x_grad, repeat, eps)
