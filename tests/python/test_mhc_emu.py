"""The mHC ops on the CPU emulator (CPU tensors run there) against the PyTorch references of
tilec.torch.mhc (spec moe-engram-mhc.md §3): TileKernels' grids with the token counts scaled to
the CPU (n0 in {1, 2}, n1 small, including 1 and counts that are not multiples of 32; every
hidden size of the grid), forward and backward, within the spec's tolerances; bit for bit where
the kernel and the reference evaluate the same normative formula in the same order
(expand_to_mhc, mhc_pre_apply_mix's and mhc_post's forwards, split_mixes' comb); the
residual-gradient protocol (grad_from_mhc_post) alone and through small training steps (with the
single ops, and with mhc_pre); mhc_pre_norm_fn (TF32 gemms on the emulator) with and without norm
weight, main_grad and split-K; the two bit-identity requirements of spec §3: mhc_pre_big_fuse
against norm_fn -> split_mixes -> sinkhorn -> apply_mix, mhc_multilayer_recompute against
apply_mix / post at every (L, P, H) of TileKernels' test; mhc_pre's two paths; mhc_head; a second
backward over one graph; every argument rule.

TILEC_BUILD_PYTHON: the package to test (default build/python)."""
import os
import sys
import zlib

import pytest

torch = pytest.importorskip("torch")

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))

import tilec  # noqa: E402
from tilec.modeling import mhc as MHC  # noqa: E402
from tilec.modeling.mhc import ops as O  # noqa: E402
from tilec.modeling.mhc.ops import post as post_mod  # noqa: E402
from tilec.mhc import norm_fn_kernel  # noqa: E402
from tilec.testing import assert_equal  # noqa: E402
from tilec.torch import mhc as R  # noqa: E402
from tilec.torch.reduce_fused import fma_f32  # noqa: E402

N0 = (1, 2)
N1 = (1, 37, 100)            # 1, and counts that are not multiples of the 32-token tile
HIDDEN = (1280, 2560, 7168)  # TileKernels' grid of expand and post


def gen(*key):
    """A generator seeded from the test's key, the same in every run (hash() of a str is not)."""
    return torch.Generator().manual_seed(zlib.crc32(repr(key).encode()))


def randn(g, *shape, dtype=torch.float32):
    return torch.randn(shape, generator=g).to(dtype)


@pytest.fixture
def num_sms():
    saved = tilec.config._num_sms
    yield tilec.set_num_sms
    tilec.config._num_sms = saved


def bf16_close(a, b):
    torch.testing.assert_close(a, b)   # dtype-dependent defaults: bf16 rtol 1.6e-2, atol 1e-5


# ---- expand_to_mhc (§3.1) -------------------------------------------------------------------------

@pytest.mark.parametrize("n0, n1", [(1, 1), (2, 37)])
@pytest.mark.parametrize("m", [2, 4, 8])
@pytest.mark.parametrize("H", HIDDEN)
def test_expand(n0, n1, m, H):
    g = gen("expand", n0, n1, m, H)
    x = randn(g, n0, n1, H, dtype=torch.bfloat16)
    out = O.expand_to_mhc(x, m)
    assert_equal(out, R.expand_to_mhc_ref(x, m))
    xr = x.clone().requires_grad_()
    og = randn(g, n0, n1, m, H, dtype=torch.bfloat16)
    y = tilec.modeling.mhc.expand_from_embedding(xr, m)
    y.backward(og)
    acc = og[..., 0, :].float()
    for j in range(1, m):
        acc = acc + og[..., j, :].float()
    assert_equal(xr.grad, acc.bfloat16())                    # f32 sum in stream order, one rounding
    xq = x.clone().requires_grad_()
    R.expand_to_mhc_ref(xq, m).backward(og)
    bf16_close(xr.grad, xq.grad)


def test_expand_out_and_empty():
    x = torch.randn(5, 300).bfloat16()
    out = torch.full((5, 4, 300), 7.0, dtype=torch.bfloat16)
    assert O.expand_to_mhc(x, 4, out=out) is out
    assert_equal(out, R.expand_to_mhc_ref(x, 4))
    e = O.expand_to_mhc(torch.empty(0, 64, dtype=torch.bfloat16), 4)
    assert e.shape == (0, 4, 64)


# ---- sinkhorn_normalize (§3.2) ----------------------------------------------------------------------

@pytest.mark.parametrize("n0", N0)
@pytest.mark.parametrize("n1", (1, 37, 1024))
def test_sinkhorn(n0, n1):
    g = gen("sinkhorn", n0, n1)
    x = randn(g, n0, n1, 4, 4)
    gy = randn(g, n0, n1, 4, 4)
    xa = x.clone().requires_grad_()
    y = O.sinkhorn_normalize(xa, 10, 1e-6)
    y.backward(gy)
    xb = x.clone().requires_grad_()
    yr = R.sinkhorn_normalize_ref(xb, 10, 1e-6)
    yr.backward(gy)
    torch.testing.assert_close(y, yr)                        # f32 defaults: rtol 1.3e-6, atol 1e-5
    torch.testing.assert_close(xa.grad, xb.grad)


