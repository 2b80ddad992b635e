"""The per-token and per-block casts of tilec.quant (FP8, FP4, E5M6), their casts back and
unpack_from_e2m1fn_x2 on the CPU emulator over TileKernels' whole hidden-size grid (576, 2048,
2560, 3072, 4096, 6144, 7168) crossed with every option combination of its test grids (spec
quant-transpose.md §3, moe-engram-mhc.md §0.5), at token counts a CPU can afford: every case runs
0 rows and one of 1, 67 (ragged) and 300 rows, given in turn (grid_common.spread), so that every
function meets all four counts and every hidden size and option value 0 and the three others.
Byte for byte against the tilec.torch references where the spec compares bytes, within its
tolerance elsewhere. Each (hidden size, options) pair is its own kernel specialisation, so this is
also the check that the compiler accepts every configuration the wrappers ask for.

TILEC_BUILD_PYTHON: the package to test (default build/python)."""
import itertools
import os
import sys

import pytest
import torch

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))

import tilec.torch as R  # noqa: E402
from tilec import quant as Q  # noqa: E402
from tilec.testing import assert_equal, calc_diff, check_bias, clamp_abs_ratio, generate_rand_float  # noqa: E402
from grid_common import DT, FLAGS, HIDDEN, TOKENS, check_meets, cid, grid, kw, sample  # noqa: E402


# ---- per-token casts (§2.1-§2.4) -------------------------------------------------------------

def _per_token_cases():
    out = []
    for h, flags, src, fmt in itertools.product(HIDDEN, FLAGS, ["f32", "bf16", "e4m3", "e2m1"], ["e4m3", "e2m1"]):
        if src in DT:
            out += [(h, flags, src, n, None, fmt) for n in (32, 64, 128, h)]
        else:
            out += [(h, flags, src, n, xbs, fmt) for n in (32, 128) for xbs in ((128, 128), (32, 32))]
    return [c + (TOKENS[i % 3],) for i, c in enumerate(out)]


PER_TOKEN = _per_token_cases()


@pytest.mark.parametrize("h, flags, src, n, xbs, fmt, t", PER_TOKEN, ids=cid)
def test_per_token_cast(h, flags, src, n, xbs, fmt, t):
    for rows in (t, 0):
        if xbs is None:
            x = sample(rows, h, DT[src])
            orig = x
        else:
            orig = sample(rows, h, torch.bfloat16)
            x = R.cast(orig, src, xbs, **kw(flags))
        out, sf = Q.per_token_cast(x, fmt, n, x_block_size=xbs, **kw(flags))
        ref, ref_sf = R.cast(x, fmt, (1, n), x_block_size=xbs, **kw(flags))
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)
        if rows > 1 and xbs is None:
            check_bias(R.cast_back((out, sf), "fp32", (1, n)), orig.float())
        if xbs is None and n != h:
            assert_equal(Q.per_token_cast_with_sf_only(x, fmt, n, **kw(flags)), ref_sf)
            if not flags[0]:
                got = Q.per_token_cast_with_precomputed_sf(x, fmt, n, sf, round_sf=flags[1])
                assert_equal(got, R.cast(x, fmt, (1, n), sf=sf))
        if xbs is None and fmt == "e4m3" and not flags[2] and rows:
            wide = sample(rows, 2 * h, DT[src])[:, :h]   # rows 2H apart
            wide.copy_(x)
            got = Q.per_token_cast(wide, fmt, n, **kw(flags))
            assert_equal(got[0], out)
            assert_equal(got[1], sf)


E5M6 = grid(HIDDEN, FLAGS, ["bf16", "f32"])


@pytest.mark.parametrize("h, flags, dt, t", E5M6, ids=cid)
def test_per_token_cast_to_e5m6_and_back(h, flags, dt, t):
    for rows in (t, 0):
        x = sample(rows, h, DT[dt])
        out, sf = Q.per_token_cast(x, "e5m6", h, **kw(flags))
        ref, ref_sf = R.cast_to_e5m6(x, h, **kw(flags))
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)
        for ofmt in ("bf16", "fp32"):
            back = Q.cast_back((out, sf), ofmt, (1, h), x_special_fmt="e5m6")
            assert_equal(back, R.cast_back_from_e5m6((out, sf), ofmt, (1, h)))
            if rows > 1:
                assert calc_diff(x, back) < 1e-4


# ---- per-block casts (§2.5-§2.8) -------------------------------------------------------------

PER_BLOCK = grid(HIDDEN, ["bf16", "f32"], ["e4m3", "e2m1"], FLAGS, [(128, 128), (32, 32)])


