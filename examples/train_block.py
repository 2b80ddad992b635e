"""A small decoder block that uses every kernel family of tilec, trained with AdamW on synthetic
tokens next to the same block written with the PyTorch references of tilec.torch.

The block (one layer of a DeepSeek-style decoder, sizes in Config):

    tokens -> embedding -> mHC residual of m streams (expand_from_embedding)
           -> Engram gate on the streams: keys and values looked up from n-gram hash tables
              (tilec.engram.engram_hash, tilec.modeling.engram.engram_gate)
           -> mhc_pre -> causal self-attention (k^T by tilec.transpose.batched_transpose) -> mhc_post
           -> mhc_pre -> top-k MoE feed-forward -> mhc_post
           -> mhc_head -> RMSNorm -> logits -> next-token cross-entropy

The MoE feed-forward routes with tilec.moe: topk_gate on sigmoid scores, get_fused_mapping,
expand_to_fused; the expert inputs are quantised to FP8 e4m3 per token (1 x 128 groups,
tilec.quant.per_token_cast and its cast back); each expert's up-projection is followed by the
weighted SwiGLU with the FP8 cast of the down-projection's input
(swiglu_forward_and_per_token_cast), the down-projection, and reduce_fused back to the tokens.

Kernels without autograd get a small torch.autograd.Function here, with kernels both ways where
the mathematics allows it: expand_to_fused forward / reduce_fused backward (and the converse),
batched_transpose both ways, the SwiGLU forward / swiglu_backward_and_per_token_cast (which also
gives the gradient of the routing weights), and the FP8 quantisation as a straight-through
estimator (the gradient passes the rounding unchanged). The gradients reach every parameter:
embeddings, Engram tables and gate weights, mHC projections, scales and biases, attention,
router and expert weights, the output head.

Both blocks run one and the same model code (Block) over two sets of operations: Kernels (tilec)
and References (tilec.torch and plain torch). CPU tensors run on tilec's emulator; with a GPU
(--device cuda, the default where torch sees one) the same code runs on CUDA tensors.

    python examples/train_block.py                      # 30 steps, both curves, the agreement
    python examples/train_block.py --steps 60 --plot docs/train_block.png
    python examples/train_block.py --ep 2 --steps 4     # experts over 2 processes (EPBlock)

The package is taken from PYTHONPATH, or from the build tree (build/python) next to this file.
"""
import argparse
import dataclasses
import json
import os
import sys
import time
from typing import List, Optional

import torch
import torch.distributed as dist
import torch.nn.functional as F

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
try:
    import tilec  # noqa: F401
except ImportError:
    sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_ROOT, "build", "python")))
    import tilec  # noqa: F401

import tilec.engram
import tilec.moe
import tilec.quant
import tilec.torch as ref
import tilec.transpose
from tilec.modeling.engram import engram_gate
from tilec.modeling.mhc import expand_from_embedding, mhc_head, mhc_pre
from tilec.modeling.mhc.ops import mhc_post
from tilec.torch import engram as ref_engram

# The tilec block's and the reference block's losses: the first (the same parameters, so the
# forward alone) within FIRST_RTOL; every later one within LOSS_RTOL, for runs of up to 100
# steps. The forwards differ only in rounding (the mHC projection's split-K sums, the Engram
# gate's and the mHC backward's sums over tokens and columns in other orders); the gradients also
# in where the residual streams' bf16 gradients are rounded (the kernels add the parts of a
# residual's gradient into one bf16 buffer with fused multiply-adds, autograd over the references
# rounds each part to bf16 and adds them), about 2e-3 relative. Each AdamW step turns such
# differences into parameter differences, which flip FP8 roundings and, now and then, a top-k
# choice; the curves drift apart slowly: measured 1.5e-6 at the first step, 1.2e-5 after one,
# 4.7e-3 at most over the first 10 and 2.5e-2 over 60 (docs/pytorch.md, "An end-to-end block").
LOSS_RTOL = 5e-2
FIRST_RTOL = 1e-5
# The expert-parallel run's losses equal the single-process run's bit for bit; with the batch split
# over the ranks (data parallel) they agree within this relative difference over a short run.
EP_RTOL = 5e-3


@dataclasses.dataclass
class Config:
    vocab: int = 64          # synthetic tokens
    batch: int = 2           # sequences per step
    seq: int = 64            # tokens per sequence (a multiple of 64: the transposes' tiles)
    hidden: int = 256        # H: a multiple of 256 (reduce_fused), 128-element FP8 groups
    mhc_mult: int = 4        # m residual streams (also the Engram gate's heads)
    heads: int = 2           # attention heads of hidden / heads = 128 dimensions
    experts: int = 8
    topk: int = 2
    inter: int = 128         # expert intermediate size (each SwiGLU half a multiple of 128)
    alignment: int = 16      # rows per expert padded to this in the fused layout
    ngram: int = 3           # Engram: n-grams up to 3 tokens
    tables: int = 2          # hash tables per n-gram order
    lr: float = 1.5e-3
    weight_decay: float = 0.01
    fp8_group: int = 128     # per-token FP8 groups of 1 x 128

    @property
    def engram_vocab(self) -> List[List[int]]:
        """Table sizes (M - 1, tables): small primes, so that the hashes spread."""
        primes = [97, 103, 109, 113, 127, 131, 137, 139]
        return [primes[o * self.tables:(o + 1) * self.tables] for o in range(self.ngram - 1)]


