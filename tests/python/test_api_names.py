"""TileKernels' public names (commit 36d9e45) module by module under tilec: every module path
imports, every name exists and is a function, class or module as in TileKernels, the packages'
names are the objects of the modules TileKernels imports them from, each function and class is
defined in its module (not re-exported from elsewhere), and the public functions of quant, moe,
transpose and torch take TileKernels' parameters with its defaults. What tilec leaves out (names
that exist only to build TileLang kernels, families not in tilec yet) is listed in EXCLUDED with
the reason. Last, the host helpers tilec provides under TileKernels' names and signatures
(quant.common's cast configurations, the torch.cast helpers, testing.bench and the generators)
on small inputs.

The data below was read from TileKernels' sources with Python's ast module: a module's names are
the functions, classes and assignments it defines that do not start with an underscore, and for
a package the names its __init__ imports. The engram, mhc and modeling modules are checked like
the others (tile_kernels.mhc exports nothing; of its kernel modules, the plain functions
round_to_tf32, mhc_post_fwd and mhc_post_bwd); the mHC ops that wait for the TF32 gemm
(mhc_pre_norm_fn, mhc_pre_big_fuse, mhc_multilayer_recompute, and mhc_pre and mhc_head over them)
are listed as not there yet."""
import dataclasses
import importlib
import inspect
import os
import sys
import types

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")))

import tilec  # noqa: E402

F, C, M, V = "function", "class", "module", "value"

