"""Global accesses out of bounds on the CPU emulator through the Python binding: the tensors'
shapes and strides (a strided view spans less than its storage) give the ranges the emulator
checks each access against; a report is a RuntimeError with the emulator's message, and the
process carries on.

TILEC_BUILD_PYTHON: the package to test (default build/python)."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))

from tilec import _native  # noqa: E402

SRC = """kernel shift(x: f32[N] strides(SX), out: f32[N], s: i32) grid(1) threads(32)
{
    out[thread.x] = x[i32(thread.x) + s];
}
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    path = tmp_path_factory.mktemp("bounds") / "bounds.tl"
    path.write_text(SRC)
    rt = _native.Runtime(memory_only=True, cpu=True)
    yield rt.open(source=str(path)).kernel("shift", ())


def test_strided_view(kernel):
    storage = torch.arange(80, dtype=torch.float32)
    x = storage[8:72:2]  # 32 elements, stride 2: 4 * (1 + 31 * 2) = 252 bytes of the storage
    out = torch.zeros(32)
    kernel.launch(x, out, 0)
    assert torch.equal(out, x)
    # x[32] and x[-1] are in the storage but not in the view
    with pytest.raises(RuntimeError, match=r"kernel shift<>, block \(0,0,0\), thread 31 reads 4 bytes at 0x[0-9a-f]+ "
                       r"\[global load at .*bounds\.tl:3:5\], offset 256 of 'x', 8 bytes past the end of its 252 bytes$"):
        kernel.launch(x, out, 1)
    with pytest.raises(RuntimeError, match=r"kernel shift<>, block \(0,0,0\), thread 0 reads 4 bytes at 0x[0-9a-f]+ "
                       r"\[global load at .*bounds\.tl:3:5\], offset -8 of 'x', 8 bytes before its start$"):
        kernel.launch(x, out, -1)
    out.zero_()
    kernel.launch(x, out, 0)  # the next launch runs normally
    assert torch.equal(out, x)