# ---- the two sets of operations ---------------------------------------------------------------------

class Kernels:
    """The tilec kernels (emulated for CPU tensors)."""
    name = "tilec"

    def __init__(self, cfg: Config):
        self.cfg = cfg

    # mHC, differentiable layers of tilec.modeling.mhc
    def expand_mhc(self, x):
        return expand_from_embedding(x, self.cfg.mhc_mult)

    def mhc_pre(self, residual, fn, scale, base):
        layer_input, (post, comb) = mhc_pre(residual, fn, scale, base, mhc_mult=self.cfg.mhc_mult)
        return layer_input, post, comb

    def mhc_post(self, x, residual, post, comb):
        return mhc_post(x, residual, post, comb)

    def mhc_head(self, residual, fn, scale, base):
        return mhc_head(residual, fn, scale, base, mhc_mult=self.cfg.mhc_mult)

    # Engram
    def engram_hash(self, ids, mult, vocab, offsets):
        return tilec.engram.engram_hash(ids, mult, vocab, offsets)

    def engram_gate(self, x, k, v, wh, we, clamp, eps):
        """wh, we: the f32 master weights. The layer reads bf16 copies and adds its f32 weight
        gradients into their ``main_grad``, here the masters' .grad (no rounding to bf16)."""
        w16 = []
        for w in (wh, we):
            if w.grad is None:
                w.grad = torch.zeros_like(w)
            c = w.detach().bfloat16()
            c.main_grad = w.grad
            w16.append(c)
        return engram_gate(x, k, v, w16[0], w16[1], clamp, eps)

    # routing and the fused layout (no autograd: wrapped by the Functions below)
    def topk(self, scores, k):
        return tilec.moe.topk_gate(scores, k)

    def fused_mapping(self, idx, experts, alignment):
        return tilec.moe.get_fused_mapping(idx, experts, 0, alignment)

    def mask_to_rank(self, idx, experts, world, rank):
        return tilec.moe.mask_indices_by_tp(idx, experts, world, rank, world)

    def expand_to_fused(self, x, ttp, pte):
        return tilec.moe.expand_to_fused(x, ttp, pte)

    def reduce_fused(self, x, ttp):
        return tilec.moe.reduce_fused(x, None, ttp)

    # FP8
    def per_token_cast(self, x):
        return tilec.quant.per_token_cast(x, "e4m3", self.cfg.fp8_group)

    def cast_back(self, q, fmt):
        return tilec.quant.per_token_cast_back(q, fmt, self.cfg.fp8_group)

    def swiglu_fp8(self, y, pttk, w, pte):
        return tilec.quant.swiglu_forward_and_per_token_cast(y, "e4m3", self.cfg.fp8_group, pttk, w, pte)

    def swiglu_backward(self, yq, grad, w, pttk, ttp):
        _, _, x_grad, w_grad = tilec.quant.swiglu_backward_and_per_token_cast(yq, grad, w, pttk, ttp,
                                                                              self.cfg.fp8_group)
        return x_grad, w_grad

    # layouts
    def batched_transpose(self, x):
        return tilec.transpose.batched_transpose(x)