# TileKernels' modules (package prefix dropped; "" is tile_kernels itself) -> {name: kind}
TK_NAMES = {
    "": {
        "config": M, "moe": M, "quant": M, "transpose": M, "torch": M, "testing": M, "get_num_sms": F,
        "get_device_num_sms": F, "set_num_sms": F, "engram": M, "mhc": M, "modeling": M,
    },
    "config": {"get_device_num_sms": F, "set_num_sms": F, "get_num_sms": F, "get_max_smem_per_sm": F},
    "engram": {
        "fused_weight": F, "engram_gate_fwd": F, "engram_gate_bwd": F, "grad_w_reduce": F, "engram_hash": F,
    },
    "engram.engram_fused_weight_kernel": {"get_engram_fused_weight_kernel": F, "fused_weight": F},
    "engram.engram_gate_kernel": {
        "get_engram_gate_fwd_kernel": F, "get_engram_gate_bwd_kernel": F, "engram_gate_fwd": F, "engram_gate_bwd": F,
    },
    "engram.engram_grad_w_reduce_kernel": {"get_engram_grad_w_reduce_kernel": F, "grad_w_reduce": F},
    "engram.engram_hash_kernel": {"get_engram_hash_kernel": F, "engram_hash": F},
    "mhc": {},
    "mhc.norm_fn_kernel": {"round_to_tf32": F},
    "mhc.post_kernel": {"mhc_post_fwd": F, "mhc_post_bwd": F},
    "modeling": {"engram": M, "mhc": M},
    "modeling.engram": {"engram_gate": V, "EngramGateFn": C},
    "modeling.mhc": {"expand_from_embedding": F, "mhc_head": F, "mhc_pre": F},
    "modeling.mhc.functional": {"expand_from_embedding": F, "mhc_head": F, "mhc_pre": F},
    "modeling.mhc.ops": {
        "expand_to_mhc": F, "mhc_head_compute_mix": F, "mhc_multilayer_recompute": F, "mhc_pre_norm_fn": F,
        "mhc_post": F, "mhc_post_bwd": F, "mhc_post_fwd": F, "mhc_pre_apply_mix": F, "mhc_pre_big_fuse": F,
        "mhc_pre_split_mixes": F, "sinkhorn_normalize": F,
    },
    "modeling.mhc.ops.expand": {"ExpandToMHCFn": C, "expand_to_mhc": F},
    "modeling.mhc.ops.head_compute_mix": {"mhc_head_compute_mix": F},
    "modeling.mhc.ops.post": {"mhc_post": F},
    "modeling.mhc.ops.pre_apply_mix": {"MHCPreApplyMix": C, "mhc_pre_apply_mix": F},
    "modeling.mhc.ops.pre_split_mixes": {"MHCPreSplitMixes": C, "mhc_pre_split_mixes": F},
    "modeling.mhc.ops.sinkhorn": {"sinkhorn_normalize": F},
    "modeling.engram.engram_gate": {"EngramGateFn": C, "engram_gate": V},
    "moe": {
        "get_fused_mapping": F, "reduce_fused": F, "expand_to_fused": F, "expand_to_fused_with_sf": F,
        "inplace_unique_group_indices": F, "aux_fi": F, "group_count": F, "mask_indices_by_tp": F,
        "normalize_weight": F, "top2_sum_gate": F, "topk_gate": F, "topk_sum_and_topk_group_idx": F,
    },
    "moe.aux_fi_kernel": {"get_aux_fi_kernel": F, "aux_fi": F},
    "moe.common": {"get_topk_group_idx": F},
    "moe.expand_to_fused_kernel": {
        "get_expand_to_fused_kernel": F, "expand_to_fused": F, "expand_to_fused_with_sf": F,
    },
    "moe.get_fused_mapping_kernel": {"divide_task": F, "get_get_fused_mapping_kernel": F, "get_fused_mapping": F},
    "moe.group_count_kernel": {"get_group_count_kernel": F, "group_count": F},
    "moe.inplace_unique_group_indices_kernel": {
        "get_inplace_unique_group_indices_kernel": F, "inplace_unique_group_indices": F,
    },
    "moe.mask_indices_by_tp_kernel": {"get_mask_indices_by_tp_kernel": F, "mask_indices_by_tp": F},
    "moe.normalize_weight_kernel": {"get_normalize_weight_kernel": F, "normalize_weight": F},
    "moe.reduce_fused_kernel": {"get_reduce_fused_kernel": F, "reduce_fused": F},
    "moe.scoring": {"ScoringFunc": C, "softplus": F},
    "moe.top2_sum_gate_kernel": {"warp_reduce_sum": F, "get_top2_sum_gate_kernel": F, "top2_sum_gate": F},
    "moe.topk_gate_kernel": {"get_topk_gate_kernel": F, "topk_gate": F},
    "moe.topk_sum_and_topk_group_idx_kernel": {
        "get_topk_sum_and_topk_group_idx_kernel": F, "topk_sum_and_topk_group_idx": F,
    },
    "quant": {
        "swiglu_forward_and_per_channel_cast_and_transpose": F, "per_channel_cast": F, "per_channel_cast_fused": F,
        "per_channel_cast_and_transpose": F, "swiglu_forward_and_per_token_cast": F,
        "swiglu_backward_and_per_token_cast": F, "unpack_from_e2m1fn_x2": F, "per_token_cast": F,
        "per_token_cast_with_precomputed_sf": F, "per_token_cast_with_sf_only": F, "per_block_cast": F,
        "per_block_cast_with_precomputed_sf": F, "per_block_cast_with_sf_only": F, "cast_back": F,
        "per_token_cast_back": F, "per_block_cast_lossless": F,
    },
    "quant.cast_back_e5m6_kernel": {"e5m6_to_float": F, "get_cast_back_e5m6_kernel": F, "cast_back_e5m6": F},
    "quant.cast_back_kernel": {"get_cast_back_kernel": F, "cast_back": F, "per_token_cast_back": F},
    "quant.common": {
        "get_best_vectorize_size": F, "BaseCastConfig": C, "CastInputConfig": C, "CastOutputConfig": C,
        "get_cast_input_and_config": F, "get_cast_output_config": F, "get_logical_hidden": F,
        "get_physical_hidden": F, "get_sf_shape": F, "alloc_scaling_factors": F, "cast_epilogue": F,
        "get_sf_and_inv": F, "load_sf": F, "transform_sf": F, "store_sf": F, "unpack_from_e2m1fn_x2": F,
    },
    "quant.per_block_cast_kernel": {
        "get_per_block_cast_kernel": F, "per_block_cast_impl": F, "per_block_cast": F,
        "per_block_cast_with_sf_only": F, "per_block_cast_with_precomputed_sf": F,
    },
    "quant.per_block_cast_lossless_kernel": {
        "get_per_block_cast_lossless_kernel": F, "per_block_cast_lossless": F,
    },
    "quant.per_channel_cast_and_transpose_kernel": {
        "get_per_channel_cast_and_transpose_kernel": F, "per_channel_cast_and_transpose": F,
    },
    "quant.per_channel_cast_fused_kernel": {
        "transform_token_idx": F, "get_per_channel_cast_fused_kernel": F, "per_channel_cast_fused": F,
    },
    "quant.per_channel_cast_kernel": {"per_channel_cast": F},
    "quant.per_token_cast_kernel": {
        "get_per_token_cast_kernel": F, "per_token_cast_impl": F, "per_token_cast": F,
        "per_token_cast_with_sf_only": F, "per_token_cast_with_precomputed_sf": F,
    },
    "quant.per_token_cast_to_e5m6_kernel": {
        "get_sf_and_inv_e5m6": F, "float_to_e5m6": F, "get_per_token_cast_to_e5m6_kernel": F,
        "per_token_cast_to_e5m6": F,
    },
    "quant.swiglu_backward_and_per_token_cast_kernel": {
        "get_swiglu_backward_and_per_token_cast_kernel": F, "swiglu_backward_and_per_token_cast": F,
    },
    "quant.swiglu_forward_and_per_channel_cast_and_transpose_kernel": {
        "get_swiglu_forward_and_per_channel_cast_and_transpose_kernel": F,
        "swiglu_forward_and_per_channel_cast_and_transpose": F,
    },
    "quant.swiglu_forward_and_per_token_cast_kernel": {
        "get_swiglu_forward_and_per_token_cast_kernel": F, "swiglu_forward_and_per_token_cast": F,
    },
    "quant.types": {"QuantTensor": V},
    "testing": {"bench": M, "numeric": M, "generator": M, "quant": M, "clear_unused_sf": F},
    "testing.bench": {
        "empty_suppress": C, "suppress_stdout_stderr": C, "print_average_perf": F, "dtype_to_str": F,
        "make_param_key": F, "make_param_id": F,
    },
    "testing.generator": {
        "generate_num_tokens": F, "generate_hidden_sizes": F, "generate_num_sms": F, "generate_moe_params": F,
        "generate_topk_idx": F, "generate_e5m6_inputs": F, "generate_rand_float": F,
    },
    "testing.numeric": {"assert_equal": F, "calc_diff": F, "check_bias": F, "count_bytes": F},
    "testing.quant": {"clear_unused_sf": F},
    "torch": {
        "cast": F, "cast_back": F, "cast_to_e5m6": F, "cast_back_from_e5m6": F, "expand_to_fused": F,
        "expand_to_fused_with_sf": F, "reduce_fused": F, "swiglu_forward": F, "swiglu_backward": F,
        "stable_topk": F, "topk_sum_and_topk_group_idx": F, "top2_sum_gate": F, "inplace_unique_group_indices": F,
        "aux_fi": F, "group_count": F, "mask_indices_by_tp": F, "normalize_weight": F, "per_channel_cast_fused": F,
        "expand_to_mhc_ref": F, "mhc_head_compute_mix_ref": F, "mhc_post_ref": F, "mhc_pre_apply_mix_ref": F,
        "mhc_pre_norm_fn_ref": F, "mhc_pre_split_mixes_ref": F, "sinkhorn_normalize_ref": F,
    },
    "torch.cast": {
        "right_shift_unsigned": F, "get_min_clamp_val": F, "get_max_quant_val": F, "transform_sf": F,
        "cast_back": F, "cast": F, "convert_to_e2m1_bits": F,
    },
    "torch.cast_e5m6": {"right_shift_unsigned": F, "transform_sf": F, "cast_to_e5m6": F, "cast_back_from_e5m6": F},
    "torch.engram": {"make_offsets": F, "engram_hash_ref": F, "engram_gate_ref": F},
    "torch.expand_to_fused": {"expand_to_fused": F, "expand_to_fused_with_sf": F},
    "torch.mhc": {
        "expand_to_mhc_ref": F, "sinkhorn_normalize_ref": F, "mhc_head_compute_mix_ref": F,
        "mhc_pre_split_mixes_ref": F, "mhc_pre_apply_mix_ref": F, "mhc_post_ref": F, "mhc_pre_norm_fn_ref": F,
    },
    "torch.moe": {
        "aux_fi": F, "group_count": F, "mask_indices_by_tp": F, "normalize_weight": F,
        "inplace_unique_group_indices": F,
    },
    "torch.per_channel_cast_fused": {"per_channel_cast_fused": F},
    "torch.reduce_fused": {"elementwise_fma": F, "reduce_fused": F},
    "torch.swiglu": {"swiglu_forward": F, "elementwise_fma": F, "swiglu_backward": F},
    "torch.topk": {"stable_topk": F, "topk_sum_and_topk_group_idx": F, "top2_sum_gate": F},
    "transpose": {"transpose": F, "batched_transpose": F},
    "transpose.batched_transpose_kernel": {
        "create_loop_layout_fn": F, "get_batched_transpose_kernel": F, "transpose": F, "batched_transpose": F,
    },
    "utils": {"ceil_div": F, "align": F, "is_power_of_two": F},
}

