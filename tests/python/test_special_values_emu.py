"""NaN, ±inf, -0 and subnormal inputs to every quantisation function of tilec.quant on the CPU
emulator, against the tilec.torch references and against the rule of docs/kernels/quant.md
("Special values"), written out here a second time so that a kernel and a reference that agree on
something else still fail:

1. amax ignores NaN (fmax semantics); -0 counts as 0; subnormals are ordinary values (the amax
   clamp applies).
2. a group whose amax is +inf gets sf = +inf (UE8M0 byte 0xFF) and sf_inv = 0, with and without
   round_sf: its finite elements become ±0 (sign kept), its ±inf and NaN elements NaN.
3. NaN in quantised data: e4m3 0x7F, e2m1 0x7 (+6), E5M6 0x7FF, whatever the NaN's sign or payload.
4. -0 keeps its sign (e4m3 0x80, e2m1 0x8, E5M6 0x800).
5. SwiGLU: IEEE arithmetic with CUDA's expf; the clamp keeps NaN (torch.clamp).
6. dequantisation: IEEE products (a NaN code gives NaN, an inf scale times a zero code NaN); float
   outputs that are NaN are "some NaN": compared by position, every other byte exactly.

Inputs: "zoos" whose groups (the scale blocks of the function under test) each take one of the
kinds in KINDS, with NaNs of both signs, signalling and all-ones payloads. Reading the rule:
`check_rule` derives every code and scale from the same call on the input with its non-finite
values replaced by zeros (finite data, byte-identical to the references elsewhere), the NaN
positions, the signs and the groups whose amax is infinite.

TILEC_BUILD_PYTHON: the package to test (default build/python)."""
import importlib
import itertools
import math
import os
import sys

import pytest

torch = pytest.importorskip("torch")

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))
from tilec import quant as Q  # noqa: E402
from tilec import torch as R  # noqa: E402
from emu_math import cuda_math  # noqa: E402
from tilec.testing import assert_equal, generate_fused_mapping  # noqa: E402
RQ = importlib.import_module("tilec.torch.cast")

F8 = torch.float8_e4m3fn
BF = torch.bfloat16
DT = {"bf16": torch.bfloat16, "f32": torch.float32}
FLAGS = [(False, False, False), (False, True, False), (True, False, False), (True, True, True)]  # (col, round, packed)
INF = math.inf
NAN32 = (0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF)   # quiet, negative, signalling, all-ones payload
NAN16 = (0x7FC0, 0xFFC0, 0x7F81, 0x7FFF)
E5M6_NAN = 0x7FF
NAN_CODE = {"e4m3": 0x7F, "e2m1": 0x7, "e5m6": E5M6_NAN}
SIGN_BIT = {"e4m3": 0x80, "e2m1": 0x8, "e5m6": 0x800}
KINDS = ("finite", "nan", "inf", "-inf", "inf,-inf,nan", "all-nan", "zeros", "-zeros", "±zeros", "subnormal",
         "subnormal,nan", "zeros,nan", "huge", "mixed", "all-inf", "inf,nan")


def kw(flags):
    col, rnd, packed = flags
    return dict(use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)


def fid(v):
    if isinstance(v, tuple) and len(v) == 3 and all(isinstance(f, bool) for f in v):
        return "col%d-round%d-packed%d" % v
    return str(v)


def cdiv(a, b):
    return (a + b - 1) // b


# ---- inputs ----------------------------------------------------------------------------------

def _kind(kind, v, m, g):
    """Applies one KINDS entry to a group's values v (f32, flat) and NaN marks m."""
    n = v.numel()
    p = torch.randperm(n, generator=g).tolist() * 4   # distinct positions (cycled for tiny groups)
    sub = 2.0 ** -140
    if kind == "nan":
        m[p[0]] = True
    elif kind == "inf":
        v[p[0]] = INF
    elif kind == "-inf":
        v[p[0]] = -INF
    elif kind == "inf,-inf,nan":
        v[p[0]], v[p[1]] = INF, -INF
        m[p[2]] = True
    elif kind == "all-nan":
        m[:] = True
    elif kind == "zeros":
        v[:] = 0.0
    elif kind == "-zeros":
        v[:] = -0.0
    elif kind == "±zeros":
        v.copy_(torch.copysign(torch.zeros_like(v), v))
    elif kind == "subnormal":
        v.mul_(sub)
        v[p[0]] = -0.0
    elif kind == "subnormal,nan":
        v.mul_(sub)
        m[p[0]] = True
    elif kind == "zeros,nan":
        v.copy_(torch.copysign(torch.zeros_like(v), v))
        m[p[0]] = True
    elif kind == "huge":
        v.mul_(1e37)
        v[p[0]] = -0.0
    elif kind == "mixed":
        m[p[0]] = True
        v[p[1]] = -0.0
        v[p[2]] = -3.0 * sub
        v[p[3]] = 1e-30
    elif kind == "all-inf":
        v.copy_(torch.copysign(torch.full_like(v, INF), v))
    elif kind == "inf,nan":
        v.copy_(torch.copysign(torch.full_like(v, INF), v))
        m[::2] = True


