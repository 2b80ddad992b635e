"""mhc_post's kernels and its plain forward and backward (spec moe-engram-mhc.md §3.6): the new
residual post (x) x + comb^T . residual, and its gradients."""
from typing import Optional, Tuple

import torch

from .._ops import kernel_op
from ._common import check_bool, check_device, check_mult, check_out, check_shape, check_tensor, hidden_splits, launch

BH_FWD = 512
BH_BWD = 256
STAGES = 2   # the backward's pipeline


def _check_post(fn, x, residual, post_layer_mix, comb_res_mix):
    """The shapes of spec §3.6: residual bf16 (S, T, m, H) (any strides), x bf16 (S, T, H),
    post_layer_mix f32 (S, T, m, 1), comb_res_mix f32 (S, T, m, m), the last three contiguous."""
    check_tensor(fn, "residual", residual, torch.bfloat16, dim=4, contiguous=False)
    S, T, m, H = residual.shape
    check_mult(fn, "residual.shape[-2] (mhc_mult)", m)
    check_tensor(fn, "x", x, torch.bfloat16, dim=3)
    check_shape(fn, "x", x, (S, T, H), "residual's (S, T, H)")
    check_tensor(fn, "post_layer_mix", post_layer_mix, torch.float32, dim=4)
    check_shape(fn, "post_layer_mix", post_layer_mix, (S, T, m, 1), "(S, T, mhc_mult, 1)")
    check_tensor(fn, "comb_res_mix", comb_res_mix, torch.float32, dim=4)
    check_shape(fn, "comb_res_mix", comb_res_mix, (S, T, m, m), "(S, T, mhc_mult, mhc_mult)")
    check_device(fn, residual=residual, x=x, post_layer_mix=post_layer_mix, comb_res_mix=comb_res_mix)
    return S * T, m, H


@kernel_op(mutates=("out",), returns="out")
def mhc_post_fwd(x: torch.Tensor, residual: torch.Tensor, post_layer_mix: torch.Tensor,
                 comb_res_mix: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The new residual bf16 (S, T, m, H): out[o, d] = bf16(acc) with acc = post[o] * x[d], then
    acc = fma(comb[i, o], residual[i, d], acc) for i = 0 .. m - 1. ``out``: an optional
    preallocated contiguous bf16 tensor of residual's shape."""
    fn = "mhc_post_fwd"
    N, m, H = _check_post(fn, x, residual, post_layer_mix, comb_res_mix)
    check_out(fn, out, residual.shape, "residual's", torch.bfloat16, x=x, residual=residual,
              post_layer_mix=post_layer_mix, comb_res_mix=comb_res_mix)
    residual = residual.contiguous()
    if out is None:
        out = torch.empty_like(residual)
    if N * H:
        launch("mhc_post_fwd", (f"M={m}", f"BH={BH_FWD}"), x, x.view(N, H), residual.view(N, m, H),
               post_layer_mix.view(N, m), comb_res_mix.view(N, m, m), out.view(N, m, H))
    return out


def _leave_buffer(flat, args):
    """The traced call's result, with the residual's gradient left on the traced residual's
    storage under fuse_grad_acc, as the eager call leaves it (the op does so on the real one)."""
    if args["fuse_grad_acc"]:
        args["residual"].untyped_storage().grad_from_mhc_post = flat[1]
    return tuple(flat)


@kernel_op(returns=_leave_buffer)
def mhc_post_bwd(x: torch.Tensor, residual: torch.Tensor, post_layer_mix: torch.Tensor, comb_res_mix: torch.Tensor,
                 d_o: torch.Tensor, fuse_grad_acc: bool = True
                 ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(d_x, d_residual, d_post_layer_mix, d_comb_res_mix) of mhc_post_fwd given d_o (the new
    residual's gradient, any strides): d_residual[i, d] = bf16(sum over o of comb[i, o] d_o[o, d]),
    d_x[d] = bf16(sum over o of post[o] d_o[o, d]) (fma chains over o in order), d_comb[i, o] =
    sum over d of residual[i, d] d_o[o, d], d_post[o] = sum over d of x[d] d_o[o, d] (f32). With
    fuse_grad_acc, d_residual is also left on residual's storage as ``grad_from_mhc_post``, where
    the backward of mhc_pre_apply_mix and mhc_pre_norm_fn add their parts (spec §3.6). Any
    mhc_mult (TileKernels: 4)."""
    fn = "mhc_post_bwd"
    N, m, H = _check_post(fn, x, residual, post_layer_mix, comb_res_mix)
    check_tensor(fn, "d_o", d_o, torch.bfloat16, dim=4, contiguous=False)
    check_shape(fn, "d_o", d_o, residual.shape, "residual's")
    check_device(fn, residual=residual, d_o=d_o)
    check_bool(fn, "fuse_grad_acc", fuse_grad_acc)
    if residual.is_cuda and H % BH_BWD:
        # the H200 sums d_post and d_comb over lanes 0-4 of each warp only when a block's columns
        # end in a partial tile (emu_vs_gpu, 2026-12-02): an error, not wrong gradients
        raise NotImplementedError(f"{fn}: on a GPU the hidden size must be a multiple of {BH_BWD}, got {H} "
                                  f"(a known defect of the kernel's partial last tile, docs/kernels/mhc.md); "
                                  f"CPU tensors take any size")
    given = residual
    residual = residual.contiguous()
    d_o = d_o.contiguous()
    d_x = torch.empty_like(x)
    d_residual = torch.empty_like(residual)
    d_post = torch.empty_like(post_layer_mix)
    d_comb = torch.empty_like(comb_res_mix)
    if N:
        ns = hidden_splits(N, H, BH_BWD)
        if ns == 1:
            ppart, cpart = d_post.view(N, 1, m), d_comb.view(N, 1, m, m)
        else:
            ppart = torch.empty((N, ns, m), dtype=torch.float32, device=x.device)
            cpart = torch.empty((N, ns, m, m), dtype=torch.float32, device=x.device)
        launch("mhc_post_bwd", (f"M={m}", f"BH={BH_BWD}", f"S={STAGES}"), x, x.view(N, H), residual.view(N, m, H),
               post_layer_mix.view(N, m), comb_res_mix.view(N, m, m), d_o.view(N, m, H), d_x.view(N, H),
               d_residual.view(N, m, H), ppart, cpart)
        if ns > 1:
            torch.sum(ppart, 1, out=d_post.view(N, m))
            torch.sum(cpart, 1, out=d_comb.view(N, m, m))
    if fuse_grad_acc:
        given.untyped_storage().grad_from_mhc_post = d_residual
    return d_x, d_residual, d_post, d_comb
