"""PyTorch reference implementations (``tile_kernels.torch``), written from the specification
(quant-transpose.md §3.1, moe-engram-mhc.md §5.3); the tests use them as oracles. Plain tensor
code: any device. Besides TileKernels' names: pack_to_e2m1fn_x2, unpack_from_e2m1fn_x2, the
transposes, topk_gate, score_experts, get_fused_mapping and fma_f32. tilec.torch.engram is
imported by its module path, as TileKernels' is."""
from .cast import cast, cast_back, pack_to_e2m1fn_x2
from .cast_e5m6 import cast_to_e5m6, cast_back_from_e5m6
from .expand_to_fused import expand_to_fused, expand_to_fused_with_sf
from .mhc import (expand_to_mhc_ref, mhc_head_compute_mix_ref, mhc_post_ref, mhc_pre_apply_mix_ref, mhc_pre_norm_fn_ref,
                  mhc_pre_split_mixes_ref, sinkhorn_normalize_ref)
from .reduce_fused import reduce_fused, fma_f32
from .swiglu import swiglu_forward, swiglu_backward
from .topk import stable_topk, topk_sum_and_topk_group_idx, top2_sum_gate, topk_gate, score_experts
from .moe import inplace_unique_group_indices, aux_fi, group_count, mask_indices_by_tp, normalize_weight
from .moe import get_fused_mapping
from .per_channel_cast_fused import per_channel_cast_fused
from .transpose import batched_transpose, transpose
from ..quant.common import unpack_from_e2m1fn_x2

__all__ = ["cast", "cast_back", "cast_to_e5m6", "cast_back_from_e5m6", "per_channel_cast_fused",
           "unpack_from_e2m1fn_x2", "pack_to_e2m1fn_x2", "swiglu_forward", "swiglu_backward", "transpose",
           "batched_transpose", "stable_topk", "topk_gate", "topk_sum_and_topk_group_idx", "score_experts",
           "top2_sum_gate", "get_fused_mapping", "expand_to_fused", "expand_to_fused_with_sf", "reduce_fused",
           "fma_f32", "inplace_unique_group_indices", "aux_fi", "group_count", "mask_indices_by_tp",
           "normalize_weight", "expand_to_mhc_ref", "mhc_head_compute_mix_ref", "mhc_post_ref",
           "mhc_pre_apply_mix_ref", "mhc_pre_norm_fn_ref", "mhc_pre_split_mixes_ref", "sinkhorn_normalize_ref"]