def zoo(t, h, group, dtype, seed=0):
    """(t, h) randn in `dtype` whose (gm, gn) groups (partial at the edges) each take a kind of
    KINDS, shuffled so that every kind meets every position; subnormals of the input type (f32
    2^-140 scale, bf16 2^-140 rounds to bf16 subnormals), NaNs with the patterns of NAN32 / NAN16
    in turn."""
    g = torch.Generator().manual_seed(seed * 1009 + t * 31 + h)
    x = torch.randn((t, h), generator=g)
    nan = torch.zeros((t, h), dtype=torch.bool)
    gm, gn = group
    nm, nk = cdiv(t, gm), cdiv(h, gn)
    order = torch.randperm(nm * nk, generator=g) % len(KINDS)
    for gi in range(nm * nk):
        i, j = divmod(gi, nk)
        blk = x[i * gm:(i + 1) * gm, j * gn:(j + 1) * gn]
        nb = nan[i * gm:(i + 1) * gm, j * gn:(j + 1) * gn]
        v = blk.reshape(-1).clone()
        m = nb.reshape(-1).clone()
        _kind(KINDS[int(order[gi])], v, m, g)
        blk.copy_(v.view(blk.shape))
        nb.copy_(m.view(nb.shape))
    return put_nans(x.to(dtype), nan)


def put_nans(x, mask):
    """x with the NaN patterns of its dtype (in turn) written where mask is set."""
    idx = mask.view(-1).nonzero()[:, 0]
    if x.dtype == torch.float32:
        pats = torch.tensor([p - (1 << 32) if p >= 1 << 31 else p for p in NAN32], dtype=torch.int32)
        view = x.view(torch.int32).view(-1)
    else:
        pats = torch.tensor([p - (1 << 16) if p >= 1 << 15 else p for p in NAN16], dtype=torch.int16)
        view = x.view(torch.int16).view(-1)
    view[idx] = pats[torch.arange(idx.numel()) % len(pats)]
    return x


def finite_version(x):
    """x with NaN and ±inf replaced by +0 (the rule's reference data)."""
    return torch.where(torch.isfinite(x), x, torch.zeros((), dtype=x.dtype))


# ---- reading outputs -------------------------------------------------------------------------