# the packages' names imported from their submodules: package -> {submodule: names}
TK_REEXPORTS = {
    "": {
        "config": ("get_num_sms", "get_device_num_sms", "set_num_sms"),
    },
    "engram": {
        "engram_fused_weight_kernel": ("fused_weight",),
        "engram_gate_kernel": ("engram_gate_fwd", "engram_gate_bwd"),
        "engram_grad_w_reduce_kernel": ("grad_w_reduce",),
        "engram_hash_kernel": ("engram_hash",),
    },
    "modeling.engram": {
        "engram_gate": ("engram_gate", "EngramGateFn"),
    },
    "modeling.mhc": {
        "functional": ("expand_from_embedding",),
    },
    "modeling.mhc.ops": {
        "expand": ("expand_to_mhc",),
        "head_compute_mix": ("mhc_head_compute_mix",),
        "post": ("mhc_post", "mhc_post_fwd", "mhc_post_bwd"),
        "pre_apply_mix": ("mhc_pre_apply_mix",),
        "pre_split_mixes": ("mhc_pre_split_mixes",),
        "sinkhorn": ("sinkhorn_normalize",),
    },
    "moe": {
        "get_fused_mapping_kernel": ("get_fused_mapping",),
        "reduce_fused_kernel": ("reduce_fused",),
        "expand_to_fused_kernel": ("expand_to_fused", "expand_to_fused_with_sf"),
        "inplace_unique_group_indices_kernel": ("inplace_unique_group_indices",),
        "aux_fi_kernel": ("aux_fi",),
        "group_count_kernel": ("group_count",),
        "mask_indices_by_tp_kernel": ("mask_indices_by_tp",),
        "normalize_weight_kernel": ("normalize_weight",),
        "top2_sum_gate_kernel": ("top2_sum_gate",),
        "topk_gate_kernel": ("topk_gate",),
        "topk_sum_and_topk_group_idx_kernel": ("topk_sum_and_topk_group_idx",),
    },
    "quant": {
        "swiglu_forward_and_per_channel_cast_and_transpose_kernel": (
            "swiglu_forward_and_per_channel_cast_and_transpose",
        ),
        "per_channel_cast_kernel": ("per_channel_cast",),
        "per_channel_cast_fused_kernel": ("per_channel_cast_fused",),
        "per_channel_cast_and_transpose_kernel": ("per_channel_cast_and_transpose",),
        "swiglu_forward_and_per_token_cast_kernel": ("swiglu_forward_and_per_token_cast",),
        "swiglu_backward_and_per_token_cast_kernel": ("swiglu_backward_and_per_token_cast",),
        "common": ("unpack_from_e2m1fn_x2",),
        "per_token_cast_kernel": (
            "per_token_cast", "per_token_cast_with_precomputed_sf", "per_token_cast_with_sf_only",
        ),
        "per_block_cast_kernel": (
            "per_block_cast", "per_block_cast_with_precomputed_sf", "per_block_cast_with_sf_only",
        ),
        "cast_back_kernel": ("cast_back", "per_token_cast_back"),
        "per_block_cast_lossless_kernel": ("per_block_cast_lossless",),
    },
    "testing": {
        "quant": ("clear_unused_sf",),
    },
    "torch": {
        "cast": ("cast", "cast_back"),
        "cast_e5m6": ("cast_to_e5m6", "cast_back_from_e5m6"),
        "expand_to_fused": ("expand_to_fused", "expand_to_fused_with_sf"),
        "mhc": (
            "expand_to_mhc_ref", "mhc_head_compute_mix_ref", "mhc_post_ref", "mhc_pre_apply_mix_ref",
            "mhc_pre_norm_fn_ref", "mhc_pre_split_mixes_ref", "sinkhorn_normalize_ref",
        ),
        "reduce_fused": ("reduce_fused",),
        "swiglu": ("swiglu_forward", "swiglu_backward"),
        "topk": ("stable_topk", "topk_sum_and_topk_group_idx", "top2_sum_gate"),
        "moe": ("inplace_unique_group_indices", "aux_fi", "group_count", "mask_indices_by_tp", "normalize_weight"),
        "per_channel_cast_fused": ("per_channel_cast_fused",),
    },
    "transpose": {
        "batched_transpose_kernel": ("transpose", "batched_transpose"),
    },
}

