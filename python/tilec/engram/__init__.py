"""The Engram family (TileKernels ``tile_kernels.engram``, spec moe-engram-mhc.md §2), one module
per kernel under TileKernels' module names: n-gram hashes (engram_hash), the fused RMSNorm weight
(fused_weight) and its gradient (grad_w_reduce), the gate's forward and backward
(engram_gate_fwd, engram_gate_bwd). The autograd layer is tilec.modeling.engram.

Every function checks its arguments and raises ValueError ("function: argument rule") before
anything is launched; zero tokens launch nothing and return correct empty outputs.
"""
from .engram_fused_weight_kernel import fused_weight
from .engram_gate_kernel import engram_gate_fwd, engram_gate_bwd
from .engram_grad_w_reduce_kernel import grad_w_reduce
from .engram_hash_kernel import engram_hash

__all__ = ["fused_weight", "engram_gate_fwd", "engram_gate_bwd", "grad_w_reduce", "engram_hash"]
