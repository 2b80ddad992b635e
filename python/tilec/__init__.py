"""tilec: LLM kernels written in the tilec tile DSL, with the Python API of DeepSeek's
TileKernels (``tile_kernels``): switching is a change of import.

Submodules mirror TileKernels module by module: ``tilec.transpose``, ``tilec.quant``,
``tilec.moe``, ``tilec.engram``, ``tilec.mhc`` (empty, as in TileKernels), ``tilec.modeling``
(the autograd layers of Engram and mHC), ``tilec.config``, ``tilec.utils``; ``tilec.torch`` holds PyTorch reference
implementations written from the specification, and ``tilec.testing`` the test helpers.
``tilec.load`` opens kernels of your own (a ``.tl`` file or source text, or a fatbin) and
``tilec.register_op`` makes one a torch custom op (docs/python.md).
Kernels are compiled on first use (JIT, cached in memory and in ``$TILEC_CACHE_DIR``) or loaded
from an ahead-of-time fatbin when the install tree has one.
"""
try:
    # the version of CMakeLists.txt's project(), which CMake writes into the build tree's package
    # (build/python/tilec), the install tree and the wheel
    from ._version import __version__
except ImportError:
    # python/tilec of the sources, which has no generated _version.py (run from build/python instead)
    __version__ = "0+unknown"

from . import config
from .config import get_device_num_sms, get_max_smem_per_sm, get_num_sms, set_num_sms
from . import utils, transpose, quant, moe, engram, mhc, modeling, torch, testing
from ._load import Kernel, Library, Specialization, load, register_op

__all__ = ["config", "utils", "transpose", "quant", "moe", "engram", "mhc", "modeling", "torch", "testing",
           "get_num_sms", "set_num_sms", "get_device_num_sms", "get_max_smem_per_sm", "load", "register_op", "Library",
           "Kernel", "Specialization"]