# the parameters of the public functions of engram, quant, moe, transpose and torch, in order:
# "name", or "name=default" with the default as TileKernels' source spells it
TK_SIGNATURES = {
    "engram.engram_fused_weight_kernel": {
        "fused_weight": ("weight_hidden", "weight_embed"),
    },
    "engram.engram_gate_kernel": {
        "engram_gate_fwd": ("hidden_states", "k", "v", "weight_fused", "eps", "clamp_value", "save_for_backward=True"),
        "engram_gate_bwd": (
            "grad_out", "hidden_states", "k", "v", "weight_fused", "dot", "gate_score", "rstd_x", "rstd_k",
            "clamp_value",
        ),
    },
    "engram.engram_grad_w_reduce_kernel": {
        "grad_w_reduce": (
            "grad_w_partial", "weight_hidden", "weight_embed", "grad_weight_hidden", "grad_weight_embed",
        ),
    },
    "engram.engram_hash_kernel": {
        "engram_hash": ("ngram_token_ids", "multipliers", "vocab_sizes", "offsets"),
    },
    "mhc.norm_fn_kernel": {
        "round_to_tf32": ("x",),
    },
    "mhc.post_kernel": {
        "mhc_post_fwd": ("x", "residual", "post_layer_mix", "comb_res_mix", "out=None"),
        "mhc_post_bwd": ("x", "residual", "post_layer_mix", "comb_res_mix", "d_o", "fuse_grad_acc=True"),
    },
    "modeling.mhc.functional": {
        "expand_from_embedding": ("x", "mhc_mult=4"),
    },
    "modeling.mhc.ops.expand": {
        "expand_to_mhc": ("hidden", "mhc_mult", "out=None"),
    },
    "modeling.mhc.ops.head_compute_mix": {
        "mhc_head_compute_mix": ("input_mix", "mhc_scale", "mhc_base", "mhc_pre_eps"),
    },
    "modeling.mhc.ops.post": {
        "mhc_post": ("x", "residual", "post_layer_mix", "comb_res_mix", "out=None"),
    },
    "modeling.mhc.ops.pre_apply_mix": {
        "mhc_pre_apply_mix": ("x", "mix", "out=None"),
    },
    "modeling.mhc.ops.pre_split_mixes": {
        "mhc_pre_split_mixes": (
            "input_mixes", "mhc_scale", "mhc_base", "mhc_mult", "mhc_post_mult_value", "mhc_pre_eps",
        ),
    },
    "modeling.mhc.ops.sinkhorn": {
        "sinkhorn_normalize": ("x", "repeat=10", "eps=1e-6"),
    },
    "moe.aux_fi_kernel": {
        "aux_fi": ("topk_idx", "num_experts", "num_aux_topk"),
    },
    "moe.expand_to_fused_kernel": {
        "expand_to_fused": ("x", "token_topk_to_pos", "pos_to_expert"),
        "expand_to_fused_with_sf": (
            "x", "num_per_channels", "token_topk_to_pos", "pos_to_expert", "use_tma_aligned_col_major_sf=False",
        ),
    },
    "moe.get_fused_mapping_kernel": {
        "get_fused_mapping": ("topk_idx", "num_experts", "num_expanded_tokens", "alignment", "force_no_sync=False"),
    },
    "moe.group_count_kernel": {
        "group_count": ("group_idx", "num_groups"),
    },
    "moe.inplace_unique_group_indices_kernel": {
        "inplace_unique_group_indices": ("group_indices", "num_groups"),
    },
    "moe.mask_indices_by_tp_kernel": {
        "mask_indices_by_tp": ("indices", "n", "num_ep_ranks", "tp_rank", "num_tp_ranks"),
    },
    "moe.normalize_weight_kernel": {
        "normalize_weight": ("topk_weights",),
    },
    "moe.reduce_fused_kernel": {
        "reduce_fused": ("x", "topk_weights", "token_topk_to_pos", "fp8_format=''", "sf=None", "out=None"),
    },
    "moe.top2_sum_gate_kernel": {
        "top2_sum_gate": (
            "logits", "bias", "num_topk", "num_topk_groups", "num_groups", "use_shared_as_routed",
            "num_shared_experts", "routed_scaling_factor", "ep_rank", "num_ep_ranks", "tp_rank", "num_tp_ranks",
            "scoring_func", "mask=None", "fix_routing_mask=None", "to_physical_map=None", "logical_count=None",
            "unmapped_topk_idx=None",
        ),
    },
    "moe.topk_gate_kernel": {
        "topk_gate": ("scores", "num_topk"),
    },
    "moe.topk_sum_and_topk_group_idx_kernel": {
        "topk_sum_and_topk_group_idx": ("scores", "num_topk_sum", "num_topk_groups"),
    },
    "quant.cast_back_e5m6_kernel": {
        "cast_back_e5m6": ("x", "fmt", "x_block_size"),
    },
    "quant.cast_back_kernel": {
        "cast_back": ("x", "fmt", "x_block_size", "x_special_fmt=None"),
        "per_token_cast_back": ("x", "fmt", "num_per_channels", "x_special_fmt=None"),
    },
    "quant.common": {
        "get_best_vectorize_size": ("dtype",),
        "get_cast_input_and_config": ("x", "sf_block"),
        "get_cast_output_config": (
            "fmt", "sf_block", "use_tma_aligned_col_major_sf=False", "round_sf=False", "use_packed_ue8m0=False",
            "custom_clamp_min_value=None",
        ),
        "get_logical_hidden": ("hidden", "dtype"),
        "get_physical_hidden": ("hidden", "dtype"),
        "get_sf_shape": ("shape", "config"),
        "alloc_scaling_factors": ("shape", "out_config", "device='cuda'"),
        "unpack_from_e2m1fn_x2": ("x", "out_dtype=torch.float32"),
    },
    "quant.per_block_cast_kernel": {
        "per_block_cast": (
            "x", "fmt", "block_size", "use_tma_aligned_col_major_sf=False", "round_sf=False",
            "use_packed_ue8m0=False",
        ),
        "per_block_cast_with_sf_only": (
            "x", "fmt", "block_size", "use_tma_aligned_col_major_sf=False", "round_sf=False",
            "use_packed_ue8m0=False",
        ),
        "per_block_cast_with_precomputed_sf": (
            "x", "fmt", "block_size", "sf", "use_tma_aligned_col_major_sf=False", "round_sf=False",
            "use_packed_ue8m0=False",
        ),
    },
    "quant.per_block_cast_lossless_kernel": {
        "per_block_cast_lossless": (
            "x", "fmt", "x_block_size", "out_block_size", "use_tma_aligned_col_major_sf=False", "round_sf=False",
            "use_packed_ue8m0=False",
        ),
    },
    "quant.per_channel_cast_and_transpose_kernel": {
        "per_channel_cast_and_transpose": ("x", "fmt", "num_per_tokens", "round_sf=False"),
    },
    "quant.per_channel_cast_fused_kernel": {
        "per_channel_cast_fused": (
            "x", "fmt", "num_per_tokens", "round_sf=False", "num_per_channels=None", "pos_to_token=None",
        ),
    },
    "quant.per_channel_cast_kernel": {
        "per_channel_cast": ("x", "fmt", "num_per_tokens", "round_sf=False"),
    },
    "quant.per_token_cast_kernel": {
        "per_token_cast": (
            "x", "fmt", "num_per_channels", "x_block_size=None", "use_tma_aligned_col_major_sf=False",
            "round_sf=False", "use_packed_ue8m0=False",
        ),
        "per_token_cast_with_sf_only": (
            "x", "fmt", "num_per_channels", "x_block_size=None", "use_tma_aligned_col_major_sf=False",
            "round_sf=False", "use_packed_ue8m0=False",
        ),
        "per_token_cast_with_precomputed_sf": (
            "x", "fmt", "num_per_channels", "sf", "x_block_size=None", "use_tma_aligned_col_major_sf=False",
            "round_sf=False", "use_packed_ue8m0=False",
        ),
    },
    "quant.per_token_cast_to_e5m6_kernel": {
        "per_token_cast_to_e5m6": (
            "x", "num_per_channels", "use_tma_aligned_col_major_sf=False", "round_sf=False",
            "use_packed_ue8m0=False",
        ),
    },
    "quant.swiglu_backward_and_per_token_cast_kernel": {
        "swiglu_backward_and_per_token_cast": (
            "x", "grad_out", "weight", "pos_to_token_topk", "token_topk_to_pos", "num_per_channels",
            "round_sf=False", "swiglu_clamp_value=None",
        ),
    },
    "quant.swiglu_forward_and_per_channel_cast_and_transpose_kernel": {
        "swiglu_forward_and_per_channel_cast_and_transpose": (
            "x", "fmt", "num_per_tokens", "round_sf=False", "without_transpose=False", "swiglu_clamp_value=None",
        ),
    },
    "quant.swiglu_forward_and_per_token_cast_kernel": {
        "swiglu_forward_and_per_token_cast": (
            "x", "fmt", "num_per_channels", "pos_to_token_topk=None", "topk_weights=None", "pos_to_expert=None",
            "use_tma_aligned_col_major_sf=False", "round_sf=False", "use_packed_ue8m0=False",
            "swiglu_clamp_value=None", "clamped_count=None", "sf_clamp_min=None",
        ),
    },
    "torch.cast": {
        "right_shift_unsigned": ("x", "shift"),
        "get_min_clamp_val": ("dtype",),
        "get_max_quant_val": ("dtype",),
        "transform_sf": ("sf",),
        "cast_back": ("x", "fmt", "block_size=(32, 32)"),
        "cast": (
            "x", "fmt", "block_size=(32, 32)", "sf=None", "x_block_size=None", "round_sf=False",
            "use_tma_aligned_col_major_sf=False", "use_packed_ue8m0=False",
        ),
        "convert_to_e2m1_bits": ("quant_tensor", "max_quant_val", "device"),
    },
    "torch.cast_e5m6": {
        "right_shift_unsigned": ("x", "shift"),
        "transform_sf": ("sf",),
        "cast_to_e5m6": (
            "x", "num_per_channels", "use_tma_aligned_col_major_sf=False", "round_sf=False",
            "use_packed_ue8m0=False",
        ),
        "cast_back_from_e5m6": ("x", "fmt", "x_block_size"),
    },
    "torch.engram": {
        "make_offsets": ("vocab_sizes",),
        "engram_hash_ref": ("ngram_token_ids", "multipliers", "vocab_sizes", "offsets"),
        "engram_gate_ref": (
            "hidden_states", "k", "v", "weight_hidden", "weight_embed", "clamp_value", "eps", "save_for_backward=False",
        ),
    },
    "torch.expand_to_fused": {
        "expand_to_fused": ("x", "token_topk_to_pos", "pos_to_expert"),
        "expand_to_fused_with_sf": (
            "x", "num_per_channels", "token_topk_to_pos", "pos_to_expert", "use_tma_aligned_col_major_sf=False",
        ),
    },
    "torch.mhc": {
        "expand_to_mhc_ref": ("hidden", "mhc_mult"),
        "sinkhorn_normalize_ref": ("x", "repeat=10", "eps=1e-6"),
        "mhc_head_compute_mix_ref": ("input_mix", "mhc_scale", "mhc_base", "mhc_pre_eps"),
        "mhc_pre_split_mixes_ref": (
            "input_mixes", "mhc_scale", "mhc_base", "mhc_mult", "mhc_post_mult_value", "mhc_pre_eps",
        ),
        "mhc_pre_apply_mix_ref": ("x", "mix"),
        "mhc_post_ref": ("x", "residual", "post_layer_mix", "comb_res_mix"),
        "mhc_pre_norm_fn_ref": ("residual", "mhc_fn", "mhc_norm_weight", "mhc_norm_eps"),
    },
    "torch.moe": {
        "aux_fi": ("topk_idx", "num_experts", "num_aux_topk"),
        "group_count": ("group_idx", "num_groups"),
        "mask_indices_by_tp": ("indices", "n", "num_ep_ranks", "tp_rank", "num_tp_ranks"),
        "normalize_weight": ("topk_weights",),
        "inplace_unique_group_indices": ("group_indices", "num_groups"),
    },
    "torch.per_channel_cast_fused": {
        "per_channel_cast_fused": ("x", "num_per_tokens", "num_per_channels", "round_sf", "pos_to_token"),
    },
    "torch.reduce_fused": {
        "elementwise_fma": ("a", "b", "c"),
        "reduce_fused": ("x", "topk_weights", "token_topk_to_pos", "fp8_format=''", "sf=None"),
    },
    "torch.swiglu": {
        "swiglu_forward": (
            "x", "pos_to_token_topk=None", "topk_weights=None", "swiglu_clamp_value=None", "clamped_count=None",
        ),
        "elementwise_fma": ("a", "b", "c"),
        "swiglu_backward": (
            "x", "grad_out", "weight", "pos_to_token_topk", "token_topk_to_pos", "num_per_channels",
            "swiglu_clamp_value=None",
        ),
    },
    "torch.topk": {
        "stable_topk": ("scores", "num_topk"),
        "topk_sum_and_topk_group_idx": ("scores", "num_group_sum_topk", "num_topk_groups"),
        "top2_sum_gate": (
            "logits", "bias", "num_topk", "num_topk_groups", "num_groups", "use_shared_as_routed",
            "num_shared_experts", "routed_scaling_factor", "ep_rank", "num_ep_ranks", "tp_rank", "num_tp_ranks",
            "scoring_func", "mask=None", "fix_routing_mask=None", "to_physical_map=None", "logical_count=None",
            "unmapped_topk_idx=None",
        ),
    },
    "transpose.batched_transpose_kernel": {
        "transpose": ("x",),
        "batched_transpose": ("x",),
    },
}

