"""The Engram family on the CPU emulator (CPU tensors run there) against the PyTorch references of
tilec.torch.engram and autograd through engram_gate_ref (spec moe-engram-mhc.md §2, §4, §6(c)):
TileKernels' grids with the token counts scaled to the CPU (hc = 4, every hidden size, 0, 1 and
ragged token counts), save and no-save modes, SM counts that leave blocks without tokens,
strided inputs, other head counts and hidden sizes, the layer with and without main_grad, and
every argument rule.

Bit-exact: engram_hash, fused_weight, the forward output against bf16(x + g * v) with the
kernel's own gates and between save and no-save modes and SM counts. Within the spec's
tolerances (calc_diff): the forward's saved tensors < 2e-10, its output < 2e-10 (with at least
2^20 elements: below that one rounding flip of a bf16 output is above the bound), the backward's
gradients < 1e-8 against autograd fed the reference's saved tensors (TileKernels' protocol),
grad_w_reduce < 1e-10.

TILEC_BUILD_PYTHON: the package to test (default build/python)."""
import os
import re
import sys

import pytest

torch = pytest.importorskip("torch")

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))

import tilec  # noqa: E402
from tilec import engram as E  # noqa: E402
from tilec.modeling.engram import EngramGateFn, engram_gate  # noqa: E402
from tilec.testing import assert_equal, calc_diff  # noqa: E402
from tilec.torch import engram as R  # noqa: E402

HIDDEN = (576, 2048, 2560, 3072, 4096, 6144, 7168)   # TileKernels' grid (generate_hidden_sizes)
HC = 4
EPS, CLAMP = 1e-20, 1e-6                             # TileKernels' test values
BIG = 1 << 20                                        # output elements for a meaningful calc_diff


