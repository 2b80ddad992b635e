"""The Engram gate, forward and backward (spec moe-engram-mhc.md §2.4, §2.5): persistent kernels
over contiguous token ranges, hidden columns streamed in chunks through a cp.async pipeline
(kernels/engram.tl)."""
from typing import Optional, Tuple

import torch

from .. import _runtime
from .._ops import kernel_op
from ..config import get_num_sms
from ..utils import ceil_div
from .common import (BWD_MAX_ELEMENTS, SMEM_PER_BLOCK, bwd_smem, check_bool, check_float, check_shape,
                     check_strided, check_tensor, fwd_blocks_per_sm, fwd_smem, gate_stages, gate_tiling)


def _check_inputs(fn, hidden_states, k, v, weight_fused):
    """(T, hc, D) after the checks shared by the forward and the backward."""
    check_tensor(fn, "hidden_states", hidden_states, (torch.bfloat16,), 3)
    T, hc, D = hidden_states.shape
    if hc == 0 or D == 0:
        raise ValueError(f"{fn}: hidden_states must have at least one head and one hidden column, "
                         f"got {tuple(hidden_states.shape)}")
    check_strided(fn, "k", k, 3)
    check_shape(fn, "k", k, (T, hc, D), "(num_tokens, hc_mult, hidden_size)", "hidden_states")
    check_strided(fn, "v", v, 2)
    check_shape(fn, "v", v, (T, D), "(num_tokens, hidden_size)")
    check_tensor(fn, "weight_fused", weight_fused, (torch.float32,), 2)
    check_shape(fn, "weight_fused", weight_fused, (hc, D), "(hc_mult, hidden_size)")
    return T, hc, D


def _stages(fn, hc, D, chunk, nt, smem, kept):
    stages, resident = gate_stages(hc, D, chunk, nt, smem)
    if not stages:
        raise ValueError(f"{fn}: hc_mult * hidden_size is too large: a token's {kept} stays in shared memory "
                         f"({smem(hc, D, chunk, nt, 2, False)} bytes with two stages, at most {SMEM_PER_BLOCK}); "
                         f"got hc_mult {hc}, hidden_size {D}")
    return stages, resident


@kernel_op(returns=lambda f, a: (f[0], *f[1:]) if a["save_for_backward"] else (f[0], None, None, None, None))
def engram_gate_fwd(hidden_states: torch.Tensor, k: torch.Tensor, v: torch.Tensor, weight_fused: torch.Tensor,
                    eps: float, clamp_value: float, save_for_backward: bool = True
                    ) -> Tuple[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor], Optional[torch.Tensor],
                               Optional[torch.Tensor]]:
    """The Engram gate (spec §2.4): for each token t and head h, with x = hidden_states[t, h],
    RMS statistics rstd_x = 1 / sqrt(mean(x^2) + eps) and rstd_k likewise, the raw dot
    raw = sum(x * weight_fused[h] * k[t, h]), dot = raw * rstd_x * rstd_k / sqrt(D) and
    g = sigmoid(sign(dot) * sqrt(max(|dot|, clamp_value))): output = bf16(x + g * v[t]).

    hidden_states (T, hc, D) bf16 contiguous; k (T, hc, D) and v (T, D) bf16 with any strides
    but a unit stride along D; weight_fused (hc, D) f32 (fused_weight). Note the order: eps,
    then clamp_value (the layer engram_gate and the reference take clamp_value first). Returns
    (output (T, hc, D) bf16, dot, gate_score, rstd_x, rstd_k), the last four f32 (T, hc) when
    save_for_backward (dot is the raw sum), else None; the output's bits do not depend on
    save_for_backward. Where dot is exactly 0 the gate is 0.5 (as the PyTorch reference's
    sign(); TileKernels' kernel gives sigmoid(sqrt(clamp_value)) there). Any hc and D."""
    fn = "engram_gate_fwd"
    T, hc, D = _check_inputs(fn, hidden_states, k, v, weight_fused)
    eps = check_float(fn, "eps", eps)
    clamp_value = check_float(fn, "clamp_value", clamp_value)
    check_bool(fn, "save_for_backward", save_for_backward)
    chunk, nt = gate_tiling(hc, D)
    stages, resident = _stages(fn, hc, D, chunk, nt, fwd_smem, "x")
    bps = fwd_blocks_per_sm(nt, fwd_smem(hc, D, chunk, nt, stages, resident))
    dev = hidden_states.device
    output = torch.empty_like(hidden_states)
    saved = [None] * 4
    if save_for_backward:
        saved = [torch.empty((T, hc), dtype=torch.float32, device=dev) for _ in range(4)]
    if T > 0:
        save = "true" if save_for_backward else "false"
        gens = (f"HC={hc}", f"D={D}", f"C={chunk}", f"NT={nt}", f"S={stages}", f"BPS={bps}",
                f"WRES={'true' if resident else 'false'}", f"SAVE={save}",
                *(f"{n}={'present' if save_for_backward else 'absent'}" for n in ("dot", "gate", "rstd_x", "rstd_k")))
        _runtime.kernel("engram_gate_fwd", gens, hidden_states).launch(
            hidden_states, k, v, weight_fused, output, *saved, eps, clamp_value, D ** -0.5,
            stream=_runtime.stream(hidden_states), num_sms=get_num_sms())
    return (output, *saved)