# quant.common's frozen dataclasses: their fields in order (the base class's first) with defaults
TK_DATACLASS_FIELDS = {
    "BaseCastConfig": ("torch_dtype=torch.float8_e4m3fn", "sf_block=(1, 1)", "use_tma_aligned_col_major_sf=False",
                       "use_packed_ue8m0=False"),
    "CastInputConfig": ("torch_dtype=torch.float8_e4m3fn", "sf_block=(1, 1)", "use_tma_aligned_col_major_sf=False",
                        "use_packed_ue8m0=False", "with_sf=True"),
    "CastOutputConfig": ("torch_dtype=torch.float8_e4m3fn", "sf_block=(1, 1)", "use_tma_aligned_col_major_sf=False",
                         "use_packed_ue8m0=False", "round_sf=False", "custom_clamp_min_value=None"),
}
TK_PROPERTIES = {"BaseCastConfig": ("dtype", "sf_torch_dtype", "sf_dtype"), "CastOutputConfig": ("clamp_min_value",)}

_FACTORY = "a tilelang.jit kernel factory: tilec's kernels come from kernels/*.tl through tilec._runtime"
_IMPL = "the TileLang wrappers' shared body; tilec's variants share private helpers of their module"
_MACRO = "a TileLang macro (device code); tilec spells it in its tile DSL (dsl/*.tl)"
_TL_HELPER = "a host helper of the TileLang kernels (loop layouts, index remapping, the sf epilogue)"
_NOT_YET = "the family is not in tilec yet"
EXCLUDED = {
    "engram.engram_fused_weight_kernel": {"get_engram_fused_weight_kernel": _FACTORY},
    "engram.engram_gate_kernel": {"get_engram_gate_fwd_kernel": _FACTORY, "get_engram_gate_bwd_kernel": _FACTORY},
    "engram.engram_grad_w_reduce_kernel": {"get_engram_grad_w_reduce_kernel": _FACTORY},
    "engram.engram_hash_kernel": {"get_engram_hash_kernel": _FACTORY},
    "modeling.mhc": {"mhc_head": _NOT_YET, "mhc_pre": _NOT_YET},
    "modeling.mhc.functional": {"mhc_head": _NOT_YET, "mhc_pre": _NOT_YET},
    "modeling.mhc.ops": {"mhc_multilayer_recompute": _NOT_YET, "mhc_pre_norm_fn": _NOT_YET, "mhc_pre_big_fuse": _NOT_YET},
    "moe.aux_fi_kernel": {"get_aux_fi_kernel": _FACTORY},
    "moe.common": {"get_topk_group_idx": _MACRO},
    "moe.expand_to_fused_kernel": {"get_expand_to_fused_kernel": _FACTORY},
    "moe.get_fused_mapping_kernel": {"divide_task": _MACRO, "get_get_fused_mapping_kernel": _FACTORY},
    "moe.group_count_kernel": {"get_group_count_kernel": _FACTORY},
    "moe.inplace_unique_group_indices_kernel": {"get_inplace_unique_group_indices_kernel": _FACTORY},
    "moe.mask_indices_by_tp_kernel": {"get_mask_indices_by_tp_kernel": _FACTORY},
    "moe.normalize_weight_kernel": {"get_normalize_weight_kernel": _FACTORY},
    "moe.reduce_fused_kernel": {"get_reduce_fused_kernel": _FACTORY},
    "moe.scoring": {"softplus": _MACRO},
    "moe.top2_sum_gate_kernel": {"warp_reduce_sum": _MACRO, "get_top2_sum_gate_kernel": _FACTORY},
    "moe.topk_gate_kernel": {"get_topk_gate_kernel": _FACTORY},
    "moe.topk_sum_and_topk_group_idx_kernel": {"get_topk_sum_and_topk_group_idx_kernel": _FACTORY},
    "quant.cast_back_e5m6_kernel": {"e5m6_to_float": _MACRO, "get_cast_back_e5m6_kernel": _FACTORY},
    "quant.cast_back_kernel": {"get_cast_back_kernel": _FACTORY},
    "quant.common": {
        "cast_epilogue": _TL_HELPER, "get_sf_and_inv": _MACRO, "load_sf": _MACRO, "transform_sf": _MACRO,
        "store_sf": _MACRO,
    },
    "quant.per_block_cast_kernel": {"get_per_block_cast_kernel": _FACTORY, "per_block_cast_impl": _IMPL},
    "quant.per_block_cast_lossless_kernel": {"get_per_block_cast_lossless_kernel": _FACTORY},
    "quant.per_channel_cast_and_transpose_kernel": {"get_per_channel_cast_and_transpose_kernel": _FACTORY},
    "quant.per_channel_cast_fused_kernel": {
        "transform_token_idx": _TL_HELPER, "get_per_channel_cast_fused_kernel": _FACTORY,
    },
    "quant.per_token_cast_kernel": {"get_per_token_cast_kernel": _FACTORY, "per_token_cast_impl": _IMPL},
    "quant.per_token_cast_to_e5m6_kernel": {
        "get_sf_and_inv_e5m6": _MACRO, "float_to_e5m6": _MACRO, "get_per_token_cast_to_e5m6_kernel": _FACTORY,
    },
    "quant.swiglu_backward_and_per_token_cast_kernel": {"get_swiglu_backward_and_per_token_cast_kernel": _FACTORY},
    "quant.swiglu_forward_and_per_channel_cast_and_transpose_kernel": {
        "get_swiglu_forward_and_per_channel_cast_and_transpose_kernel": _FACTORY,
    },
    "quant.swiglu_forward_and_per_token_cast_kernel": {"get_swiglu_forward_and_per_token_cast_kernel": _FACTORY},
    "transpose.batched_transpose_kernel": {
        "create_loop_layout_fn": _TL_HELPER, "get_batched_transpose_kernel": _FACTORY,
    },
}

