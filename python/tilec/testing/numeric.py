"""Numeric checks of the tests (``tile_kernels.testing.numeric``, spec quant-transpose.md §3.3):
exact comparison, relative difference, rounding bias and byte counts."""
import math

import torch


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The elements' bytes in row-major order. A copy into fresh storage: contiguous() keeps odd
    strides along dimensions of size 1 (a (1, 1) column-major scale), which view() refuses."""
    c = torch.empty(t.shape, dtype=t.dtype, device=t.device)
    c.copy_(t)
    return c.view(-1).view(torch.uint8)


def assert_equal(x: torch.Tensor, y: torch.Tensor, check_dtype=True, check_shape=True, check_stride=True):
    """Same dtype, shape, strides (unless empty), device, and identical bytes."""
    if check_dtype:
        assert x.dtype == y.dtype, f"dtype {x.dtype} != {y.dtype}"
    if check_shape:
        assert x.shape == y.shape, f"shape {tuple(x.shape)} != {tuple(y.shape)}"
    if check_stride and x.numel() > 0:
        assert x.stride() == y.stride(), f"stride {x.stride()} != {y.stride()}"
    assert x.device == y.device, f"device {x.device} != {y.device}"
    a, b = _bytes(x), _bytes(y)
    if not torch.equal(a, b):
        bad = (a != b).nonzero()
        raise AssertionError(f"{bad.numel()} of {a.numel()} bytes differ; first at byte {bad[0].item()}: "
                             f"{a[bad[0]].item():#04x} != {b[bad[0]].item():#04x}")


def calc_diff(x: torch.Tensor, y: torch.Tensor) -> float:
    """1 - 2 sum(xy) / (sum(x^2) + sum(y^2)) in float64; 0 when both are zero."""
    x, y = x.double(), y.double()
    den = (x * x + y * y).sum()
    if den == 0:
        return 0.0
    return float(1 - 2 * (x * y).sum() / den)


def assert_close_to_exact(x: torch.Tensor, ref: torch.Tensor, exact: torch.Tensor, rtol: float, atol: float,
                          slack: float = 3.0):
    """x within (rtol, atol) of the exact values (a float64 reference), atol widened by `slack`
    times the largest distance of the f32 reference `ref` from them. For a sum over thousands of
    tokens the rounding of its terms alone moves an f32 result further than a fixed atol (8192
    tokens of mhc_pre_split_mixes: the f32 reference's grad_scale is 4.5e-5 off on a value of
    3.1), so the tolerance follows what f32 itself can reach on these inputs."""
    slack_atol = slack * (ref.double() - exact).abs().max().item() if ref.numel() else 0.0
    torch.testing.assert_close(x.double(), exact.double(), rtol=rtol, atol=atol + slack_atol)


def calc_diff_to_exact(x: torch.Tensor, ref: torch.Tensor, exact: torch.Tensor, bound: float,
                       slack: float = 3.0) -> None:
    """calc_diff(x, exact) below `bound` or `slack` times calc_diff(ref, exact), whichever is
    larger: the f32 reference `ref` is itself that far from the float64 one `exact` where the
    problem amplifies rounding (a gate's derivative near a zero dot product)."""
    d, d_ref = calc_diff(x, exact), calc_diff(ref, exact)
    assert d < max(bound, slack * d_ref), f"calc_diff {d:.3g} to the exact values; the f32 reference's {d_ref:.3g}"


def check_bias(x: torch.Tensor, ref_x: torch.Tensor):
    """The share of values below the reference (ties count half) is 0.5 within 10/sqrt(n)."""
    n = x.numel()
    if n == 0:
        return
    below = (x < ref_x).sum().item() + (x == ref_x).sum().item() / 2
    assert abs(below / n - 0.5) < 10 / math.sqrt(n), f"biased rounding: {below / n:.4f} below the reference"


def count_bytes(*tensors) -> int:
    """Sum of numel * element size over tensors, tuples and lists; None skipped."""
    total = 0
    for t in tensors:
        if t is None:
            continue
        if isinstance(t, (tuple, list)):
            total += count_bytes(*t)
        else:
            total += t.numel() * t.element_size()
    return total
