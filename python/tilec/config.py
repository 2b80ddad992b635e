"""Process-wide settings, as ``tile_kernels.config``: the number of SMs kernels may use."""
import functools
import os

import torch

_num_sms = None


@functools.lru_cache(maxsize=None)
def get_device_num_sms() -> int:
    """Multiprocessor count of the current CUDA device (on the CPU emulator: $TILEC_EMU_SMS, 132)."""
    if os.environ.get("TILEC_DEVICE", "").lower() == "cpu":
        return int(os.environ.get("TILEC_EMU_SMS", "132"))
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


@functools.lru_cache(maxsize=None)
def get_max_smem_per_sm() -> int:
    """Shared memory per multiprocessor of the current device, in bytes (an H200's on the CPU)."""
    if os.environ.get("TILEC_DEVICE", "").lower() == "cpu":
        return 233472
    return torch.cuda.get_device_properties(torch.cuda.current_device()).shared_memory_per_multiprocessor


def set_num_sms(n: int) -> None:
    """Restricts persistent kernels to ``n`` SMs (0 < n <= the device's count)."""
    global _num_sms
    assert 0 < n <= get_device_num_sms(), f"num_sms must be in (0, {get_device_num_sms()}], got {n}"
    _num_sms = int(n)


def get_num_sms() -> int:
    """The SM count set by :func:`set_num_sms`, else the device's."""
    return _num_sms if _num_sms is not None else get_device_num_sms()