class References:
    """The PyTorch references of tilec.torch and plain torch: the same block without a kernel."""
    name = "reference"

    def __init__(self, cfg: Config):
        self.cfg = cfg

    def expand_mhc(self, x):
        return ref.expand_to_mhc_ref(x, self.cfg.mhc_mult)

    def mhc_pre(self, residual, fn, scale, base):
        m = self.cfg.mhc_mult
        mixes = ref.mhc_pre_norm_fn_ref(residual, fn, None, 1e-6)
        pre, post, comb = ref.mhc_pre_split_mixes_ref(mixes, scale, base, m, 1.0, 1e-6)
        comb = ref.sinkhorn_normalize_ref(comb, 10, 1e-6)
        return ref.mhc_pre_apply_mix_ref(residual, pre), post, comb

    def mhc_post(self, x, residual, post, comb):
        return ref.mhc_post_ref(x, residual, post, comb)

    def mhc_head(self, residual, fn, scale, base):
        mixes = ref.mhc_pre_norm_fn_ref(residual, fn, None, 1e-6)
        mix = ref.mhc_head_compute_mix_ref(mixes, scale, base, 1e-6)
        return ref.mhc_pre_apply_mix_ref(residual, mix.unsqueeze(-1))

    def engram_hash(self, ids, mult, vocab, offsets):
        return ref_engram.engram_hash_ref(ids, mult, vocab, offsets)

    def engram_gate(self, x, k, v, wh, we, clamp, eps):
        """wh, we: the f32 master weights, read as their bf16 values (in f32, so that their
        gradients stay f32, as the kernels' main_grad)."""
        def bf16_values(w):
            return w + (w.bfloat16().float() - w).detach()
        return ref_engram.engram_gate_ref(x, k, v, bf16_values(wh), bf16_values(we), clamp, eps)

    def topk(self, scores, k):
        return ref.topk_gate(scores, k)

    def fused_mapping(self, idx, experts, alignment):
        return ref.get_fused_mapping(idx, experts, 0, alignment)

    def mask_to_rank(self, idx, experts, world, rank):
        return ref.mask_indices_by_tp(idx, experts, world, rank, world)

    def expand_to_fused(self, x, ttp, pte):
        return ref.expand_to_fused(x, ttp, pte)

    def reduce_fused(self, x, ttp):
        return ref.reduce_fused(x, None, ttp)

    def per_token_cast(self, x):
        return ref.cast(x, "e4m3", (1, self.cfg.fp8_group))

    def cast_back(self, q, fmt):
        return ref.cast_back(q, fmt, (1, self.cfg.fp8_group))

    def swiglu_fp8(self, y, pttk, w, pte):
        act = ref.swiglu_forward(y, pttk, w)
        act = torch.where((pte >= 0)[:, None], act, torch.zeros((), device=act.device))
        return ref.cast(act, "e4m3", (1, self.cfg.fp8_group))

    def swiglu_backward(self, yq, grad, w, pttk, ttp):
        _, x_grad, w_grad = ref.swiglu_backward(yq, grad, w, pttk, ttp, self.cfg.fp8_group)
        return x_grad.bfloat16(), w_grad

    def batched_transpose(self, x):
        return ref.batched_transpose(x)


# ---- autograd for the kernels that have none ---------------------------------------------------

class ExpandToFused(torch.autograd.Function):
    """x (T, H) -> its rows in the experts' slots (N, H); backward: reduce_fused of the slots'
    gradients with weight 1 (the sum over each token's k slots)."""

    @staticmethod
    def forward(ctx, x, ttp, pte, ops):
        ctx.save_for_backward(ttp)
        ctx.ops = ops
        return ops.expand_to_fused(x, ttp, pte)

    @staticmethod
    def backward(ctx, grad):
        (ttp,) = ctx.saved_tensors
        return ctx.ops.reduce_fused(grad.contiguous(), ttp), None, None, None


class ReduceFused(torch.autograd.Function):
    """The experts' rows (N, H) summed back to their tokens (T, H); backward: expand_to_fused of
    the tokens' gradients (padding slots get zeros)."""

    @staticmethod
    def forward(ctx, y, ttp, pte, ops):
        ctx.save_for_backward(ttp, pte)
        ctx.ops = ops
        return ops.reduce_fused(y, ttp)

    @staticmethod
    def backward(ctx, grad):
        ttp, pte = ctx.saved_tensors
        return ctx.ops.expand_to_fused(grad.contiguous(), ttp, pte), None, None, None


class QuantFP8(torch.autograd.Function):
    """Per-token FP8 e4m3 quantisation and its cast back to bf16 (what an FP8 GEMM would read);
    the backward is straight through."""

    @staticmethod
    def forward(ctx, x, ops):
        return ops.cast_back(ops.per_token_cast(x), "bf16")

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class SwiGLUFP8(torch.autograd.Function):
    """The experts' weighted SwiGLU on the FP8 up-projection: y (N, 2I) is cast per token to
    e4m3; act = silu(l) * r * topk weight of the slot, cast to e4m3 again (the down-projection's
    input) and returned cast back to bf16. Backward: swiglu_backward_and_per_token_cast from the
    saved FP8 y gives the gradients of y and of the routing weights (the act cast is straight
    through)."""

    @staticmethod
    def forward(ctx, y, weights, pttk, ttp, pte, ops):
        yq = ops.per_token_cast(y)
        act = ops.cast_back(ops.swiglu_fp8(ops.cast_back(yq, "fp32"), pttk, weights, pte), "bf16")
        ctx.save_for_backward(yq[0], yq[1], weights, pttk, ttp)
        ctx.ops = ops
        return act

    @staticmethod
    def backward(ctx, grad):
        q, sf, weights, pttk, ttp = ctx.saved_tensors
        x_grad, w_grad = ctx.ops.swiglu_backward((q, sf), grad.contiguous(), weights, pttk, ttp)
        return x_grad, w_grad, None, None, None, None


