"""The mHC ops on the GPU over TileKernels' grids (spec moe-engram-mhc.md §3): expand_to_mhc
(n0 in {1, 2}, n1 in {1024, 4096}, m in {2, 4, 8}, H in {1280, 2560, 7168}), sinkhorn_normalize
(n1 in {1, 1024, 4096}), mhc_pre_split_mixes and mhc_head_compute_mix (n1 in {1024, 4096}, SM
counts 1, device - 20 and the device's), mhc_pre_apply_mix (H in {1280, 2560, 7680}) and
mhc_post (n1 = 4096, H in {1280, 2560, 7168}), mhc_pre_norm_fn (test_correctness and
test_split_k_correctness), forward and backward against tilec.torch.mhc at the spec's tolerances;
mhc_pre_big_fuse and mhc_multilayer_recompute bit for bit against the single ops at TileKernels'
sizes; bit for bit where kernel and reference evaluate the same formula; token
counts 0 and 1 and ragged ones; the residual-gradient protocol. Outputs are poisoned first, so
elements the kernels leave unwritten show. Tests named *small* are the compute-sanitizer subset
of scripts/gpu_family.sh mhc."""
import pytest
import torch

import tilec
from tilec.modeling.mhc import ops as O
from tilec.testing import assert_close_to_exact, assert_equal
from tilec.testing.generator import generate_num_sms
from tilec.torch import mhc as R


pytestmark = pytest.mark.usefixtures("poisoned_outputs", "restore_num_sms")   # conftest.py


def cuda(*shape, dtype=torch.float32):
    return torch.randn(shape, device="cuda").to(dtype)


@pytest.mark.parametrize("n0", [1, 2])
@pytest.mark.parametrize("n1", [0, 1, 1024, 4096])
@pytest.mark.parametrize("m", [2, 4, 8])
@pytest.mark.parametrize("H", [1280, 2560, 7168])
def test_expand(n0, n1, m, H):
    x = cuda(n0, n1, H, dtype=torch.bfloat16)
    assert_equal(O.expand_to_mhc(x, m), R.expand_to_mhc_ref(x, m))
    og = cuda(n0, n1, m, H, dtype=torch.bfloat16)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    O.expand_to_mhc(xa, m).backward(og)
    R.expand_to_mhc_ref(xb, m).backward(og)
    torch.testing.assert_close(xa.grad, xb.grad)
    assert_equal(xa.grad, R._sum_in_order(og.float(), -2, keepdim=False).bfloat16())  # j order, §3.1


@pytest.mark.parametrize("n0", [1, 2])
@pytest.mark.parametrize("n1", [1, 1024, 4096])
def test_sinkhorn(n0, n1):
    x, gy = cuda(n0, n1, 4, 4), cuda(n0, n1, 4, 4)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    y = O.sinkhorn_normalize(xa, 10, 1e-6)
    y.backward(gy)
    yr = R.sinkhorn_normalize_ref(xb, 10, 1e-6)
    yr.backward(gy)
    torch.testing.assert_close(y, yr)
    torch.testing.assert_close(xa.grad, xb.grad)


def sms_counts():
    return sorted({1, 3, *generate_num_sms()})


