"""Where kernels run: the device follows the tensors (CPU tensors on the CPU emulator, with no
environment variable), TILEC_DEVICE restricts every launch to one device, and a launch whose
tensors are on different devices is refused, naming the arguments. A machine without a GPU has
no CUDA tensors, so the tensors "on cuda:0" here are objects that answer like one."""
import os
import subprocess
import sys

import pytest
import torch

BUILD = os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python"))
sys.path.insert(0, BUILD)

from tilec import _native, _runtime  # noqa: E402

FIRST = ("import torch, tilec; x = torch.randn(64, 256, dtype=torch.bfloat16); "
         "print(tilec.quant.per_token_cast(x, 'e4m3', 128)[0].dtype)")


def run(code, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("TILEC_")}
    e.update(PYTHONPATH=os.path.abspath(BUILD), **env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120)


def test_cpu_tensors_run_on_the_emulator_without_environment():
    r = run(FIRST)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "torch.float8_e4m3fn"


def test_tilec_device_cpu_allows_cpu_tensors():
    r = run(FIRST, TILEC_DEVICE="cpu")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "torch.float8_e4m3fn"


def test_tilec_device_cuda_refuses_cpu_tensors():
    r = run(FIRST, TILEC_DEVICE="cuda")
    assert r.returncode != 0
    assert "ValueError: tilec: TILEC_DEVICE=cuda runs every kernel on the GPU, but the tensors are on the CPU" \
        in r.stderr


def test_tilec_device_must_be_cpu_or_cuda():
    r = run(FIRST, TILEC_DEVICE="tpu")
    assert r.returncode != 0
    assert "ValueError: tilec: TILEC_DEVICE is 'tpu': it must be 'cpu', 'cuda' or unset" in r.stderr


class OnCuda:
    """Answers like a bf16 CUDA tensor of the given shape (its memory is never touched: the launch
    is refused first)."""

    def __init__(self, shape):
        self.dtype = torch.bfloat16
        self.shape = shape

    def data_ptr(self):
        return 1 << 40

    def stride(self):
        s, out = 1, []
        for n in reversed(self.shape):
            out.insert(0, s)
            s *= n
        return tuple(out)

    def get_device(self):
        return 0


@pytest.fixture(scope="module")
def transpose_kernel():
    x = torch.zeros((1, 64, 64), dtype=torch.bfloat16)
    return _runtime.kernel("batched_transpose", ("T=bf16", "BX=64", "BY=64", "SA=8"), x)


def test_mixed_devices_name_both_arguments(transpose_kernel):
    x = torch.zeros((1, 64, 64), dtype=torch.bfloat16)
    with pytest.raises(_native.LaunchError,
                       match=r"^tensors on different devices: argument 'x' is on cpu, argument 'y' on cuda:0$"):
        transpose_kernel.launch(x, OnCuda((1, 64, 64)))


def test_first_tensor_on_another_device(transpose_kernel):
    y = torch.zeros((1, 64, 64), dtype=torch.bfloat16)
    with pytest.raises(_native.LaunchError, match=r"^argument 'x' is on cuda:0, but this kernel was loaded for cpu$"):
        transpose_kernel.launch(OnCuda((1, 64, 64)), y)


def test_arg_views_carry_their_owners_device(transpose_kernel):
    x = torch.zeros((1, 64, 64), dtype=torch.bfloat16)
    y = _native.Arg(1 << 40, "bf16", (1, 64, 64), (4096, 64, 1), OnCuda((1, 64, 64)))
    with pytest.raises(_native.LaunchError, match="argument 'x' is on cpu, argument 'y' on cuda:0"):
        transpose_kernel.launch(x, y)
    out = torch.zeros((1, 64, 64), dtype=torch.bfloat16)
    view = _native.Arg(out.data_ptr(), "bf16", (1, 64, 64), (4096, 64, 1), out)   # a CPU owner: runs
    xr = torch.randn((1, 64, 64)).bfloat16()
    transpose_kernel.launch(xr, view)
    assert torch.equal(out, xr.transpose(1, 2))