class BatchedTranspose(torch.autograd.Function):
    """(B, M, N) -> (B, N, M) contiguous, a transpose both ways."""

    @staticmethod
    def forward(ctx, x, ops):
        ctx.ops = ops
        return ops.batched_transpose(x)

    @staticmethod
    def backward(ctx, grad):
        return ctx.ops.batched_transpose(grad.contiguous()), None


# ---- the block ----------------------------------------------------------------------------------

def init_params(cfg: Config, seed: int = 0) -> dict:
    """f32 master parameters (AdamW updates them; the forward casts to bf16 where a kernel reads
    bf16), the same values for both blocks."""
    g = torch.Generator().manual_seed(seed)
    H, m, E, I, V = cfg.hidden, cfg.mhc_mult, cfg.experts, cfg.inter, cfg.vocab
    M3 = m * (m + 2)
    rows = sum(sum(r) for r in cfg.engram_vocab)

    def randn(*shape, std):
        return torch.randn(*shape, generator=g) * std

    p = {
        "embed": randn(V, H, std=1.0),
        "engram_table": randn(rows, H // cfg.tables, std=1.0),
        # a gate of its own for each stream: the streams, copies of the embedding until then,
        # differ from here on (with equal streams the Sinkhorn mixes get no gradient but noise)
        "engram_wh": 1.0 + randn(m, H, std=0.5),
        "engram_we": 1.0 + randn(m, H, std=0.5),
        "head_out": randn(V, H, std=H ** -0.5),
        "norm_out": torch.ones(H),
        "mhc_head_fn": randn(m, m * H, std=0.02),
        "mhc_head_scale": torch.ones(1),
        "mhc_head_base": torch.zeros(m),
    }
    for s in ("attn", "moe"):
        p[f"mhc_{s}_fn"] = randn(M3, m * H, std=0.02)
        p[f"mhc_{s}_scale"] = torch.ones(3)
        p[f"mhc_{s}_base"] = torch.zeros(M3)
        p[f"norm_{s}"] = torch.ones(H)
    for w in ("q", "k", "v", "o"):
        p[f"attn_{w}"] = randn(H, H, std=H ** -0.5)
    p["router"] = randn(E, H, std=H ** -0.5)
    p["expert_up"] = randn(E, 2 * I, H, std=H ** -0.5)
    p["expert_down"] = randn(E, H, I, std=I ** -0.5)
    return p


def engram_constants(cfg: Config, device) -> dict:
    """The hash's multipliers, table sizes and row offsets (one layer)."""
    g = torch.Generator().manual_seed(1234)
    vocab = torch.tensor([cfg.engram_vocab], dtype=torch.int32)
    flat = vocab.reshape(1, -1).long()
    offsets = (torch.cumsum(flat, 1) - flat).to(torch.int32)
    mult = torch.randint(1, 100_000, (1, cfg.ngram), generator=g, dtype=torch.int64)
    return {"mult": mult.to(device), "vocab": vocab.to(device), "offsets": offsets.to(device)}


def rms_norm(x, weight, eps=1e-6):
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class Block(torch.nn.Module):
    """The decoder block over a set of operations (Kernels or References)."""

    def __init__(self, cfg: Config, ops, params: dict, device):
        super().__init__()
        self.cfg, self.ops = cfg, ops
        self.p = torch.nn.ParameterDict({k: torch.nn.Parameter(v.clone().to(device)) for k, v in params.items()})
        self.consts = engram_constants(cfg, device)

    def ngram_ids(self, tokens):
        """(A, S) tokens -> int32 (A * S, ngram): each token and the ngram - 1 before it (0 before
        the start)."""
        cols = [tokens]
        for n in range(1, self.cfg.ngram):
            cols.append(F.pad(tokens, (n, 0))[:, :tokens.shape[1]])
        return torch.stack(cols, -1).reshape(-1, self.cfg.ngram).to(torch.int32).contiguous()

    def engram(self, residual, tokens):
        p = self.p
        A, S, m, H = residual.shape
        rows = self.ops.engram_hash(self.ngram_ids(tokens), self.consts["mult"], self.consts["vocab"],
                                    self.consts["offsets"])[0]                    # (A S, (M-1) tables)
        emb = p["engram_table"][rows.long()].reshape(A, S, -1).bfloat16()        # (A, S, 2 H)
        k = emb[..., :H].unsqueeze(-2).expand(A, S, m, H)                         # one key for all streams
        v = emb[..., H:2 * H]
        return self.ops.engram_gate(residual, k, v, p["engram_wh"], p["engram_we"], 1e-6, 1e-6)

    def attention(self, x):
        cfg, p, ops = self.cfg, self.p, self.ops
        A, S, H = x.shape
        nh, hd = cfg.heads, H // cfg.heads
        h = rms_norm(x, p["norm_attn"])

        def heads(w):
            return (h @ p[w].T).bfloat16().view(A, S, nh, hd).transpose(1, 2).reshape(A * nh, S, hd)

        q, k, v = heads("attn_q"), heads("attn_k"), heads("attn_v")
        kt = BatchedTranspose.apply(k.contiguous(), ops)                       # (A nh, hd, S)
        scores = (q.float() @ kt.float()) * hd ** -0.5
        causal = torch.ones(S, S, dtype=torch.bool, device=x.device).tril()
        probs = scores.masked_fill(~causal, float("-inf")).softmax(-1)
        out = (probs @ v.float()).view(A, nh, S, hd).transpose(1, 2).reshape(A, S, H)
        return (out @ p["attn_o"].T).bfloat16()

    def route(self, x):
        """Router: sigmoid scores, top-k experts, their scores normalised to sum 1 (differentiable
        in the router and x)."""
        scores = torch.sigmoid(x.float() @ self.p["router"].T)                 # (T, E)
        idx = self.ops.topk(scores.detach(), self.cfg.topk)
        w = scores.gather(1, idx)
        return idx, (w / w.sum(-1, keepdim=True)).contiguous()

    def experts(self, xf, counts, w_up, w_down, weights, pttk, ttp, pte):
        """The experts on their slots of the fused layout: FP8 input, up-projection, weighted
        SwiGLU with FP8 output, down-projection. counts: the (aligned) slots of each expert."""
        ops = self.ops
        xq = QuantFP8.apply(xf, ops)
        y = torch.cat([seg.float() @ w.T for seg, w in zip(torch.split(xq, counts), w_up.unbind(0))]).bfloat16()
        act = SwiGLUFP8.apply(y, weights, pttk, ttp, pte, ops)
        return torch.cat([seg.float() @ w.T for seg, w in zip(torch.split(act, counts), w_down.unbind(0))]).bfloat16()

    def moe(self, x):
        cfg, p, ops = self.cfg, self.p, self.ops
        A, S, H = x.shape
        h = rms_norm(x, p["norm_moe"]).bfloat16().reshape(A * S, H)
        idx, weights = self.route(h)
        pte, _, pttk, ttp, _, _, _, counts = ops.fused_mapping(idx, cfg.experts, cfg.alignment)
        xf = ExpandToFused.apply(h, ttp, pte, ops)
        yf = self.experts(xf, counts, p["expert_up"], p["expert_down"], weights, pttk, ttp, pte)
        return ReduceFused.apply(yf, ttp, pte, ops).view(A, S, H)

    def forward(self, tokens, targets):
        """The cross-entropy of every token (A S,), f32."""
        p, ops = self.p, self.ops
        x = p["embed"][tokens].bfloat16()                                      # (A, S, H)
        residual = ops.expand_mhc(x)                                            # (A, S, m, H)
        residual = self.engram(residual, tokens)
        for name, layer in (("attn", self.attention), ("moe", self.moe)):
            inp, post, comb = ops.mhc_pre(residual, p[f"mhc_{name}_fn"], p[f"mhc_{name}_scale"],
                                          p[f"mhc_{name}_base"])
            residual = ops.mhc_post(layer(inp), residual, post, comb)
        h = ops.mhc_head(residual, p["mhc_head_fn"], p["mhc_head_scale"], p["mhc_head_base"])
        logits = rms_norm(h, p["norm_out"]) @ p["head_out"].T
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none")


# ---- data and training --------------------------------------------------------------------------

def synthetic_batch(cfg: Config, step: int, seed: int = 0):
    """(tokens, targets) int64 (batch, seq) of step ``step``: sequences of a fixed rule, the token
    after a is perm[a] for a random permutation of the vocabulary, with 20 % of the tokens drawn at
    random instead (the best loss is then about 1.3); the same for every run of the seed."""
    perm = torch.randperm(cfg.vocab, generator=torch.Generator().manual_seed(seed + 7))
    g = torch.Generator().manual_seed(seed * 100_003 + step)
    A, S, V = cfg.batch, cfg.seq, cfg.vocab
    t = torch.empty(A, S + 1, dtype=torch.int64)
    t[:, 0] = torch.randint(0, V, (A,), generator=g)
    noise = torch.rand(A, S + 1, generator=g) < 0.2
    rand = torch.randint(0, V, (A, S + 1), generator=g)
    for i in range(1, S + 1):
        t[:, i] = torch.where(noise[:, i], rand[:, i], perm[t[:, i - 1]])
    return t[:, :-1].contiguous(), t[:, 1:].contiguous()


def make_optimizer(block: Block, cfg: Config):
    return torch.optim.AdamW(block.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=cfg.weight_decay)


def train(steps: int = 40, device: Optional[str] = None, seed: int = 0, cfg: Optional[Config] = None,
          log=None, check_grads: bool = False, sides=("tilec", "reference")):
    """Trains the tilec block and the reference block side by side for ``steps`` steps from the
    same parameters and batches. Returns {"tilec": [losses], "reference": [losses], "seconds":
    {...}}. check_grads: after the first backward, every parameter of both blocks must have a
    nonzero gradient (an AssertionError names the ones that have none)."""
    cfg = cfg or Config()
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    params = init_params(cfg, seed)
    blocks = {name: Block(cfg, ops(cfg), params, device) for name, ops in (("tilec", Kernels),
                                                                           ("reference", References))
              if name in sides}
    opts = {name: make_optimizer(b, cfg) for name, b in blocks.items()}
    losses = {name: [] for name in blocks}
    seconds = {name: 0.0 for name in blocks}
    for step in range(steps):
        tokens, targets = (t.to(device) for t in synthetic_batch(cfg, step, seed))
        for name, block in blocks.items():
            t0 = time.perf_counter()
            opts[name].zero_grad(set_to_none=True)
            loss = block(tokens, targets).mean()
            loss.backward()
            if check_grads and step == 0:
                dead = [k for k, v in block.p.items() if v.grad is None or not bool(v.grad.abs().sum() > 0)]
                assert not dead, f"{name}: no gradient reaches {dead}"
            opts[name].step()
            if device == "cuda":
                torch.cuda.synchronize()
            seconds[name] += time.perf_counter() - t0
            losses[name].append(loss.detach().item())
        if log:
            log(f"step {step:3d}  " + "  ".join(f"{n} {v[-1]:.5f}" for n, v in losses.items()))
    return {**losses, "seconds": seconds}


# ---- expert parallelism -------------------------------------------------------------------------

def _all_to_all(x, send: List[int], recv: List[int], group=None):
    out = x.new_empty((sum(recv),) + tuple(x.shape[1:]))
    dist.all_to_all_single(out, x.contiguous(), recv, send, group=group)
    return out


class AllToAll(torch.autograd.Function):
    """Rows exchanged between the ranks: send[d] rows of x (in rank order) go to rank d, recv[s]
    rows come from rank s; the backward sends the gradients the reverse way."""

    @staticmethod
    def forward(ctx, x, send, recv):
        ctx.send, ctx.recv = send, recv
        return _all_to_all(x, send, recv)

    @staticmethod
    def backward(ctx, grad):
        return _all_to_all(grad, ctx.recv, ctx.send), None, None


class OwnRows(torch.autograd.Function):
    """The rows [r T / W, (r + 1) T / W) of a tensor that every rank holds whole (rank r's
    share); backward: the shares' gradients gathered from all ranks, the whole gradient on each."""

    @staticmethod
    def forward(ctx, x, rank, world):
        n = x.shape[0] // world
        ctx.world = world
        return x[rank * n:(rank + 1) * n].contiguous()

    @staticmethod
    def backward(ctx, grad):
        every = [torch.empty_like(grad) for _ in range(ctx.world)]
        dist.all_gather(every, grad.contiguous())
        return torch.cat(every), None, None


class AllRows(torch.autograd.Function):
    """The shares of all ranks gathered, in rank order; backward: this rank's rows of the
    gradient (every rank has the same whole gradient)."""

    @staticmethod
    def forward(ctx, x, rank, world):
        ctx.rank, ctx.n = rank, x.shape[0]
        every = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(every, x.contiguous())
        return torch.cat(every)

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.rank * ctx.n:(ctx.rank + 1) * ctx.n].contiguous(), None, None


