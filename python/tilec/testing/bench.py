"""Benchmark helpers (``tile_kernels.testing.bench``, spec moe-engram-mhc.md §5.2): test and
benchmark ids from parameter dicts, output suppression while kernels compile, and the averages
of a benchmark run. Nothing here touches CUDA at import."""
import math
import os
import statistics
import sys

import torch

_DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16", torch.float8_e4m3fn: "e4m3",
                torch.int8: "e2m1"}
# make_param_key: the short name and the value width of the usual parameters (others: full name, no padding)
_KEY_NAMES = {"num_tokens": ("t", 5), "hidden": ("h", 5), "num_experts": ("e", 3), "num_topk": ("k", 2),
              "num_ep_ranks": ("ep", 3), "num_per_channels": ("n", 4), "num_per_tokens": ("n", 3),
              "in_dtype": ("in", 4), "out_dtype": ("out", 4), "fmt": ("fmt", 4), "round_sf": ("rnd", 5),
              "use_tma_aligned_col_major_sf": ("col", 5), "use_packed_ue8m0": ("pk", 5)}


class empty_suppress:
    """A context manager that leaves the output alone (the counterpart of suppress_stdout_stderr)."""

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False


class suppress_stdout_stderr:
    """A context manager that sends file descriptors 1 and 2 to /dev/null (compiler chatter of
    native code included), restoring them on exit."""

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self._null = os.open(os.devnull, os.O_WRONLY)
        self._saved = (os.dup(1), os.dup(2))
        os.dup2(self._null, 1)
        os.dup2(self._null, 2)
        return self

    def __exit__(self, *_):
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        for fd in (*self._saved, self._null):
            os.close(fd)
        return False


def print_average_perf(latency_list, bandwidth_list, relative_speed_list) -> None:
    """Prints the mean latency (us) and bandwidth (GB/s) of a run and the geometric mean of the
    speeds relative to a baseline; empty lists are left out."""
    parts = []
    if latency_list:
        parts.append(f"latency {statistics.mean(latency_list):.2f} us")
    if bandwidth_list:
        parts.append(f"bandwidth {statistics.mean(bandwidth_list):.1f} GB/s")
    if relative_speed_list:
        geo = math.exp(statistics.mean(math.log(v) for v in relative_speed_list))
        parts.append(f"relative speed {geo:.3f}x")
    print("average: " + (", ".join(parts) if parts else "no results"))


def dtype_to_str(dtype) -> str:
    """The short name of a dtype in ids: fp32, bf16, fp16, e4m3, e2m1 (packed FP4 in int8), else
    torch's name without the prefix."""
    return _DTYPE_NAMES.get(dtype) or str(dtype).replace("torch.", "")


def _format_value(value) -> str:
    if isinstance(value, torch.dtype):
        return dtype_to_str(value)
    if isinstance(value, (tuple, list)):
        return "x".join(_format_value(v) for v in value)
    return str(value)


def make_param_key(params: dict) -> str:
    """A fixed-width key of a benchmark's parameters (short names, padded values), so that the keys
    of one benchmark line up in a table."""
    parts = []
    for k, v in params.items():
        name, width = _KEY_NAMES.get(k, (k, 0))
        parts.append(f"{name}={_format_value(v):>{width}}")
    return " ".join(parts)


def make_param_id(params: dict) -> str:
    """A test id: key=value joined by '-', dtypes by their short names, tuples joined by 'x'."""
    return "-".join(f"{k}={_format_value(v)}" for k, v in params.items())