@pytest.mark.parametrize("repeat, eps, n", [(1, 1e-6, 4), (3, 1e-3, 4), (20, 1e-6, 4), (10, 1e-6, 2), (5, 1e-6, 3),
                                            (10, 1e-6, 8)])
def test_sinkhorn_options(repeat, eps, n):
    g = gen("sinkhorn_opt", repeat, n)
    x = randn(g, 45, n, n) * 3
    gy = randn(g, 45, n, n)
    xa = x.clone().requires_grad_()
    y = O.sinkhorn_normalize(xa, repeat, eps)
    y.backward(gy)
    x64 = x.double().requires_grad_()
    R.sinkhorn_normalize_ref(x64, repeat, eps).backward(gy.double())
    torch.testing.assert_close(y.double(), R.sinkhorn_normalize_ref(x.double(), repeat, eps), rtol=2e-6, atol=1e-6)
    torch.testing.assert_close(xa.grad.double(), x64.grad, rtol=1e-4, atol=1e-5)


def test_sinkhorn_strided():
    x = torch.randn(8, 4, 4).transpose(-1, -2)
    assert not x.is_contiguous()
    assert_equal(O.sinkhorn_normalize(x), O.sinkhorn_normalize(x.contiguous()))


# ---- mhc_pre_split_mixes (§3.3) ----------------------------------------------------------------------

def _split_case(n0, n1, m=4):
    g = gen("split", n0, n1, m)
    M3 = m * (m + 2)
    z = randn(g, n0, n1, M3)
    scale = randn(g, 3) * 0.1 + 1
    base = randn(g, M3) * 0.1
    grads = (randn(g, n0, n1, m, 1), randn(g, n0, n1, m, 1), randn(g, n0, n1, m, m))
    return z, scale, base, grads


@pytest.mark.parametrize("n0", N0)
@pytest.mark.parametrize("n1", N1 + (1024,))
def test_split_mixes(n0, n1, num_sms):
    z, scale, base, grads = _split_case(n0, n1)
    want_args = [t.clone().requires_grad_() for t in (z, scale, base)]
    want = R.mhc_pre_split_mixes_ref(*want_args, 4, 2.0, 1e-2)
    torch.autograd.backward(want, grads)
    for sms in (1, 3, 132):
        num_sms(sms)
        args = [t.clone().requires_grad_() for t in (z, scale, base)]
        got = O.mhc_pre_split_mixes(*args, 4, 2.0, 1e-2)
        assert all(t.is_contiguous() for t in got)
        torch.autograd.backward(got, grads)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=2e-5)
        assert_equal(got[2], want[2].detach().contiguous())  # comb: one fma each, as the reference
        for a, b in zip(args, want_args):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=2e-5)


def test_split_mixes_partial_grads():
    """Outputs left out of the loss get no gradient (zeros for the kernel)."""
    z, scale, base, grads = _split_case(1, 40)
    a = [t.clone().requires_grad_() for t in (z, scale, base)]
    b = [t.clone().requires_grad_() for t in (z, scale, base)]
    (O.mhc_pre_split_mixes(*a, 4, 1.0, 1e-6)[1] * grads[1]).sum().backward()
    (R.mhc_pre_split_mixes_ref(*b, 4, 1.0, 1e-6)[1] * grads[1]).sum().backward()
    for x, y in zip(a, b):
        torch.testing.assert_close(x.grad, y.grad, rtol=1e-5, atol=2e-5)


def test_split_mixes_empty():
    z = torch.empty(0, 3, 24, requires_grad=True)
    scale = torch.ones(3, requires_grad=True)
    base = torch.zeros(24, requires_grad=True)
    pre, post, comb = O.mhc_pre_split_mixes(z, scale, base, 4, 1.0, 1e-6)
    assert pre.shape == (0, 3, 4, 1) and comb.shape == (0, 3, 4, 4)
    (pre.sum() + post.sum() + comb.sum()).backward()
    assert torch.equal(scale.grad, torch.zeros(3)) and torch.equal(base.grad, torch.zeros(24))


# ---- mhc_head_compute_mix (§3.4) ----------------------------------------------------------------------

@pytest.mark.parametrize("n0", N0)
@pytest.mark.parametrize("n1", N1 + (1024,))
def test_head_compute_mix(n0, n1, num_sms):
    g = gen("head", n0, n1)
    z = randn(g, n0, n1, 4)
    scale = randn(g, 1)
    base = randn(g, 4)
    gy = randn(g, n0, n1, 4)
    b = [t.clone().requires_grad_() for t in (z, scale, base)]
    want = R.mhc_head_compute_mix_ref(*b, 1e-2)
    want.backward(gy)
    for sms in (1, 132):
        num_sms(sms)
        a = [t.clone().requires_grad_() for t in (z, scale, base)]
        got = O.mhc_head_compute_mix(*a, 1e-2)
        got.backward(gy)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        for x, y in zip(a, b):
            torch.testing.assert_close(x.grad, y.grad, rtol=1e-4, atol=1e-5)


# ---- mhc_pre_apply_mix (§3.5) ---------------------------------------------------------------------------

