"""The PyTorch references of the Engram and mHC families (tilec.torch.engram, tilec.torch.mhc) on
the CPU: small cases computed by hand from the spec (moe-engram-mhc.md §2, §3, §5.3), the
invariants it states, and its backward formulas (§2.5, §3.1-§3.7) against autograd through the
forward references in float64. The kernel tests compare with these references, so they must be
right on their own."""
import math
import os
import random
import struct
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")))

import tilec.torch as ref  # noqa: E402
from tilec.torch import engram, mhc  # noqa: E402

F64 = torch.float64


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def f32_bits(x: float) -> int:
    return struct.unpack("<i", struct.pack("<f", x))[0]


def from_bits(b: int) -> float:
    return struct.unpack("<f", struct.pack("<i", b))[0]


def sig(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(*shape, seed: int, dtype=F64) -> torch.Tensor:
    return torch.randn(*shape, generator=gen(seed), dtype=F64).to(dtype)


def leaf(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().requires_grad_(True)


def close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-12) -> None:
    torch.testing.assert_close(a, b, rtol=tol, atol=tol)


# ---- Engram (§2.1, §2.4, §2.5) ------------------------------------------------------------------

def test_exports_mirror_tilekernels():
    assert all(getattr(ref, n) is getattr(mhc, n) for n in (
        "expand_to_mhc_ref", "sinkhorn_normalize_ref", "mhc_head_compute_mix_ref", "mhc_pre_split_mixes_ref",
        "mhc_pre_apply_mix_ref", "mhc_post_ref", "mhc_pre_norm_fn_ref"))
    assert not any(hasattr(ref, n) for n in ("make_offsets", "engram_hash_ref", "engram_gate_ref"))


def test_make_offsets_by_hand():
    vocab = torch.tensor([[[3, 5], [7, 11]], [[1, 2], [3, 4]]], dtype=torch.int32)    # (L=2, M-1=2, B=2)
    off = engram.make_offsets(vocab)
    assert off.dtype == torch.int32 and off.tolist() == [[0, 3, 8, 15], [0, 1, 3, 6]]


def test_engram_hash_by_hand():
    # M = 2, B = 1: h = (-3 * 1) ^ (2 * 1) = -1; floormod(-1, 7) = 6 (C's % gives -1), plus offset 10
    ids = torch.tensor([[-3, 2]], dtype=torch.int32)
    out = engram.engram_hash_ref(ids, torch.tensor([[1, 1]]), torch.tensor([[[7]]], dtype=torch.int32),
                                 torch.tensor([[10]], dtype=torch.int32))
    assert out.dtype == torch.int32 and out.shape == (1, 1, 1) and out.tolist() == [[[16]]]
    # int64 wrap-around: 2 * 2^62 = 2^63 wraps to -2^63, floormod(-2^63, 10) = 2; 4 * 2^62 wraps to 0
    mult = torch.tensor([[2 ** 62, 0]])
    vocab = torch.tensor([[[10]]], dtype=torch.int32)
    zero = torch.zeros((1, 1), dtype=torch.int32)
    ids = torch.tensor([[2, 0], [4, 0], [1, 0]], dtype=torch.int32)
    assert engram.engram_hash_ref(ids, mult, vocab, zero).tolist() == [[[2], [0], [(2 ** 62) % 10]]]
    # three orders: h1 = id0*m0 ^ id1*m1 for the first B tables, h2 = h1 ^ id2*m2 for the next B
    ids = torch.tensor([[5, 6, 7]], dtype=torch.int32)
    mult = torch.tensor([[3, 10, 100]])
    vocab = torch.tensor([[[4, 9], [5, 1000]]], dtype=torch.int32)
    off = engram.make_offsets(vocab)
    h1, h2 = 15 ^ 60, 15 ^ 60 ^ 700
    assert engram.engram_hash_ref(ids, mult, vocab, off).tolist() == [[[h1 % 4, 4 + h1 % 9, 13 + h2 % 5,
                                                                       18 + h2 % 1000]]]


def _hash_model(ids, mult, vocab, offsets):
    """§2.1 on Python integers: products reduced to signed 64 bits, floor modulo."""
    def wrap(v, bits):
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >> (bits - 1) else v
    L, M = len(mult), len(mult[0])
    B = len(vocab[0][0])
    out = []
    for l in range(L):
        rows = []
        for t in ids:
            h, row = 0, []
            for n in range(M):
                h = wrap(h ^ wrap(t[n] * mult[l][n], 64), 64)
                if n >= 1:
                    for j in range(B):
                        row.append(wrap(h % vocab[l][n - 1][j] + offsets[l][(n - 1) * B + j], 32))
            rows.append(row)
        out.append(rows)
    return out


def test_engram_hash_random_against_integers():
    rng = random.Random(7)
    L, M, B, T = 2, 3, 4, 50
    ids = [[rng.randrange(-2 ** 31, 2 ** 31) for _ in range(M)] for _ in range(T)]
    ids[0] = [2 ** 31 - 1, -2 ** 31, -1]
    mult = [[rng.randrange(-2 ** 63, 2 ** 63) for _ in range(M)] for _ in range(L)]
    vocab = [[[rng.randrange(1, 2 ** 31) for _ in range(B)] for _ in range(M - 1)] for _ in range(L)]
    vocab[0][0][0] = 1
    vt = torch.tensor(vocab, dtype=torch.int32)
    off = engram.make_offsets(vt)
    got = engram.engram_hash_ref(torch.tensor(ids, dtype=torch.int32), torch.tensor(mult), vt, off)
    assert got.is_contiguous() and got.shape == (L, T, (M - 1) * B)
    assert got.tolist() == _hash_model(ids, mult, vocab, off.tolist())
    empty = engram.engram_hash_ref(torch.zeros((0, M), dtype=torch.int32), torch.tensor(mult), vt, off)
    assert empty.shape == (L, 0, (M - 1) * B) and empty.dtype == torch.int32


def _gate_inputs(w, x_rows, k_rows, v_rows):
    """bf16 x, k (1, hc, D), v (1, D), f32 weights wh = w, we = 1."""
    x = torch.tensor([x_rows], dtype=torch.bfloat16)
    k = torch.tensor([k_rows], dtype=torch.bfloat16)
    v = torch.tensor([v_rows], dtype=torch.bfloat16)
    wh = torch.tensor(w, dtype=torch.float32)
    return x, k, v, wh, torch.ones_like(wh)


def test_engram_gate_by_hand():
    # x = k = c * 1 over D = 4: rstd = 1/c, raw = D c^2 w, dot = sqrt(D) w; heads w = 2, -2, 1/8 and
    # an orthogonal k (dot 0 -> sign 0 -> g = 0.5); clamp 1: |dot| = 0.25 is clamped up to 1
    D = 4
    x, k, v, wh, we = _gate_inputs([[2.0] * D, [-2.0] * D, [0.125] * D, [1.0] * D],
                                   [[2.0] * D, [1.0] * D, [1.0] * D, [1.0] * D],
                                   [[2.0] * D, [1.0] * D, [1.0] * D, [1.0, -1.0, 1.0, -1.0]],
                                   [1.0, -1.0, 0.5, 0.0])
    out, raw, g, rx, rk = engram.engram_gate_ref(x, k, v, wh, we, 1.0, 1e-20, save_for_backward=True)
    assert raw.tolist() == [[32.0, -8.0, 0.5, 0.0]] and raw.dtype == torch.float32
    assert rx.tolist() == [[0.5, 1.0, 1.0, 1.0]] and rk.tolist() == [[0.5, 1.0, 1.0, 1.0]]
    want_g = [sig(2.0), sig(-2.0), sig(1.0), 0.5]
    close(g, torch.tensor([want_g]), 1e-7)
    assert out.dtype == torch.bfloat16 and out.shape == (1, 4, D)
    assert torch.equal(out[0], (x[0].float() + g[0, :, None] * v[0].float()).bfloat16())
    assert torch.equal(engram.engram_gate_ref(x, k, v, wh, we, 1.0, 1e-20), out)    # no-save output alone


def test_engram_gate_argument_order():
    # clamp_value before eps (§7.4). x = k = 1 over D = 4: rstd = rsqrt(1 + eps) = 1/2 for eps = 3,
    # dot = 4 / 4 / 2 = 1/2, clamped up to 100: g = sigmoid(10)
    D = 4
    x, k, v, wh, we = _gate_inputs([[1.0] * D], [[1.0] * D], [[1.0] * D], [1.0] * D)
    _, raw, g, rx, rk = engram.engram_gate_ref(x, k, v, wh, we, 100.0, 3.0, save_for_backward=True)
    assert (raw.item(), rx.item(), rk.item()) == (4.0, 0.5, 0.5) and abs(g.item() - sig(10.0)) < 1e-7


def _gate_inputs_f64(T, hc, D, seed):
    x = randn(T, hc, D, seed=seed)
    k = randn(T, hc, D, seed=seed + 1)
    v = randn(T, D, seed=seed + 2)
    wh = randn(hc, D, seed=seed + 3)
    we = randn(hc, D, seed=seed + 4)
    go = randn(T, hc, D, seed=seed + 5)
    return x, k, v, wh, we, go


def _gate_bwd_spec(go, x, k, v, wh, we, raw, g, rx, rk, clamp):
    """§2.5 per (t, h) in float64."""
    D = x.shape[-1]
    s = D ** -0.5
    wf = wh * we
    dldg = (go * v[:, None, :]).sum(-1)
    G = dldg * g * (1 - g) * 0.5 * torch.sqrt(s * rx * rk / raw.abs())
    G = torch.where(raw.abs() * s * rx * rk < clamp, torch.zeros_like(G), G)
    cx = (raw * rx ** 2 / D)[..., None]
    ck = (raw * rk ** 2 / D)[..., None]
    Gd = G[..., None]
    gx = go + Gd * (k * wf - x * cx)
    gk = Gd * (x * wf - k * ck)
    gv = (go * g[..., None]).sum(1)
    gwf = (Gd * x * k).sum(0)
    return gx, gk, gv, gwf * we, gwf * wh, G


def test_engram_gate_backward_matches_autograd():
    T, hc, D, eps = 6, 4, 32, 0.5                               # an eps large enough to matter
    x, k, v, wh, we, go = _gate_inputs_f64(T, hc, D, seed=11)
    with torch.no_grad():
        _, raw, _, rx, rk = engram.engram_gate_ref(x, k, v, wh, we, 0.0, eps, save_for_backward=True)
    dot = (raw * rx * rk * D ** -0.5).abs().flatten().sort().values
    clamp = float(dot[len(dot) // 2] + dot[len(dot) // 2 - 1]) / 2       # half the heads below the clamp
    ins = [leaf(t) for t in (x, k, v, wh, we)]
    out, raw, g, rx, rk = engram.engram_gate_ref(*ins, clamp, eps, save_for_backward=True)
    assert out.dtype == F64
    out.backward(go)
    want = _gate_bwd_spec(go, x, k, v, wh, we, raw.detach(), g.detach(), rx.detach(), rk.detach(), clamp)
    assert (want[-1] == 0).sum() == T * hc // 2
    for got, w in zip(ins, want[:5]):
        close(got.grad, w)


def test_engram_gate_f32_autograd_like_the_kernel_tests():
    # bf16 x, k, v and f32 weights, as TileKernels' backward test feeds the reference
    T, hc, D = 5, 4, 64
    x, k, v, wh, we, go = _gate_inputs_f64(T, hc, D, seed=21)
    ins = [leaf(x.bfloat16()), leaf(k.bfloat16()), leaf(v.bfloat16()), leaf(wh.float()), leaf(we.float())]
    out, *_ = engram.engram_gate_ref(*ins, 1e-6, 1e-20, save_for_backward=True)
    out.backward(go.bfloat16())
    with torch.no_grad():
        _, raw, g, rx, rk = engram.engram_gate_ref(*[t.detach().double() for t in ins], 1e-6, 1e-20,
                                                  save_for_backward=True)
    want = _gate_bwd_spec(go.bfloat16().double(), *[t.detach().double() for t in ins], raw, g, rx, rk, 1e-6)
    for got, w in zip(ins, want[:5]):
        assert got.grad.dtype == got.dtype
        assert ref_calc_diff(got.grad, w) < 1e-5


def ref_calc_diff(x, y):
    x, y = x.double(), y.double()
    den = (x * x + y * y).sum()
    return 0.0 if den == 0 else float(1 - 2 * (x * y).sum() / den)


# ---- round_to_tf32 (§3.7) -------------------------------------------------------------------------

def _tf32_nearest_away(x: float) -> float:
    """x to 10 fraction bits, to nearest, ties away from zero (f32 normals)."""
    if x == 0.0:
        return x
    _, e = math.frexp(abs(x))                  # |x| = frac * 2^e, frac in [0.5, 1)
    ulp = 2.0 ** (e - 11)
    return math.copysign(math.floor(abs(x) / ulp + 0.5) * ulp, x)


def test_round_to_tf32_bits_by_hand():
    cases = {
        0x3F800000: 0x3F801000,      # 1.0: the low 13 bits become 0x1000, the value read stays 1.0
        0x3F801000: 0x3F802000,      # 1 + 2^-11, a tie: away from zero to 1 + 2^-10 (even would keep 1)
        0x3F800FFF: 0x3F801FFF,      # just below the tie: the value read is 1.0
        0x3FFFF000: 0x40000000,      # a tie below 2: carries into the exponent, exactly 2.0
        -0x407FF000: -0x407FE000,    # -(1 + 2^-11) = 0xBF801000 -> 0xBF802000: the magnitude rounds the same
    }
    x = torch.tensor(list(cases), dtype=torch.int32).view(torch.float32)
    got = mhc.round_to_tf32(x)
    assert got.dtype == torch.float32 and got.view(torch.int32).tolist() == list(cases.values())
    read = (got.view(torch.int32) & ~0x1FFF).view(torch.float32).tolist()      # what a TF32 MMA reads
    assert read == [1.0, 1.0 + 2.0 ** -10, 1.0, 2.0, -(1.0 + 2.0 ** -10)]


def test_round_to_tf32_random_is_nearest_ties_away():
    rng = random.Random(3)
    vals = [f32(rng.choice((-1, 1)) * rng.uniform(1, 2) * 2.0 ** rng.randrange(-100, 100)) for _ in range(3000)]
    vals += [from_bits(rng.randrange(0x00800000, 0x7F000000) & ~0xFFF | 0x1000) for _ in range(500)]   # ties
    x = torch.tensor(vals, dtype=torch.float32)
    got = mhc.round_to_tf32(x)
    assert torch.equal(got.view(torch.int32), x.view(torch.int32) + 0x1000)
    read = (got.view(torch.int32) & ~0x1FFF).view(torch.float32).tolist()
    assert read == [_tf32_nearest_away(v) for v in vals]


# ---- expand_to_mhc (§3.1) ---------------------------------------------------------------------------

def test_expand_to_mhc_broadcast_and_backward():
    h = randn(2, 3, 40, seed=1).bfloat16()
    out = ref.expand_to_mhc_ref(h, 4)
    assert out.shape == (2, 3, 4, 40) and out.dtype == torch.bfloat16 and out.is_contiguous()
    assert all(torch.equal(out[:, :, j], h) for j in range(4))
    hd = leaf(h.double())
    go = randn(2, 3, 4, 40, seed=2)
    ref.expand_to_mhc_ref(hd, 4).backward(go)
    close(hd.grad, sum(go[:, :, j] for j in range(4)))        # §3.1: the streams' gradients summed


# ---- Sinkhorn (§3.2) --------------------------------------------------------------------------------

def test_sinkhorn_2x2_by_hand():
    x = torch.tensor([[0.0, math.log(3.0)], [0.0, 0.0]], dtype=F64)
    # softmax rows [1/4, 3/4], [1/2, 1/2]; column sums 3/4, 5/4
    close(ref.sinkhorn_normalize_ref(x, 1, 0.0), torch.tensor([[1 / 3, 3 / 5], [2 / 3, 2 / 5]], dtype=F64), 1e-15)
    # then rows 14/15, 16/15 and columns 55/56, 57/56
    close(ref.sinkhorn_normalize_ref(x, 2, 0.0), torch.tensor([[4 / 11, 12 / 19], [7 / 11, 7 / 19]], dtype=F64),
          1e-15)


def test_sinkhorn_eps_placement_by_hand():
    # zeros, eps 1/4: softmax 1/2 + eps = 3/4; columns 3/2 + eps -> 3/7; rows 6/7 + eps -> 12/31;
    # columns 24/31 + eps -> 48/127
    z = torch.zeros((2, 2), dtype=F64)
    close(ref.sinkhorn_normalize_ref(z, 1, 0.25), torch.full((2, 2), 3 / 7, dtype=F64), 1e-15)
    close(ref.sinkhorn_normalize_ref(z, 2, 0.25), torch.full((2, 2), 48 / 127, dtype=F64), 1e-15)


def test_sinkhorn_f32_order_of_operations():
    """4x4 matrices in scalar f32 arithmetic: sums in index order, division then + eps."""
    for seed in range(5, 25):
        x = randn(4, 4, seed=seed, dtype=torch.float32) * 3
        _sinkhorn_f32_by_hand(x, 3, f32(1e-6))


def _sinkhorn_f32_by_hand(x, repeat, eps):
    e = torch.exp(x - x.amax(-1, keepdim=True)).tolist()       # exp from torch, the rest by hand
    n = 4

    def rowsum(p, j):
        acc = p[j][0]
        for c in range(1, n):
            acc = f32(acc + p[j][c])
        return acc

    def colsum(p, c):
        acc = p[0][c]
        for j in range(1, n):
            acc = f32(acc + p[j][c])
        return acc

    p = [[f32(f32(e[j][c] / rowsum(e, j)) + eps) for c in range(n)] for j in range(n)]
    cs = [f32(colsum(p, c) + eps) for c in range(n)]
    p = [[f32(p[j][c] / cs[c]) for c in range(n)] for j in range(n)]
    for _ in range(repeat - 1):
        rs = [f32(rowsum(p, j) + eps) for j in range(n)]
        p = [[f32(p[j][c] / rs[j]) for c in range(n)] for j in range(n)]
        cs = [f32(colsum(p, c) + eps) for c in range(n)]
        p = [[f32(p[j][c] / cs[c]) for c in range(n)] for j in range(n)]
    got = ref.sinkhorn_normalize_ref(x, repeat, 1e-6)
    assert got.dtype == torch.float32 and got.tolist() == p


def test_sinkhorn_rows_and_columns_sum_to_one():
    x = randn(2, 8, 4, 4, seed=6, dtype=torch.float32) * 2
    p = ref.sinkhorn_normalize_ref(x, 10, 1e-6)
    assert p.shape == x.shape and (p > 0).all()
    close(p.sum(-2), torch.ones(2, 8, 4), 1e-5)                # the last step normalises the columns
    p = ref.sinkhorn_normalize_ref(x, 200, 1e-6)
    close(p.sum(-1), torch.ones(2, 8, 4), 1e-4)
    close(p.sum(-2), torch.ones(2, 8, 4), 1e-5)


def _sinkhorn_bwd_spec(x, g, repeat, eps):
    """§3.2's backward: the normalisation steps recomputed and walked back, then the softmax."""
    y0 = torch.softmax(x, -1)
    z = y0 + eps
    steps = []                                                  # (input Z_s, its sum + eps, is column)
    for s in range(1, 2 * repeat):
        col = s % 2 == 1
        den = z.sum(-2, keepdim=True) + eps if col else z.sum(-1, keepdim=True) + eps
        steps.append((z, den, col))
        z = z / den
    for z, den, col in reversed(steps):
        u = (g * z / den).sum(-2 if col else -1, keepdim=True)
        g = (g - u) / den
    w = (g * y0).sum(-1, keepdim=True)
    return (g - w) * y0


@pytest.mark.parametrize("repeat, eps", [(1, 1e-6), (5, 1e-6), (10, 0.1)])
def test_sinkhorn_backward_matches_autograd(repeat, eps):
    x = leaf(randn(3, 4, 4, seed=7))
    g = randn(3, 4, 4, seed=8)
    ref.sinkhorn_normalize_ref(x, repeat, eps).backward(g)
    close(x.grad, _sinkhorn_bwd_spec(x.detach(), g, repeat, eps))


# ---- split mixes and head mix (§3.3, §3.4) ----------------------------------------------------------

# a * b + c with one rounding differs from the rounded product plus c: (1 + 2^-23)(1 - 2^-23) - 1
FMA_A, FMA_B, FMA_C, FMA_FUSED = 1.0 + 2.0 ** -23, 1.0 - 2.0 ** -23, -1.0, -2.0 ** -46


def test_split_mixes_by_hand():
    m = 2                                                       # 2m + m^2 = 8 mixes
    z = torch.tensor([[[1.0, -1.0, 0.5, 2.0, 1.0, 2.0, -4.0, FMA_A]]])
    scale = torch.tensor([2.0, 3.0, FMA_B])
    base = torch.tensor([0.0, 1.0, 0.0, -1.0, 0.0, 0.0, 0.0, FMA_C])
    pre, post, comb = ref.mhc_pre_split_mixes_ref(z, scale, base, m, 2.0, 0.01)
    assert pre.shape == (1, 1, 2, 1) and post.shape == (1, 1, 2, 1) and comb.shape == (1, 1, 2, 2)
    close(pre.flatten(), torch.tensor([sig(2.0) + 0.01, sig(-1.0) + 0.01]), 1e-7)
    close(post.flatten(), torch.tensor([2 * sig(1.5), 2 * sig(5.0)]), 1e-7)
    assert comb.flatten().tolist() == [f32(FMA_B), f32(2 * FMA_B), f32(-4 * FMA_B), FMA_FUSED]


def test_head_compute_mix_by_hand():
    x = torch.tensor([[[1.0, -1.0, 0.0, 2.0]]])
    out = ref.mhc_head_compute_mix_ref(x, torch.tensor([0.5]), torch.tensor([0.0, 1.0, -1.0, 0.0]), 0.01)
    assert out.shape == (1, 1, 4) and out.dtype == torch.float32
    close(out.flatten(), torch.tensor([sig(v) + 0.01 for v in (0.5, 0.5, -1.0, 1.0)]), 1e-7)


def test_split_mixes_backward_matches_autograd():
    m, pm, eps = 4, 2.0, 1e-2
    M3 = 2 * m + m * m
    z, scale, base = leaf(randn(2, 5, M3, seed=9)), leaf(randn(3, seed=10)), leaf(randn(M3, seed=11))
    gpre, gpost, gcomb = randn(2, 5, m, 1, seed=12), randn(2, 5, m, 1, seed=13), randn(2, 5, m, m, seed=14)
    pre, post, comb = ref.mhc_pre_split_mixes_ref(z, scale, base, m, pm, eps)
    torch.autograd.backward((pre, post, comb), (gpre, gpost, gcomb))
    # §3.3
    a = torch.cat([scale.detach()[0].repeat(m), scale.detach()[1].repeat(m), scale.detach()[2].repeat(m * m)])
    zz = z.detach()
    q = torch.sigmoid(zz[..., :m] * a[:m] + base.detach()[:m])
    p = post.detach().squeeze(-1)
    gamma = torch.cat([gpre.squeeze(-1) * q * (1 - q), gpost.squeeze(-1) * p * (1 - p / pm),
                       gcomb.reshape(2, 5, m * m)], -1)
    close(z.grad, gamma * a)
    seg = torch.tensor([min(2, c // m) for c in range(M3)])
    close(scale.grad, torch.stack([(gamma * zz)[..., seg == s].sum() for s in range(3)]))
    close(base.grad, gamma.sum((0, 1)))


def test_head_compute_mix_backward_matches_autograd():
    m, eps = 4, 1e-2
    x, s, b = leaf(randn(2, 7, m, seed=15)), leaf(randn(1, seed=16)), leaf(randn(m, seed=17))
    g = randn(2, 7, m, seed=18)
    ref.mhc_head_compute_mix_ref(x, s, b, eps).backward(g)
    q = torch.sigmoid(x.detach() * s.detach() + b.detach())
    gamma = q * (1 - q) * g                                     # §3.4
    close(x.grad, gamma * s.detach())
    close(s.grad, (gamma * x.detach()).sum().reshape(1))
    close(b.grad, gamma.sum((0, 1)))


# ---- apply mix and post (§3.5, §3.6) ----------------------------------------------------------------

# A bf16 tie that only the fused multiply-add breaks: acc = -(1 - 2^-15 + 2^-23), then
# (1 + 2^-23)(1 + 2^-7) + acc is 2^-7 + 2^-15 + 2^-30 exactly (rounds up in bf16) but
# 2^-7 + 2^-15 with the product rounded first (a tie, to even: 2^-7).
TIE_ACC, TIE_MIX, TIE_X = -(1.0 - 2.0 ** -15 + 2.0 ** -23), 1.0 + 2.0 ** -23, 1.0 + 2.0 ** -7
TIE_FUSED, TIE_UNFUSED = 2.0 ** -7 + 2.0 ** -14, 2.0 ** -7


def test_apply_mix_by_hand():
    x = torch.tensor([[[[1.0, 2.0, 1.0], [TIE_X, -1.0, 0.5]]]], dtype=torch.bfloat16)      # (1, 1, m=2, H=3)
    mix = torch.tensor([[[[TIE_ACC], [TIE_MIX]]]])
    out = ref.mhc_pre_apply_mix_ref(x, mix)
    assert out.dtype == torch.bfloat16 and out.shape == (1, 1, 3)
    want = [TIE_FUSED, f32(f32(2 * TIE_ACC) - TIE_MIX), f32(TIE_ACC + f32(0.5 * TIE_MIX))]
    assert out.flatten().tolist() == torch.tensor(want).bfloat16().tolist()
    assert (x.float() * mix).sum(-2).bfloat16().flatten()[0].item() == TIE_UNFUSED     # unfused: the tie


def test_apply_mix_backward_matches_autograd():
    x, mix = leaf(randn(2, 3, 4, 16, seed=19)), leaf(randn(2, 3, 4, 1, seed=20))
    og = randn(2, 3, 16, seed=21)
    out = ref.mhc_pre_apply_mix_ref(x, mix)
    assert out.dtype == F64
    out.backward(og)
    close(mix.grad, (og[..., None, :] * x.detach()).sum(-1, keepdim=True))              # §3.5
    close(x.grad, mix.detach() * og[..., None, :])


def test_post_by_hand():
    # m = 2: stream o = post[o] * x + comb[0, o] * res[0] + comb[1, o] * res[1]
    x = torch.tensor([[[1.0, 2.0]]], dtype=torch.bfloat16)                                 # (1, 1, H=2)
    res = torch.tensor([[[[TIE_X, 1.0], [0.0, 3.0]]]], dtype=torch.bfloat16)               # (1, 1, m=2, H)
    post = torch.tensor([[[[TIE_ACC], [0.5]]]])
    comb = torch.tensor([[[[TIE_MIX, 2.0], [1.0, -1.0]]]])
    out = ref.mhc_post_ref(x, res, post, comb)
    assert out.dtype == torch.bfloat16 and out.shape == (1, 1, 2, 2)
    want = [[TIE_FUSED, f32(f32(2 * TIE_ACC) + TIE_MIX) + 3.0], [f32(0.5 + f32(2 * TIE_X)), f32(1.0 + 2.0) - 3.0]]
    assert out[0, 0].tolist() == torch.tensor(want).bfloat16().tolist()


def test_post_backward_matches_autograd():
    m, H = 4, 16
    x, res = leaf(randn(2, 3, H, seed=22)), leaf(randn(2, 3, m, H, seed=23))
    post, comb = leaf(randn(2, 3, m, 1, seed=24)), leaf(randn(2, 3, m, m, seed=25))
    dO = randn(2, 3, m, H, seed=26)
    ref.mhc_post_ref(x, res, post, comb).backward(dO)
    A, c = comb.detach(), post.detach()                                                  # §3.6
    close(res.grad, torch.einsum("stio,stod->stid", A, dO))
    close(x.grad, (c * dO).sum(-2))
    close(comb.grad, torch.einsum("stid,stod->stio", res.detach(), dO))
    close(post.grad, (x.detach()[..., None, :] * dO).sum(-1, keepdim=True))


# ---- pre norm fn (§3.7) -----------------------------------------------------------------------------

def test_norm_fn_by_hand_reads_fn_in_tf32():
    # m = 1 (3 mixes), H = 4, X = [1, 0, 0, 0]: r = rsqrt(1/4) = 2, out[j] = 2 * tf32(fn'[j, 0])
    res = torch.tensor([[[[1.0, 0.0, 0.0, 0.0]]]], dtype=torch.bfloat16)
    fn = torch.zeros((3, 4))
    fn[:, 0] = torch.tensor([1.0 + 2.0 ** -11, 1.0 + 2.0 ** -12, -3.0])
    out = ref.mhc_pre_norm_fn_ref(res, fn, None, 0.0)
    assert out.dtype == torch.float32 and out.shape == (1, 1, 3)
    assert out.flatten().tolist() == [2.0 + 2.0 ** -9, 2.0, -6.0]         # a tie away from zero, one down
    normw = torch.tensor([0.5, 7.0, 7.0, 7.0])
    assert ref.mhc_pre_norm_fn_ref(res, fn, normw, 0.0).flatten().tolist() == [1.0 + 2.0 ** -10, 1.0, -3.0]
    # several tokens and the eps: out = (X fn^T) / sqrt(mean(X^2) + eps)
    res = torch.tensor([[[[1.0, 1.0, 1.0, 1.0]], [[2.0, 0.0, 2.0, 0.0]]]], dtype=torch.bfloat16)
    fn = torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.5, 0.0, 0.0, -0.5], [0.0, 0.0, 1.0, 0.0]])
    out = ref.mhc_pre_norm_fn_ref(res, fn, None, 1.0)
    close(out, torch.tensor([[[10.0, 0.0, 1.0], [8.0, 1.0, 2.0]]]) / torch.tensor([[[2.0 ** 0.5], [3.0 ** 0.5]]]),
          1e-6)


def test_norm_fn_backward_rounds_the_gradient_to_tf32():
    # g_mul = g_out * r = 2 g_out; 1 + 2^-11 is read as 1 + 2^-10 by the backward GEMM (§3.7)
    res = leaf(torch.tensor([[[[1.0, 0.0, 0.0, 0.0]]]], dtype=torch.bfloat16))
    fn = leaf(torch.ones((3, 4)))
    out = ref.mhc_pre_norm_fn_ref(res, fn, None, 0.0)
    out.backward(torch.tensor([[[0.5 + 2.0 ** -12, 0.25, 0.0]]]))
    assert fn.grad[:, 0].tolist() == [1.0 + 2.0 ** -10, 0.5, 0.0] and (fn.grad[:, 1:] == 0).all()
    assert res.grad.dtype == torch.bfloat16


def _norm_fn_bwd_spec(g_out, X, fn_r, sq, eps, K, tf32):
    """§3.7's backward on 2-D X (T, K), fn_r (N, K), with the TF32 rounding of g_mul when asked."""
    r = torch.rsqrt(sq / K + eps)
    mul = X @ fn_r.T
    g_mul = g_out * r
    g_r = (g_out * mul).sum(-1, keepdim=True)
    g_sq = g_r * r / (sq + eps * K) / -2
    if tf32:
        g_mul = (mhc.round_to_tf32(g_mul).view(torch.int32) & ~0x1FFF).view(torch.float32)
    return g_mul.T @ X, g_mul @ fn_r + 2 * X * g_sq


def test_norm_fn_backward_matches_autograd_f64():
    m, H, eps = 4, 8, 1e-6
    M3, K = 2 * m + m * m, m * H
    res, fn, normw = leaf(randn(1, 6, m, H, seed=27)), leaf(randn(M3, K, seed=28)), leaf(randn(K, seed=29))
    g = randn(1, 6, M3, seed=30)
    ref.mhc_pre_norm_fn_ref(res, fn, normw, eps).backward(g)
    X = res.detach().reshape(6, K)
    fnp = fn.detach() * normw.detach()
    fn_grad, x_grad = _norm_fn_bwd_spec(g.reshape(6, M3), X, fnp, (X * X).sum(-1, keepdim=True), eps, K, False)
    close(res.grad.reshape(6, K), x_grad)
    close(fn.grad, fn_grad * normw.detach())                    # the merge: fn_grad = g (.) normw
    close(normw.grad, (fn_grad * fn.detach()).sum(0))           # normw_grad = sum_j g[j, c] fn[j, c]


def test_norm_fn_backward_f32_as_the_kernel():
    m, H, eps = 4, 64, 1e-6
    M3, K, T = 2 * m + m * m, m * H, 9
    res = leaf(randn(1, T, m, H, seed=31).bfloat16())
    fn = leaf(randn(M3, K, seed=32, dtype=torch.float32) * 1e-2)
    g = randn(1, T, M3, seed=33, dtype=torch.float32)
    ref.mhc_pre_norm_fn_ref(res, fn, None, eps).backward(g)
    X = res.detach().reshape(T, K).float()
    fn_r = (mhc.round_to_tf32(fn.detach()).view(torch.int32) & ~0x1FFF).view(torch.float32)
    fn_grad, x_grad = _norm_fn_bwd_spec(g.reshape(T, M3), X, fn_r, (X * X).sum(-1, keepdim=True), eps, K, True)
    torch.testing.assert_close(fn.grad, fn_grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(res.grad.reshape(T, K), x_grad.bfloat16())


def test_f32_backward_of_the_fused_multiply_adds():
    """The f32 references (one-rounding multiply-adds) differentiate as their float64 selves."""
    m, H = 4, 32
    M3 = 2 * m + m * m
    cases = [
        (lambda z, s, b: ref.mhc_pre_split_mixes_ref(z, s, b, m, 2.0, 1e-2),
         [randn(2, 3, M3, seed=40), randn(3, seed=41), randn(M3, seed=42)]),
        (lambda x, s, b: ref.mhc_head_compute_mix_ref(x, s, b, 1e-2), [randn(2, 3, m, seed=43), randn(1, seed=44),
                                                                       randn(m, seed=45)]),
        (ref.mhc_pre_apply_mix_ref, [randn(2, 3, m, H, seed=46), randn(2, 3, m, 1, seed=47)]),
        (ref.mhc_post_ref, [randn(2, 3, H, seed=48), randn(2, 3, m, H, seed=49), randn(2, 3, m, 1, seed=50),
                            randn(2, 3, m, m, seed=51)]),
    ]
    for fn, ins in cases:
        grads = []
        for dtype in (torch.float32, F64):
            leaves = [leaf(t.to(dtype)) for t in ins]
            outs = fn(*leaves)
            outs = outs if isinstance(outs, tuple) else (outs,)
            # output gradients exact in bf16, so that both passes see the same ones
            torch.autograd.backward(outs, [torch.arange(o.numel(), dtype=F64).reshape(o.shape).cos().bfloat16()
                                           .to(o.dtype) for o in outs])
            grads.append([t.grad for t in leaves])
        for g32, g64 in zip(*grads):
            assert g32.dtype == torch.float32 and g32.shape == g64.shape
            torch.testing.assert_close(g32.double(), g64, rtol=1e-5, atol=1e-5)