# names tilec defines once and imports where TileKernels repeats the definition: -> defining module
DEFINED_ELSEWHERE = {("torch.cast_e5m6", "right_shift_unsigned"): "torch.cast",
                     ("torch.cast_e5m6", "transform_sf"): "torch.cast"}


def tilec_module(module: str):
    return importlib.import_module("tilec." + module if module else "tilec")


def kind(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return M
    if inspect.isclass(obj):
        return C
    return F if callable(obj) else V


def default_of(src: str):
    return eval(src, {"torch": torch})


def parse_params(params):
    """[(name, has_default, default)] of TileKernels' "name" / "name=default" strings."""
    out = []
    for p in params:
        name, eq, src = p.partition("=")
        out.append((name, bool(eq), default_of(src) if eq else None))
    return out


def same_value(a, b) -> bool:
    return type(a) is type(b) and a == b


# ---- names ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("module", sorted(TK_NAMES), ids=lambda m: m or "tilec")
def test_names(module):
    mod = tilec_module(module)
    skip = EXCLUDED.get(module, {})
    missing = [n for n in TK_NAMES[module] if n not in skip and not hasattr(mod, n)]
    assert not missing, f"tilec.{module} lacks {missing}"
    wrong = [f"{n} is a {kind(getattr(mod, n))}, TileKernels' a {k}" for n, k in TK_NAMES[module].items()
             if n not in skip and k != V and kind(getattr(mod, n)) != k]
    assert not wrong, f"tilec.{module}: {wrong}"


def test_exclusions_are_tilekernels_names():
    for module, names in EXCLUDED.items():
        for name, reason in names.items():
            assert name in TK_NAMES[module], (module, name)
            if reason != _NOT_YET:  # TileLang-only: tilec has no such name there
                assert not hasattr(tilec_module(module), name), f"tilec.{module}.{name} exists: drop it from EXCLUDED"


@pytest.mark.parametrize("package", sorted(TK_REEXPORTS), ids=lambda m: m or "tilec")
def test_package_reexports(package):
    pkg = tilec_module(package)
    for sub, names in TK_REEXPORTS[package].items():
        src = tilec_module(f"{package}.{sub}" if package else sub)
        for name in names:
            assert getattr(pkg, name) is getattr(src, name), f"tilec.{package}.{name} is not {src.__name__}.{name}"


def test_defined_in_their_modules():
    """The implementation lives in TileKernels' module, not in a shim that imports it."""
    wrong = []
    for module, names in TK_NAMES.items():
        if module in TK_REEXPORTS or module == "":
            continue
        mod = tilec_module(module)
        for name, k in names.items():
            if k in (F, C) and name not in EXCLUDED.get(module, {}):
                want = "tilec." + DEFINED_ELSEWHERE.get((module, name), module)
                if getattr(mod, name).__module__ != want:
                    wrong.append(f"{module}.{name} is defined in {getattr(mod, name).__module__}")
    assert not wrong, wrong


def test_top_level():
    for name in ("config", "transpose", "quant", "moe", "engram", "mhc", "modeling", "torch", "testing", "utils"):
        assert isinstance(getattr(tilec, name), types.ModuleType), name
    # tile_kernels.mhc exports nothing: its package holds only its kernel modules
    assert not [n for n, v in vars(tilec.mhc).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)]
    assert tilec.torch.__name__ == "tilec.torch" and tilec.testing.__name__ == "tilec.testing"


