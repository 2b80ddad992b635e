"""Process-wide settings, as ``tile_kernels.config``: the number of SMs kernels may use."""
import functools
import os

import torch

from . import _runtime

_num_sms = None


def _emulated() -> bool:
    """Whether kernels run on the CPU emulator by default: no CUDA device, or TILEC_DEVICE=cpu."""
    return _runtime._FORCED == "cpu" or not torch.cuda.is_available()


@functools.lru_cache(maxsize=None)
def get_device_num_sms() -> int:
    """Multiprocessor count of the current CUDA device; on a machine where kernels run on the CPU
    emulator (no CUDA device, or TILEC_DEVICE=cpu): $TILEC_EMU_SMS, default 132 (an H200's)."""
    if _emulated():
        return int(os.environ.get("TILEC_EMU_SMS", "132"))
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


@functools.lru_cache(maxsize=None)
def get_max_smem_per_sm() -> int:
    """Shared memory per multiprocessor of the current device, in bytes (an H200's on the emulator)."""
    if _emulated():
        return 233472
    return torch.cuda.get_device_properties(torch.cuda.current_device()).shared_memory_per_multiprocessor


def set_num_sms(num_sms: int) -> None:
    """Restricts persistent kernels to ``num_sms`` SMs (0 < num_sms <= the device's count)."""
    global _num_sms
    if not isinstance(num_sms, int) or isinstance(num_sms, bool):
        raise ValueError(f"set_num_sms: num_sms must be an integer, got {num_sms!r}")
    if not 0 < num_sms <= get_device_num_sms():
        raise ValueError(f"set_num_sms: num_sms must be in (0, {get_device_num_sms()}], got {num_sms}")
    _num_sms = num_sms


def get_num_sms() -> int:
    """The SM count set by :func:`set_num_sms`, else the device's."""
    return _num_sms if _num_sms is not None else get_device_num_sms()
