"""mhc_multilayer_recompute (spec moe-engram-mhc.md §3.9): one kernel over a whole stack of
mHC sub-layers, its tensors passed as tensor lists."""
from typing import List

import torch

from .._ops import kernel_op
from ._common import check_device, check_mult, check_shape, check_tensor, launch

BH = 512
MAX_LAYERS = 256


def _list_max(n: int) -> int:
    for cap in (16, 64, MAX_LAYERS):
        if n <= cap:
            return cap
    return MAX_LAYERS


@kernel_op(mutates=("layer_input_list", "residual_list"), returns="none")
def mhc_multilayer_recompute(initial_residual: torch.Tensor, pre_mix_list: List[torch.Tensor],
                             layer_output_list: List[torch.Tensor], post_mix_list: List[torch.Tensor],
                             comb_mix_list: List[torch.Tensor], layer_input_list: List[torch.Tensor],
                             residual_list: List[torch.Tensor]) -> None:
    """Recomputes, in place and in one pass, the layer inputs and residuals of L mHC sub-layers
    from the initial residual (..., m, H) bf16, the saved pre mixes (L of (..., m, 1) f32), layer
    outputs (P of (..., H) bf16), post mixes (P of (..., m, 1)) and comb mixes (P of (..., m, m)),
    P = L or L - 1: R = initial_residual; layer_input_list[l] = mhc_pre_apply_mix(R, pre[l]) and,
    for l < P, R = mhc_post_fwd(layer_output[l], R, post[l], comb[l]) into residual_list[l] — bit
    for bit those ops (spec §3.9). Every tensor contiguous with the same leading dimensions; at
    most 256 layers."""
    fn = "mhc_multilayer_recompute"
    check_tensor(fn, "initial_residual", initial_residual, torch.bfloat16, min_dim=2)
    *lead, m, H = initial_residual.shape
    check_mult(fn, "initial_residual.shape[-2] (mhc_mult)", m)
    lists = {"pre_mix_list": pre_mix_list, "layer_output_list": layer_output_list, "post_mix_list": post_mix_list,
             "comb_mix_list": comb_mix_list, "layer_input_list": layer_input_list, "residual_list": residual_list}
    for name, lst in lists.items():
        if not isinstance(lst, (list, tuple)):
            raise ValueError(f"{fn}: {name} must be a list of tensors, got {type(lst).__name__}")
    L, P = len(pre_mix_list), len(layer_output_list)
    if L == 0:
        raise ValueError(f"{fn}: pre_mix_list must not be empty")
    if L > MAX_LAYERS:
        raise ValueError(f"{fn}: pre_mix_list must have at most {MAX_LAYERS} layers, got {L}")
    if len(layer_input_list) != L:
        raise ValueError(f"{fn}: layer_input_list must have len(pre_mix_list) = {L} tensors, got "
                         f"{len(layer_input_list)}")
    if P not in (L - 1, L):
        raise ValueError(f"{fn}: layer_output_list must have len(pre_mix_list) = {L} or one fewer tensors, got {P}")
    for name in ("post_mix_list", "comb_mix_list", "residual_list"):
        if len(lists[name]) != P:
            raise ValueError(f"{fn}: {name} must have len(layer_output_list) = {P} tensors, got {len(lists[name])}")
    shapes = {"pre_mix_list": ((*lead, m, 1), torch.float32, "(..., mhc_mult, 1)"),
              "layer_output_list": ((*lead, H), torch.bfloat16, "(..., H)"),
              "post_mix_list": ((*lead, m, 1), torch.float32, "(..., mhc_mult, 1)"),
              "comb_mix_list": ((*lead, m, m), torch.float32, "(..., mhc_mult, mhc_mult)"),
              "layer_input_list": ((*lead, H), torch.bfloat16, "(..., H)"),
              "residual_list": ((*lead, m, H), torch.bfloat16, "(..., mhc_mult, H)")}
    for name, lst in lists.items():
        shape, dtype, what = shapes[name]
        for i, t in enumerate(lst):
            check_tensor(fn, f"{name}[{i}]", t, dtype)
            check_shape(fn, f"{name}[{i}]", t, shape, what)
            check_device(fn, initial_residual=initial_residual, **{f"{name}[{i}]": t})
    N = initial_residual.numel() // max(1, m * H) if m * H else 0
    if N == 0 or H == 0:
        return
    cap = _list_max(L)
    launch("mhc_multilayer_recompute", (f"M={m}", f"BH={BH}", f"LMAX={cap}"), initial_residual,
           initial_residual.view(N, m, H), [t.view(N, m) for t in pre_mix_list],
           [t.view(N, H) for t in layer_output_list], [t.view(N, m) for t in post_mix_list],
           [t.view(N, m, m) for t in comb_mix_list], [t.view(N, H) for t in layer_input_list],
           [t.view(N, m, H) for t in residual_list])