@kernel_op()
def engram_gate_bwd(grad_out: torch.Tensor, hidden_states: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    weight_fused: torch.Tensor, dot: torch.Tensor, gate_score: torch.Tensor, rstd_x: torch.Tensor,
                    rstd_k: torch.Tensor, clamp_value: float
                    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gate's backward (spec §2.5) from engram_gate_fwd's saved tensors (dot is the raw
    sum): returns (grad_hidden_states, grad_k, grad_v, grad_w_partial), the first three bf16 in
    the layouts torch.empty_like gives hidden_states, k and v, and grad_w_partial f32
    (get_num_sms(), hc, D): row p the weight_fused gradient of persistent block p's tokens (zeros
    for a block without tokens), for grad_w_reduce (or a sum over rows). grad_out is bf16
    (T, hc, D) with a unit stride along D; the saved tensors f32 (T, hc) contiguous. Any number
    of heads (TileKernels: 4) and any hidden size (TileKernels: a multiple of 512, at least
    1024), with hc * D at most 28672: a block keeps the weight gradient of every column in
    registers."""
    fn = "engram_gate_bwd"
    T, hc, D = _check_inputs(fn, hidden_states, k, v, weight_fused)
    check_strided(fn, "grad_out", grad_out, 3)
    check_shape(fn, "grad_out", grad_out, (T, hc, D), "(num_tokens, hc_mult, hidden_size)", "hidden_states")
    for name, t in (("dot", dot), ("gate_score", gate_score), ("rstd_x", rstd_x), ("rstd_k", rstd_k)):
        check_tensor(fn, name, t, (torch.float32,), 2)
        check_shape(fn, name, t, (T, hc), "(num_tokens, hc_mult)")
    clamp_value = check_float(fn, "clamp_value", clamp_value)
    if hc * D > BWD_MAX_ELEMENTS:
        raise ValueError(f"{fn}: hc_mult * hidden_size must be at most {BWD_MAX_ELEMENTS} (a block keeps the weight "
                         f"gradient of every column in registers), got {hc} * {D}")
    chunk, nt = gate_tiling(hc, D)
    stages, resident = _stages(fn, hc, D, chunk, nt, bwd_smem, "grad_out")
    P = get_num_sms()
    dev = hidden_states.device
    grad_x = torch.empty_like(hidden_states)
    grad_k = torch.empty_like(k)
    grad_v = torch.empty_like(v)
    if T == 0:
        return grad_x, grad_k, grad_v, torch.zeros((P, hc, D), dtype=torch.float32, device=dev)
    grad_w_partial = torch.empty((P, hc, D), dtype=torch.float32, device=dev)
    gens = (f"HC={hc}", f"D={D}", f"C={chunk}", f"NT={nt}", f"S={stages}", f"WRES={'true' if resident else 'false'}")
    _runtime.kernel("engram_gate_bwd", gens, hidden_states).launch(
        grad_out, hidden_states, k, v, weight_fused, dot, gate_score, rstd_x, rstd_k, grad_x, grad_k, grad_v,
        grad_w_partial, clamp_value, D ** -0.5, stream=_runtime.stream(hidden_states))
    return grad_x, grad_k, grad_v, grad_w_partial