# ---- signatures -------------------------------------------------------------------------------------

SIGNATURE_CASES = [(m, n) for m, fns in TK_SIGNATURES.items() for n in fns]
# keyword-only parameters tilec adds to TileKernels' functions (docs/kernels/moe.md): the counter of
# out-of-range indices and positions the kernels drop
TILEC_KEYWORD_EXTRAS = {"invalid_count"}


@pytest.mark.parametrize("module, name", SIGNATURE_CASES, ids=[f"{m}.{n}" for m, n in SIGNATURE_CASES])
def test_signature(module, name):
    fn = getattr(tilec_module(module), name)
    params = list(inspect.signature(fn).parameters.values())
    got = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    # tilec's additions come after TileKernels' parameters, keyword-only, defaulting to None
    for p in params[len(got):]:
        assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.name in TILEC_KEYWORD_EXTRAS and p.default is None, \
            f"tilec.{module}.{name}: {p.name}"
    want = parse_params(TK_SIGNATURES[module][name])
    assert [p.name for p in got] == [w[0] for w in want], f"tilec.{module}.{name}{inspect.signature(fn)}"
    for p, (pname, has_default, default) in zip(got, want):
        assert p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, (pname, p.kind)
        if has_default:
            assert p.default is not p.empty and same_value(p.default, default), \
                f"tilec.{module}.{name}: {pname}={p.default!r}, TileKernels' {default!r}"
        else:
            assert p.default is p.empty, \
                f"tilec.{module}.{name}: {pname} has the default {p.default!r}, TileKernels' none"


def test_cast_configs():
    common = tilec.quant.common
    for name, fields in TK_DATACLASS_FIELDS.items():
        cls = getattr(common, name)
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name
        got = [(f.name, f.default) for f in dataclasses.fields(cls)]
        want = [(n, d) for n, _, d in parse_params(fields)]
        assert [g[0] for g in got] == [w[0] for w in want], name
        for (fname, gd), (_, wd) in zip(got, want):
            assert same_value(gd, wd), (name, fname, gd, wd)
        for prop in TK_PROPERTIES.get(name, ()):
            assert isinstance(inspect.getattr_static(cls, prop), property), (name, prop)
    assert issubclass(common.CastInputConfig, common.BaseCastConfig)
    assert issubclass(common.CastOutputConfig, common.BaseCastConfig)


# the autograd Functions' static methods: (module, class) -> {method: parameters}
TK_METHODS = {
    ("modeling.engram.engram_gate", "EngramGateFn"): {
        "forward": ("ctx", "hidden_states", "k", "v", "weight_hidden", "weight_embed", "clamp_value", "eps"),
        "backward": ("ctx", "grad_output"),
    },
}


@pytest.mark.parametrize("module, cls", sorted(TK_METHODS), ids=lambda v: v if isinstance(v, str) else None)
def test_autograd_functions(module, cls):
    """An autograd Function under TileKernels' name whose apply is the module's layer function
    (engram_gate = EngramGateFn.apply), with its forward and backward parameters."""
    c = getattr(tilec_module(module), cls)
    assert issubclass(c, torch.autograd.Function), cls
    for method, params in TK_METHODS[(module, cls)].items():
        got = list(inspect.signature(inspect.getattr_static(c, method).__func__).parameters)
        assert got == list(params), f"{cls}.{method}{got}"
    assert tilec.modeling.engram.engram_gate == tilec.modeling.engram.EngramGateFn.apply


def test_scoring_func():
    from tilec.moe.scoring import ScoringFunc
    assert [(m.name, int(m)) for m in ScoringFunc] == [("SIGMOID", 0), ("SQRTSOFTPLUS", 1), ("SOFTMAX", 2),
                                                      ("IDENTITY", 3)]
    assert list(inspect.signature(ScoringFunc.from_str).parameters) == ["label"]


# ---- the helpers provided under TileKernels' names ------------------------------------------------------

def test_sf_shape_and_allocation():
    c = tilec.quant.common
    packed = c.get_cast_output_config("e4m3", (1, 128), use_tma_aligned_col_major_sf=True, round_sf=True,
                                      use_packed_ue8m0=True)
    assert c.get_sf_shape((5, 576), packed) == (5, 2)          # 5 groups of 128 in 2 words
    sf = c.alloc_scaling_factors((5, 576), packed, device="cpu")
    assert sf.dtype == torch.int32 and sf.shape == (5, 2) and sf.stride() == (1, 8)
    col = c.get_cast_output_config("e2m1", (32, 32), use_tma_aligned_col_major_sf=True)
    assert c.get_sf_shape((100, 64), col) == (4, 2)
    sf = c.alloc_scaling_factors((100, 64), col, device="cpu")
    assert sf.dtype == torch.float32 and sf.shape == (4, 2) and sf.stride() == (1, 4)
    row = c.get_cast_output_config("e4m3", (128, 128))
    sf = c.alloc_scaling_factors((300, 7168), row, device="cpu")
    assert sf.shape == (3, 56) and sf.is_contiguous()
    with pytest.raises(ValueError, match="^get_cast_output_config: fmt must be"):
        c.get_cast_output_config("e3m2", (1, 32))
    with pytest.raises(ValueError, match="^get_cast_output_config: use_packed_ue8m0 needs use_tma_aligned"):
        c.get_cast_output_config("e4m3", (1, 32), round_sf=True, use_packed_ue8m0=True)


def test_cast_config_properties():
    c = tilec.quant.common
    out = c.get_cast_output_config("e4m3", (1, 128))
    assert (out.dtype, out.sf_dtype, out.sf_torch_dtype, out.clamp_min_value) == ("e4m3", "f32", torch.float32, 1e-4)
    fp4 = c.get_cast_output_config("e2m1", (1, 32), True, True, True)
    assert (fp4.dtype, fp4.sf_dtype, fp4.sf_torch_dtype) == ("e2m1", "u8", torch.int32)
    assert fp4.clamp_min_value == 6.0 * 2.0 ** -126
    assert c.get_cast_output_config("e4m3", (1, 128), custom_clamp_min_value=0.5).clamp_min_value == 0.5
    assert c.get_cast_output_config("e5m6", (1, 64)).dtype == "e5m6"


