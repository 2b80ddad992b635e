"""One call of a function at its benchmark shape, for a profiler to attach to (Nsight Compute:
`ncu -k regex:NAME --section SpeedOfLight ... python3 bench/profile_one.py WHAT`). Inputs are
made and the function warmed up first; the profiled call is the last one.

WHAT: swiglu_backward (8192 x 2 x 3584, 4 slots per token), per_block_cast_lossless (16384 x 7168),
mask_indices_by_tp (4001 x 8 int64; tilec's kernel and torch.compile's, each called last),
batched_transpose (8 x 4032 x 7168 bf16; tilec's and torch.compile's), transpose_f32_small (4032 x
2048 f32; tilec's and torch.compile's), per_channel_t32 and
per_channel_t128 (per_channel_cast_and_transpose of 16384 x 7168, one scale per 32 / 128 rows),
per_token_cast_e2m1, per_block_cast_e2m1, cast_back_e2m1 (16384 x 7168, packed UE8M0 scales),
swiglu_forward (16384 x 2 x 3584, n = 128, packed scales), swiglu_per_channel (the same x, per-channel
cast with transposed output).

PROFILE_GENERICS="KERNEL:NAME=VALUE,NAME=VALUE" adds generic values to KERNEL's specialisation
(as bench/ab_generics.py does), to profile a variant."""
import os
import sys

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.environ.get("TILEC_DIST", os.path.join(_root, "dist")), "python"))

import torch  # noqa: E402

import tilec  # noqa: E402
import tilec.torch as R  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import patch_kernel_generics  # noqa: E402

if os.environ.get("PROFILE_GENERICS"):
    _kname, _extra = os.environ["PROFILE_GENERICS"].split(":", 1)
    patch_kernel_generics({_kname: dict(e.split("=", 1) for e in _extra.split(","))})

Q = tilec.quant
PK = dict(use_tma_aligned_col_major_sf=True, round_sf=True, use_packed_ue8m0=True)


def swiglu_backward():
    n, hh, k = 8192, 3584, 4
    xq = R.cast(torch.randn((n, 2 * hh), device="cuda"), "e4m3", (1, 128))
    ptt = torch.randperm(n, device="cuda").int()
    ttp = torch.empty(n, dtype=torch.int32, device="cuda")
    ttp[ptt.long()] = torch.arange(n, dtype=torch.int32, device="cuda")
    args = (xq, torch.randn((n, hh), device="cuda").bfloat16(), torch.rand((n // k, k), device="cuda"), ptt,
            ttp.view(n // k, k))
    return lambda: Q.swiglu_backward_and_per_token_cast(*args, 128, True)


def swiglu_forward():
    x = torch.randn((16384, 7168), device="cuda").bfloat16()
    return lambda: Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, **PK)


def swiglu_per_channel():
    x = torch.randn((16384, 7168), device="cuda").bfloat16()
    return lambda: Q.swiglu_forward_and_per_channel_cast_and_transpose(x, "e4m3", 128, True)


def per_block_cast_lossless():
    x = R.cast(torch.randn((16384, 7168), device="cuda"), "e2m1", (1, 32), **PK)
    return lambda: Q.per_block_cast_lossless(x, "e4m3", (1, 32), (128, 128), **PK)


def per_token_cast_e2m1():
    x = torch.randn((16384, 7168), device="cuda").bfloat16()
    return lambda: Q.per_token_cast(x, "e2m1", 32, **PK)


def per_block_cast_e2m1():
    x = torch.randn((16384, 7168), device="cuda").bfloat16()
    return lambda: Q.per_block_cast(x, "e2m1", (128, 128), **PK)


def cast_back_e2m1():
    x = R.cast(torch.randn((16384, 7168), device="cuda"), "e2m1", (1, 32), **PK)
    return lambda: Q.per_token_cast_back(x, "bf16", 32)


def mask_indices_by_tp():
    idx = torch.randint(-1, 256, (4001, 8), device="cuda")
    ref = torch.compile(lambda i: R.moe.mask_indices_by_tp(i, 256, 8, 1, 4), dynamic=True)

    def both():
        tilec.moe.mask_indices_by_tp(idx, 256, 8, 1, 4)
        ref(idx)
    return both


def per_channel_t32():
    x = torch.randn((16384, 7168), device="cuda").bfloat16()
    return lambda: Q.per_channel_cast_and_transpose(x, "e4m3", 32, True)


def per_channel_t128():
    x = torch.randn((16384, 7168), device="cuda").bfloat16()
    return lambda: Q.per_channel_cast_and_transpose(x, "e4m3", 128, True)


def batched_transpose():
    x = torch.randn((8, 4032, 7168), device="cuda").bfloat16()
    ref = torch.compile(lambda v: v.transpose(1, 2).contiguous(), dynamic=False)

    def both():
        tilec.transpose.batched_transpose(x)
        ref(x)
    return both


def transpose_f32_small():
    x = torch.randn((4032, 2048), device="cuda")
    ref = torch.compile(lambda v: v.T.contiguous(), dynamic=False)

    def both():
        tilec.transpose.transpose(x)
        ref(x)
    return both


if __name__ == "__main__":
    fn = {"swiglu_backward": swiglu_backward, "swiglu_forward": swiglu_forward, "swiglu_per_channel": swiglu_per_channel,
          "per_block_cast_lossless": per_block_cast_lossless,
          "mask_indices_by_tp": mask_indices_by_tp, "per_token_cast_e2m1": per_token_cast_e2m1,
          "per_block_cast_e2m1": per_block_cast_e2m1, "cast_back_e2m1": cast_back_e2m1,
          "batched_transpose": batched_transpose, "per_channel_t32": per_channel_t32,
          "per_channel_t128": per_channel_t128, "transpose_f32_small": transpose_f32_small}[sys.argv[1]]()
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
