"""Every function of tilec.quant and tilec.transpose on the CPU emulator (CPU tensors run there)
against the tilec.torch references, on small shapes with ragged tails (T in {0, 1, 67}, hidden
576 and 640): byte for byte where the spec compares bytes, within its tolerance elsewhere.

Option grids: each test crosses the options that change the kernel's code path in full and
rotates the rest (input dtype, hidden size, row count) over the cases, so that every value
meets every other option often without compiling a specialisation twice for nothing.

TILEC_BUILD_PYTHON: the package to test (default build/python); TILEC_KERNELS: the kernel
library (default: the checkout's kernels.tl)."""
import importlib
import itertools
import os
import random
import sys

import pytest

torch = pytest.importorskip("torch")

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))
import tilec.transpose as TR  # noqa: E402
from tilec import quant as Q  # noqa: E402
from tilec import torch as R  # noqa: E402
from emu_math import cuda_math  # noqa: E402
from tilec.testing import (assert_equal, calc_diff, check_bias, clamp_abs_ratio, expand_rows,  # noqa: E402
                           generate_e5m6_inputs, generate_fused_mapping, generate_rand_float)
RQ = importlib.import_module("tilec.torch.cast")  # the module; tilec.torch.cast is the function

F8 = torch.float8_e4m3fn
DT = {"bf16": torch.bfloat16, "f32": torch.float32}
FLAGS = [(False, False, False), (False, True, False), (True, False, False), (True, True, True)]  # (col, round, packed)
# values spread over the cases of a grid by rotate() (a value listed twice comes twice as often)
DTS = ["bf16", "f32"]
HS = [576, 640]
TS = [67, 67, 1, 0]