def _apply_case(n0, n1, H, m=4):
    g = gen("apply", n0, n1, H)
    x = torch.sigmoid(randn(g, n0, n1, m, H)).bfloat16()
    mix = torch.softmax(randn(g, n0, n1, m, 1), dim=-2)
    og = randn(g, n0, n1, H, dtype=torch.bfloat16)
    return x, mix, og


@pytest.mark.parametrize("n0", N0)
@pytest.mark.parametrize("n1", (1, 37))
@pytest.mark.parametrize("H", (1280, 2560, 7680))
def test_apply_mix(n0, n1, H):
    x, mix, og = _apply_case(n0, n1, H)
    xa, ma = x.clone().requires_grad_(), mix.clone().requires_grad_()
    out = O.mhc_pre_apply_mix(xa, ma)
    assert_equal(out, R.mhc_pre_apply_mix_ref(x, mix))       # the same fma chain over the streams
    buf = torch.zeros_like(x)
    xa.untyped_storage().grad_from_mhc_post = buf            # TileKernels' test protocol
    out.backward(og)
    assert xa.grad is None                                   # the gradient went into the buffer
    xb, mb = x.clone().requires_grad_(), mix.clone().requires_grad_()
    R.mhc_pre_apply_mix_ref(xb, mb).backward(og)
    torch.testing.assert_close(buf, xb.grad, atol=1e-2, rtol=1e-3)
    torch.testing.assert_close(ma.grad, mb.grad, atol=1e-2, rtol=1e-3)
    # the buffer update is bf16(fma(mix, og, buf)) exactly
    assert_equal(buf, (mix * og.float().unsqueeze(-2)).bfloat16())


def test_apply_mix_accumulates_and_returns():
    x, mix, og = _apply_case(1, 9, 300)
    start = torch.randn(x.shape).bfloat16()
    xa = x.clone().requires_grad_()
    out = O.mhc_pre_apply_mix(xa, mix)
    buf = start.clone()
    xa.untyped_storage().grad_from_mhc_post = buf
    out.backward(og)
    assert_equal(buf, fma_f32(mix.expand(x.shape), og.float().unsqueeze(-2).expand(x.shape), start.float()).bfloat16())
    xb = x.clone().requires_grad_()                          # no buffer: an ordinary gradient
    O.mhc_pre_apply_mix(xb, mix).backward(og)
    assert_equal(xb.grad, (mix * og.float().unsqueeze(-2)).bfloat16())


def test_apply_mix_out():
    x, mix, _ = _apply_case(2, 5, 200)
    out = torch.empty(2, 5, 200, dtype=torch.bfloat16)
    assert O.mhc_pre_apply_mix(x, mix, out=out) is out
    assert_equal(out, R.mhc_pre_apply_mix_ref(x, mix))


# ---- mhc_post (§3.6) -------------------------------------------------------------------------------------

def _post_case(n0, n1, H, m=4):
    g = gen("post", n0, n1, H)
    return (randn(g, n0, n1, H, dtype=torch.bfloat16), randn(g, n0, n1, m, H, dtype=torch.bfloat16),
            randn(g, n0, n1, m, 1), randn(g, n0, n1, m, m), randn(g, n0, n1, m, H, dtype=torch.bfloat16))


