"""The mHC modeling ops (TileKernels ``tile_kernels.modeling.mhc.ops``, spec
moe-engram-mhc.md §3), each in its own module with its autograd Function."""
from .expand import expand_to_mhc
from .head_compute_mix import mhc_head_compute_mix
from .post import mhc_post, mhc_post_bwd, mhc_post_fwd
from .pre_apply_mix import mhc_pre_apply_mix
from .pre_split_mixes import mhc_pre_split_mixes
from .sinkhorn import sinkhorn_normalize

__all__ = ["expand_to_mhc", "mhc_head_compute_mix", "mhc_post", "mhc_post_bwd", "mhc_post_fwd",
           "mhc_pre_apply_mix", "mhc_pre_split_mixes", "sinkhorn_normalize"]