def rotate(cases, *factors):
    """Each case of `cases` extended by one value of every factor: each factor's values are
    repeated to the number of cases and shuffled with a fixed seed, so that every value occurs
    about equally often and no factor stays tied to another or to the grid's structure."""
    rng = random.Random(len(cases))
    columns = []
    for f in factors:
        vals = (list(f) * (len(cases) // len(f) + 1))[:len(cases)]
        rng.shuffle(vals)
        columns.append(vals)
    return [(c if isinstance(c, tuple) else (c,)) + tuple(col[i] for col in columns) for i, c in enumerate(cases)]


def sample(t, h, dtype, scale=1.0):
    """randn rows with, where there are enough rows, a row of zeros (the amax clamp), a row of
    negative zeros, a row far below the clamp and a row of large values."""
    x = torch.randn((t, h)) * scale
    if t > 4:
        x[1] = 0.0
        x[2] = -0.0
        x[3] *= 1e-30
        x[4] *= 3000.0
    return x.to(dtype)


def kw(flags):
    col, rnd, packed = flags
    return dict(use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)


def fid(flags):
    return "col%d-round%d-packed%d" % flags


# ---- per-token casts (§2.1-§2.4) -------------------------------------------------------------

PT_CASES = rotate(list(itertools.product(["e4m3", "e2m1"], [16, 32, 64, 128, "H"], FLAGS)), DTS, HS, TS)


@pytest.mark.parametrize("fmt, n_mode, flags, dt, h, t", PT_CASES,
                         ids=lambda v: fid(v) if isinstance(v, tuple) else str(v))
def test_per_token_cast(fmt, n_mode, flags, dt, h, t):
    n = h if n_mode == "H" else n_mode
    x = sample(t, h, DT[dt])
    out, sf = Q.per_token_cast(x, fmt, n, **kw(flags))
    ref, ref_sf = R.cast(x, fmt, (1, n), **kw(flags))
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    if t > 1:
        check_bias(R.cast_back((out, sf), "fp32", (1, n)), x.float())
    if n_mode != "H":  # the scale-only and precomputed-scale variants share the kernel
        assert_equal(Q.per_token_cast_with_sf_only(x, fmt, n, **kw(flags)), ref_sf)
        if not flags[0]:
            got = Q.per_token_cast_with_precomputed_sf(x, fmt, n, sf, round_sf=flags[1])
            assert_equal(got, R.cast(x, fmt, (1, n), sf=sf))


@pytest.mark.parametrize("dt", ["bf16", "f32"])
@pytest.mark.parametrize("fmt, n", [("e4m3", 128), ("e2m1", 32), ("e5m6", 576)])
def test_per_token_cast_strided_rows(fmt, n, dt):
    """Row strides other than H (2H + 8 and H + 4 elements) give the contiguous input's result."""
    for pitch in (2 * 576 + 8, 576 + 4):
        base = sample(67, pitch, DT[dt])
        x = base[:, :576]
        got = Q.per_token_cast(x, fmt, n)
        want = Q.per_token_cast(x.contiguous(), fmt, n)
        assert_equal(got[0], want[0])
        assert_equal(got[1], want[1])
        if fmt != "e5m6":
            assert_equal(got[0], R.cast(x, fmt, (1, n))[0])


QIN_CASES = rotate(list(itertools.product(["e4m3", "e2m1"], [(128, 128), (32, 32), (1, 32)], [16, 32, 128],
                                          ["e4m3", "e2m1"])),
                   [FLAGS[1], FLAGS[3], FLAGS[0]], [FLAGS[1], FLAGS[3], FLAGS[2]], TS)


@pytest.mark.parametrize("in_fmt, xbs, n, fmt, flags, in_flags, t", QIN_CASES,
                         ids=lambda v: fid(v) if isinstance(v, tuple) and len(v) == 3 else str(v))
def test_per_token_cast_quant_input(in_fmt, xbs, n, fmt, flags, in_flags, t):
    """QuantTensor input (e4m3 or packed e2m1 data, its scales in any of the three layouts, power
    of two as in the spec's tests), re-quantised per token."""
    h = 576
    in_kw = kw(in_flags)
    in_kw["round_sf"] = True
    xq = R.cast(sample(t, h, torch.bfloat16), in_fmt, xbs, **in_kw)
    out, sf = Q.per_token_cast(xq, fmt, n, x_block_size=xbs, **kw(flags))
    ref, ref_sf = R.cast(xq, fmt, (1, n), x_block_size=xbs, **kw(flags))
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("in_fmt", ["e4m3", "e2m1"])
def test_per_token_cast_quant_input_strided_rows(in_fmt):
    """QuantTensor data that is a column slice of a wider tensor (row stride 2H, in bytes for FP4)."""
    wide = R.cast(sample(67, 2 * 576, torch.bfloat16), in_fmt, (1, 32), round_sf=True)
    xq = (wide[0][:, :576 // (2 if in_fmt == "e2m1" else 1)], wide[1][:, :18])
    out, sf = Q.per_token_cast(xq, "e4m3", 128, x_block_size=(1, 32), round_sf=True)
    ref, ref_sf = R.cast(xq, "e4m3", (1, 128), x_block_size=(1, 32), round_sf=True)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
def test_per_token_cast_quant_input_any_scale(fmt):
    """Input scales that are not powers of two (round_sf=False on both sides): spec §2.1 asks for
    the reference's order of the products, (q * isf) * sf_inv."""
    xq = R.cast(sample(67, 640, torch.float32), "e4m3", (1, 128))
    out, sf = Q.per_token_cast(xq, fmt, 64, x_block_size=(1, 128))
    ref, ref_sf = R.cast(xq, fmt, (1, 64), x_block_size=(1, 128))
    assert_equal(sf, ref_sf)
    assert_equal(out, ref)


@pytest.mark.parametrize("flags", FLAGS, ids=fid)
@pytest.mark.parametrize("dt, h, t", [("bf16", 576, 67), ("f32", 640, 67), ("bf16", 640, 1), ("f32", 576, 0)])
def test_e5m6_and_cast_back(dt, h, t, flags):
    """E5M6 per-row cast (random input and the three subnormal / min-normal inputs of the spec)
    and its dequantisation to bf16 and f32."""
    for i, x in enumerate(generate_e5m6_inputs((t, h), DT[dt], device="cpu")):
        out, sf = Q.per_token_cast(x, "e5m6", h, **kw(flags))
        ref, ref_sf = R.cast_to_e5m6(x, h, **kw(flags))
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)
        for ofmt in ("bf16", "fp32"):
            back = Q.cast_back((out, sf), ofmt, (1, h), x_special_fmt="e5m6")
            assert_equal(back, R.cast_back_from_e5m6((out, sf), ofmt, (1, h)))
            if t:
                assert calc_diff(x, back) < (1e-4 if i == 0 else 5e-6)


# ---- per-block casts (§2.5-§2.8) -------------------------------------------------------------

PB_CASES = rotate(list(itertools.product(["e4m3", "e2m1"], [(32, 32), (32, 128), (128, 32), (128, 128)], FLAGS)),
                  DTS, HS, TS)


@pytest.mark.parametrize("fmt, block, flags, dt, h, t", PB_CASES,
                         ids=lambda v: fid(v) if isinstance(v, tuple) and len(v) == 3 else str(v))
def test_per_block_cast(fmt, block, flags, dt, h, t):
    x = sample(t, h, DT[dt])
    out, sf = Q.per_block_cast(x, fmt, block, **kw(flags))
    ref, ref_sf = R.cast(x, fmt, block, **kw(flags))
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    if t > 1:
        check_bias(R.cast_back((out, sf), "fp32", block), x.float())
    if dt == "bf16":  # the variants share the kernel: one input type
        assert_equal(Q.per_block_cast_with_sf_only(x, fmt, block, **kw(flags)), ref_sf)
        if not flags[0]:
            got = Q.per_block_cast_with_precomputed_sf(x, fmt, block, sf, round_sf=flags[1])
            assert_equal(got, R.cast(x, fmt, block, sf=sf))


LOSSLESS = rotate(list(itertools.product([(1, 32), (32, 32)], [(1, 128), (32, 32), (128, 128)],
                                         [FLAGS[1], FLAGS[2], FLAGS[3]])),
                  [FLAGS[1], FLAGS[3], FLAGS[2]], HS, TS)


@pytest.mark.parametrize("in_block, out_block, out_flags, in_flags, h, t",
                         [c for c in LOSSLESS if c[1][0] % c[0][0] == 0 and c[1][1] % c[0][1] == 0],
                         ids=lambda v: fid(v) if isinstance(v, tuple) and len(v) == 3 else str(v))
def test_per_block_cast_lossless(in_block, out_block, out_flags, in_flags, h, t):
    """FP4 with fine power-of-two scales to FP8 with coarser ones: every dequantised value is
    unchanged (the spec's check), and the scales are 2^(max input exponent - 6)."""
    x = clamp_abs_ratio(generate_rand_float((t, h), device="cpu")) if t else torch.zeros((0, h))
    in_kw = kw(in_flags)
    in_kw["round_sf"] = True
    xq = R.cast(x, "e2m1", in_block, **in_kw)
    out = Q.per_block_cast_lossless(xq, "e4m3", in_block, out_block, **kw(out_flags))
    assert out[0].shape == (t, h) and out[0].dtype == F8
    assert_equal(R.cast_back(out, "fp32", out_block), R.cast_back(xq, "fp32", in_block))
    # the output scale: from the input exponents, max over each output block, minus 6
    ein = (RQ._decode_sf(xq[1], (h + in_block[1] - 1) // in_block[1]).view(torch.int32) >> 23)
    ein = RQ._expand(ein, *in_block, t, h).float()
    nm, nk = (t + out_block[0] - 1) // out_block[0], (h + out_block[1] - 1) // out_block[1]
    pad = torch.zeros((nm * out_block[0], nk * out_block[1]))
    pad[:t, :h] = ein
    emax = pad.view(nm, out_block[0], nk, out_block[1]).amax(dim=(1, 3)).int()
    want = (torch.clamp(emax - 6, min=0) << 23).view(torch.float32)
    assert torch.equal(RQ._decode_sf(out[1], nk).view(torch.int32), want.view(torch.int32))
    if out[1].dtype == torch.int32:   # packed: the bytes past the last block column are zeros
        words = torch.empty(out[1].shape, dtype=torch.int32).copy_(out[1])
        assert not words.view(torch.uint8).view(words.shape[0], -1)[:, nk:].any()


# ---- dequantisation (§2.9-§2.10) -------------------------------------------------------------

CB_CASES = rotate(list(itertools.product(["e4m3", "e2m1"], [(1, 128), (1, "H"), (128, 1), (128, 128), (1, 32)],
                                         FLAGS)),
                  ["bf16", "fp32"], HS, TS)


@pytest.mark.parametrize("fmt, block, flags, ofmt, h, t", CB_CASES,
                         ids=lambda v: fid(v) if isinstance(v, tuple) and len(v) == 3 else str(v))
def test_cast_back(fmt, block, flags, ofmt, h, t):
    block = (block[0], h if block[1] == "H" else block[1])
    x = sample(t, h, torch.float32)
    xq = R.cast(x, fmt, block, **kw(flags))  # round_sf=False: scales that are not powers of two
    back = Q.cast_back(xq, ofmt, block)
    assert_equal(back, R.cast_back(xq, ofmt, block))
    if block[0] == 1:
        assert_equal(Q.per_token_cast_back(xq, ofmt, block[1]), back)
    if t > 1:
        assert calc_diff(x, back) < (2e-2 if fmt == "e2m1" else 1e-3)


# ---- per-channel casts (§2.12-§2.14) ---------------------------------------------------------

@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("dt, h, t", [("bf16", 576, 256), ("f32", 640, 128), ("f32", 576, 0)])
def test_per_channel_cast(dt, h, t, rnd):
    x = sample(t, h, DT[dt])
    out, sf = Q.per_channel_cast(x, "e4m3", 128, round_sf=rnd)
    ref, ref_sf = R.cast(x, "e4m3", (128, 1), round_sf=rnd)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    if t:
        check_bias(R.cast_back((out, sf), "fp32", (128, 1)), x.float())


# (input, gathered rows: None or (tokens, topk, experts, alignment), round_sf)
FUSED = rotate(list(itertools.product(["bf16", "f32", "e4m3"], [None, (23, 3, 5, 16), (40, 4, 7, 128), "empty"],
                                      [False, True])),
               HS)


@pytest.mark.parametrize("src, moe, rnd, h", FUSED, ids=str)
def test_per_channel_cast_fused(src, moe, rnd, h):
    """Optional row gather (-1: zero rows; gathered row counts that leave the last 128-row block
    partial) and optional per-token FP8 input with non-power-of-two scales."""
    t = 128 if moe is None else 40
    h = 640 if src == "e4m3" else h  # FP8 input: hidden % 128 == 0
    x = sample(t, h, torch.float32 if src == "f32" else torch.bfloat16)
    pos = None
    if moe == "empty":
        pos = torch.zeros((0,), dtype=torch.int32)
    elif moe is not None:
        pos, _, _, _ = generate_fused_mapping(*moe, device="cpu")
        t = moe[0]
        x = x[:t]
    xin = Q.per_token_cast(x, "e4m3", 128) if src == "e4m3" else x
    n = 128 if src == "e4m3" else None
    out, sf = Q.per_channel_cast_fused(xin, "e4m3", 128, round_sf=rnd, num_per_channels=n, pos_to_token=pos)
    ref, ref_sf = R.per_channel_cast_fused(xin, 128, n, rnd, pos)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    if pos is not None and pos.numel() and src != "e4m3":  # the gather equals casting the gathered rows
        ref2, ref2_sf = R.cast(expand_rows(x, pos).float(), "e4m3", (128, 1), round_sf=rnd)
        assert_equal(out, ref2)
        assert_equal(sf, ref2_sf)


@pytest.mark.parametrize("npt", [32, 128])
@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("h, t", [(576, 256), (640, 128), (640, 384), (576, 0)])
def test_per_channel_cast_and_transpose(h, t, rnd, npt):
    x = sample(t, h, torch.bfloat16)
    out, sf = Q.per_channel_cast_and_transpose(x, "e4m3", npt, round_sf=rnd)
    ref, ref_sf = R.cast(x, "e4m3", (npt, 1), round_sf=rnd)
    assert_equal(out, ref.T.contiguous())
    assert_equal(sf, ref_sf)


# ---- SwiGLU fused casts (§2.15-§2.17) --------------------------------------------------------

SWP = rotate(list(itertools.product([32, 128], [False, True], [False, True], [None, 10.0, 0.5])),
             [576, 640], [128, 256, 128, 0])


def run_exhaustive_check(kernel, generics, n, *inputs, scalars=()):
    """Launches a checking kernel of tests/gpu/math_exhaustive.tl on the emulator with its counters
    (bad: i32[n], zeros) and first failing inputs (lo: u32[n], all ones) after `inputs`; returns
    (bad, lo) as lists of Python ints."""
    from tilec import _runtime
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu", "math_exhaustive.tl")
    bad = torch.zeros(n, dtype=torch.int32)
    lo = torch.full((n,), -1, dtype=torch.int32)
    _runtime.runtime(_runtime.CPU).open(source=src).kernel(kernel, generics).launch(*inputs, bad, lo.view(torch.uint32),
                                                                                   *scalars, stream=0)
    return bad.tolist(), [int(v) & 0xFFFFFFFF for v in lo.tolist()]


def test_silu_lut_every_bf16():
    # the per-channel SwiGLU's SiLU table (built by the kernel silu_table) read as the kernel reads
    # it, against silu() on all 65536 bf16 values
    from tilec.quant.common import silu_lut
    bad, lo = run_exhaustive_check("silu_lut_exhaustive", (), 1, silu_lut(torch.device("cpu")))
    assert bad == [0], "bf16 values whose table SiLU differs: %d (first 0x%04x)" % (bad[0], lo[0] & 0xFFFF)


def test_div_by_format_max_sample():
    # sf_pair's division by 448 / 6 / 65024 (dsl/quant.tl) against the IEEE division on 16 Mi f32
    # bit patterns spread over the whole range (every f32 on the H200: tests/gpu/test_math_exhaustive.py)
    bad, lo = run_exhaustive_check("div_by_format_max_exhaustive", ("G=256",), 3, scalars=(257,))
    assert bad == [0, 0, 0], "inputs that differ: /448 %d (first 0x%08x), /6 %d (first 0x%08x), " \
        "/65024 %d (first 0x%08x)" % (bad[0], lo[0], bad[1], lo[1], bad[2], lo[2])


@pytest.mark.parametrize("npt, rnd, without_transpose, clamp, hh, t", SWP, ids=str)
def test_swiglu_forward_per_channel(npt, rnd, without_transpose, clamp, hh, t):
    x = sample(t, 2 * hh, torch.bfloat16, scale=4.0)  # |x| > 10 for a few elements: both clamps act
    out, sf = Q.swiglu_forward_and_per_channel_cast_and_transpose(x, "e4m3", npt, round_sf=rnd,
                                                                  without_transpose=without_transpose,
                                                                  swiglu_clamp_value=clamp)
    with cuda_math():
        act = R.swiglu_forward(x, swiglu_clamp_value=clamp).bfloat16()
    ref, ref_sf = R.cast(act, "e4m3", (npt, 1), round_sf=rnd)
    assert_equal(out, ref if without_transpose else ref.T.contiguous())
    assert_equal(sf, ref_sf)


def _swt_cases():
    out = []
    for n_mode, flags, weights, pte, clamp in itertools.product(
            [128, "H"], [FLAGS[1], FLAGS[3], FLAGS[0]], [False, True], [False, True],
            [None, (10.0, False), (10.0, True), (0.5, True)]):
        if (flags[2] and weights) or (flags[0] and n_mode == "H"):
            continue  # not in TileKernels' grid
        out.append((n_mode, flags, weights, pte, clamp))
    return rotate(out, DTS, [640, 384])


@pytest.mark.parametrize("n_mode, flags, weights, pte, clamp, dt, hh", _swt_cases(),
                         ids=lambda v: fid(v) if isinstance(v, tuple) and len(v) == 3 else str(v))
def test_swiglu_forward_per_token(n_mode, flags, weights, pte, clamp, dt, hh):
    """Rows of an MoE layout (padding rows -1), top-k weights (negative ones included), rows
    skipped by pos_to_expert, clamps with and without hit counting."""
    n = hh if n_mode == "H" else 128
    _, ptt, p2e, _ = generate_fused_mapping(23, 3, 5, 16, device="cpu")
    # padding rows hold data too: skipped with pos_to_expert (and not counted), otherwise weight 0
    x = sample(ptt.numel(), 2 * hh, DT[dt], scale=4.0)
    skip = p2e < 0
    w = torch.randn((23, 3))
    cval, counting = clamp if clamp is not None else (None, False)
    cnt = torch.full((3,), 5, dtype=torch.int64) if counting else None
    out, sf = Q.swiglu_forward_and_per_token_cast(x, "e4m3", n, ptt if weights else None, w if weights else None,
                                                  p2e if pte else None, swiglu_clamp_value=cval, clamped_count=cnt,
                                                  **kw(flags))
    ref_cnt = torch.full((3,), 5, dtype=torch.int64) if counting else None
    x_ref = x.clone()
    if pte:
        x_ref[skip] = 0.0  # the reference counts every row; zero rows hit no clamp
    with cuda_math():
        act = R.swiglu_forward(x_ref, ptt if weights else None, w if weights else None, cval, ref_cnt)
    ref, ref_sf = R.cast(act, "e4m3", (1, n), **kw(flags))
    keep = ~skip  # rows without an expert: the spec leaves them unspecified (TileKernels: unwritten)
    assert_equal(out[keep], ref[keep])
    assert sf.shape == ref_sf.shape and sf.stride() == ref_sf.stride() and sf.dtype == ref_sf.dtype
    assert torch.equal(sf[keep], ref_sf[keep])
    if pte:  # ours writes zeros there
        assert not out[skip].view(torch.uint8).any()
    if counting:
        assert torch.equal(cnt, ref_cnt)
    if not pte:
        assert_equal(out, ref)


def test_swiglu_forward_per_token_sf_clamp_min(monkeypatch):
    """sf_clamp_min replaces the 1e-4 amax clamp (rows of zeros and tiny rows show it)."""
    x = sample(40, 2 * 384, torch.bfloat16)
    x[5:9] *= 1e-3
    x[10] = 0.0
    # 0x03000011: an amax whose quotient by 448 is subnormal and which the corrected product of
    # div_by_format_max rounds one ulp low (an exhaustive host check), so the wrapper must keep the
    # IEEE division below 448 * 2^-126
    tiny = torch.tensor([0x03000011], dtype=torch.int32).view(torch.float32).item()
    for cmin, rnd in ((1e-2, True), (1e-6, True), (tiny, False)):
        out, sf = Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, round_sf=rnd, sf_clamp_min=cmin)
        with cuda_math():
            act = R.swiglu_forward(x)
        monkeypatch.setitem(RQ._CMIN, "e4m3", cmin)
        ref, ref_sf = R.cast(act, "e4m3", (1, 128), round_sf=rnd)
        monkeypatch.undo()
        live = act.abs().amax(dim=1) > 0   # a zero row's inverse scale is 448 / tiny = inf: NaN data
        assert_equal(out[live], ref[live])
        assert_equal(sf, ref_sf)


SWB = rotate(list(itertools.product([32, 128], [False, True], [None, 10.0, 0.5])), [576, 640, 256])


@pytest.mark.parametrize("n, rnd, clamp, hh", [c[:3] + ((c[3] if c[3] % c[0] == 0 else 640),) for c in SWB], ids=str)
def test_swiglu_backward(n, rnd, clamp, hh):
    """The backward from FP8 input with non-power-of-two scales: bf16 output and gradient, FP8
    gradient and scales byte for byte (signed zeros included); weight gradients within 1e-4."""
    t, topk = 19, 3
    torch.manual_seed(n + hh + int(rnd) + int(clamp or 0))
    pos_to_token, ptt, _, ttp = generate_fused_mapping(t, topk, 4, 16, device="cpu")
    x = R.cast(expand_rows(sample(t, 2 * hh, torch.bfloat16, scale=4.0), pos_to_token), "e4m3", (1, n))
    N = ptt.numel()
    grad = torch.randn((N, hh)).bfloat16()
    weights = torch.rand((t, topk))
    weights[0, 0] = 0.0  # a zero weight: signed zeros in the gradients
    out, (gq, gsf), xg, wg = Q.swiglu_backward_and_per_token_cast(x, grad, weights, ptt, ttp, n, rnd, clamp)
    with cuda_math():
        r_out, r_xg, r_wg = R.swiglu_backward(x, grad, weights, ptt, ttp, n, clamp)
    r_q, r_sf = R.cast(r_xg, "e4m3", (1, n), round_sf=rnd)
    assert_equal(out, r_out.bfloat16())
    assert_equal(xg, r_xg.bfloat16())
    assert_equal(gq, r_q)
    assert_equal(gsf, r_sf)
    # within 1e-4, widened by the fp32 summation bound hh * 2^-24 * sum|g * act| of the row: the
    # row of large values sums terms of 1e8 whose order differs between the kernel and torch
    act, _, _ = R.swiglu_backward(x, grad, torch.ones_like(weights), ptt, ttp, n, clamp)   # weight 1: out = act
    r_abs = torch.zeros_like(r_wg)
    mapped = ptt >= 0
    r_abs.view(-1)[ptt[mapped].long()] = (grad.float().abs() * act.abs()).sum(1)[mapped]
    tol = 1e-4 + 1e-4 * r_wg.abs() + hh * 2.0 ** -24 * r_abs
    assert ((wg - r_wg).abs() <= tol).all(), (wg - r_wg).abs().max()


def test_swiglu_weight_index_past_the_weights():
    """A pos_to_token_topk entry past num_tokens x K (a corrupt mapping: it lives on the device, so
    the wrapper cannot check it without a sync) reads no weight: the row is weighted 0, as for -1,
    and the backward adds nothing to weight_grad for it, instead of reading or writing out of
    bounds."""
    t, topk, hh = 7, 2, 256
    _, ptt, _, ttp = generate_fused_mapping(t, topk, 2, 16, device="cpu")
    bad = ptt.clone()
    live = (ptt >= 0).nonzero()[:, 0]
    bad[live[0]] = t * topk + 5
    as_pad = ptt.clone()
    as_pad[live[0]] = -1
    x = sample(ptt.numel(), 2 * hh, torch.bfloat16, scale=4.0)
    w = torch.rand((t, topk))
    got = Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, bad, w)
    want = Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, as_pad, w)
    assert_equal(got[0], want[0])
    assert torch.equal(got[1], want[1])
    xq = R.cast(x, "e4m3", (1, 128))
    grad = torch.randn((ptt.numel(), hh)).bfloat16()
    got = Q.swiglu_backward_and_per_token_cast(xq, grad, w, bad, ttp, 128, True, None)
    want = Q.swiglu_backward_and_per_token_cast(xq, grad, w, as_pad, ttp, 128, True, None)
    for a, b in zip([got[0], got[1][0], got[1][1], got[2], got[3]], [want[0], want[1][0], want[1][1], want[2], want[3]]):
        assert_equal(a, b)


def test_swiglu_empty():
    """N = 0: no launch, the outputs' shapes (weight_grad all zeros)."""
    x = torch.zeros((0, 2 * 384), dtype=torch.bfloat16)
    out, sf = Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, use_tma_aligned_col_major_sf=True, round_sf=True,
                                                  use_packed_ue8m0=True)
    assert out.shape == (0, 384) and sf.shape == (0, 1) and sf.dtype == torch.int32
    out, sf = Q.swiglu_forward_and_per_channel_cast_and_transpose(x, "e4m3", 32)
    assert out.shape == (384, 0) and sf.shape == (0, 384)
    xq = (torch.zeros((0, 768), dtype=F8), torch.zeros((0, 6)))
    w = torch.rand((5, 2))
    ttp = torch.full((5, 2), -1, dtype=torch.int32)
    out, (gq, gsf), xg, wg = Q.swiglu_backward_and_per_token_cast(xq, torch.zeros((0, 384), dtype=torch.bfloat16), w,
                                                                  torch.zeros((0,), dtype=torch.int32), ttp, 128)
    assert out.shape == (0, 384) and gq.shape == (0, 768) and gsf.shape == (0, 6) and xg.shape == (0, 768)
    assert_equal(wg, torch.zeros((5, 2)))


# ---- FP4 unpacking (§2.18) -------------------------------------------------------------------

def test_unpack_from_e2m1fn_x2():
    table = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    b = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(16, 16)
    for src in (b, b.view(torch.int8)):
        v = Q.unpack_from_e2m1fn_x2(src)
        assert v.shape == (16, 32) and v.dtype == torch.float32
        for i in range(256):
            for half, code in ((0, i & 0xF), (1, i >> 4)):
                want = torch.tensor((-1.0 if code & 8 else 1.0) * table[code & 7])
                got = v.view(-1)[2 * i + half]
                assert got.view(torch.int32) == want.view(torch.int32)  # -0.0 for code 8
    assert Q.unpack_from_e2m1fn_x2(b, torch.bfloat16).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="^unpack_from_e2m1fn_x2: x must be int8 or uint8"):
        Q.unpack_from_e2m1fn_x2(torch.zeros(4, dtype=torch.int16))


