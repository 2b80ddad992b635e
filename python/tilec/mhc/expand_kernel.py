"""expand_to_mhc's kernels (spec moe-engram-mhc.md §3.1): the forward copies a token's hidden
state into each of the mhc_mult residual streams, the backward adds the streams' gradients."""
import torch

from ._common import launch

BH = 128


def _expand_fwd(hidden: torch.Tensor, mhc_mult: int, out: torch.Tensor) -> None:
    """out (T, m, H) = hidden (T, H) in every stream; both contiguous bf16."""
    T, H = hidden.shape
    if T * H:
        launch("mhc_expand_fwd", (f"M={mhc_mult}", f"BH={BH}"), hidden, hidden, out)


def _expand_bwd(out_grad: torch.Tensor, hidden_grad: torch.Tensor) -> None:
    """hidden_grad (T, H) = bf16 of the f32 sum over the m streams of out_grad (T, m, H), in
    stream order."""
    T, m, H = out_grad.shape
    if T * H:
        launch("mhc_expand_bwd", (f"M={m}", f"BH={BH}"), out_grad, out_grad, hidden_grad)
