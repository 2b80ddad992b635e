"""The tilec.torch references on the CPU (they are the GPU tests' oracles): the e4m3 conversion
against every code and midpoint, e2m1 ties, E5M6 codes and packing, the exact fma,
the three scale layouts, and the fused / SwiGLU references on small inputs."""
import importlib
import os
import sys
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")))

import tilec.torch as R  # noqa: E402
from tilec.torch import cast_e5m6 as RE  # noqa: E402
RQ = importlib.import_module("tilec.torch.cast")  # the module; tilec.torch.cast is the function
from tilec.torch.swiglu import fma  # noqa: E402
from tilec import testing as T  # noqa: E402


def test_e4m3_conversion_codes_ties_and_saturation():
    """The references' f32 -> e4m3 conversion (torch's float8_e4m3fn after the ±448 clamp) is the
    spec's (§6.1): every finite code round-trips, midpoints round to the even code, values just
    off a midpoint round to the nearer code, and out-of-range values saturate with their sign."""
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    vals = RQ._e4m3_to_f32(codes)
    finite = (codes.int() & 0x7F) != 0x7F

    def bits(v):
        return RQ.to_e4m3(v).view(torch.uint8)
    assert torch.equal(bits(vals[finite]), codes[finite])
    pos = vals[:127].double()
    mids = ((pos[:-1] + pos[1:]) / 2).float()
    lo = torch.arange(126)
    assert torch.equal(bits(mids).long(), torch.where(lo % 2 == 0, lo, lo + 1))
    assert torch.equal(bits(torch.nextafter(mids, torch.tensor(1e9))).long(), lo + 1)
    assert torch.equal(bits(torch.nextafter(mids, torch.tensor(-1e9))).long(), lo)
    assert bits(torch.tensor([-0.0, -1e-30, 1000.0, -1000.0])).tolist() == [0x80, 0x80, 0x7E, 0xFE]


def test_e2m1_ties_and_saturation():
    v = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, -0.1, -6.0])
    assert RQ._e2m1_codes(v).tolist() == [0, 2, 2, 4, 4, 6, 6, 7, 8, 15]
    packed = R.pack_to_e2m1fn_x2(torch.tensor([[0.5, -6.0]]))
    assert packed.view(torch.uint8).tolist() == [[0xF1]]
    assert R.unpack_from_e2m1fn_x2(packed).tolist() == [[0.5, -6.0]]


def test_e5m6_codes_and_roundtrip():
    v = torch.tensor([1.0, -2.0, 65024.0, 2.0 ** -14, 2.0 ** -20, 0.0, 1.0 + 2.0 ** -7, 1.0 + 3 * 2.0 ** -7])
    # 1 + 2^-7 is a tie between codes 0x3C0 and 0x3C1: even wins; 1 + 3 * 2^-7 rounds up to 0x3C2
    assert RE._e5m6_codes(v).tolist() == [0x3C0, 0xC00, 0x7BF, 0x40, 0x1, 0x0, 0x3C0, 0x3C2]
    x = torch.randn(6, 64)
    out, sf = R.cast_to_e5m6(x, 64, round_sf=True)
    assert out.shape == (6, 96) and out.dtype == torch.uint8
    assert T.calc_diff(R.cast_back_from_e5m6((out, sf), "fp32", (1, 64)), x) < 1e-4
    for xs in T.generate_e5m6_inputs((3, 64), torch.float32, device="cpu")[1:]:
        out, sf = R.cast_to_e5m6(xs, 64, True, True, True)
        assert torch.equal(R.cast_back_from_e5m6((out, sf), "fp32", (1, 64)), xs)


def test_fma_single_rounding():
    g = torch.Generator().manual_seed(1)
    a, b, c = (torch.randn(3000, generator=g) * s for s in (1.0, 3.0, 1.0))
    r = fma(a, b, c)
    for i in range(3000):
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        got = Fraction(float(r[i]))
        # no representable f32 is strictly closer than the result
        for n in (torch.nextafter(r[i], torch.tensor(1e30)), torch.nextafter(r[i], torch.tensor(-1e30))):
            assert abs(Fraction(float(n)) - exact) >= abs(got - exact)


