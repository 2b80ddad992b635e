"""The weight gradients of the Engram gate from its per-block partials (spec moe-engram-mhc.md
§2.3)."""
import torch

from .. import _runtime
from .._ops import kernel_op
from .common import check_no_overlap, check_shape, check_tensor


@kernel_op(mutates=("grad_weight_hidden", "grad_weight_embed"), returns="none")
def grad_w_reduce(grad_w_partial: torch.Tensor, weight_hidden: torch.Tensor, weight_embed: torch.Tensor,
                  grad_weight_hidden: torch.Tensor, grad_weight_embed: torch.Tensor) -> None:
    """In place: with s = grad_w_partial.sum(0), grad_weight_hidden += s * weight_embed and
    grad_weight_embed += s * weight_hidden (each one fma into the existing f32 value; the
    chain rule through weight_fused = weight_hidden * weight_embed). grad_w_partial f32
    (P, hc, D) with any number of rows P (TileKernels: a multiple of 4); the weights bf16 and
    the gradients f32 (hc, D), all contiguous, the gradients sharing no memory with each other
    or the inputs."""
    fn = "grad_w_reduce"
    check_tensor(fn, "grad_w_partial", grad_w_partial, (torch.float32,), 3)
    P, hc, D = grad_w_partial.shape
    for name, t, dt in (("weight_hidden", weight_hidden, torch.bfloat16), ("weight_embed", weight_embed, torch.bfloat16),
                        ("grad_weight_hidden", grad_weight_hidden, torch.float32),
                        ("grad_weight_embed", grad_weight_embed, torch.float32)):
        check_tensor(fn, name, t, (dt,), 2)
        check_shape(fn, name, t, (hc, D), "(hc_mult, hidden_size)", "grad_w_partial's rows")
    ins = dict(grad_w_partial=grad_w_partial, weight_hidden=weight_hidden, weight_embed=weight_embed)
    check_no_overlap(fn, "grad_weight_hidden", grad_weight_hidden, grad_weight_embed=grad_weight_embed, **ins)
    check_no_overlap(fn, "grad_weight_embed", grad_weight_embed, **ins)
    if P * hc * D == 0:
        return None
    _runtime.kernel("engram_grad_w_reduce", (), grad_w_partial).launch(
        grad_w_partial, weight_hidden, weight_embed, grad_weight_hidden, grad_weight_embed,
        stream=_runtime.stream(grad_w_partial))
    return None
