"""The Engram gate layer: fused_weight and engram_gate_fwd forward, engram_gate_bwd and
grad_w_reduce backward (spec moe-engram-mhc.md §4)."""
import torch

from ...engram import engram_gate_bwd, engram_gate_fwd, fused_weight, grad_w_reduce


class EngramGateFn(torch.autograd.Function):
    """output = hidden_states + sigmoid(signed_sqrt(dot)) * v per head, where
    dot = <RMSNorm(x) * weight_hidden, RMSNorm(k) * weight_embed> / sqrt(D) (clamped at
    clamp_value before the square root) and signed_sqrt(y) = sign(y) sqrt(|y|).

    apply(hidden_states, k, v, weight_hidden, weight_embed, clamp_value, eps): hidden_states and
    k bf16 (..., hc, D), v bf16 (..., D) (each viewable as (-1, hc, D) / (-1, D)), the weights
    bf16 (hc, D). Returns a tensor of hidden_states' shape and dtype. The forward saves what the
    backward needs (nothing is recomputed). Weight gradients: where a weight has a ``main_grad``
    attribute (an f32 (hc, D) buffer), its gradient is added to it in place and None returned for
    it; otherwise an f32 gradient is returned (autograd casts it to the parameter's dtype)."""

    @staticmethod
    def forward(ctx, hidden_states, k, v, weight_hidden, weight_embed, clamp_value, eps):
        shape = hidden_states.shape
        hc, D = shape[-2], shape[-1]
        x = hidden_states.view(-1, hc, D)
        k = k.view(-1, hc, D)
        v = v.view(-1, D)
        weight_fused = fused_weight(weight_hidden, weight_embed)
        output, dot, gate_score, rstd_x, rstd_k = engram_gate_fwd(x, k, v, weight_fused, eps, clamp_value)
        ctx.save_for_backward(x, k, v, weight_hidden, weight_embed, weight_fused, dot, gate_score, rstd_x, rstd_k)
        ctx.clamp_value = clamp_value
        ctx.shape = shape
        return output.view(shape)

    @staticmethod
    def backward(ctx, grad_output):
        x, k, v, weight_hidden, weight_embed, weight_fused, dot, gate_score, rstd_x, rstd_k = ctx.saved_tensors
        shape = ctx.shape
        hc, D = shape[-2], shape[-1]
        grad_x, grad_k, grad_v, grad_w_partial = engram_gate_bwd(
            grad_output.view(-1, hc, D), x, k, v, weight_fused, dot, gate_score, rstd_x, rstd_k, ctx.clamp_value)
        main_wh = getattr(weight_hidden, "main_grad", None)
        main_we = getattr(weight_embed, "main_grad", None)
        grad_wh = main_wh if main_wh is not None else torch.zeros_like(weight_hidden, dtype=torch.float32)
        grad_we = main_we if main_we is not None else torch.zeros_like(weight_embed, dtype=torch.float32)
        grad_w_reduce(grad_w_partial, weight_hidden, weight_embed, grad_wh, grad_we)
        return (grad_x.view(shape), grad_k.view(shape), grad_v.view(shape[:-2] + (D,)),
                None if main_wh is not None else grad_wh, None if main_we is not None else grad_we, None, None)


engram_gate = EngramGateFn.apply