@pytest.mark.parametrize("n0", [1, 2])
@pytest.mark.parametrize("n1", [0, 1, 1024, 4096])
def test_split_mixes(n0, n1):
    z, scale, base = cuda(n0, n1, 24), cuda(3), cuda(24)
    grads = (cuda(n0, n1, 4, 1), cuda(n0, n1, 4, 1), cuda(n0, n1, 4, 4))
    b = [t.clone().requires_grad_() for t in (z, scale, base)]
    want = R.mhc_pre_split_mixes_ref(*b, 4, 2.0, 1e-2)
    torch.autograd.backward(want, grads)
    # grad_scale and grad_base sum over every token: at 8192 the f32 reference is itself 4.5e-5
    # off, beyond the spec's atol, so those two are held to the float64 reference
    e = [t.double().requires_grad_() for t in (z, scale, base)]
    torch.autograd.backward(R.mhc_pre_split_mixes_ref(*e, 4, 2.0, 1e-2), [g.double() for g in grads])
    for n in sms_counts():
        tilec.set_num_sms(n)
        a = [t.clone().requires_grad_() for t in (z, scale, base)]
        got = O.mhc_pre_split_mixes(*a, 4, 2.0, 1e-2)
        torch.autograd.backward(got, grads)
        for u, v in zip(got, want):
            torch.testing.assert_close(u, v, rtol=1e-5, atol=2e-5)
        torch.testing.assert_close(a[0].grad, b[0].grad, rtol=1e-5, atol=2e-5)
        for u, v, x in zip(a[1:], b[1:], e[1:]):
            assert_close_to_exact(u.grad, v.grad, x.grad, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("n0", [1, 2])
@pytest.mark.parametrize("n1", [0, 1, 1024, 4096])
def test_head_compute_mix(n0, n1):
    z, scale, base, gy = cuda(n0, n1, 4), cuda(1), cuda(4), cuda(n0, n1, 4)
    b = [t.clone().requires_grad_() for t in (z, scale, base)]
    want = R.mhc_head_compute_mix_ref(*b, 1e-2)
    want.backward(gy)
    for n in sms_counts():
        tilec.set_num_sms(n)
        a = [t.clone().requires_grad_() for t in (z, scale, base)]
        got = O.mhc_head_compute_mix(*a, 1e-2)
        got.backward(gy)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        for u, v in zip(a, b):
            torch.testing.assert_close(u.grad, v.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n0", [1, 2])
@pytest.mark.parametrize("n1", [1, 1024, 4096])
@pytest.mark.parametrize("H", [1280, 2560, 7680])
def test_apply_mix(n0, n1, H):
    x = torch.sigmoid(cuda(n0, n1, 4, H)).bfloat16()
    mix = torch.softmax(cuda(n0, n1, 4, 1), dim=-2)
    og = cuda(n0, n1, H, dtype=torch.bfloat16)
    xa, ma = x.clone().requires_grad_(), mix.clone().requires_grad_()
    out = O.mhc_pre_apply_mix(xa, ma)
    assert_equal(out, R.mhc_pre_apply_mix_ref(x, mix))
    buf = torch.zeros_like(x)
    xa.untyped_storage().grad_from_mhc_post = buf
    out.backward(og)
    assert xa.grad is None
    xb, mb = x.clone().requires_grad_(), mix.clone().requires_grad_()
    R.mhc_pre_apply_mix_ref(xb, mb).backward(og)
    torch.testing.assert_close(buf, xb.grad, atol=1e-2, rtol=1e-3)
    torch.testing.assert_close(ma.grad, mb.grad, atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize("n0", [1, 2])
@pytest.mark.parametrize("n1", [1, 37, 4096])
@pytest.mark.parametrize("H", [300, 1280, 2560, 2600, 7168])   # 300, 2600: a partial last tile of 256
def test_post(n0, n1, H):
    x, res = cuda(n0, n1, H, dtype=torch.bfloat16), cuda(n0, n1, 4, H, dtype=torch.bfloat16)
    post, comb, go = cuda(n0, n1, 4, 1), cuda(n0, n1, 4, 4), cuda(n0, n1, 4, H, dtype=torch.bfloat16)
    a = [t.clone().requires_grad_() for t in (x, res, post, comb)]
    out = O.mhc_post(*a)
    assert_equal(out, R.mhc_post_ref(x, res, post, comb))
    if H % 256:   # the backward's known defect on the GPU: refused with a clear error
        with pytest.raises(NotImplementedError, match="multiple of 256"):
            out.backward(go)
        return
    out.backward(go)
    b = [t.clone().requires_grad_() for t in (x, res, post, comb)]
    R.mhc_post_ref(*b).backward(go)
    torch.testing.assert_close(a[0].grad, b[0].grad)
    torch.testing.assert_close(a[1].grad, b[1].grad)
    torch.testing.assert_close(a[2].grad, b[2].grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(a[3].grad, b[3].grad, atol=1e-4, rtol=1e-4)


def test_post_after_sinkhorn_small():
    """The post forward right after the kernel that writes its comb mix (programmatic dependent
    launch: the mixes are read after the wait)."""
    for _ in range(20):
        x, res = cuda(1, 333, 1280, dtype=torch.bfloat16), cuda(1, 333, 4, 1280, dtype=torch.bfloat16)
        post, raw = cuda(1, 333, 4, 1), cuda(1, 333, 4, 4)
        comb = O.sinkhorn_normalize(raw)
        got = O.mhc_post(x, res, post, comb)
        assert_equal(got, R.mhc_post_ref(x, res, post, comb))


def test_ops_small():
    """Every op once at a small ragged size, for compute-sanitizer."""
    x = cuda(1, 37, 300, dtype=torch.bfloat16).requires_grad_()
    r = O.expand_to_mhc(x, 4)
    z = cuda(1, 37, 24).requires_grad_()
    scale, base = cuda(3).requires_grad_(), cuda(24).requires_grad_()
    pre, post, comb = O.mhc_pre_split_mixes(z, scale, base, 4, 2.0, 1e-2)
    comb = O.sinkhorn_normalize(comb)
    li = O.mhc_pre_apply_mix(r, pre)
    y = O.mhc_post(torch.tanh(li.float()).bfloat16(), r, post, comb)
    hz = cuda(1, 37, 4).requires_grad_()
    h = O.mhc_head_compute_mix(hz, cuda(1).requires_grad_(), cuda(4).requires_grad_(), 1e-2)
    ((y.float() ** 2).mean() + h.sum()).backward()
    torch.cuda.synchronize()
    assert all(t.grad is not None for t in (x, z, scale, base, hz))


@pytest.mark.parametrize("n1", [4096, 8192])
@pytest.mark.parametrize("H", [1280, 2560, 7168])
@pytest.mark.parametrize("normw", [False, True])
def test_norm_fn(n1, H, normw):
    """TileKernels' test_correctness: out atol = rtol = 1e-3, the residual's gradient (read from the
    buffer) bf16 defaults, fn's atol 3e-2, rtol 1e-3; the reference with TF32 matmuls allowed."""
    from tilec.modeling.mhc import ops as ops
    m = 4
    stream = (1 + 0.01 * torch.arange(m, device="cuda")).view(m, 1)
    res = (cuda(1, n1, m, H) * stream).bfloat16()
    fn = cuda(24, m * H) * 1e-4 * (1 + 0.01 * torch.arange(m, device="cuda").repeat_interleave(H))
    w = cuda(m * H) * 0.1 + 1 if normw else None
    go = cuda(1, n1, 24)
    ra, fa = res.clone().requires_grad_(), fn.clone().requires_grad_()
    out = ops.mhc_pre_norm_fn(ra, fa, w, 1e-6)
    buf = torch.zeros_like(res)
    ra.untyped_storage().grad_from_mhc_post = buf
    out.backward(go)
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        rb, fb = res.clone().requires_grad_(), fn.clone().requires_grad_()
        want = R.mhc_pre_norm_fn_ref(rb, fb, w, 1e-6)
        want.backward(go)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
    torch.testing.assert_close(out, want, atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(buf, rb.grad)
    torch.testing.assert_close(fa.grad, fb.grad, atol=3e-2, rtol=1e-3)


@pytest.mark.parametrize("n1", [13, 48, 512])
@pytest.mark.parametrize("H", [1280, 2560, 4096, 7168])
def test_norm_fn_split_k(n1, H):
    res = cuda(1, n1, 4, H, dtype=torch.bfloat16)
    fn = cuda(24, 4 * H) * 1e-4
    out = O.mhc_pre_norm_fn(res, fn, None, 1e-6, n_splits=16)
    torch.testing.assert_close(out, R.mhc_pre_norm_fn_ref(res, fn, None, 1e-6), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("n1", [512, 1024, 2048, 8192])
@pytest.mark.parametrize("H", [1280, 2560, 4096])
def test_big_fuse(n1, H):
    """TileKernels' test: torch.equal with the composition of the four ops."""
    res = cuda(1, n1, 4, H, dtype=torch.bfloat16)
    fn, scale, base = cuda(24, 4 * H) * 1e-2, cuda(3) * 0.1, cuda(24) * 0.1
    got = O.mhc_pre_big_fuse(res, fn, scale, base, 1e-6, 1e-6, 1e-6, 1.0, 10, 16)
    mixes = O.mhc_pre_norm_fn(res, fn, None, 1e-6, fuse_grad_acc=False, n_splits=16)
    pre, post, comb = O.mhc_pre_split_mixes(mixes, scale, base, 4, 1.0, 1e-6)
    comb = O.sinkhorn_normalize(comb, 10, 1e-6)
    for a, b in zip(got, (post, comb, O.mhc_pre_apply_mix(res, pre))):
        assert_equal(a, b.detach())


@pytest.mark.parametrize("L, P, H", [(1, 1, 2560), (3, 2, 2560), (3, 3, 2560), (10, 9, 2560), (10, 10, 2560),
                                     (10, 9, 4096), (10, 10, 4096), (10, 9, 7168), (10, 10, 7168), (10, 9, 8192),
                                     (10, 10, 8192)])
def test_multilayer_recompute(L, P, H):
    """TileKernels' test: torch.equal for every layer input and residual against the ops in turn."""
    from tilec.modeling.mhc.ops.multilayer_recompute import mhc_multilayer_recompute
    n, m = 8192, 4
    r0 = cuda(1, n, m, H, dtype=torch.bfloat16)
    pre = [cuda(1, n, m, 1) for _ in range(L)]
    outs = [cuda(1, n, H, dtype=torch.bfloat16) for _ in range(P)]
    post = [cuda(1, n, m, 1) for _ in range(P)]
    comb = [cuda(1, n, m, m) for _ in range(P)]
    lin = [torch.empty((1, n, H), dtype=torch.bfloat16, device="cuda") for _ in range(L)]
    res = [torch.empty((1, n, m, H), dtype=torch.bfloat16, device="cuda") for _ in range(P)]
    mhc_multilayer_recompute(r0, pre, outs, post, comb, lin, res)
    r = r0
    for i in range(L):
        assert_equal(lin[i], O.mhc_pre_apply_mix(r, pre[i]))
        if i < P:
            r = O.mhc_post_fwd(outs[i], r, post[i], comb[i])
            assert_equal(res[i], r)


def test_layer_small():
    """mhc_pre (both paths), mhc_post and mhc_head once at a small ragged size, for compute-sanitizer."""
    from tilec.modeling import mhc as MHC
    from tilec.modeling.mhc.ops.multilayer_recompute import mhc_multilayer_recompute
    emb = cuda(1, 37, 300, dtype=torch.bfloat16).requires_grad_()
    fn = (cuda(24, 1200) * 1e-2).requires_grad_()
    scale, base = cuda(3).requires_grad_(), cuda(24).requires_grad_()
    r = MHC.expand_from_embedding(emb, 4)
    li, (post, comb) = MHC.mhc_pre(r, fn, scale, base, n_splits=5)
    r2 = O.mhc_post(torch.tanh(li.float()).bfloat16(), r, post, comb)
    x = MHC.mhc_head(r2, (cuda(4, 1200) * 1e-2).requires_grad_(), cuda(1), cuda(4))
    x.float().square().mean().backward()
    with torch.no_grad():
        li2, _ = MHC.mhc_pre(r, fn, scale, base, n_splits=5)
    assert_equal(li.detach(), li2)
    lin, res = [torch.empty_like(li2) for _ in range(2)], [torch.empty_like(r2)]
    mhc_multilayer_recompute(r.detach(), [cuda(1, 37, 4, 1)] * 2, [li2], [post.detach()], [comb.detach()], lin, res)
    torch.cuda.synchronize()