class EPBlock(Block):
    """The block with its experts split over the W ranks of the default process group: rank r
    holds experts [r E / W, (r + 1) E / W).

    The MoE feed-forward: rank r routes its share of the tokens (the same router everywhere);
    gives every (token, k) entry its own row (expand_to_fused with the identity layout t K + k);
    sends the entries to the ranks of their experts (all-to-all, with their expert ids and
    routing weights); there mask_indices_by_tp (the EP arguments: W EP ranks in W groups, this
    rank's) renumbers the received entries' experts locally, and get_fused_mapping,
    expand_to_fused, the FP8 experts and reduce_fused run on them as tokens of one slot each; the
    rows go back (all-to-all) to their (t, k) places, and reduce_fused sums each token's k rows in
    k order. Every expert sees its rows in the order and padding of the single-process layout
    (ascending t K + k of the whole batch), and every token's k rows are summed in the same
    order, so the MoE computes what one process computes, bit for bit; the gradients flow back
    through the same exchanges (expert weights' gradients on their ranks).

    split_batch=False (the default): every rank runs the rest of the block on the whole batch and
    owns a share of the tokens for the MoE (OwnRows / AllRows move the shares): the losses and
    every gradient equal the single-process run's bit for bit. split_batch=True: rank r runs the
    rest of the block on its own sequences only (data parallel, the replicated parameters'
    gradients summed by all-reduce): the sums over tokens then split differently, and the losses
    agree to rounding, not to the bit."""

    def __init__(self, cfg: Config, ops, params: dict, device, rank: int, world: int, split_batch: bool = False):
        if cfg.experts % world or cfg.batch % world or (cfg.batch * cfg.seq) % world:
            raise ValueError(f"EPBlock: {world} ranks must divide the experts ({cfg.experts}) and the batch "
                             f"({cfg.batch})")
        el = cfg.experts // world
        local = dict(params)
        for w in ("expert_up", "expert_down"):
            local[w] = params[w][rank * el:(rank + 1) * el]
        super().__init__(cfg, ops, local, device)
        self.rank, self.world, self.split_batch = rank, world, split_batch

    def moe(self, x):
        cfg, p, ops, W, r = self.cfg, self.p, self.ops, self.world, self.rank
        A, S, H = x.shape
        h = rms_norm(x, p["norm_moe"]).bfloat16().reshape(A * S, H)
        idx, weights = self.route(h)                                            # global experts (T, K)
        if not self.split_batch:                                                # this rank's share
            n = idx.shape[0] // W
            h, weights, idx = OwnRows.apply(h, r, W), OwnRows.apply(weights, r, W), idx[r * n:(r + 1) * n]
        T, K = idx.shape
        dev = h.device
        ident = torch.arange(T * K, dtype=torch.int32, device=dev).view(T, K)
        all_slots = torch.zeros(T * K, dtype=torch.int32, device=dev)          # no padding slot
        entries = ExpandToFused.apply(h, ident, all_slots, ops)                # (T K, H), row t K + k
        dest = torch.div(idx.reshape(-1), cfg.experts // W, rounding_mode="floor")
        order = torch.sort(dest, stable=True).indices                          # by rank, then t K + k
        send_t = torch.bincount(dest, minlength=W)
        recv_t = torch.empty_like(send_t)
        dist.all_to_all_single(recv_t, send_t)
        send, recv = send_t.tolist(), recv_t.tolist()
        rx = AllToAll.apply(entries[order], send, recv)                        # (n, H)
        rw = AllToAll.apply(weights.reshape(-1)[order], send, recv).view(-1, 1)
        rid = _all_to_all(idx.reshape(-1)[order], send, recv).view(-1, 1)
        local = ops.mask_to_rank(rid, cfg.experts, W, r)                       # local expert ids
        pte, _, pttk, ttp, _, _, _, counts = ops.fused_mapping(local, cfg.experts // W, cfg.alignment)
        xf = ExpandToFused.apply(rx, ttp, pte, ops)
        yf = self.experts(xf, counts, p["expert_up"], p["expert_down"], rw.contiguous(), pttk, ttp, pte)
        ry = ReduceFused.apply(yf, ttp, pte, ops)                              # (n, H), entry order
        back = AllToAll.apply(ry, recv, send)                                  # in `order`
        rows = back.index_select(0, torch.argsort(order))                     # row t K + k
        out = ReduceFused.apply(rows, ident, all_slots, ops)
        if not self.split_batch:
            out = AllRows.apply(out, r, W)
        return out.view(A, S, H)


def train_ep(rank: int, world: int, steps: int, device: Optional[str] = None, seed: int = 0,
             cfg: Optional[Config] = None, log=None, split_batch: bool = False) -> List[float]:
    """One rank of the expert-parallel run (the process group already initialised): the tilec
    block of train() with its experts split over ``world`` ranks (EPBlock). Returns the losses of
    the whole batch, the same on every rank."""
    cfg = cfg or Config()
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda":
        device = f"cuda:{rank % torch.cuda.device_count()}"
        torch.cuda.set_device(device)
    block = EPBlock(cfg, Kernels(cfg), init_params(cfg, seed), device, rank, world, split_batch)
    opt = make_optimizer(block, cfg)
    shared = [v for k, v in block.p.items() if k not in ("expert_up", "expert_down")]
    a = cfg.batch // world
    losses = []
    for step in range(steps):
        tokens, targets = (t.to(device) for t in synthetic_batch(cfg, step, seed))
        if split_batch:
            tokens, targets = tokens[rank * a:(rank + 1) * a], targets[rank * a:(rank + 1) * a]
        opt.zero_grad(set_to_none=True)
        ce = block(tokens, targets)
        if split_batch:
            (ce.sum() / (ce.numel() * world)).backward()                      # this rank's part of the mean
            for v in shared:
                dist.all_reduce(v.grad)
            every = [torch.empty_like(ce) for _ in range(world)]
            dist.all_gather(every, ce.detach())
            loss = torch.cat(every).mean()                                     # the mean as one process takes it
        else:
            loss = ce.mean()
            loss.backward()
        opt.step()
        losses.append(loss.item())
        if log and rank == 0:
            log(f"step {step:3d}  tilec, {world} ranks {losses[-1]:.5f}")
    return losses


def _ep_worker(rank: int, world: int, init_file: str, out: str, steps: int, device: Optional[str], seed: int,
               split_batch: bool):
    cuda = (device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")
    dist.init_process_group("nccl" if cuda else "gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world)
    try:
        losses = train_ep(rank, world, steps, device, seed, split_batch=split_batch)
        if rank == 0:
            with open(out, "w") as f:
                json.dump(losses, f)
    finally:
        dist.destroy_process_group()


def run_ep(world: int, steps: int, device: Optional[str] = None, seed: int = 0,
           split_batch: bool = False) -> List[float]:
    """train_ep on ``world`` processes (torch.multiprocessing), gloo on CPU tensors, NCCL on GPUs;
    returns rank 0's losses."""
    import tempfile
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        init, out = os.path.join(tmp, "init"), os.path.join(tmp, "losses.json")
        mp.spawn(_ep_worker, args=(world, init, out, steps, device, seed, split_batch), nprocs=world)
        with open(out) as f:
            return json.load(f)


def max_rel_diff(a: List[float], b: List[float]) -> float:
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def plot(result: dict, path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    steps = range(1, len(result["tilec"]) + 1)
    ax.plot(steps, result["reference"], label="reference (tilec.torch)", lw=2.5, color="#bbbbbb")
    ax.plot(steps, result["tilec"], label="tilec kernels", lw=1.2, color="#1f5fa8")
    ax.set_ylabel("cross-entropy")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    rel = [abs(x - y) / abs(y) for x, y in zip(result["tilec"], result["reference"])]
    ax2.semilogy(steps, [max(r, 1e-9) for r in rel], color="#a83a1f", lw=1)
    ax2.axhline(LOSS_RTOL, color="k", ls="--", lw=0.8, label=f"tolerance {LOSS_RTOL:g}")
    ax2.set_ylabel("|rel. diff|")
    ax2.set_xlabel("step")
    ax2.legend(loc="lower right")
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--device", default=None, help="cpu (the emulator) or cuda (default: cuda where there is one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot", metavar="PNG", help="write both loss curves to this PNG (needs matplotlib)")
    ap.add_argument("--json", metavar="FILE", help="write the losses and timings as JSON")
    ap.add_argument("--ep", type=int, metavar="W", help="also train the tilec block with its experts split over W "
                    "processes (gloo on CPU, NCCL on GPUs) and compare with the single-process losses")
    ap.add_argument("--split-batch", action="store_true", help="with --ep: each rank runs the rest of the block "
                    "on its own sequences (data parallel) instead of the whole batch")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.ep:
        return main_ep(args)
    t0 = time.perf_counter()
    res = train(args.steps, args.device, args.seed, log=None if args.quiet else print)
    wall = time.perf_counter() - t0
    rel = max_rel_diff(res["tilec"], res["reference"])
    dev = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    print(f"{args.steps} steps on {dev} in {wall:.1f} s (tilec block {res['seconds']['tilec']:.1f} s, reference "
          f"{res['seconds']['reference']:.1f} s); loss {res['tilec'][0]:.4f} -> {res['tilec'][-1]:.4f} (tilec), "
          f"{res['reference'][0]:.4f} -> {res['reference'][-1]:.4f} (reference); largest relative difference "
          f"{rel:.2e} (tolerance {LOSS_RTOL:g}), at the first step {abs(res['tilec'][0] - res['reference'][0]) / abs(res['reference'][0]):.2e} "
          f"(tolerance {FIRST_RTOL:g})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**res, "device": dev, "steps": args.steps, "max_rel_diff": rel}, f, indent=1)
    if args.plot:
        plot(res, args.plot, f"examples/train_block.py: {args.steps} AdamW steps on {dev}")
    first = abs(res["tilec"][0] - res["reference"][0]) / abs(res["reference"][0])
    return 0 if rel <= LOSS_RTOL and first <= FIRST_RTOL else 1


def main_ep(args) -> int:
    t0 = time.perf_counter()
    single = train(args.steps, args.device, args.seed, sides=("tilec",))["tilec"]
    t1 = time.perf_counter()
    ep = run_ep(args.ep, args.steps, args.device, args.seed, args.split_batch)
    t2 = time.perf_counter()
    rel = max_rel_diff(ep, single)
    for i, (a, b) in enumerate(zip(single, ep)):
        if not args.quiet:
            print(f"step {i:3d}  one process {a:.7f}  {args.ep} ranks {b:.7f}")
    same = sum(a == b for a, b in zip(single, ep))
    want = f"tolerance {EP_RTOL:g}" if args.split_batch else "required: all equal"
    print(f"{args.steps} steps: one process {t1 - t0:.1f} s, {args.ep} ranks {t2 - t1:.1f} s; {same} of "
          f"{args.steps} losses bit for bit equal; largest relative difference {rel:.2e} ({want})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"single": single, "ep": ep, "world": args.ep, "max_rel_diff": rel}, f, indent=1)
    return 0 if (rel <= EP_RTOL if args.split_batch else ep == single) else 1


if __name__ == "__main__":
    sys.exit(main())