def codes(out, fmt):
    """The element codes (int64, (T, H)) of quantised data: e4m3 bytes, e2m1 nibbles, E5M6 12-bit
    codes."""
    if fmt == "e4m3":
        return out.view(torch.uint8).long()
    b = out.contiguous().view(torch.uint8).long()
    if fmt == "e2m1":
        return torch.stack((b & 0xF, b >> 4), dim=-1).view(b.shape[0], -1)
    T, P = b.shape
    w = b.view(T, P // 12, 3, 4)
    w = w[..., 0] | (w[..., 1] << 8) | (w[..., 2] << 16) | (w[..., 3] << 24)
    w0, w1, w2 = w[..., 0], w[..., 1], w[..., 2]
    c = [w0 >> 20, w0 >> 8, (w0 << 4) | (w1 >> 28), w1 >> 16, w1 >> 4, (w1 << 8) | (w2 >> 24), w2 >> 12, w2]
    return (torch.stack(c, dim=-1) & 0xFFF).view(T, P // 12 * 8)


def sf_values(sf, nk):
    """Scales in any layout as f32 (nm, nk) (packed UE8M0 bytes decoded, 0xFF = +inf)."""
    return RQ.transform_sf(sf)[:, :nk].contiguous()


def f32_bits(t):
    return t.float().contiguous().view(torch.int32)


def assert_same_float(got, want):
    """dtype, shape, strides equal; NaN at the same positions (any NaN: sign and payload differ
    between CPU and GPU); every other element's bytes equal."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.numel():
        assert got.stride() == want.stride()
    gn, wn = torch.isnan(got.float()), torch.isnan(want.float())
    assert torch.equal(gn, wn), f"NaN positions differ: {int((gn != wn).sum())} elements"
    zero = torch.zeros((), dtype=got.dtype)
    assert_equal(torch.where(gn, zero, got), torch.where(wn, zero, want))


def ieee_products(a, b):
    """a * b element by element in Python floats (IEEE double: the product of two f32 values is
    exact there, so its rounding to f32 is the f32 product; inf * 0 is NaN), as an f32 tensor."""
    return torch.tensor([u * v for u, v in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())]).view(a.shape)


def group_amax(x, block):
    """The rule's amax per (bm, bn) block of x: NaN ignored, -0 as 0."""
    a = x.float().abs()
    a = torch.where(torch.isnan(a), torch.zeros(()), a)
    T, H = a.shape
    bm, bn = block
    nm, nk = cdiv(T, bm), cdiv(H, bn)
    pad = torch.zeros((nm * bm, nk * bn))
    pad[:T, :H] = a
    return pad.view(nm, bm, nk, bn).amax(dim=(1, 3))


def check_rule(x, fmt, block, out, sf, fin_out, fin_sf):
    """out, sf (from x) against the rule, given fin_out, fin_sf, the same function's result on
    finite_version(x): groups with a finite amax have fin's scale and fin's codes except NaN
    elements (NaN_CODE); groups with amax +inf have scale +inf, ±0 codes for finite elements
    (the element's sign) and NaN_CODE for ±inf and NaN elements."""
    T, H = x.shape
    xf = x.float()
    bm, bn = block
    nk = cdiv(H, bn)
    inf_g = torch.isinf(group_amax(x, block))
    inf_e = RQ._expand(inf_g, bm, bn, T, H)
    nonfinite = ~torch.isfinite(xf)
    signed_zero = torch.where(torch.signbit(xf), SIGN_BIT[fmt], 0)
    want = torch.where(nonfinite, NAN_CODE[fmt], torch.where(inf_e, signed_zero, codes(fin_out, fmt)))
    got = codes(out, fmt)
    bad = (got != want).nonzero()
    assert bad.numel() == 0, (f"{bad.shape[0]} codes break the rule; first at {tuple(bad[0].tolist())}: "
                              f"{int(got[tuple(bad[0])]):#x} != {int(want[tuple(bad[0])]):#x} "
                              f"(x = {float(xf[tuple(bad[0])])})")
    if sf is not None:
        s, fs = sf_values(sf, nk), sf_values(fin_sf, nk)
        want_sf = torch.where(inf_g, torch.full_like(fs, INF), fs)
        assert torch.equal(f32_bits(s), f32_bits(want_sf)), "scales break the rule"


# ---- per-token casts (§2.1-§2.4) -------------------------------------------------------------

PT = [(fmt, n, flags) for fmt, n, flags in itertools.product(["e4m3", "e2m1"], [16, 32, 64, 128, "H"], FLAGS)]
PT += [("e5m6", "H", flags) for flags in FLAGS]


@pytest.mark.parametrize("dt", ["bf16", "f32"])
@pytest.mark.parametrize("fmt, n_mode, flags", PT, ids=fid)
def test_per_token_cast(fmt, n_mode, flags, dt):
    h = 576
    n = h if n_mode == "H" else n_mode
    x = zoo(67 if n_mode != "H" else 40, h, (1, n), DT[dt])
    out, sf = Q.per_token_cast(x, fmt, n, **kw(flags))
    if fmt == "e5m6":
        ref, ref_sf = R.cast_to_e5m6(x, h, **kw(flags))
        fin, fin_sf = R.cast_to_e5m6(finite_version(x), h, **kw(flags))
    else:
        ref, ref_sf = R.cast(x, fmt, (1, n), **kw(flags))
        fin, fin_sf = R.cast(finite_version(x), fmt, (1, n), **kw(flags))
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    check_rule(x, fmt, (1, n), out, sf, fin, fin_sf)
    if fmt != "e5m6" and n_mode != "H":
        assert_equal(Q.per_token_cast_with_sf_only(x, fmt, n, **kw(flags)), ref_sf)
        if not flags[0]:
            # the scales just computed (+inf among them) as precomputed ones
            got = Q.per_token_cast_with_precomputed_sf(x, fmt, n, sf, round_sf=flags[1])
            assert_equal(got, R.cast(x, fmt, (1, n), sf=sf))
            if flags[1]:   # power-of-two scales: 1 / sf is the cast's own multiplier
                assert_equal(got, out)


@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
def test_per_token_cast_precomputed_special_scales(fmt):
    """Precomputed scales that are themselves special: +inf (multiplier 0), 0 (multiplier +inf:
    finite values saturate, zeros become NaN), NaN, subnormal, -0."""
    x = zoo(67, 576, (1, 32), torch.float32, seed=3)
    g = torch.Generator().manual_seed(1)
    sf = torch.rand((67, 18), generator=g) + 0.01
    specials = torch.tensor([INF, 0.0, -0.0, math.nan, 2.0 ** -140, 1e-38])
    pick = torch.randint(0, 3, (67, 18), generator=g) == 0
    sf = torch.where(pick, specials[torch.randint(0, 6, (67, 18), generator=g)], sf)
    got = Q.per_token_cast_with_precomputed_sf(x, fmt, 32, sf)
    assert_equal(got, R.cast(x, fmt, (1, 32), sf=sf))


QIN = list(itertools.product(["e4m3", "e2m1"], [(128, 128), (32, 32), (1, 32), (1, 128)], ["e4m3", "e2m1"]))


@pytest.mark.parametrize("in_fmt, xbs, fmt", QIN, ids=str)
def test_per_token_cast_quant_input(in_fmt, xbs, fmt):
    """QuantTensor input holding NaN codes and +inf scales (from a cast of a zoo, in each of the
    three input scale layouts): the same as the float cast of its dequantised values."""
    x = zoo(67, 576, xbs, torch.float32, seed=5)
    for in_flags, flags in ((FLAGS[1], FLAGS[3]), (FLAGS[3], FLAGS[1]), (FLAGS[0], FLAGS[0])):
        xq = R.cast(x, in_fmt, xbs, **kw(in_flags))
        out, sf = Q.per_token_cast(xq, fmt, 128, x_block_size=xbs, **kw(flags))
        ref, ref_sf = R.cast(xq, fmt, (1, 128), x_block_size=xbs, **kw(flags))
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)
        deq = R.cast_back(xq, "fp32", xbs)
        want, want_sf = Q.per_token_cast(deq, fmt, 128, **kw(flags))
        assert_equal(out, want)
        assert_equal(sf, want_sf)


@pytest.mark.parametrize("packed", [False, True])
def test_per_token_cast_quant_input_every_code(packed):
    """e4m3 input of every byte (0x7F and 0xFF are NaN) with scales 0, +inf and powers of two."""
    g = torch.Generator().manual_seed(2)
    q = torch.arange(256, dtype=torch.int32).repeat(67 * 576 // 256 + 1)[:67 * 576].view(67, 576)
    q = q[torch.randperm(67, generator=g)].to(torch.uint8).view(F8)
    byts = torch.randint(110, 140, (67, 18), generator=g)
    byts[torch.randint(0, 4, (67, 18), generator=g) == 0] = 0xFF
    byts[torch.randint(0, 9, (67, 18), generator=g) == 0] = 0
    if packed:
        isf = RQ._layout_sf((byts.int() << 23).view(torch.float32), True, True)
    else:
        isf = (byts.int() << 23).view(torch.float32)
    xq = (q, isf)
    for fmt in ("e4m3", "e2m1"):
        out, sf = Q.per_token_cast(xq, fmt, 64, x_block_size=(1, 32), round_sf=True)
        ref, ref_sf = R.cast(xq, fmt, (1, 64), x_block_size=(1, 32), round_sf=True)
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)


# ---- the rule by hand ------------------------------------------------------------------------

def _row(vals, h, fill=0.25, dtype=torch.float32):
    r = torch.full((h,), fill)
    r[:len(vals)] = torch.tensor(vals)
    return r.to(dtype)


@pytest.mark.parametrize("flags", FLAGS, ids=fid)
def test_rule_by_hand(flags):
    """Hand-made groups of 128 with the rule's results written out."""
    nan = math.nan
    x = torch.stack([
        _row([INF, -3.0, -0.0, 5.0, nan, 1e-40, -INF, -1e-40], 128),         # amax +inf
        _row([nan, 448.0, -448.0, -0.0, 1.0, -nan, 0.0], 128, fill=-0.0),     # amax 448: sf 1
        _row([nan] * 128, 128),                                               # all NaN: the clamp
        _row([-0.0] * 128, 128),                                              # all -0: the clamp
        _row([6.0, -6.0, nan, 2.0 ** -127, -0.0, 3.0], 128, fill=0.0),        # amax 6 (e2m1 sf 1)
        _row([2.0 ** -127, -2.0 ** -149, 2.0 ** -127, nan], 128, fill=2.0 ** -127),   # subnormals
    ] + [_row([INF], 128)] * 2)
    put_nans(x, torch.isnan(x) & (torch.arange(128) % 2 == 1))   # odd columns: -NaN and the others
    col, rnd, packed = flags
    clamp_e4m3 = torch.tensor(1e-4) / torch.tensor(448.0)
    pow2 = lambda v: 2.0 ** math.ceil(math.log2(v))  # noqa: E731
    e4, e4sf = Q.per_token_cast(x, "e4m3", 128, **kw(flags))
    c = codes(e4, "e4m3")
    s = sf_values(e4sf, 1)[:, 0]
    assert c[0, :8].tolist() == [0x7F, 0x80, 0x80, 0x00, 0x7F, 0x00, 0x7F, 0x80] and s[0] == INF
    assert (c[0, 8:] == 0).all()
    assert c[1, :7].tolist() == [0x7F, 0x7E, 0xFE, 0x80, 0x38, 0x7F, 0x00] and s[1] == 1.0
    assert (c[2] == 0x7F).all() and s[2] == (pow2(clamp_e4m3.item()) if rnd else clamp_e4m3.item())
    assert (c[3] == 0x80).all() and s[3] == s[2]
    assert c[5, :4].tolist() == [0x00, 0x80, 0x00, 0x7F]   # 2^-127 * 448 / 1e-4 rounds to a zero
    if packed:
        words = torch.empty(e4sf.shape, dtype=torch.int32).copy_(e4sf)
        assert (words[0] & 0xFF).item() == 0xFF
    e2, e2sf = Q.per_token_cast(x, "e2m1", 128, **kw(flags))
    c = codes(e2, "e2m1")
    s = sf_values(e2sf, 1)[:, 0]
    assert c[0, :8].tolist() == [0x7, 0x8, 0x8, 0x0, 0x7, 0x0, 0x7, 0x8] and s[0] == INF
    assert c[4, :6].tolist() == [0x7, 0xF, 0x7, 0x0, 0x8, 0x5] and s[4] == 1.0
    # subnormals: amax 2^-127 clamps to 6 * 2^-126, sf = 2^-126 in both modes, 2^-127 -> 0.5
    assert c[5, :4].tolist() == [0x1, 0x8, 0x1, 0x7] and (c[5, 4:] == 1).all() and s[5] == 2.0 ** -126
    assert (c[2] == 0x7).all() and (c[3] == 0x8).all()
    e5, e5sf = Q.per_token_cast(x, "e5m6", 128, **kw(flags))
    c = codes(e5, "e5m6")
    s = sf_values(e5sf, 1)[:, 0]
    assert c[0, :8].tolist() == [E5M6_NAN, 0x800, 0x800, 0x000, E5M6_NAN, 0x000, E5M6_NAN, 0x800] and s[0] == INF
    assert (c[2] == E5M6_NAN).all() and (c[3] == 0x800).all()
    assert c[1, 0] == E5M6_NAN and c[1, 5] == E5M6_NAN and c[1, 3] == 0x800


def test_rule_by_hand_round_sf_inverse():
    """round_sf with an infinite amax: the multiplier is 0 (not 2^(127 - 128 << 23) = -inf), so
    finite values become zeros of their sign instead of saturating."""
    x = _row([INF, 1.0, -1.0, -0.0, 0.0], 128).view(1, 128)
    for fmt, pos, neg in (("e4m3", 0x00, 0x80), ("e2m1", 0x0, 0x8)):
        for f in (FLAGS[1], FLAGS[3]):
            out, sf = Q.per_token_cast(x, fmt, 128, **kw(f))
            assert codes(out, fmt)[0, :5].tolist() == [NAN_CODE[fmt], pos, neg, neg, pos]
            assert sf_values(sf, 1)[0, 0] == INF
    for f in (FLAGS[1], FLAGS[3]):
        out, sf = Q.per_token_cast(x, "e5m6", 128, **kw(f))
        assert codes(out, "e5m6")[0, :5].tolist() == [E5M6_NAN, 0, 0x800, 0x800, 0]


# ---- per-block casts (§2.5-§2.7) -------------------------------------------------------------

PB = list(itertools.product(["e4m3", "e2m1"], [(32, 32), (32, 128), (128, 32), (128, 128)], FLAGS))


@pytest.mark.parametrize("fmt, block, flags", PB, ids=fid)
def test_per_block_cast(fmt, block, flags):
    dt = torch.bfloat16 if (block[0] == 128) == (fmt == "e4m3") else torch.float32
    x = zoo(400 if block[0] == 128 else 130, 640, block, dt)
    out, sf = Q.per_block_cast(x, fmt, block, **kw(flags))
    ref, ref_sf = R.cast(x, fmt, block, **kw(flags))
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    fin, fin_sf = R.cast(finite_version(x), fmt, block, **kw(flags))
    check_rule(x, fmt, block, out, sf, fin, fin_sf)
    assert_equal(Q.per_block_cast_with_sf_only(x, fmt, block, **kw(flags)), ref_sf)
    if not flags[0]:
        got = Q.per_block_cast_with_precomputed_sf(x, fmt, block, sf, round_sf=flags[1])
        assert_equal(got, R.cast(x, fmt, block, sf=sf))


# ---- per-channel casts (§2.12-§2.14) ---------------------------------------------------------

@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("dt", ["bf16", "f32"])
def test_per_channel_cast(dt, rnd):
    x = zoo(256, 576, (128, 1), DT[dt])
    out, sf = Q.per_channel_cast(x, "e4m3", 128, round_sf=rnd)
    ref, ref_sf = R.cast(x, "e4m3", (128, 1), round_sf=rnd)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    fin, fin_sf = R.cast(finite_version(x), "e4m3", (128, 1), round_sf=rnd)
    check_rule(x, "e4m3", (128, 1), out, sf, fin, fin_sf)


@pytest.mark.parametrize("src, gather, rnd", list(itertools.product(["bf16", "f32", "e4m3"], [False, True],
                                                                       [False, True])), ids=str)
def test_per_channel_cast_fused(src, gather, rnd):
    """The gather (negative positions: zero rows) and the FP8 input (NaN codes, +inf per-token
    scales from a zoo's cast) with a zoo of 128-row column groups."""
    h = 640
    x = zoo(256 if not gather else 40, h, (128, 1) if not gather else (1, 128), torch.float32 if src == "f32" else BF)
    pos = None
    if gather:
        pos, _, _, _ = generate_fused_mapping(40, 3, 5, 16, device="cpu")
    xin = R.cast(x, "e4m3", (1, 128)) if src == "e4m3" else x
    n = 128 if src == "e4m3" else None
    out, sf = Q.per_channel_cast_fused(xin, "e4m3", 128, round_sf=rnd, num_per_channels=n, pos_to_token=pos)
    ref, ref_sf = R.per_channel_cast_fused(xin, 128, n, rnd, pos)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("npt", [32, 128])
@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("h", [576, 640])   # 640: the persistent 128-column tiles of one scale per 128 rows
def test_per_channel_cast_and_transpose(h, rnd, npt):
    x = zoo(256, h, (npt, 1), BF)
    out, sf = Q.per_channel_cast_and_transpose(x, "e4m3", npt, round_sf=rnd)
    ref, ref_sf = R.cast(x, "e4m3", (npt, 1), round_sf=rnd)
    assert_equal(out, ref.T.contiguous())
    assert_equal(sf, ref_sf)
    fin, fin_sf = R.cast(finite_version(x), "e4m3", (npt, 1), round_sf=rnd)
    check_rule(x, "e4m3", (npt, 1), out.T, sf, fin, fin_sf)


# ---- dequantisation (§2.9-§2.11) -------------------------------------------------------------

CB = list(itertools.product(["e4m3", "e2m1"], [(1, 128), (128, 128), (1, 32), (128, 1)], ["bf16", "fp32"]))


@pytest.mark.parametrize("fmt, block, ofmt", CB, ids=str)
def test_cast_back(fmt, block, ofmt):
    """Casts of a zoo (NaN codes, +inf scales, signed zeros) dequantised, in the three scale
    layouts."""
    x = zoo(67, 576, block, torch.float32, seed=7)
    for flags in (FLAGS[0], FLAGS[1], FLAGS[3]):
        xq = R.cast(x, fmt, block, **kw(flags))
        back = Q.cast_back(xq, ofmt, block)
        assert_same_float(back, R.cast_back(xq, ofmt, block))
        if block[0] == 1:
            assert_same_float(Q.per_token_cast_back(xq, ofmt, block[1]), back)


@pytest.mark.parametrize("ofmt", ["bf16", "fp32"])
@pytest.mark.parametrize("packed", [False, True])
def test_cast_back_every_code(packed, ofmt):
    """Every e4m3 byte and FP4 code with scales +inf, 0, NaN (f32 only), -0, subnormal, 2^k and
    non-powers of two: IEEE products, checked element by element with Python floats."""
    g = torch.Generator().manual_seed(4)
    T, H = 64, 512
    q8 = torch.arange(256, dtype=torch.int32).repeat(T * H // 256).view(T, H)
    q8 = q8[:, torch.randperm(H, generator=g)].to(torch.uint8).view(F8)
    q4 = torch.randint(0, 256, (T, H // 2), generator=g, dtype=torch.int32).to(torch.uint8).view(torch.int8)
    if packed:
        byts = torch.randint(100, 150, (T, H // 128), generator=g)
        byts[:, 0] = 0xFF
        byts[::3, 1] = 0
        sfv = (byts.int() << 23).view(torch.float32)
        sf = RQ._layout_sf(sfv, True, True)
    else:
        sfv = torch.rand((T, H // 128), generator=g) * 4
        specials = torch.tensor([INF, 0.0, -0.0, math.nan, 2.0 ** -140, 2.0 ** -3, -INF])
        sfv[:, :2] = specials[torch.randint(0, 7, (T, 2), generator=g)]
        sf = sfv
    for q, fmt in ((q8, "e4m3"), (q4, "e2m1")):
        back = Q.cast_back((q, sf), ofmt, (1, 128))
        ref = R.cast_back((q, sf), ofmt, (1, 128))
        assert_same_float(back, ref)
        dec = q.float() if fmt == "e4m3" else Q.unpack_from_e2m1fn_x2(q)
        s = sfv.repeat_interleave(128, dim=1)
        want = ieee_products(dec, s)
        want = want.bfloat16() if ofmt == "bf16" else want
        assert_same_float(back, want)


@pytest.mark.parametrize("flags", FLAGS, ids=fid)
def test_e5m6_cast_back(flags):
    """E5M6: the casts of a zoo and every 12-bit code (e = 31: inf and NaN codes) dequantised."""
    h = 576
    x = zoo(40, h, (1, h), torch.float32, seed=9)
    xq = Q.per_token_cast(x, "e5m6", h, **kw(flags))
    for ofmt in ("bf16", "fp32"):
        back = Q.cast_back(xq, ofmt, (1, h), x_special_fmt="e5m6")
        assert_same_float(back, R.cast_back_from_e5m6(xq, ofmt, (1, h)))
    # every code, with scales +inf, 0, 1 and 2^-3 (f32, one per row)
    g = torch.Generator().manual_seed(8)
    codes_ = torch.arange(4096).repeat(8 * 576 // 4096 + 1)[:8 * 576].view(8, 576)
    codes_ = codes_[:, torch.randperm(576, generator=g)]
    from tilec.torch.cast_e5m6 import _pack_e5m6
    packed = _pack_e5m6(codes_.long())
    sf = torch.tensor([[INF], [0.0], [1.0], [0.125], [INF], [1.0], [2.0 ** -20], [3.0]])
    for ofmt in ("bf16", "fp32"):
        back = Q.cast_back((packed, sf), ofmt, (1, 576), x_special_fmt="e5m6")
        assert_same_float(back, R.cast_back_from_e5m6((packed, sf), ofmt, (1, 576)))
        v = (codes_ << 4).to(torch.int32).to(torch.int16).view(torch.float16).float()
        want = ieee_products(v, sf.expand(8, 576))
        assert_same_float(back, want.bfloat16() if ofmt == "bf16" else want)


# ---- the lossless FP4 -> FP8 re-scaling (§2.8) -----------------------------------------------

@pytest.mark.parametrize("out_flags", [FLAGS[1], FLAGS[3]], ids=fid)
@pytest.mark.parametrize("in_packed", [False, True])
@pytest.mark.parametrize("out_block", [(1, 128), (32, 32), (128, 128)])
def test_per_block_cast_lossless_inf_scale(out_block, in_packed, out_flags):
    """Input scales +inf (UE8M0 0xFF, f32 +inf) among finite ones: the output block holding one
    gets scale +inf; the inf input block keeps its codes (its dequantised values, NaN and ±inf,
    unchanged), the finite input blocks sharing that output block become zeros of their sign
    (dequantised NaN), as the finite values of an inf group in every cast; every other output
    block is lossless as before."""
    g = torch.Generator().manual_seed(11)
    T, H, ib = 160, 576, (1, 32)
    q = torch.randint(0, 256, (T, H // 2), generator=g, dtype=torch.int32).to(torch.uint8).view(torch.int8)
    # exponents within 5 of each other in each 128 x 128 tile (lossless), from 2^-7, 2^73 or 2^120
    # (there, 2^(e - 255) times an FP4 value is no zero of e4m3)
    base = torch.tensor([120, 200, 247])[(torch.arange(T)[:, None] // 128 + torch.arange(H // 32) // 4) % 3]
    byts = base + torch.randint(0, 6, (T, H // 32), generator=g)
    hit = torch.zeros_like(byts, dtype=torch.bool)
    hit[5, 3] = hit[100, 17] = hit[40, 9] = hit[150, 5] = True   # in tiles of each base
    byts[hit] = 0xFF
    sfv = (byts.int() << 23).view(torch.float32)
    isf = RQ._layout_sf(sfv, True, True) if in_packed else sfv
    out, osf = Q.per_block_cast_lossless((q, isf), "e4m3", ib, out_block, **kw(out_flags))
    back = R.cast_back((out, osf), "fp32", out_block)
    src = R.cast_back((q, isf), "fp32", ib)
    bm, bn = out_block
    nm, nk = cdiv(T, bm), cdiv(H, bn)
    inf_o = torch.zeros((nm * bm, nk * bn), dtype=torch.bool)
    inf_o[:T, :H] = RQ._expand(hit, *ib, T, H)
    inf_o = inf_o.view(nm, bm, nk, bn).any(dim=3).any(dim=1)
    s = sf_values(osf, nk)
    assert torch.equal(torch.isinf(s), inf_o) and (s[inf_o] == INF).all()
    in_inf = RQ._expand(hit, *ib, T, H)
    out_inf = RQ._expand(inf_o, bm, bn, T, H)
    assert_same_float(torch.where(out_inf, torch.zeros(()), back), torch.where(out_inf, torch.zeros(()), src))
    assert_same_float(back[in_inf], src[in_inf])
    rest = out_inf & ~in_inf
    c = codes(out, "e4m3")
    dec = Q.unpack_from_e2m1fn_x2(q)
    assert torch.equal(c[rest], torch.where(torch.signbit(dec[rest]), 0x80, 0))
    assert torch.isnan(back[rest]).all()


def test_per_block_cast_lossless_from_inf_cast():
    """FP4 cast (round_sf) of a zoo, whose +inf groups have scale byte 0xFF, re-scaled to (1, 32)
    output blocks (one per input block): the dequantised values are unchanged, NaN positions
    included, wherever the input scale byte is at least 6 (below it the output scale byte is 0,
    the spec's degenerate case: the groups that the amax clamp decides)."""
    x = zoo(67, 576, (1, 32), torch.float32, seed=13)
    xq = R.cast(x, "e2m1", (1, 32), use_tma_aligned_col_major_sf=True, round_sf=True, use_packed_ue8m0=True)
    out = Q.per_block_cast_lossless(xq, "e4m3", (1, 32), (1, 32), use_tma_aligned_col_major_sf=True,
                                    round_sf=True, use_packed_ue8m0=True)
    byts = f32_bits(sf_values(xq[1], 18)) >> 23
    assert (byts == 0xFF).any()
    live = RQ._expand(byts >= 6, 1, 32, 67, 576)
    assert_same_float(R.cast_back(out, "fp32", (1, 32))[live], R.cast_back(xq, "fp32", (1, 32))[live])
    assert (sf_values(out[1], 18)[byts == 0xFF] == INF).all()


def test_per_block_cast_lossless_nan_scale_asserts():
    """An f32 input scale that is NaN or negative is no power-of-two scale: the device assertion."""
    q = torch.zeros((4, 64), dtype=torch.int8)
    for bad in (math.nan, -1.0, -math.nan):
        isf = torch.ones((4, 4))
        isf[1, 2] = bad
        with pytest.raises(Exception, match="per_block_cast_lossless"):
            Q.per_block_cast_lossless((q, isf), "e4m3", (1, 32), (1, 128))


# ---- SwiGLU fused casts (§2.15-§2.17) --------------------------------------------------------

def swiglu_zoo(n, hh, dt, seed=0, group=(1, 128)):
    """Both halves zoos (different seeds), so gate and value each hold the kinds."""
    return torch.cat((zoo(n, hh, group, dt, seed), zoo(n, hh, group, dt, seed + 1)), dim=1)


def _swt():
    cases = []
    for n_mode, flags, weights, pte, clamp in itertools.product(
            [128, "H"], [FLAGS[1], FLAGS[3], FLAGS[0]], [False, True], [False, True],
            [None, (10.0, False), (10.0, True), (0.5, True)]):
        if (flags[2] and weights) or (flags[0] and n_mode == "H"):
            continue
        cases.append((n_mode, flags, weights, pte, clamp))
    return cases[::3]


@pytest.mark.parametrize("n_mode, flags, weights, pte, clamp", _swt(), ids=fid)
@pytest.mark.parametrize("dt", ["bf16", "f32"])
def test_swiglu_forward_per_token(n_mode, flags, weights, pte, clamp, dt):
    hh = 384
    n = hh if n_mode == "H" else 128
    _, ptt, p2e, _ = generate_fused_mapping(23, 3, 5, 16, device="cpu")
    N = ptt.numel()
    x = swiglu_zoo(N, hh, DT[dt], group=(1, n))
    skip = p2e < 0
    w = torch.randn((23, 3))
    w[0, 0] = 0.0   # a zero weight: inf * 0
    w[1, 1] = -0.0
    cval, counting = clamp if clamp is not None else (None, False)
    cnt = torch.zeros((3,), dtype=torch.int64) if counting else None
    out, sf = Q.swiglu_forward_and_per_token_cast(x, "e4m3", n, ptt if weights else None, w if weights else None,
                                                  p2e if pte else None, swiglu_clamp_value=cval, clamped_count=cnt,
                                                  **kw(flags))
    ref_cnt = torch.zeros((3,), dtype=torch.int64) if counting else None
    x_ref = x.clone()
    if pte:
        x_ref[skip] = 0.0
    with cuda_math():
        act = R.swiglu_forward(x_ref, ptt if weights else None, w if weights else None, cval, ref_cnt)
    ref, ref_sf = R.cast(act, "e4m3", (1, n), **kw(flags))
    keep = ~skip if pte else torch.ones(N, dtype=torch.bool)   # rows without an expert: zeros (data, sf)
    assert_equal(out[keep], ref[keep])
    assert sf.shape == ref_sf.shape and sf.stride() == ref_sf.stride() and sf.dtype == ref_sf.dtype
    assert torch.equal(sf[keep], ref_sf[keep])
    if pte:
        assert not out[skip].view(torch.uint8).any() and not sf[skip].any()
    if counting:
        assert torch.equal(cnt, ref_cnt)
    fin, fin_sf = R.cast(finite_version(act), "e4m3", (1, n), **kw(flags))
    check_rule(act[keep], "e4m3", (1, n), out[keep], sf[keep], fin[keep], fin_sf[keep])


def test_swiglu_forward_per_token_by_hand():
    """SiLU of NaN / ±inf with CUDA's expf, and the clamp keeping NaN (torch.clamp); IEEE scales,
    so that a group's amax becomes 448 (0x7E)."""
    nan = math.nan
    hh = 256
    l0 = _row([nan, INF, -INF, 0.0, -100.0, 1.0, 3.0], hh, fill=0.5)
    r0 = _row([1.0, 1.0, 1.0, INF, 2.0, nan, -INF], hh, fill=0.5)
    l1 = _row([nan, 2.0, 20.0, -0.0], hh, fill=0.5)
    r1 = _row([1.0, nan, 1.0, 3.0], hh, fill=0.5)
    x = torch.stack([torch.cat((l0, r0)), torch.cat((l1, r1))])
    for clamp in (None, 10.0):
        cnt = torch.zeros(3, dtype=torch.int64) if clamp else None
        out, sf = Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, swiglu_clamp_value=clamp, clamped_count=cnt)
        c = codes(out, "e4m3")
        if clamp is None:
            # row 0: silu(NaN) = NaN, silu(inf) = inf (amax +inf: sf inf), silu(-inf) = -inf / inf
            # = NaN, 0 * inf = NaN, silu(-100) = -100 / inf = -0 (* 2: -0), silu(1) * NaN = NaN,
            # silu(3) * -inf = -inf (NaN after the zero multiplier); the rest +0
            assert c[0, :7].tolist() == [0x7F, 0x7F, 0x7F, 0x7F, 0x80, 0x7F, 0x7F] and (c[0, 7:128] == 0).all()
            assert sf[0, 0] == INF
        else:
            # clamped: l = inf -> 10, r = inf -> 10 (silu(0) * 10 = 0), r = -inf -> -10 (silu(3) * -10
            # the amax: -448); NaN gate and value stay NaN, l = -inf is not clamped (NaN)
            assert c[0, :7].tolist()[:1] + c[0, 2:7].tolist() == [0x7F, 0x7F, 0x00, 0x80, 0x7F, 0xFE]
            assert sf[0, 0] < INF
            assert cnt.tolist() == [2, 1, 1]    # l: inf and 20; r: inf; -r: -inf (NaN never)
        assert sf[0, 1] < INF
        # row 1: NaN gate and NaN value stay NaN (clamped or not); silu(20) * 1 is the amax
        # (clamped: silu(10)); -0 * 3 = -0
        assert c[1, :4].tolist() == [0x7F, 0x7F, 0x7E, 0x80]
    # the counts: NaN is never counted, inf is
    x2 = torch.stack([torch.cat((_row([nan, INF, 20.0], hh, 0.5), _row([nan, INF, -INF], hh, 0.5)))])
    cnt = torch.zeros(3, dtype=torch.int64)
    Q.swiglu_forward_and_per_token_cast(x2, "e4m3", 128, swiglu_clamp_value=10.0, clamped_count=cnt)
    assert cnt.tolist() == [2, 1, 1]


SWP = list(itertools.product([32, 128], [False, True], [False, True], [None, 10.0, 7.3]))


@pytest.mark.parametrize("npt, rnd, without_transpose, clamp", SWP[::2] + SWP[1::6], ids=str)
def test_swiglu_forward_per_channel(npt, rnd, without_transpose, clamp):
    """The SiLU table (clamp None or a bf16 value) and silu() itself (7.3 is no bf16 value)."""
    x = swiglu_zoo(256, 384, BF, group=(npt, 1))
    out, sf = Q.swiglu_forward_and_per_channel_cast_and_transpose(x, "e4m3", npt, round_sf=rnd,
                                                                  without_transpose=without_transpose,
                                                                  swiglu_clamp_value=clamp)
    with cuda_math():
        act = R.swiglu_forward(x, swiglu_clamp_value=clamp).bfloat16()
    ref, ref_sf = R.cast(act, "e4m3", (npt, 1), round_sf=rnd)
    assert_equal(out, ref if without_transpose else ref.T.contiguous())
    assert_equal(sf, ref_sf)
    fin, fin_sf = R.cast(finite_version(act), "e4m3", (npt, 1), round_sf=rnd)
    check_rule(act, "e4m3", (npt, 1), out if without_transpose else out.T, sf, fin, fin_sf)


@pytest.mark.parametrize("clamp", [None, 10.0, 7.3])
def test_swiglu_forward_per_channel_by_hand(clamp):
    """Gate NaN stays NaN through the clamp (table and silu() alike)."""
    nan = math.nan
    x = torch.full((128, 256), 0.5)
    x[0, 0], x[1, 0], x[2, 0] = nan, INF, -INF        # column 0: NaN, inf, NaN activations: sf inf
    x[0, 1], x[0, 129] = nan, 1.0                      # column 1: one NaN, the rest finite
    x[3, 2], x[3, 130] = 20.0, nan                     # column 2: NaN value
    out, sf = Q.swiglu_forward_and_per_channel_cast_and_transpose(x.bfloat16(), "e4m3", 128,
                                                                  without_transpose=True, swiglu_clamp_value=clamp)
    c = codes(out, "e4m3")
    if clamp is None:
        assert c[:3, 0].tolist() == [0x7F, 0x7F, 0x7F] and (c[3:, 0] == 0).all() and sf[0, 0] == INF
    else:   # the clamp makes the inf gate finite: silu(c) * 0.5 is the column's amax
        assert c[:3, 0].tolist() == [0x7F, 0x7E, 0x7F] and sf[0, 0] < INF
    assert c[0, 1] == 0x7F and c[0, 2] != 0x7F and c[3, 2] == 0x7F and sf[0, 1] < INF


SWB = list(itertools.product([32, 128], [False, True], [None, 10.0, 0.5]))


@pytest.mark.parametrize("n, rnd, clamp", SWB, ids=str)
def test_swiglu_backward(n, rnd, clamp):
    """FP8 input with NaN codes and +inf scales, gradients with NaN / ±inf / -0, zero weights."""
    t, topk, hh = 19, 3, 256
    pos_to_token, ptt, _, ttp = generate_fused_mapping(t, topk, 4, 16, device="cpu")
    N = ptt.numel()
    xs = swiglu_zoo(N, hh, torch.float32, seed=3, group=(1, n))
    x = R.cast(xs, "e4m3", (1, n))
    grad = zoo(N, hh, (1, 16), BF, seed=5)
    weights = torch.rand((t, topk))
    weights[0, 0] = 0.0
    weights[1, 2] = -0.0
    out, (gq, gsf), xg, wg = Q.swiglu_backward_and_per_token_cast(x, grad, weights, ptt, ttp, n, rnd, clamp)
    with cuda_math():
        r_out, r_xg, r_wg = R.swiglu_backward(x, grad, weights, ptt, ttp, n, clamp)
    r_q, r_sf = R.cast(r_xg, "e4m3", (1, n), round_sf=rnd)
    assert_same_float(out, r_out.bfloat16())
    assert_same_float(xg, r_xg.bfloat16())
    assert_equal(gq, r_q)
    assert_equal(gsf, r_sf)
    torch.testing.assert_close(wg, r_wg, atol=1e-4, rtol=1e-4, equal_nan=True)
    fin, fin_sf = R.cast(finite_version(r_xg), "e4m3", (1, n), round_sf=rnd)
    check_rule(r_xg, "e4m3", (1, n), gq, gsf, fin, fin_sf)
