"""mhc_multilayer_recompute (spec moe-engram-mhc.md §3.9)."""
from ....mhc.multilayer_recompute_kernel import mhc_multilayer_recompute

__all__ = ["mhc_multilayer_recompute"]