@pytest.mark.parametrize("n0", N0)
@pytest.mark.parametrize("n1", (1, 37))
@pytest.mark.parametrize("H", HIDDEN)
def test_post(n0, n1, H):
    x, res, post, comb, go = _post_case(n0, n1, H)
    a = [t.clone().requires_grad_() for t in (x, res, post, comb)]
    out = O.mhc_post(*a)
    assert_equal(out, R.mhc_post_ref(x, res, post, comb))   # post * x, then the fma chain over streams
    assert_equal(out, O.mhc_post_fwd(x, res, post, comb))
    out.backward(go)
    b = [t.clone().requires_grad_() for t in (x, res, post, comb)]
    R.mhc_post_ref(*b).backward(go)
    bf16_close(a[0].grad, b[0].grad)
    bf16_close(a[1].grad, b[1].grad)
    torch.testing.assert_close(a[2].grad, b[2].grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(a[3].grad, b[3].grad, atol=1e-4, rtol=1e-4)
    # the residual's gradient is also left on its storage for the mhc_pre backward passes
    assert a[1].untyped_storage().grad_from_mhc_post.data_ptr() == a[1].grad.data_ptr()


def test_post_bwd_plain():
    x, res, post, comb, go = _post_case(1, 7, 500)
    d = post_mod.mhc_post_bwd(x, res, post, comb, go, fuse_grad_acc=False)
    assert not hasattr(res.untyped_storage(), "grad_from_mhc_post")
    assert [t.shape for t in d] == [x.shape, res.shape, post.shape, comb.shape]
    r32, g32 = res.float(), go.float()
    acc = torch.zeros_like(r32)
    for o in range(4):
        acc = fma_f32(comb[..., :, o:o + 1], g32[..., o:o + 1, :], acc)
    assert_equal(d[1], acc.bfloat16())                       # an fma chain over o in order
    torch.testing.assert_close(d[3], torch.einsum("stid,stod->stio", r32, g32), atol=1e-4, rtol=1e-4)
    d2 = post_mod.mhc_post_bwd(x, res, post, comb, go)
    assert res.untyped_storage().grad_from_mhc_post is d2[1]
    for u, v in zip(d, d2):
        assert_equal(u, v)


def test_bwd_hidden_splits(num_sms):
    """Few tokens: the backward kernels split each token's hidden columns over several blocks and
    add their partial sums; the per-element gradients do not depend on the split, the sums stay
    within the tolerance."""
    x, res, post, comb, go = _post_case(1, 3, 2000)
    num_sms(1)                                               # one block a token
    one = post_mod.mhc_post_bwd(x, res, post, comb, go, fuse_grad_acc=False)
    num_sms(132)                                             # 8 blocks a token
    many = post_mod.mhc_post_bwd(x, res, post, comb, go, fuse_grad_acc=False)
    assert_equal(one[0], many[0])
    assert_equal(one[1], many[1])
    for a, b in zip(one[2:], many[2:]):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    xa, mix, og = _apply_case(1, 3, 2000)
    outs = []
    for sms in (1, 132):
        num_sms(sms)
        xx, mm = xa.clone().requires_grad_(), mix.clone().requires_grad_()
        O.mhc_pre_apply_mix(xx, mm).backward(og)
        outs.append((xx.grad, mm.grad))
    assert_equal(outs[0][0], outs[1][0])
    torch.testing.assert_close(outs[0][1], outs[1][1], atol=1e-4, rtol=1e-4)


def test_post_bwd_ragged_hidden_refused_on_gpu():
    """On CUDA tensors (fake ones here: no launch) a hidden size that is not a multiple of 256 is
    refused with the known-defect error; the same shapes on CPU tensors run (test_post)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        bf = lambda *s: torch.empty(s, device="cuda", dtype=torch.bfloat16)  # noqa: E731
        f32 = lambda *s: torch.empty(s, device="cuda")  # noqa: E731
        with pytest.raises(NotImplementedError, match=r"mhc_post_bwd: on a GPU the hidden size must be a multiple "
                                                      r"of 256, got 300"):
            O.mhc_post_bwd(bf(1, 3, 300), bf(1, 3, 4, 300), f32(1, 3, 4, 1), f32(1, 3, 4, 4), bf(1, 3, 4, 300))


def test_post_out_and_strided_residual():
    x, res, post, comb, _ = _post_case(2, 3, 256)
    out = torch.empty_like(res)
    assert O.mhc_post(x, res, post, comb, out=out) is out
    rt = res.transpose(0, 1).contiguous().transpose(0, 1)    # same values, other strides
    assert not rt.is_contiguous()
    assert_equal(O.mhc_post_fwd(x, rt, post, comb), out)


# ---- the residual-gradient protocol through a small training step (§3.10) ------------------------------------

def _step(impl, emb, mixes, scales, bases, ws, L, m=4):
    """expand -> L x (split mixes -> sinkhorn -> apply_mix -> a sub-layer -> post) -> loss."""
    ops = impl
    r = ops["expand"](emb, m)
    for i in range(L):
        pre, post, comb = ops["split"](mixes[i], scales[i], bases[i], m, 2.0, 1e-2)
        comb = ops["sinkhorn"](comb, 10, 1e-6)
        li = ops["apply"](r, pre)
        y = torch.tanh(li.float() @ ws[i]).bfloat16()        # the sub-layer
        r = ops["post"](y, r, post, comb)
    return (r.float() ** 2).mean()


KERNELS = {"expand": O.expand_to_mhc, "split": O.mhc_pre_split_mixes, "sinkhorn": O.sinkhorn_normalize,
           "apply": O.mhc_pre_apply_mix, "post": O.mhc_post}
REFS = {"expand": R.expand_to_mhc_ref, "split": R.mhc_pre_split_mixes_ref, "sinkhorn": R.sinkhorn_normalize_ref,
        "apply": R.mhc_pre_apply_mix_ref, "post": R.mhc_post_ref}


@pytest.mark.parametrize("L", [1, 3])
def test_training_step(L):
    g = gen("step", L)
    S, T, H, m = 2, 19, 256, 4
    emb = randn(g, S, T, H, dtype=torch.bfloat16)
    mixes = [randn(g, S, T, m * (m + 2)) for _ in range(L)]
    scales = [randn(g, 3) * 0.1 + 1 for _ in range(L)]
    bases = [randn(g, m * (m + 2)) * 0.1 for _ in range(L)]
    ws = [randn(g, H, H) / H ** 0.5 for _ in range(L)]
    grads = {}
    for name, impl in (("k", KERNELS), ("r", REFS)):
        leaves = [emb.clone().requires_grad_()] + [t.clone().requires_grad_() for t in mixes + scales + bases + ws]
        e, rest = leaves[0], leaves[1:]
        loss = _step(impl, e, rest[:L], rest[L:2 * L], rest[2 * L:3 * L], rest[3 * L:], L)
        loss.backward()
        grads[name] = (loss.detach(), [t.grad for t in leaves])
    torch.testing.assert_close(grads["k"][0], grads["r"][0], rtol=1e-3, atol=1e-5)
    for a, b in zip(grads["k"][1], grads["r"][1]):
        assert a is not None and b is not None
        torch.testing.assert_close(a.float(), b.float(), rtol=5e-2, atol=5e-3)


# ---- round_to_tf32 -----------------------------------------------------------------------------------------

def test_round_to_tf32():
    x = torch.randn(1000)
    assert_equal(norm_fn_kernel.round_to_tf32(x), R.round_to_tf32(x))


# ---- argument rules: each a ValueError naming the argument, before any launch ---------------------------------

def _bf(*s):
    return torch.zeros(s, dtype=torch.bfloat16)


def _f(*s):
    return torch.zeros(s)


BAD = [
    (lambda: O.expand_to_mhc(_bf(4, 64).t(), 4), "expand_to_mhc: hidden must be contiguous"),
    (lambda: O.expand_to_mhc(_f(4, 64), 4), "expand_to_mhc: hidden must be bfloat16"),
    (lambda: O.expand_to_mhc(_bf(4, 64), 0), r"expand_to_mhc: mhc_mult must be in \[1, 16\]"),
    (lambda: O.expand_to_mhc(_bf(4, 64), 4, out=_bf(4, 2, 64)), "expand_to_mhc: out must have shape"),
    (lambda: O.expand_to_mhc(_bf(4, 64), 4, out=_bf(4, 4, 64).transpose(0, 1).contiguous().transpose(0, 1)),
     "expand_to_mhc: out must be contiguous"),
    (lambda: O.sinkhorn_normalize(_f(3, 4, 5)), r"sinkhorn_normalize: x must hold square matrices"),
    (lambda: O.sinkhorn_normalize(_f(4)), "sinkhorn_normalize: x must have at least 2 dimensions"),
    (lambda: O.sinkhorn_normalize(_f(2, 4, 4), repeat=0), "sinkhorn_normalize: repeat must be positive"),
    (lambda: O.sinkhorn_normalize(_f(2, 4, 4).double()), "sinkhorn_normalize: x must be float32"),
    (lambda: O.mhc_pre_split_mixes(_f(3, 24), _f(3), _f(24), 4, 1.0, 1e-6), "mhc_pre_split_mixes: input_mixes must be 3-D"),
    (lambda: O.mhc_pre_split_mixes(_f(1, 3, 20), _f(3), _f(24), 4, 1.0, 1e-6),
     r"mhc_pre_split_mixes: input_mixes must have mhc_mult \* \(mhc_mult \+ 2\) = 24"),
    (lambda: O.mhc_pre_split_mixes(_f(1, 3, 24), _f(2), _f(24), 4, 1.0, 1e-6), "mhc_pre_split_mixes: mhc_scale must have shape"),
    (lambda: O.mhc_pre_split_mixes(_f(1, 3, 24), _f(3), _f(25), 4, 1.0, 1e-6), "mhc_pre_split_mixes: mhc_base must have shape"),
    (lambda: O.mhc_head_compute_mix(_f(3, 4), _f(1), _f(4), 1e-6), "mhc_head_compute_mix: input_mix must be 3-D"),
    (lambda: O.mhc_head_compute_mix(_f(1, 3, 4), _f(3), _f(4), 1e-6), "mhc_head_compute_mix: mhc_scale must have shape"),
    (lambda: O.mhc_head_compute_mix(_f(1, 3, 4), _f(1), _f(2), 1e-6), "mhc_head_compute_mix: mhc_base must have shape"),
    (lambda: O.mhc_pre_apply_mix(_bf(2, 4, 64), _f(2, 4)), "mhc_pre_apply_mix: mix must have a last dimension of 1"),
    (lambda: O.mhc_pre_apply_mix(_bf(2, 4, 64), _f(3, 4, 1)), "mhc_pre_apply_mix: mix must have shape"),
    (lambda: O.mhc_pre_apply_mix(_bf(2, 4, 64), _f(2, 4, 1), out=_bf(2, 32)), "mhc_pre_apply_mix: out must have shape"),
    (lambda: O.mhc_pre_apply_mix(_bf(2, 64, 4).transpose(-1, -2), _f(2, 4, 1)), "mhc_pre_apply_mix: x must be contiguous"),
    (lambda: O.mhc_post(_bf(1, 2, 64), _bf(2, 4, 64), _f(1, 2, 4, 1), _f(1, 2, 4, 4)), "mhc_post: residual must be 4-D"),
    (lambda: O.mhc_post(_bf(1, 2, 32), _bf(1, 2, 4, 64), _f(1, 2, 4, 1), _f(1, 2, 4, 4)), "mhc_post: x must have shape"),
    (lambda: O.mhc_post(_bf(1, 2, 64), _bf(1, 2, 4, 64), _f(1, 2, 4), _f(1, 2, 4, 4)), "mhc_post: post_layer_mix must be 4-D"),
    (lambda: O.mhc_post(_bf(1, 2, 64), _bf(1, 2, 4, 64), _f(1, 2, 4, 1), _f(1, 2, 4, 3)),
     "mhc_post: comb_res_mix must have shape"),
    (lambda: O.mhc_post_fwd(_bf(1, 2, 64), _bf(1, 2, 4, 64), _f(1, 2, 4, 1), _f(1, 2, 4, 4), out=_bf(1, 2, 4, 64).float()),
     "mhc_post_fwd: out must be bfloat16"),
    (lambda: O.mhc_post_bwd(_bf(1, 2, 64), _bf(1, 2, 4, 64), _f(1, 2, 4, 1), _f(1, 2, 4, 4), _bf(1, 2, 4, 32)),
     "mhc_post_bwd: d_o must have shape"),
    (lambda: O.mhc_post_bwd(_bf(1, 2, 64), _bf(1, 2, 4, 64), _f(1, 2, 4, 1), _f(1, 2, 4, 4), _bf(1, 2, 4, 64), 1),
     "mhc_post_bwd: fuse_grad_acc must be a bool"),
    (lambda: norm_fn_kernel.round_to_tf32(_bf(4)), "round_to_tf32: x must be a float32 tensor"),
]


@pytest.mark.parametrize("call, message", BAD, ids=[m.split(":")[0] + f"-{i}" for i, (_, m) in enumerate(BAD)])
def test_bad_argument(call, message):
    with pytest.raises(ValueError, match="^" + message):
        call()


def test_apply_mix_bad_gradient_buffer():
    x, mix, og = _apply_case(1, 3, 64)
    xa = x.clone().requires_grad_()
    out = O.mhc_pre_apply_mix(xa, mix)
    xa.untyped_storage().grad_from_mhc_post = torch.zeros(x.shape)      # f32: not the protocol's buffer
    with pytest.raises(ValueError, match="^mhc_pre_apply_mix: the grad_from_mhc_post buffer"):
        out.backward(og)


# ---- mhc_pre_norm_fn (§3.7) --------------------------------------------------------------------------------

def _norm_case(n0, n1, H, m=4, normw=False, seed=0):
    g = gen("norm", n0, n1, H, normw, seed)
    stream = (1 + 0.01 * torch.arange(m, dtype=torch.float32)).view(m, 1)
    res = (randn(g, n0, n1, m, H) * stream).bfloat16()
    fn = randn(g, m * (m + 2), m * H) * 1e-4 * (1 + 0.01 * torch.arange(m).repeat_interleave(H))
    w = randn(g, m * H) * 0.1 + 1 if normw else None
    go = randn(g, n0, n1, m * (m + 2))
    return res, fn, w, go


@pytest.mark.parametrize("n1", (1, 37, 100))
@pytest.mark.parametrize("H", (1280, 2560))
@pytest.mark.parametrize("normw", (False, True))
def test_norm_fn(n1, H, normw):
    res, fn, w, go = _norm_case(1, n1, H, normw=normw)
    ra, fa = res.clone().requires_grad_(), fn.clone().requires_grad_()
    wa = w.clone().requires_grad_() if normw else None
    out = O.mhc_pre_norm_fn(ra, fa, wa, 1e-6)
    buf = torch.zeros_like(res)
    ra.untyped_storage().grad_from_mhc_post = buf            # TileKernels' test protocol
    out.backward(go)
    assert ra.grad is None and not hasattr(ra.untyped_storage(), "grad_from_mhc_post")
    rb, fb = res.clone().requires_grad_(), fn.clone().requires_grad_()
    wb = w.clone().requires_grad_() if normw else None
    want = R.mhc_pre_norm_fn_ref(rb, fb, wb, 1e-6)
    want.backward(go)
    torch.testing.assert_close(out, want, atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(buf, rb.grad)
    torch.testing.assert_close(fa.grad, fb.grad, atol=3e-2, rtol=1e-3)
    if normw:
        torch.testing.assert_close(wa.grad, wb.grad, atol=3e-2, rtol=1e-3)


@pytest.mark.parametrize("n1", (13, 48))
@pytest.mark.parametrize("H", (1280, 4096))
@pytest.mark.parametrize("n_splits", (1, 3, 16))
def test_norm_fn_split_k(n1, H, n_splits):
    res, fn, _, _ = _norm_case(1, n1, H)
    out = O.mhc_pre_norm_fn(res, fn, None, 1e-6, n_splits=n_splits)
    torch.testing.assert_close(out, R.mhc_pre_norm_fn_ref(res, fn, None, 1e-6), atol=1e-3, rtol=1e-3)


def test_norm_fn_main_grad_and_plain_buffer():
    res, fn, w, go = _norm_case(1, 9, 256, normw=True)
    fa, wa = fn.clone().requires_grad_(), w.clone().requires_grad_()
    fa.main_grad, wa.main_grad = torch.ones_like(fn), torch.ones_like(w)
    ra = res.clone().requires_grad_()
    O.mhc_pre_norm_fn(ra, fa, wa, 1e-6).backward(go)           # no buffer on the storage: an ordinary gradient
    assert ra.grad is not None and fa.grad is None and wa.grad is None
    fb, wb, rb = fn.clone().requires_grad_(), w.clone().requires_grad_(), res.clone().requires_grad_()
    R.mhc_pre_norm_fn_ref(rb, fb, wb, 1e-6).backward(go)
    torch.testing.assert_close(ra.grad, rb.grad)
    torch.testing.assert_close(fa.main_grad - 1, fb.grad, atol=3e-2, rtol=1e-3)
    torch.testing.assert_close(wa.main_grad - 1, wb.grad, atol=3e-2, rtol=1e-3)


# ---- mhc_pre_big_fuse (§3.8): bit for bit the composition --------------------------------------------------

@pytest.mark.parametrize("n1", (1, 37, 100))
@pytest.mark.parametrize("H", (1280, 2560, 4096))
@pytest.mark.parametrize("n_splits", (1, 16))
def test_big_fuse(n1, H, n_splits):
    g = gen("big", n1, H, n_splits)
    m = 4
    res = randn(g, 1, n1, m, H, dtype=torch.bfloat16)
    fn = randn(g, 24, m * H) * 1e-2
    scale, base = randn(g, 3) * 0.1, randn(g, 24) * 0.1
    got = O.mhc_pre_big_fuse(res, fn, scale, base, 1e-6, 1e-6, 1e-6, 1.0, 10, n_splits)
    mixes = O.mhc_pre_norm_fn(res, fn, None, 1e-6, fuse_grad_acc=False, n_splits=n_splits)
    pre, post, comb = O.mhc_pre_split_mixes(mixes, scale, base, m, 1.0, 1e-6)
    comb = O.sinkhorn_normalize(comb, 10, 1e-6)
    li = O.mhc_pre_apply_mix(res, pre)
    for a, b in zip(got, (post, comb, li)):
        assert_equal(a, b.detach())


def test_mhc_pre_paths_agree():
    """mhc_pre without gradients (big_fuse, norm_weight merged) gives the bits of the autograd path."""
    g = gen("pre_paths")
    res = randn(g, 2, 19, 4, 512, dtype=torch.bfloat16)
    fn, w = randn(g, 24, 2048) * 1e-2, randn(g, 2048) * 0.1 + 1
    scale, base = randn(g, 3) * 0.1, randn(g, 24) * 0.1
    for nw in (None, w):
        li, (post, comb) = MHC.mhc_pre(res, fn, scale, base, norm_weight=nw, post_mult_value=2.0)
        with torch.no_grad():
            li2, (post2, comb2) = MHC.mhc_pre(res, fn, scale, base, norm_weight=nw, post_mult_value=2.0)
        for a, b in ((li, li2), (post, post2), (comb, comb2)):
            assert_equal(a.detach(), b)


# ---- the functional layer in a training step, and mhc_head -------------------------------------------------

def _ref_pre(residual, fn, scale, base, norm_weight=None):
    mixes = R.mhc_pre_norm_fn_ref(residual, fn, norm_weight, 1e-6)
    pre, post, comb = R.mhc_pre_split_mixes_ref(mixes, scale, base, 4, 1.0, 1e-6)
    comb = R.sinkhorn_normalize_ref(comb, 10, 1e-6)
    return R.mhc_pre_apply_mix_ref(residual, pre), (post, comb)


@pytest.mark.parametrize("L", [1, 2])
def test_layer_training_step(L):
    g = gen("layer", L)
    S, T, H, m = 1, 21, 256, 4
    emb = randn(g, S, T, H, dtype=torch.bfloat16)
    fns = [randn(g, 24, m * H) * 1e-2 for _ in range(L)]
    scales = [randn(g, 3) * 0.1 + 1 for _ in range(L)]
    bases = [randn(g, 24) * 0.1 for _ in range(L)]
    ws = [randn(g, H, H) / H ** 0.5 for _ in range(L)]
    grads = []
    for kernels in (True, False):
        leaves = [emb.clone().requires_grad_()] + [t.clone().requires_grad_() for t in fns + scales + bases + ws]
        r = (MHC.expand_from_embedding if kernels else R.expand_to_mhc_ref)(leaves[0], m)
        for i in range(L):
            f, sc, b, w = leaves[1 + i], leaves[1 + L + i], leaves[1 + 2 * L + i], leaves[1 + 3 * L + i]
            li, (post, comb) = MHC.mhc_pre(r, f, sc, b) if kernels else _ref_pre(r, f, sc, b)
            y = torch.tanh(li.float() @ w).bfloat16()
            r = (O.mhc_post if kernels else R.mhc_post_ref)(y, r, post, comb)
        (r.float() ** 2).mean().backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        torch.testing.assert_close(a.float(), b.float(), rtol=5e-2, atol=5e-3)


def test_second_backward():
    """A second backward over the same graph (retain_graph) works: mhc_post's backward leaves
    the buffer again and norm_fn's takes it; the leaves' gradients double."""
    g = gen("twice")
    emb = randn(g, 1, 7, 128, dtype=torch.bfloat16).requires_grad_()
    fn = (randn(g, 24, 512) * 1e-2).requires_grad_()
    scale, base = (randn(g, 3) * 0.1 + 1).requires_grad_(), (randn(g, 24) * 0.1).requires_grad_()
    r = MHC.expand_from_embedding(emb, 4)
    li, (post, comb) = MHC.mhc_pre(r, fn, scale, base)
    loss = (O.mhc_post(li, r, post, comb).float() ** 2).mean()
    loss.backward(retain_graph=True)
    first = [t.grad.clone() for t in (emb, fn, scale, base)]
    loss.backward()
    for t, f in zip((emb, fn, scale, base), first):
        torch.testing.assert_close(t.grad, 2 * f, rtol=1e-2, atol=1e-6)


def test_mhc_head():
    g = gen("head_layer")
    res = randn(g, 2, 9, 4, 256, dtype=torch.bfloat16)
    fn, scale, base = randn(g, 4, 1024) * 1e-2, randn(g, 1), randn(g, 4)
    go = randn(g, 2, 9, 256, dtype=torch.bfloat16)
    a = [t.clone().requires_grad_() for t in (res, fn, scale, base)]
    out = MHC.mhc_head(*a, pre_eps=1e-2)
    out.backward(go)
    b = [t.clone().requires_grad_() for t in (res, fn, scale, base)]
    fpad = torch.nn.functional.pad(b[1], (0, 0, 0, 20))
    mix = R.mhc_head_compute_mix_ref(R.mhc_pre_norm_fn_ref(b[0], fpad, None, 1e-6)[..., :4], b[2], b[3], 1e-2)
    want = R.mhc_pre_apply_mix_ref(b[0], mix.unsqueeze(-1))
    want.backward(go)
    torch.testing.assert_close(out, want, atol=1e-2, rtol=1e-3)
    for x, y in zip(a, b):
        torch.testing.assert_close(x.grad.float(), y.grad.float(), atol=3e-2, rtol=2e-2)


# ---- mhc_multilayer_recompute (§3.9): bit for bit the ops in sequence ----------------------------------------

@pytest.mark.parametrize("L, P, H", [(1, 1, 2560), (3, 2, 2560), (3, 3, 2560), (10, 9, 2560), (10, 10, 2560),
                                     (10, 9, 4096), (10, 10, 4096), (10, 9, 7168), (10, 10, 7168), (10, 9, 8192),
                                     (10, 10, 8192), (1, 0, 300)])
def test_multilayer_recompute(L, P, H):
    from tilec.modeling.mhc.ops import multilayer_recompute as MR
    g = gen("recompute", L, P, H)
    n, m = 5, 4
    r0 = randn(g, 1, n, m, H, dtype=torch.bfloat16)
    pre = [randn(g, 1, n, m, 1) for _ in range(L)]
    outs = [randn(g, 1, n, H, dtype=torch.bfloat16) for _ in range(P)]
    post = [randn(g, 1, n, m, 1) for _ in range(P)]
    comb = [randn(g, 1, n, m, m) for _ in range(P)]
    lin = [torch.full((1, n, H), 7.0, dtype=torch.bfloat16) for _ in range(L)]
    res = [torch.full((1, n, m, H), 7.0, dtype=torch.bfloat16) for _ in range(P)]
    assert MR.mhc_multilayer_recompute(r0, pre, outs, post, comb, lin, res) is None
    r = r0
    for i in range(L):
        assert_equal(lin[i], O.mhc_pre_apply_mix(r, pre[i]))
        if i < P:
            r = O.mhc_post_fwd(outs[i], r, post[i], comb[i])
            assert_equal(res[i], r)


def test_multilayer_recompute_bad_lists():
    from tilec.modeling.mhc.ops.multilayer_recompute import mhc_multilayer_recompute as mr
    r0 = _bf(1, 3, 4, 64)
    pre, out, post, comb = [_f(1, 3, 4, 1)] * 2, [_bf(1, 3, 64)], [_f(1, 3, 4, 1)], [_f(1, 3, 4, 4)]
    lin, res = [_bf(1, 3, 64)] * 2, [_bf(1, 3, 4, 64)]
    with pytest.raises(ValueError, match="^mhc_multilayer_recompute: pre_mix_list must not be empty"):
        mr(r0, [], [], [], [], [], [])
    with pytest.raises(ValueError, match="^mhc_multilayer_recompute: layer_output_list must have len"):
        mr(r0, pre, [], [], [], lin, [])
    with pytest.raises(ValueError, match=r"^mhc_multilayer_recompute: comb_mix_list must have len\(layer_output_list\)"):
        mr(r0, pre, out, post, [], lin, res)
    with pytest.raises(ValueError, match=r"^mhc_multilayer_recompute: post_mix_list\[0\] must have shape"):
        mr(r0, pre, out, [_f(1, 3, 4)], comb, lin, res)
    with pytest.raises(ValueError, match=r"^mhc_multilayer_recompute: layer_input_list\[1\] must be bfloat16"):
        mr(r0, pre, out, post, comb, [lin[0], _f(1, 3, 64)], res)
    with pytest.raises(ValueError, match="^mhc_multilayer_recompute: residual_list must be a list"):
        mr(r0, pre, out, post, comb, lin, res[0])