def ragged(d):
    """A token count for hidden size d: at least 2^20 output elements (4 heads), odd, and not a
    multiple of the persistent blocks."""
    return (BIG // (HC * d) + 1) | 1


@pytest.fixture
def num_sms():
    """set_num_sms for a test (the emulator's device count is 132), restored afterwards."""
    saved = tilec.config._num_sms

    def set_(n):
        tilec.set_num_sms(n)
    yield set_
    tilec.config._num_sms = saved


def gen(seed):
    return torch.Generator().manual_seed(seed)


def inputs(T, hc, d, seed=0):
    g = gen(seed * 1000003 + T * 131 + hc * 7 + d)
    bf = lambda *s: torch.randn(s, generator=g).bfloat16()  # noqa: E731
    return bf(T, hc, d), bf(T, hc, d), bf(T, d), bf(hc, d), bf(hc, d)


# ---- engram_hash (§2.1): bit-exact, int64 wrap-around, floor modulo ---------------------------------

@pytest.mark.parametrize("T, M, L, B", [(0, 3, 2, 8), (1, 3, 2, 8), (4001, 3, 2, 8), (77, 2, 1, 4), (130, 4, 3, 1),
                                        (33, 5, 2, 3)])
def test_engram_hash(T, M, L, B):
    g = gen(T + M)
    ids = torch.randint(0, 100000, (T, M), dtype=torch.int32, generator=g)
    ids[::7] = torch.randint(-2 ** 31, 2 ** 31 - 1, ids[::7].shape, dtype=torch.int32, generator=g)
    mult = torch.randint(0, 100000, (L, M), dtype=torch.int64, generator=g)
    mult[0, 0] = 2 ** 62 + 12345            # products wrap around 2^64
    mult[-1, -1] = -98765                   # negative hashes: the floor modulo differs from C's %
    vocab = torch.randint(100000, 1000000, (L, M - 1, B), dtype=torch.int32, generator=g)
    vocab[0, 0, 0] = 1
    vocab[-1, -1, -1] = 3
    off = R.make_offsets(vocab)
    out = E.engram_hash(ids, mult, vocab, off)
    assert_equal(out, R.engram_hash_ref(ids, mult, vocab, off))
    assert out.shape == (L, T, (M - 1) * B) and out.dtype == torch.int32


# ---- fused_weight (§2.2): bit-exact ---------------------------------------------------------------

@pytest.mark.parametrize("hc, d", [(HC, h) for h in HIDDEN] + [(1, 1), (3, 100), (8, 1030)])
def test_fused_weight(hc, d):
    _, _, _, wh, we = inputs(1, hc, d)
    assert_equal(E.fused_weight(wh, we), wh.float() * we.float())


# ---- grad_w_reduce (§2.3): any number of partial rows ------------------------------------------------

@pytest.mark.parametrize("P, hc, d", [(132, HC, 7168), (114, HC, 2560), (3, HC, 576), (1, HC, 6144), (7, HC, 2048),
                                      (5, 2, 100), (130, 1, 1)])
def test_grad_w_reduce(P, hc, d):
    g = gen(P * d)
    part = torch.randn((P, hc, d), generator=g)
    wh, we = (torch.randn((hc, d), generator=g).bfloat16() for _ in range(2))
    gh, ge = (torch.randn((hc, d), generator=g) for _ in range(2))
    s = part.double().sum(0)
    want_h, want_e = gh.double() + s * we.double(), ge.double() + s * wh.double()
    keep = part.clone()
    assert E.grad_w_reduce(part, wh, we, gh, ge) is None
    assert calc_diff(gh, want_h) < 1e-10 and calc_diff(ge, want_e) < 1e-10
    assert_equal(part, keep)


def test_grad_w_reduce_empty():
    gh = torch.randn(HC, 576)
    keep = gh.clone()
    E.grad_w_reduce(torch.zeros(0, HC, 576), torch.ones(HC, 576).bfloat16(), torch.ones(HC, 576).bfloat16(), gh,
                    torch.zeros(HC, 576))
    assert_equal(gh, keep)


# ---- engram_gate_fwd (§2.4) -------------------------------------------------------------------------

def check_fwd(x, k, v, wh, we, got, ref_save=True):
    """The saved tensors against the reference, the output exactly bf16(x + g * v) with the
    kernel's gates, equal to the reference's where the gates are, and within calc_diff 2e-10 when
    there are enough elements."""
    out, dot, gate, rx, rk = got
    ref = R.engram_gate_ref(x, k, v, wh, we, CLAMP, EPS, save_for_backward=True)
    assert out.dtype == torch.bfloat16 and out.shape == x.shape and out.stride() == x.stride()
    for a, b in zip((dot, gate, rx, rk), ref[1:]):
        assert a.dtype == torch.float32 and a.shape == x.shape[:2] and a.is_contiguous()
        assert calc_diff(a, b) < 2e-10
    assert_equal(out, (x.float() + gate[..., None] * v.float()[:, None, :]).bfloat16())
    same = (gate == ref[2])[..., None].expand_as(out)
    assert torch.equal(out[same], ref[0][same])
    if out.numel() >= BIG:
        assert calc_diff(out, ref[0]) < 2e-10
    return ref


@pytest.mark.parametrize("d", HIDDEN)
@pytest.mark.parametrize("T", ["one", "ragged"])
def test_gate_fwd(d, T):
    T = 1 if T == "one" else ragged(d)
    x, k, v, wh, we = inputs(T, HC, d)
    wf = E.fused_weight(wh, we)
    got = E.engram_gate_fwd(x, k, v, wf, EPS, CLAMP)
    check_fwd(x, k, v, wh, we, got)
    plain = E.engram_gate_fwd(x, k, v, wf, EPS, CLAMP, save_for_backward=False)
    assert plain[1:] == (None, None, None, None)
    assert_equal(plain[0], got[0])


def test_gate_fwd_empty():
    x, k, v, wh, we = inputs(0, HC, 2048)
    out, *saved = E.engram_gate_fwd(x, k, v, E.fused_weight(wh, we), EPS, CLAMP)
    assert out.shape == (0, HC, 2048) and out.dtype == torch.bfloat16
    assert all(s.shape == (0, HC) and s.dtype == torch.float32 for s in saved)
    assert E.engram_gate_fwd(x, k, v, E.fused_weight(wh, we), EPS, CLAMP, False)[1] is None


def test_gate_fwd_sm_counts(num_sms):
    """Fewer tokens than blocks, token counts that do not divide: the same bits whatever the
    partition (every token's math is its own)."""
    x, k, v, wh, we = inputs(37, HC, 2560, seed=1)
    wf = E.fused_weight(wh, we)
    want = E.engram_gate_fwd(x, k, v, wf, EPS, CLAMP)
    check_fwd(x, k, v, wh, we, want)
    for sms in (1, 3, 114, 131):
        num_sms(sms)
        for T in (37, 2):
            got = E.engram_gate_fwd(x[:T], k[:T], v[:T], wf, EPS, CLAMP)
            for a, b in zip(got, want):
                assert_equal(a, b[:T])


def test_gate_fwd_strided():
    """k and v with any strides but a unit one along D: rows with padding, heads and tokens
    swapped in memory; the same bits as contiguous inputs."""
    T, d = 33, 2048
    x, k, v, wh, we = inputs(T, HC, d, seed=2)
    wf = E.fused_weight(wh, we)
    want = E.engram_gate_fwd(x, k, v, wf, EPS, CLAMP)
    kp = torch.zeros(T, HC, d + 24).bfloat16()
    kp[:, :, 8:8 + d] = k
    vp = torch.zeros(T, 3 * d).bfloat16()
    vp[:, d:2 * d] = v
    kt = k.transpose(0, 1).contiguous().transpose(0, 1)          # strides (d, T d, 1)
    for kk, vv in ((kp[:, :, 8:8 + d], vp[:, d:2 * d]), (kt, v), (k, vp[:, d:2 * d])):
        assert not (kk.is_contiguous() and vv.is_contiguous())
        for a, b in zip(E.engram_gate_fwd(x, kk, vv, wf, EPS, CLAMP), want):
            assert_equal(a, b)
    k1 = k[:, :1].expand(T, HC, d)                                # one key for every head: stride 0
    for a, b in zip(E.engram_gate_fwd(x, k1, v, wf, EPS, CLAMP), E.engram_gate_fwd(x, k1.contiguous(), v, wf, EPS,
                                                                                      CLAMP)):
        assert_equal(a, b)


@pytest.mark.parametrize("hc, d", [(1, 7168), (2, 3000), (3, 1000), (8, 512), (4, 100), (4, 8), (2, 1), (4, 9216)])
def test_gate_fwd_other_shapes(hc, d):
    """Any number of heads and any hidden size (TileKernels: a multiple of 256, at least 512);
    4 x 9216 streams wf from L2 (too large to stay in shared memory beside x)."""
    T = 19
    x, k, v, wh, we = inputs(T, hc, d, seed=3)
    got = E.engram_gate_fwd(x, k, v, E.fused_weight(wh, we), EPS, CLAMP)
    check_fwd(x, k, v, wh, we, got)


def test_gate_fwd_zero_dot():
    """A token whose dot is exactly 0 (x = 0) gets the gate 0.5, as the reference's sign(0)."""
    x, k, v, wh, we = inputs(5, HC, 576, seed=4)
    x[2] = 0
    out, dot, gate, rx, rk = E.engram_gate_fwd(x, k, v, E.fused_weight(wh, we), 1e-6, CLAMP)
    assert torch.equal(dot[2], torch.zeros(HC)) and torch.equal(gate[2], torch.full((HC,), 0.5))
    ref = R.engram_gate_ref(x, k, v, wh, we, CLAMP, 1e-6, save_for_backward=True)
    assert torch.equal(gate[2], ref[2][2]) and torch.equal(out[2], ref[0][2])


def streamed(monkeypatch):
    """The gate kernels with wf fetched chunk by chunk instead of kept in shared memory."""
    from tilec.engram import engram_gate_kernel as K
    real = K.gate_stages
    monkeypatch.setattr(K, "gate_stages", lambda *a: (real(*a)[0], False))


def test_gate_fwd_weight_streamed(monkeypatch):
    """wf kept in shared memory or streamed: the same bits."""
    x, k, v, wh, we = inputs(45, HC, 3072, seed=11)
    wf = E.fused_weight(wh, we)
    want = E.engram_gate_fwd(x, k, v, wf, EPS, CLAMP)
    streamed(monkeypatch)
    for a, b in zip(E.engram_gate_fwd(x, k, v, wf, EPS, CLAMP), want):
        assert_equal(a, b)


# ---- engram_gate_bwd (§2.5) -------------------------------------------------------------------------

def reference_grads(x, k, v, wh, we, go):
    """Autograd through engram_gate_ref with bf16 x, k, v and f32 weight copies (TileKernels'
    protocol): the saved tensors and (grad_x, grad_k, grad_v, grad_wh, grad_we)."""
    xr, kr, vr = (t.clone().requires_grad_(True) for t in (x, k, v))
    whr, wer = (w.float().requires_grad_(True) for w in (wh, we))
    out, dot, gate, rx, rk = R.engram_gate_ref(xr, kr, vr, whr, wer, CLAMP, EPS, save_for_backward=True)
    out.backward(go)
    saved = tuple(t.detach() for t in (dot, gate, rx, rk))
    return saved, (xr.grad, kr.grad, vr.grad, whr.grad, wer.grad)


def check_bwd(x, k, v, wh, we, go, sms=None, ref=None):
    saved, want = ref or reference_grads(x, k, v, wh, we, go)
    wf = E.fused_weight(wh, we)
    gx, gk, gv, part = E.engram_gate_bwd(go, x, k, v, wf, *saved, CLAMP)
    P = sms or tilec.get_num_sms()
    T, hc, d = x.shape
    assert part.shape == (P, hc, d) and part.dtype == torch.float32
    for g, t in ((gx, x), (gk, k), (gv, v)):
        assert g.dtype == torch.bfloat16 and g.shape == t.shape and g.stride() == torch.empty_like(t).stride()
    per = -(-T // P)
    empty = [b for b in range(P) if b * per >= T]
    assert torch.equal(part[empty], torch.zeros_like(part[empty]))      # blocks without tokens write zeros
    s = part.sum(0)
    got = (gx, gk, gv, s * we.float(), s * wh.float())
    for a, b in zip(got, want):
        assert calc_diff(a, b) < 1e-8
    # grad_w_reduce over these partials (P rows, any count) agrees with the sum
    gh, ge = torch.zeros(hc, d), torch.zeros(hc, d)
    E.grad_w_reduce(part, wh, we, gh, ge)
    assert calc_diff(gh, want[3]) < 1e-8 and calc_diff(ge, want[4]) < 1e-8
    return gx, gk, gv, part


@pytest.mark.parametrize("d", HIDDEN)
@pytest.mark.parametrize("T", ["one", "ragged"])
def test_gate_bwd(d, T):
    T = 1 if T == "one" else ragged(d)
    x, k, v, wh, we = inputs(T, HC, d, seed=5)
    go = torch.randn((T, HC, d), generator=gen(d)).bfloat16()
    check_bwd(x, k, v, wh, we, go)


def test_gate_bwd_sm_counts(num_sms):
    """Any number of partial rows (TileKernels needs a multiple of 4), blocks without tokens:
    grad_x, grad_k, grad_v bit-identical whatever the partition, the partials within tolerance."""
    x, k, v, wh, we = inputs(37, HC, 2560, seed=6)
    go = torch.randn((37, HC, 2560), generator=gen(6)).bfloat16()
    ref = reference_grads(x, k, v, wh, we, go)
    want = check_bwd(x, k, v, wh, we, go, ref=ref)
    for sms in (1, 3, 114, 131):
        num_sms(sms)
        got = check_bwd(x, k, v, wh, we, go, sms=sms, ref=ref)
        for a, b in zip(got[:3], want[:3]):
            assert_equal(a, b)


def test_gate_bwd_weight_streamed(monkeypatch):
    """wf kept in shared memory or streamed: the same bits."""
    x, k, v, wh, we = inputs(45, HC, 3072, seed=12)
    go = torch.randn((45, HC, 3072), generator=gen(12)).bfloat16()
    saved, _ = reference_grads(x, k, v, wh, we, go)
    wf = E.fused_weight(wh, we)
    want = E.engram_gate_bwd(go, x, k, v, wf, *saved, CLAMP)
    streamed(monkeypatch)
    for a, b in zip(E.engram_gate_bwd(go, x, k, v, wf, *saved, CLAMP), want):
        assert_equal(a, b)


def test_gate_bwd_empty(num_sms):
    num_sms(7)
    x, k, v, wh, we = inputs(0, HC, 2048)
    z = torch.zeros(0, HC)
    gx, gk, gv, part = E.engram_gate_bwd(x, x, k, v, E.fused_weight(wh, we), z, z, z, z, CLAMP)
    assert gx.shape == gk.shape == (0, HC, 2048) and gv.shape == (0, 2048)
    assert_equal(part, torch.zeros(7, HC, 2048))


def test_gate_bwd_strided():
    """grad_out, k and v strided: the gradients have empty_like's layouts (grad_k keeps a
    permuted k's strides) and the same values as from contiguous inputs."""
    T, d = 21, 2048
    x, k, v, wh, we = inputs(T, HC, d, seed=7)
    go = torch.randn((T, HC, d), generator=gen(7)).bfloat16()
    saved, _ = reference_grads(x, k, v, wh, we, go)
    wf = E.fused_weight(wh, we)
    want = E.engram_gate_bwd(go, x, k, v, wf, *saved, CLAMP)
    kt = k.transpose(0, 1).contiguous().transpose(0, 1)
    vp = torch.zeros(T, d + 64).bfloat16()
    vp[:, 64:] = v
    gop = torch.zeros(T, HC, d + 8).bfloat16()
    gop[:, :, :d] = go
    got = E.engram_gate_bwd(gop[:, :, :d], x, kt, vp[:, 64:], wf, *saved, CLAMP)
    assert got[1].stride() == kt.stride() and got[2].is_contiguous()
    for a, b in zip(got, want):
        assert torch.equal(a, b)
    k1 = k[:, :1].expand(T, HC, d)                                # stride 0: grad_k comes back contiguous
    got = E.engram_gate_bwd(go, x, k1, v, wf, *saved, CLAMP)
    assert got[1].is_contiguous()
    for a, b in zip(got, E.engram_gate_bwd(go, x, k1.contiguous(), v, wf, *saved, CLAMP)):
        assert torch.equal(a, b)


@pytest.mark.parametrize("hc, d", [(1, 7168), (2, 3000), (3, 1000), (8, 512), (4, 100), (2, 24)])
def test_gate_bwd_other_shapes(hc, d):
    """Any number of heads (TileKernels: 4) and hidden size (TileKernels: a multiple of 512, at
    least 1024) within hc * D <= 28672."""
    T = 19
    x, k, v, wh, we = inputs(T, hc, d, seed=8)
    go = torch.randn((T, hc, d), generator=gen(8)).bfloat16()
    check_bwd(x, k, v, wh, we, go)


def test_gate_bwd_clamp():
    """Heads whose |dot| is below clamp_value get no gradient through the gate (G = 0): grad_k is
    0 and grad_x is grad_out there."""
    x, k, v, wh, we = inputs(9, HC, 576, seed=9)
    go = torch.randn((9, HC, 576), generator=gen(9)).bfloat16()
    saved, _ = reference_grads(x, k, v, wh, we, go)
    gx, gk, _, part = E.engram_gate_bwd(go, x, k, v, E.fused_weight(wh, we), *saved, 1e30)
    assert torch.equal(gk, torch.zeros_like(gk)) and torch.equal(gx, go)
    assert torch.equal(part, torch.zeros_like(part))


# ---- the layer (§4) ---------------------------------------------------------------------------------

def leaves(*ts):
    return [t.detach().clone().requires_grad_(True) for t in ts]


@pytest.mark.parametrize("main_grad", [False, True])
def test_engram_gate_layer(main_grad):
    B, S, d = 3, 43, 2048
    x, k, v, wh, we = inputs(B * S, HC, d, seed=10)
    x, k, v = x.view(B, S, HC, d), k.view(B, S, HC, d), v.view(B, S, d)
    go = torch.randn((B, S, HC, d), generator=gen(10)).bfloat16()
    xl, kl, vl, whl, wel = leaves(x, k, v, wh, we)
    if main_grad:
        whl.main_grad = torch.randn((HC, d), generator=gen(11))
        wel.main_grad = torch.randn((HC, d), generator=gen(12))
        start = (whl.main_grad.clone(), wel.main_grad.clone())
    out = engram_gate(xl, kl, vl, whl, wel, CLAMP, EPS)
    assert out.shape == x.shape and out.dtype == torch.bfloat16
    out.backward(go)
    # the composition of the kernels, bit for bit
    wf = E.fused_weight(wh, we)
    fwd = E.engram_gate_fwd(x.view(-1, HC, d), k.view(-1, HC, d), v.view(-1, d), wf, EPS, CLAMP)
    assert_equal(out, fwd[0].view(x.shape))
    gx, gk, gv, part = E.engram_gate_bwd(go.view(-1, HC, d), x.view(-1, HC, d), k.view(-1, HC, d), v.view(-1, d),
                                         wf, *fwd[1:], CLAMP)
    gh, ge = (start[0].clone(), start[1].clone()) if main_grad else (torch.zeros(HC, d), torch.zeros(HC, d))
    E.grad_w_reduce(part, wh, we, gh, ge)
    assert_equal(xl.grad, gx.view(x.shape))
    assert_equal(kl.grad, gk.view(x.shape))
    assert_equal(vl.grad, gv.view(v.shape))
    if main_grad:
        assert whl.grad is None and wel.grad is None
        assert_equal(whl.main_grad, gh)
        assert_equal(wel.main_grad, ge)
        grads_w = (whl.main_grad - start[0], wel.main_grad - start[1])
    else:
        assert whl.grad.dtype == torch.bfloat16 and wel.grad.dtype == torch.bfloat16
        assert_equal(whl.grad, gh.bfloat16())
        assert_equal(wel.grad, ge.bfloat16())
        grads_w = (gh, ge)
    # against autograd through the reference. Each runs its own forward, and the gate's derivative
    # (G, growing as |dot|^-1/2) amplifies the f32 rounding of the forward's sums, which the two
    # add in different orders, where dot is near 0: over many heads some are, so the gradients
    # agree to about 1e-7 in calc_diff and not the 1e-8 of the backward fed the reference's saved
    # tensors (test_gate_bwd, TileKernels' protocol); 1e-5 still tells a wrong formula apart
    xr, kr, vr = leaves(x, k, v)
    whr, wer = (w.float().requires_grad_(True) for w in (wh, we))
    ref = R.engram_gate_ref(xr, kr, vr, whr, wer, CLAMP, EPS)
    ref.backward(go)
    assert calc_diff(out.detach(), ref.detach()) < 2e-10
    for a, b in zip((xl.grad, kl.grad, vl.grad) + grads_w, (xr.grad, kr.grad, vr.grad, whr.grad, wer.grad)):
        assert calc_diff(a, b) < 1e-5


def test_engram_gate_layer_is_a_function():
    assert issubclass(EngramGateFn, torch.autograd.Function) and engram_gate == EngramGateFn.apply


# ---- bad input: each rule raises ValueError naming the argument, before any launch ------------------

def _bad_cases():
    x, k, v, wh, we = inputs(4, HC, 256)
    wf = E.fused_weight(wh, we)
    s = torch.rand(4, HC)
    fwd = dict(hidden_states=x, k=k, v=v, weight_fused=wf, eps=EPS, clamp_value=CLAMP)
    bwd = dict(grad_out=x, hidden_states=x, k=k, v=v, weight_fused=wf, dot=s, gate_score=s, rstd_x=s, rstd_k=s,
               clamp_value=CLAMP)
    ids = torch.zeros(4, 3, dtype=torch.int32)
    hashes = dict(ngram_token_ids=ids, multipliers=torch.zeros(2, 3, dtype=torch.int64),
                  vocab_sizes=torch.ones(2, 2, 8, dtype=torch.int32), offsets=torch.zeros(2, 16, dtype=torch.int32))
    red = dict(grad_w_partial=torch.zeros(3, HC, 256), weight_hidden=wh, weight_embed=we,
               grad_weight_hidden=torch.zeros(HC, 256), grad_weight_embed=torch.zeros(HC, 256))
    big = inputs(1, HC, 7169)
    huge = inputs(1, HC, 20480)
    shared = torch.zeros(2, HC, 256)
    c = []

    def case(fn, base, msg, **change):
        c.append((fn, {**base, **change}, msg))
    # engram_hash
    case(E.engram_hash, hashes, "ngram_token_ids must be int32", ngram_token_ids=ids.long())
    case(E.engram_hash, hashes, "ngram_token_ids must be 2-D", ngram_token_ids=ids[None])
    case(E.engram_hash, hashes, "ngram_token_ids must be contiguous", ngram_token_ids=torch.zeros(3, 4, dtype=torch.int32).T)
    case(E.engram_hash, hashes, r"ngram_token_ids must have at least 2 columns", ngram_token_ids=ids[:, :1].contiguous(),
         multipliers=torch.zeros(2, 1, dtype=torch.int64))
    case(E.engram_hash, hashes, r"multipliers must be int64", multipliers=torch.zeros(2, 3, dtype=torch.int32))
    case(E.engram_hash, hashes, r"multipliers must be \(num_ngram_layers, max_ngram_size\) = \(2, 3\), got \(2, 4\)",
         multipliers=torch.zeros(2, 4, dtype=torch.int64))
    case(E.engram_hash, hashes, r"vocab_sizes must be \(num_ngram_layers, max_ngram_size - 1, ",
         vocab_sizes=torch.ones(2, 3, 8, dtype=torch.int32))
    case(E.engram_hash, hashes, r"vocab_sizes must be int32", vocab_sizes=torch.ones(2, 2, 8))
    case(E.engram_hash, hashes, r"offsets must be \(num_ngram_layers, \(max_ngram_size - 1\) \* num_embed_table_per_ngram\)",
         offsets=torch.zeros(2, 15, dtype=torch.int32))
    case(E.engram_hash, hashes, r"at most 65535 layers", multipliers=torch.zeros(65536, 3, dtype=torch.int64))
    # fused_weight
    case(E.fused_weight, dict(weight_hidden=wh, weight_embed=we), "weight_hidden must be bfloat16", weight_hidden=wf)
    case(E.fused_weight, dict(weight_hidden=wh, weight_embed=we), r"weight_embed must be \(hc_mult, hidden_size\) = \(4, 256\) like weight_hidden",
         weight_embed=we[:, :128].contiguous())
    case(E.fused_weight, dict(weight_hidden=wh, weight_embed=we), "weight_embed must be contiguous",
         weight_embed=we.T.contiguous().T)
    # grad_w_reduce
    case(E.grad_w_reduce, red, "grad_w_partial must be float32", grad_w_partial=torch.zeros(3, HC, 256).bfloat16())
    case(E.grad_w_reduce, red, "grad_w_partial must be 3-D", grad_w_partial=torch.zeros(HC, 256))
    case(E.grad_w_reduce, red, r"weight_embed must be \(hc_mult, hidden_size\) = \(4, 256\) like grad_w_partial's rows, got \(2, 256\)",
         weight_embed=we[:2].contiguous())
    case(E.grad_w_reduce, red, "grad_weight_hidden must be float32", grad_weight_hidden=torch.zeros(HC, 256).bfloat16())
    case(E.grad_w_reduce, red, "grad_weight_embed must be contiguous", grad_weight_embed=torch.zeros(256, HC).T)
    case(E.grad_w_reduce, red, "grad_weight_hidden overlaps grad_weight_embed", grad_weight_hidden=shared[0],
         grad_weight_embed=shared[0])
    case(E.grad_w_reduce, red, "grad_weight_embed overlaps grad_w_partial", grad_weight_embed=red["grad_w_partial"][1])
    # engram_gate_fwd
    case(E.engram_gate_fwd, fwd, "hidden_states must be bfloat16", hidden_states=x.float())
    case(E.engram_gate_fwd, fwd, "hidden_states must be 3-D", hidden_states=x.view(4, -1))
    case(E.engram_gate_fwd, fwd, "hidden_states must be contiguous", hidden_states=x.transpose(0, 1).contiguous().transpose(0, 1))
    case(E.engram_gate_fwd, fwd, "hidden_states must have at least one head", hidden_states=x[:, :0])
    case(E.engram_gate_fwd, fwd, r"k must have stride 1 along the hidden dimension \(stride\(-1\) == 1\)",
         k=k.transpose(1, 2).contiguous().transpose(1, 2))
    case(E.engram_gate_fwd, fwd, r"k must be \(num_tokens, hc_mult, hidden_size\) = \(4, 4, 256\) like hidden_states, "
         r"got \(4, 4, 128\)", k=k[:, :, :128])
    case(E.engram_gate_fwd, fwd, r"k must be bfloat16", k=k.float())
    case(E.engram_gate_fwd, fwd, r"v must be 2-D", v=v[None])
    case(E.engram_gate_fwd, fwd, r"v must be \(num_tokens, hidden_size\) = \(4, 256\), got \(3, 256\)", v=v[:3])
    case(E.engram_gate_fwd, fwd, r"v must have stride 1 along the hidden dimension", v=v.T.contiguous().T)
    case(E.engram_gate_fwd, fwd, r"weight_fused must be float32", weight_fused=wh)
    case(E.engram_gate_fwd, fwd, r"weight_fused must be \(hc_mult, hidden_size\) = \(4, 256\)", weight_fused=wf[:3])
    case(E.engram_gate_fwd, fwd, r"weight_fused must be contiguous", weight_fused=wf.T.contiguous().T)
    case(E.engram_gate_fwd, fwd, r"eps must be a float", eps="1e-6")
    case(E.engram_gate_fwd, fwd, r"clamp_value must be a float", clamp_value=None)
    case(E.engram_gate_fwd, fwd, r"save_for_backward must be a bool", save_for_backward=1)
    case(E.engram_gate_fwd, dict(fwd, hidden_states=huge[0], k=huge[1], v=huge[2], weight_fused=huge[3].float()),
         r"hc_mult \* hidden_size is too large: a token's x stays in shared memory")
    # engram_gate_bwd
    case(E.engram_gate_bwd, bwd, "grad_out must be bfloat16", grad_out=x.float())
    case(E.engram_gate_bwd, bwd, r"grad_out must have stride 1 along the hidden dimension",
         grad_out=x.transpose(1, 2).contiguous().transpose(1, 2))
    case(E.engram_gate_bwd, bwd, r"grad_out must be \(num_tokens, hc_mult, hidden_size\) = \(4, 4, 256\) like "
         r"hidden_states, got \(3, 4, 256\)", grad_out=x[:3])
    case(E.engram_gate_bwd, bwd, "hidden_states must be contiguous", hidden_states=x.transpose(0, 1).contiguous().transpose(0, 1))
    case(E.engram_gate_bwd, bwd, r"k must be \(num_tokens, hc_mult, hidden_size\) = \(4, 4, 256\) like hidden_states",
         k=k[:, :2])
    case(E.engram_gate_bwd, bwd, r"v must have stride 1 along the hidden dimension", v=v.T.contiguous().T)
    case(E.engram_gate_bwd, bwd, r"weight_fused must be \(hc_mult, hidden_size\)", weight_fused=wf[:, :255].contiguous())
    case(E.engram_gate_bwd, bwd, r"dot must be float32", dot=s.double())
    case(E.engram_gate_bwd, bwd, r"gate_score must be \(num_tokens, hc_mult\) = \(4, 4\), got \(4, 3\)",
         gate_score=s[:, :3].contiguous())
    case(E.engram_gate_bwd, bwd, r"rstd_x must be contiguous", rstd_x=s.T.contiguous().T)
    case(E.engram_gate_bwd, bwd, r"rstd_k must be 2-D", rstd_k=s.flatten())
    case(E.engram_gate_bwd, bwd, r"clamp_value must be a float", clamp_value="0")
    z = torch.zeros(1, HC)
    case(E.engram_gate_bwd, dict(bwd, grad_out=big[0], hidden_states=big[0], k=big[1], v=big[2],
                                 weight_fused=big[3].float(), dot=z, gate_score=z, rstd_x=z, rstd_k=z),
         r"hc_mult \* hidden_size must be at most 28672 \(a block keeps the weight gradient of every column in "
         r"registers\), got 4 \* 7169")
    return c


BAD = _bad_cases()


@pytest.mark.parametrize("fn, args, msg", BAD, ids=[f"{f.__name__}-{i}" for i, (f, _, _) in enumerate(BAD)])
def test_bad_input(fn, args, msg, monkeypatch):
    launched = []
    monkeypatch.setattr(tilec._runtime, "kernel", lambda *a: launched.append(a))
    with pytest.raises(ValueError) as e:
        fn(**args)
    assert re.search(f"^{fn.__name__}: {msg}", str(e.value)), str(e.value)
    assert not launched