@pytest.mark.parametrize("flags", [(False, False), (True, False), (True, True)])
def test_cast_layouts(flags):
    col, packed = flags
    x = torch.randn(10, 576)
    q, sf = R.cast(x, "e4m3", (1, 128), round_sf=True, use_tma_aligned_col_major_sf=col, use_packed_ue8m0=packed)
    if packed:
        assert sf.dtype == torch.int32 and sf.shape == (10, 2) and sf.stride() == (1, 12)
    elif col:
        assert sf.shape == (10, 5) and sf.stride() == (1, 12)
    else:
        assert sf.shape == (10, 5) and sf.stride() == (5, 1)
    back = R.cast_back((q, sf), "fp32", (1, 128))
    assert T.calc_diff(back, x) < 1e-3


def test_fused_and_swiglu_references():
    torch.manual_seed(0)
    t, hh = 100, 128
    p2t, ptt, pte, ttp = T.generate_fused_mapping(t, 4, 16, 16, device="cpu")
    assert torch.equal(p2t[ptt >= 0], ptt[ptt >= 0] // 4) and p2t.numel() % 16 == 0
    x = T.expand_rows(torch.randn(t, 2 * hh).bfloat16(), p2t)
    cnt = torch.zeros(3, dtype=torch.int64)
    a = R.swiglu_forward(x, ptt, torch.randn(t, 4), 0.5, cnt)
    assert a.shape == (p2t.numel(), hh) and cnt.sum() > 0
    assert torch.all(a[ptt < 0] == 0)
    xq = R.cast(x.float(), "e4m3", (1, 128))
    out, xg, wg = R.swiglu_backward(xq, torch.randn(p2t.numel(), hh).bfloat16(), torch.rand(t, 4), ptt, ttp, 128, 0.5)
    assert xg.shape == (p2t.numel(), 2 * hh) and wg.shape == (t, 4) and torch.all(wg.view(-1)[ptt[ptt >= 0].long()] != 0)
    o2, s2 = R.per_channel_cast_fused(torch.randn(t, hh), 128, None, False, p2t)
    assert o2.shape == (p2t.numel(), hh) and s2.shape == ((p2t.numel() + 127) // 128, hh)


@pytest.mark.parametrize("flags", [(False, False, False), (True, False, False), (True, True, True)])
@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
def test_references_take_zero_rows(fmt, flags):
    """T = 0 in every scale layout: cast, cast of quantised input, cast back, and e5m6 (the GPU
    run found the packed layout failing on empty views)."""
    col, rnd, packed = flags
    kw = dict(use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)
    x = torch.randn(0, 576).to(torch.bfloat16)
    q, sf = R.cast(x, fmt, (1, 128), **kw)
    assert q.shape[0] == 0 and sf.shape == (0, 5 if not packed else 2)
    assert R.cast_back((q, sf), "fp32", (1, 128)).shape == (0, 576)
    q2 = R.cast(x, fmt, (32, 32), **kw)
    out, sf2 = R.cast(q2, "e4m3", (1, 32), x_block_size=(32, 32), **kw)
    assert out.shape == (0, 576) and sf2.shape[0] == 0
    e, esf = RE.cast_to_e5m6(x, 576, **kw)
    assert RE.cast_back_from_e5m6((e, esf), "fp32", (1, 576)).shape == (0, 576)


def test_assert_equal_odd_strides():
    """One scale per row and one row: a column-major (1, 1) view with strides (1, 4) compares by
    its bytes (x.contiguous() keeps such strides, and a byte view of them fails)."""
    def col_major(v):
        store = torch.tensor([[v, 0.0, 0.0, 0.0]])  # (nk, align(nm, 4)) storage, as the layouts allocate
        return store[:, :1].T
    sf = col_major(2.5)
    assert sf.shape == (1, 1) and sf.stride() == (1, 4)
    T.assert_equal(sf, col_major(2.5))
    with pytest.raises(AssertionError, match="1 of 4 bytes differ"):
        T.assert_equal(sf, col_major(3.5))
    with pytest.raises(AssertionError, match="stride"):
        T.assert_equal(sf, torch.tensor([[2.5]]))