@pytest.mark.parametrize("h, dt, fmt, flags, block, t", PER_BLOCK, ids=cid)
def test_per_block_cast(h, dt, fmt, flags, block, t):
    for rows in (t, 0):
        x = sample(rows, h, DT[dt])
        out, sf = Q.per_block_cast(x, fmt, block, **kw(flags))
        ref, ref_sf = R.cast(x, fmt, block, **kw(flags))
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)
        assert_equal(Q.per_block_cast_with_sf_only(x, fmt, block, **kw(flags)), ref_sf)
        if not flags[0]:
            got = Q.per_block_cast_with_precomputed_sf(x, fmt, block, sf, round_sf=flags[1])
            assert_equal(got, R.cast(x, fmt, block, sf=sf))


LOSSLESS = grid(HIDDEN, FLAGS, FLAGS, [(1, 128), (32, 32), (128, 128)])


@pytest.mark.parametrize("h, in_flags, out_flags, out_block, t", LOSSLESS, ids=cid)
def test_per_block_cast_lossless(h, in_flags, out_flags, out_block, t):
    in_block = (1, 32)
    for rows in (t, 0):
        # values within 2^9 of each other (TileKernels' data): the lossless condition holds
        x = clamp_abs_ratio(generate_rand_float((rows, h), device="cpu")) if rows else torch.zeros((0, h))
        xq = R.cast(x, "e2m1", in_block, **kw(in_flags))
        out = Q.per_block_cast_lossless(xq, "e4m3", in_block, out_block, **kw(out_flags))
        assert out[0].shape == (rows, h) and out[0].dtype == torch.float8_e4m3fn
        # exact: every dequantised value unchanged (the spec's check)
        assert_equal(R.cast_back(out, "fp32", out_block), R.cast_back(xq, "fp32", in_block))


# ---- dequantisation (§2.9-§2.11) -------------------------------------------------------------

TOKEN_BACK = grid(HIDDEN, ["e2m1", "e4m3"], FLAGS, [128, "H"], ["fp32", "bf16"])


@pytest.mark.parametrize("h, fmt, flags, n_mode, ofmt, t", TOKEN_BACK, ids=cid)
def test_per_token_cast_back(h, fmt, flags, n_mode, ofmt, t):
    n = h if n_mode == "H" else n_mode
    for rows in (t, 0):
        x = sample(rows, h)
        xq = Q.per_token_cast(x, fmt, n, **kw(flags))
        back = Q.per_token_cast_back(xq, ofmt, n)
        assert_equal(back, R.cast_back(xq, ofmt, (1, n)))
        assert_equal(Q.cast_back(xq, ofmt, (1, n)), back)


BLOCK_BACK = grid(HIDDEN, [False, True], ["bf16", "fp32"], [(128, 1), (128, 128)])


@pytest.mark.parametrize("h, rnd, ofmt, block, t", BLOCK_BACK, ids=cid)
def test_cast_back_per_block(h, rnd, ofmt, block, t):
    for rows in (t, 0):
        x = sample(rows, h)
        xq = R.cast(x, "e4m3", block, round_sf=rnd)
        assert_equal(Q.cast_back(xq, ofmt, block), R.cast_back(xq, ofmt, block))


# ---- unpack_from_e2m1fn_x2 (§2.18) -----------------------------------------------------------

def _e2m1_value(code):
    """§6.2: sign bit 3, exponent bits 2-1, mantissa bit 0; code 8 is -0.0."""
    e, m = (code >> 1) & 3, code & 1
    mag = m * 0.5 if e == 0 else (1 + m / 2) * 2.0 ** (e - 1)
    return -mag if code & 8 else mag


E2M1_VALUES = torch.tensor([_e2m1_value(c) for c in range(16)])
UNPACK = grid(HIDDEN, [torch.float32, torch.bfloat16], [torch.int8, torch.uint8])


@pytest.mark.parametrize("h, odt, src, t", UNPACK, ids=cid)
def test_unpack_from_e2m1fn_x2(h, odt, src, t):
    for rows in (t, 0):
        x, _ = R.cast(sample(rows, h), "e2m1", (1, 32))   # code 8 (-0.0) from row 2 where rows > 4
        x = x.view(src)
        b = x.view(torch.uint8).long()
        codes = torch.stack((b & 0xF, b >> 4), dim=-1).flatten(-2)   # element 2i: the low nibble
        assert_equal(Q.unpack_from_e2m1fn_x2(x, odt), E2M1_VALUES[codes].to(odt))


# ---- the grid itself -------------------------------------------------------------------------

@pytest.mark.parametrize("cases", [PER_TOKEN, E5M6, PER_BLOCK, LOSSLESS, TOKEN_BACK, BLOCK_BACK, UNPACK],
                         ids=["per_token", "e5m6", "per_block", "lossless", "per_token_back", "block_back", "unpack"])
def test_every_hidden_size_meets_every_count(cases):
    """Each function: every hidden size and every option value with 1, 67 and 300 rows (and 0 in
    every case)."""
    for pos in range(len(cases[0]) - 1):
        check_meets(cases, pos, values=TOKENS)