# ---- transposes (§2.19-§2.20) ----------------------------------------------------------------

# 1, 2 and 4-byte types: both float8 formats and int8 for bytes
TR_CASES = rotate(list(itertools.product([F8, torch.float8_e5m2, torch.int8, torch.bfloat16, torch.float16,
                                          torch.float32, torch.int32],
                                         [(64, 576), (192, 640), (128, 64)])),
                  ["contiguous", "2N", "N+4"])


@pytest.mark.parametrize("dtype, mn, rows", TR_CASES, ids=str)
def test_transpose(dtype, mn, rows):
    m, n = mn
    pitch = {"contiguous": n, "2N": 2 * n, "N+4": n + 4}[rows]
    base = torch.randint(-128, 128, (m, pitch), dtype=torch.int32)
    if dtype.is_floating_point:
        base = (torch.randn((m, pitch)) * 100).clamp(-448, 448).to(dtype)   # within e4m3's range
    else:
        base = base.to(dtype)
    x = base[:, :n]
    assert_equal(TR.transpose(x), x.T.contiguous())


@pytest.mark.parametrize("dtype, b, m, n", [(F8, 3, 64, 640), (torch.int8, 2, 128, 64), (torch.bfloat16, 2, 192, 576),
                                            (torch.float32, 3, 128, 192), (torch.bfloat16, 1, 64, 64)], ids=str)
def test_batched_transpose(dtype, b, m, n):
    lo, hi = (-448, 448) if dtype.is_floating_point else (-128, 127)   # within e4m3's and int8's ranges
    x = (torch.randn((b, m, n)) * 100).clamp(lo, hi).to(dtype)
    assert_equal(TR.batched_transpose(x), x.transpose(1, 2).contiguous())


def test_transpose_empty():
    for shape in ((0, 64), (64, 0)):
        y = TR.transpose(torch.zeros(shape, dtype=torch.bfloat16))
        assert y.shape == shape[::-1]
    for shape in ((0, 64, 64), (2, 0, 64), (2, 64, 0)):
        y = TR.batched_transpose(torch.zeros(shape, dtype=torch.float32))
        assert y.shape == (shape[0], shape[2], shape[1])
