"""mHC kernel modules (TileKernels ``tile_kernels.mhc``, spec moe-engram-mhc.md §3). As in
TileKernels the package exports nothing: the public surface is ``tilec.modeling.mhc`` and
``tilec.modeling.mhc.ops``. The modules here launch the kernels of kernels/mhc.tl; their plain
public functions are ``post_kernel.mhc_post_fwd`` / ``mhc_post_bwd`` and
``norm_fn_kernel.round_to_tf32``."""