def test_cast_input_config():
    c = tilec.quant.common
    x = torch.zeros((8, 256), dtype=torch.bfloat16)
    assert c.get_cast_input_and_config(x, None) == (x, None, c.CastInputConfig(torch.bfloat16, (1, 1), with_sf=False))
    q = torch.zeros((8, 256), dtype=torch.float8_e4m3fn)
    row = torch.ones((8, 2))
    col = torch.ones((2, 8)).T
    words = torch.zeros((1, 8), dtype=torch.int32).T
    for sf, flags in ((row, (False, False)), (col, (True, False)), (words, (True, True))):
        qq, ss, cfg = c.get_cast_input_and_config((q, sf), (1, 128))
        assert qq is q and ss is sf and cfg.with_sf and cfg.sf_block == (1, 128)
        assert (cfg.use_tma_aligned_col_major_sf, cfg.use_packed_ue8m0) == flags
    with pytest.raises(ValueError, match="^get_cast_input_and_config: sf_block is required"):
        c.get_cast_input_and_config((q, row), None)


def test_best_vectorize_size():
    c = tilec.quant.common
    width = 16 if tilec.config._emulated() or torch.cuda.get_device_capability()[0] < 10 else 32
    assert c.get_best_vectorize_size(torch.bfloat16) == width // 2
    assert c.get_best_vectorize_size(torch.float32) == width // 4
    assert c.get_best_vectorize_size("e2m1") == width * 2


def test_unpack_from_e2m1fn_x2_in_common():
    assert tilec.quant.unpack_from_e2m1fn_x2 is tilec.quant.common.unpack_from_e2m1fn_x2
    b = torch.tensor([[0x21, 0x9F]], dtype=torch.uint8).view(torch.int8)
    assert tilec.quant.common.unpack_from_e2m1fn_x2(b).tolist() == [[0.5, 1.0, -6.0, -0.5]]


def test_torch_cast_helpers():
    rc = importlib.import_module("tilec.torch.cast")
    assert rc.right_shift_unsigned(torch.tensor([-1, 0x12345678], dtype=torch.int32), 28).tolist() == [15, 1]
    assert rc.right_shift_unsigned(torch.tensor([-8], dtype=torch.int32), 0).tolist() == [-8]
    assert rc.get_min_clamp_val(torch.float8_e4m3fn) == 1e-4 and rc.get_min_clamp_val(torch.int8) == 6.0 * 2.0 ** -126
    assert rc.get_max_quant_val(torch.float8_e4m3fn) == 448.0 and rc.get_max_quant_val(torch.int8) == 6.0
    codes = rc.convert_to_e2m1_bits(torch.tensor([0.25, 0.75, 7.0, -6.0, -0.0]), 6.0, "cpu")
    assert codes.dtype == torch.uint8 and codes.tolist() == [0, 2, 7, 15, 8]
    x = torch.randn(9, 320) * 30
    _, packed = tilec.torch.cast(x, "e4m3", (1, 32), round_sf=True, use_tma_aligned_col_major_sf=True,
                                 use_packed_ue8m0=True)
    _, plain = tilec.torch.cast(x, "e4m3", (1, 32), round_sf=True)
    assert torch.equal(rc.transform_sf(packed)[:, :10], plain)       # 10 groups in 3 words
    assert rc.transform_sf(plain) is plain
    e5 = importlib.import_module("tilec.torch.cast_e5m6")
    assert e5.transform_sf is rc.transform_sf and e5.right_shift_unsigned is rc.right_shift_unsigned


def test_elementwise_fma():
    from tilec.torch import swiglu
    rf = importlib.import_module("tilec.torch.reduce_fused")   # the module; tilec.torch.reduce_fused is the function
    a = torch.tensor([1.0 + 2.0 ** -23], dtype=torch.float32)
    b = torch.tensor([1.0 - 2.0 ** -23], dtype=torch.float32)
    c = torch.tensor([-1.0], dtype=torch.float32)
    want = torch.tensor([-2.0 ** -46], dtype=torch.float32)   # a * b - 1 exactly; unfused it rounds to 0
    assert torch.equal(rf.elementwise_fma(a, b, c), want)
    assert torch.equal(swiglu.elementwise_fma(a, b, c), want)
    assert torch.equal(swiglu.elementwise_fma(a, 1.0 - 2.0 ** -23, -1.0), want)


def test_cast_back_e5m6_direct():
    x = torch.randn(3, 64)
    q = tilec.quant.per_token_cast(x, "e5m6", 64)
    direct = tilec.quant.cast_back_e5m6_kernel.cast_back_e5m6(q, "fp32", (1, 64))
    assert torch.equal(direct, tilec.quant.cast_back(q, "fp32", (1, 64), x_special_fmt="e5m6"))
    with pytest.raises(ValueError, match=r"^cast_back_e5m6: x's data must be uint8 \(E5M6 bytes\), got"):
        tilec.quant.cast_back_e5m6_kernel.cast_back_e5m6((q[0].view(torch.int8), q[1]), "fp32", (1, 64))


def test_bench_helpers(capfd):
    b = tilec.testing.bench
    params = {"num_tokens": 4001, "in_dtype": torch.bfloat16, "block": (1, 128), "round_sf": True}
    assert b.make_param_id(params) == "num_tokens=4001-in_dtype=bf16-block=1x128-round_sf=True"
    assert b.make_param_key({"num_tokens": 0, "hidden": 7168}) == "t=    0 h= 7168"
    assert [b.dtype_to_str(d) for d in (torch.float32, torch.bfloat16, torch.float8_e4m3fn, torch.int8)] == \
        ["fp32", "bf16", "e4m3", "e2m1"]
    with b.suppress_stdout_stderr():
        os.write(1, b"hidden\n")
        os.write(2, b"hidden\n")
    with b.empty_suppress():
        print("shown")
    b.print_average_perf([1.0, 3.0], [100.0, 200.0], [1.0, 4.0])
    out = capfd.readouterr().out
    assert "hidden" not in out and "shown" in out
    assert "latency 2.00 us" in out and "bandwidth 150.0 GB/s" in out and "relative speed 2.000x" in out


def test_generators():
    g = tilec.testing.generator
    cases = list(g.generate_e5m6_inputs(5, 64, torch.bfloat16, device="cpu"))
    assert [s for _, s in cases] == [False, True, True, True]
    assert all(x.shape == (5, 64) and x.dtype == torch.bfloat16 for x, _ in cases)
    assert all(float(x[0, -1]) == 65024.0 for x, _ in cases[1:])
    assert len(tilec.testing.generate_e5m6_inputs((5, 64), torch.float32, device="cpu")) == 4
    x = g.generate_rand_float((64, 64), device="cpu")
    assert x.dtype == torch.float32 and torch.isfinite(x).all()
    assert tilec.testing.clear_unused_sf is tilec.testing.quant.clear_unused_sf


def test_utils():
    u = tilec.utils
    assert (u.ceil_div(7, 4), u.ceil_div(8, 4), u.align(7, 4), u.align(0, 4)) == (2, 2, 8, 0)
    assert [u.is_power_of_two(v) for v in (0, 1, 2, 3, 64, 96)] == [False, True, True, False, True, False]
