"""MoE gating and routing (TileKernels ``tile_kernels.moe``, spec moe-engram-mhc.md §1), one
module per function under TileKernels' module names.

Every function checks its arguments and raises ValueError ("function: rule") before anything is
launched; outputs are fresh contiguous tensors unless the spec says otherwise. Integer results
never depend on ``tilec.set_num_sms``. Unlike TileKernels, the fused layout of
:func:`get_fused_mapping` is deterministic: within an expert, entries come in ascending
flattened index ``t * K + k`` (so ascending token order), whatever the SM count.
"""
from .get_fused_mapping_kernel import get_fused_mapping
from .reduce_fused_kernel import reduce_fused
from .expand_to_fused_kernel import expand_to_fused, expand_to_fused_with_sf
from .inplace_unique_group_indices_kernel import inplace_unique_group_indices
from .aux_fi_kernel import aux_fi
from .group_count_kernel import group_count
from .mask_indices_by_tp_kernel import mask_indices_by_tp
from .normalize_weight_kernel import normalize_weight
from .top2_sum_gate_kernel import top2_sum_gate
from .topk_gate_kernel import topk_gate
from .topk_sum_and_topk_group_idx_kernel import topk_sum_and_topk_group_idx
from .scoring import ScoringFunc

__all__ = ["topk_gate", "top2_sum_gate", "topk_sum_and_topk_group_idx", "get_fused_mapping", "expand_to_fused",
           "expand_to_fused_with_sf", "reduce_fused", "normalize_weight", "group_count", "aux_fi",
           "mask_indices_by_tp", "inplace_unique_group_indices", "ScoringFunc"]
