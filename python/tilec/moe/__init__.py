"""MoE gating and routing (TileKernels ``tile_kernels.moe``, spec moe-engram-mhc.md §1).

Every function checks its arguments and raises ValueError ("function: rule") before anything is
launched; outputs are fresh contiguous tensors unless the spec says otherwise. Integer results
never depend on ``tilec.set_num_sms``. Unlike TileKernels, the fused layout of
:func:`get_fused_mapping` is deterministic: within an expert, entries come in ascending
flattened index ``t * K + k`` (so ascending token order), whatever the SM count.
"""
from typing import Optional, Tuple, Union

import torch

from .. import _runtime
from ..config import get_num_sms
from .scoring import ScoringFunc

QuantTensor = Tuple[torch.Tensor, torch.Tensor]

__all__ = ["topk_gate", "top2_sum_gate", "topk_sum_and_topk_group_idx", "get_fused_mapping", "expand_to_fused",
           "expand_to_fused_with_sf", "reduce_fused", "normalize_weight", "group_count", "aux_fi",
           "mask_indices_by_tp", "inplace_unique_group_indices", "ScoringFunc"]

_INT_NAMES = {torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8"}
_RAW = {1: (torch.uint8, "u8"), 2: (torch.int16, "i16"), 4: (torch.int32, "i32")}
# one block does the whole job below these sizes (decode): a single launch
_SINGLE_MAPPING = 4096
_SINGLE_HISTOGRAM = 8192


def _b(v: bool) -> str:
    return "true" if v else "false"


def _pres(name: str, t) -> str:
    return f"{name}={'absent' if t is None else 'present'}"


def _cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def _align(a: int, b: int) -> int:
    return _cdiv(a, b) * b


def _check_tensor(fn, name, t, dtypes, dim, contiguous=True):
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{fn}: {name} must be a tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        want = " or ".join(str(d).replace("torch.", "") for d in dtypes)
        raise ValueError(f"{fn}: {name} must be {want}, got {str(t.dtype).replace('torch.', '')}")
    if t.dim() != dim:
        raise ValueError(f"{fn}: {name} must be {dim}-D, got {t.dim()}-D")
    if contiguous and not t.is_contiguous():
        raise ValueError(f"{fn}: {name} must be contiguous")


# ---- gates ------------------------------------------------------------------------------------

def topk_gate(scores: torch.Tensor, num_topk: int) -> torch.Tensor:
    """The ``num_topk`` best experts of each row of f32 ``scores`` (T, E), as int64 (T, num_topk)
    in rank order: descending score, ties to the smaller index (a stable descending sort)."""
    fn = "topk_gate"
    _check_tensor(fn, "scores", scores, (torch.float32,), 2)
    T, E = scores.shape
    if not 1 <= num_topk <= E:
        raise ValueError(f"{fn}: num_topk must be in [1, {E}] (the number of experts), got {num_topk}")
    if E > 1024:
        raise ValueError(f"{fn}: at most 1024 experts, got {E}")
    out = torch.empty((T, num_topk), dtype=torch.int64, device=scores.device)
    if T == 0:
        return out
    _runtime.kernel("topk_gate", (f"E={E}", f"K={num_topk}"), scores).launch(scores, out, stream=_runtime.stream(scores))
    return out


def topk_sum_and_topk_group_idx(scores: torch.Tensor, num_topk_sum: int, num_topk_groups: int) -> torch.Tensor:
    """For f32 ``scores`` (T, G, P): the ``num_topk_groups`` best groups of each row in rank order,
    a group's score being its maximum (num_topk_sum 1) or the sum of its two largest scores (2)."""
    fn = "topk_sum_and_topk_group_idx"
    _check_tensor(fn, "scores", scores, (torch.float32,), 3)
    T, G, P = scores.shape
    if num_topk_sum not in (1, 2):
        raise ValueError(f"{fn}: num_topk_sum must be 1 or 2, got {num_topk_sum}")
    if num_topk_sum > P:
        raise ValueError(f"{fn}: num_topk_sum ({num_topk_sum}) cannot exceed the group size ({P})")
    if G > 32:
        raise ValueError(f"{fn}: at most 32 groups, got {G}")
    if not 1 <= num_topk_groups <= G:
        raise ValueError(f"{fn}: num_topk_groups must be in [1, {G}] (the number of groups), got {num_topk_groups}")
    out = torch.empty((T, num_topk_groups), dtype=torch.int64, device=scores.device)
    if T == 0:
        return out
    gens = (f"G={G}", f"P={P}", f"NS={num_topk_sum}", f"NK={num_topk_groups}")
    _runtime.kernel("topk_sum_and_topk_group_idx", gens, scores).launch(scores, out, stream=_runtime.stream(scores))
    return out


def top2_sum_gate(logits: torch.Tensor, bias: torch.Tensor, num_topk: int, num_topk_groups: int, num_groups: int,
                  use_shared_as_routed: bool, num_shared_experts: int, routed_scaling_factor: float,
                  ep_rank: int, num_ep_ranks: int, tp_rank: int, num_tp_ranks: int, scoring_func: str,
                  mask: Optional[torch.Tensor] = None, fix_routing_mask: Optional[torch.Tensor] = None,
                  to_physical_map: Optional[torch.Tensor] = None, logical_count: Optional[torch.Tensor] = None,
                  unmapped_topk_idx: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Group-limited top-K gate (spec §1.1): returns (topk_idx int64, topk_weights f32), both
    (T, num_topk + S) with S shared-expert slots when ``use_shared_as_routed``. Scores: sigmoid,
    sqrt(softplus) or softmax; ranking on score + bias (softmax: logit + bias); with grouping the
    ``num_topk_groups`` groups with the largest top-2 sums are kept; weights are the picked
    scores over (1e-20 + their sum) times ``routed_scaling_factor``; then the optional logical ->
    physical map and EP/TP masking (-1 for experts of other TP ranks; weights kept). Rows whose
    ``mask`` is False get -1 / 0. ``unmapped_topk_idx`` (T, num_topk) receives the logical picks
    (and provides them for the rows of ``fix_routing_mask``)."""
    fn = "top2_sum_gate"
    _check_tensor(fn, "logits", logits, (torch.float32,), 2)
    _check_tensor(fn, "bias", bias, (torch.float32,), 1)
    T, E = logits.shape
    K = num_topk
    if bias.shape[0] != E:
        raise ValueError(f"{fn}: bias must have {E} elements (one per expert), got {bias.shape[0]}")
    sf = ScoringFunc.from_str(scoring_func)
    if sf == ScoringFunc.IDENTITY:
        raise ValueError(f"{fn}: scoring_func 'identity' is not supported (sigmoid, sqrtsoftplus or softmax)")
    if E > 1024:
        raise ValueError(f"{fn}: at most 1024 experts, got {E}")
    if (num_groups == 0) != (num_topk_groups == 0):
        raise ValueError(f"{fn}: num_groups and num_topk_groups must both be 0 or both be positive, "
                         f"got {num_groups} and {num_topk_groups}")
    if not 1 <= K <= E:
        raise ValueError(f"{fn}: num_topk must be in [1, {E}] (the number of experts), got {K}")
    if K > 32:
        raise ValueError(f"{fn}: num_topk must be at most 32, got {K}")
    if num_topk_groups > num_groups:
        raise ValueError(f"{fn}: num_topk_groups ({num_topk_groups}) cannot exceed num_groups ({num_groups})")
    if num_groups and E % num_groups:
        raise ValueError(f"{fn}: the number of experts ({E}) must be a multiple of num_groups ({num_groups})")
    grouped = num_groups != num_topk_groups
    if grouped:
        P = E // num_groups
        if num_groups > 32:
            raise ValueError(f"{fn}: grouping supports at most 32 groups, got {num_groups}")
        if not 2 <= P <= 32:
            raise ValueError(f"{fn}: grouping needs 2 to 32 experts per group, got {P}")
        if K > num_topk_groups * P:
            raise ValueError(f"{fn}: num_topk ({K}) exceeds the experts of the kept groups ({num_topk_groups * P})")
    if (to_physical_map is None) != (logical_count is None):
        raise ValueError(f"{fn}: to_physical_map and logical_count must be given together")
    if use_shared_as_routed:
        S = num_shared_experts
        if S not in (1, 2):
            raise ValueError(f"{fn}: num_shared_experts must be 1 or 2 with use_shared_as_routed, got {S}")
        if K % S or E % (K // S):
            raise ValueError(f"{fn}: with use_shared_as_routed, num_topk ({K}) must be a multiple of "
                             f"num_shared_experts ({S}) and the experts ({E}) a multiple of num_topk / S")
        if to_physical_map is None:
            raise ValueError(f"{fn}: use_shared_as_routed needs to_physical_map and logical_count")
    else:
        S = 0
    if K + S > 32:
        raise ValueError(f"{fn}: num_topk + shared experts must be at most 32, got {K + S}")
    X = 0
    if to_physical_map is not None:
        _check_tensor(fn, "to_physical_map", to_physical_map, (torch.int32,), 2)
        _check_tensor(fn, "logical_count", logical_count, (torch.int32,), 1)
        if to_physical_map.shape[0] != E + S or to_physical_map.shape[1] < 1:
            raise ValueError(f"{fn}: to_physical_map must be ({E + S}, 1 + num_extra_experts), "
                             f"got {tuple(to_physical_map.shape)}")
        if logical_count.shape[0] != E + S:
            raise ValueError(f"{fn}: logical_count must have {E + S} elements, got {logical_count.shape[0]}")
        X = to_physical_map.shape[1] - 1
        if S > X:
            raise ValueError(f"{fn}: use_shared_as_routed needs at least {S} extra experts in to_physical_map, got {X}")
    if num_ep_ranks < 1 or (E + X) // num_ep_ranks < 1:
        raise ValueError(f"{fn}: num_ep_ranks must be in [1, {E + X}], got {num_ep_ranks}")
    if num_tp_ranks < 1 or not 0 <= tp_rank < num_tp_ranks:
        raise ValueError(f"{fn}: tp_rank must be in [0, num_tp_ranks), got {tp_rank} of {num_tp_ranks}")
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.numel() != T:
            raise ValueError(f"{fn}: mask must be a bool tensor with {T} elements (one per token)")
    if unmapped_topk_idx is not None:
        u = unmapped_topk_idx
        _check_tensor(fn, "unmapped_topk_idx", u, (torch.int64,), 2, contiguous=False)
        if tuple(u.shape) != (T, K) or (u.stride(1) != 1 and K > 1):
            raise ValueError(f"{fn}: unmapped_topk_idx must be ({T}, {K}) with unit stride along k")
    if fix_routing_mask is not None:
        if unmapped_topk_idx is None:
            raise ValueError(f"{fn}: fix_routing_mask needs unmapped_topk_idx (the fixed indices)")
        _check_tensor(fn, "fix_routing_mask", fix_routing_mask, (torch.bool,), 1)
        if fix_routing_mask.shape[0] != T:
            raise ValueError(f"{fn}: fix_routing_mask must have {T} elements, got {fix_routing_mask.shape[0]}")
    dev = logits.device
    topk_idx = torch.empty((T, K + S), dtype=torch.int64, device=dev)
    topk_weights = torch.empty((T, K + S), dtype=torch.float32, device=dev)
    if T == 0:
        return topk_idx, topk_weights
    ng, ntg = (num_groups, num_topk_groups) if grouped else (0, 0)
    gens = (f"E={E}", f"K={K}", f"S={S}", f"NG={ng}", f"NTG={ntg}", f"SCORING={int(sf)}", _pres("mask", mask),
            _pres("fix_routing_mask", fix_routing_mask), _pres("to_physical_map", to_physical_map),
            _pres("logical_count", logical_count), _pres("unmapped_topk_idx", unmapped_topk_idx))
    m = None if mask is None else mask.reshape(T).view(torch.uint8)
    f = None if fix_routing_mask is None else fix_routing_mask.view(torch.uint8)
    _runtime.kernel("top2_sum_gate", gens, logits).launch(
        logits, bias, topk_idx, topk_weights, m, f, to_physical_map, logical_count, unmapped_topk_idx,
        float(routed_scaling_factor), int(ep_rank), (E + X) // num_ep_ranks, int(tp_rank), int(num_tp_ranks),
        stream=_runtime.stream(logits))
    return topk_idx, topk_weights


# ---- the fused layout -------------------------------------------------------------------------

def get_fused_mapping(topk_idx: torch.Tensor, num_experts: int, num_expanded_tokens: int, alignment: int,
                      force_no_sync: bool = False):
    """The expert-major layout of (T, K) routing indices (spec §1.4): every expert owns
    ``alignment``-padded consecutive slots, filled in ascending flattened index t * K + k.
    Returns (pos_to_expert, pos_to_token, pos_to_token_topk, token_topk_to_pos, expert_start,
    expert_end, num_tokens_per_expert (aligned), num_tokens_per_expert_list). With
    ``num_expanded_tokens == 0`` the slot count is an upper bound; unless ``force_no_sync``, the
    host then reads the counts (a synchronisation) and trims the three pos_to_* arrays. With
    ``force_no_sync`` and 0, the untrimmed upper-bound layout is returned (TileKernels wrote out
    of bounds there). A ``num_expanded_tokens`` below the slots needed is a caller error: slots
    past it are dropped, never written out of bounds."""
    fn = "get_fused_mapping"
    _check_tensor(fn, "topk_idx", topk_idx, (torch.int64,), 2)
    T, K = topk_idx.shape
    E = num_experts
    if not 1 <= E <= 1024:
        raise ValueError(f"{fn}: num_experts must be in [1, 1024], got {E}")
    if alignment < 1:
        raise ValueError(f"{fn}: alignment must be positive, got {alignment}")
    if num_expanded_tokens < 0:
        raise ValueError(f"{fn}: num_expanded_tokens must be >= 0, got {num_expanded_tokens}")
    TK = T * K
    bound = (TK + (alignment - 1) * E) // alignment * alignment
    if max(bound, num_expanded_tokens) >= 2 ** 31:
        raise ValueError(f"{fn}: {max(bound, num_expanded_tokens)} slots do not fit int32")
    sync = num_expanded_tokens == 0 and not force_no_sync
    N = bound if num_expanded_tokens == 0 else num_expanded_tokens
    dev = topk_idx.device
    pos_to_expert = torch.empty(N, dtype=torch.int32, device=dev)
    pos_to_token = torch.empty(N, dtype=torch.int32, device=dev)
    pos_to_token_topk = torch.empty(N, dtype=torch.int32, device=dev)
    ttp = torch.empty((T, K), dtype=torch.int32, device=dev)
    start = torch.empty(E, dtype=torch.int32, device=dev)
    end = torch.empty(E, dtype=torch.int32, device=dev)
    counts = torch.empty(E, dtype=torch.int32, device=dev)
    stream = _runtime.stream(topk_idx)
    flat = topk_idx.view(TK)
    outs = (pos_to_expert, pos_to_token, pos_to_token_topk, ttp.view(TK), start, end, counts)
    if TK <= _SINGLE_MAPPING:
        _runtime.kernel("fused_scatter", (f"E={E}", f"K={K}", "SINGLE=true", "part=absent"), topk_idx).launch(
            flat, None, *outs, 0, alignment, stream=stream)
    else:
        cb = _align(_cdiv(TK, get_num_sms()), 256)
        nb = _cdiv(TK, cb)
        part = torch.empty((nb + 1, E), dtype=torch.int32, device=dev)
        _runtime.kernel("fused_count", (f"E={E}",), topk_idx).launch(flat, part, cb, stream=stream)
        _runtime.kernel("fused_scan", (f"E={E}",), topk_idx).launch(part, start, end, counts, alignment, stream=stream)
        _runtime.kernel("fused_scatter", (f"E={E}", f"K={K}", "SINGLE=false", "part=present"), topk_idx).launch(
            flat, part, *outs, cb, alignment, stream=stream)
    counts_list = []
    if sync:
        counts_list = counts.tolist()
        used = sum(counts_list)
        pos_to_expert, pos_to_token, pos_to_token_topk = (pos_to_expert[:used], pos_to_token[:used],
                                                          pos_to_token_topk[:used])
    return pos_to_expert, pos_to_token, pos_to_token_topk, ttp, start, end, counts, counts_list


def _raw(t: torch.Tensor) -> torch.Tensor:
    """A contiguous 2-D tensor as rows of the widest of i32 / i16 / u8 words that divide them."""
    rb = t.shape[1] * t.element_size()
    dt = _RAW[next(size for size in (4, 2, 1) if rb % size == 0)][0]
    return t if t.dtype == dt else t.view(dt)


def _row_chunks(words: int, word_bytes: int) -> Tuple[int, int]:
    """(BH words per block, NT threads) for rows of ``words`` words: a chunk of NT threads times v
    16-byte vectors (v <= 8) dividing the row where possible, else 128 threads x 1 vector with a
    masked tail."""
    per_vec = 16 // word_bytes
    if words % per_vec == 0:
        nv = words // per_vec
        best = None
        for nt in (128, 64, 32):
            for v in range(8, 0, -1):
                if nv % (nt * v) == 0 and (best is None or nt * v > best[0] * best[1]):
                    best = (nt, v)
        if best is not None:
            return best[0] * best[1] * per_vec, best[0]
    return 128 * per_vec, 128


def _check_mapping(fn, x, token_topk_to_pos, pos_to_expert):
    _check_tensor(fn, "token_topk_to_pos", token_topk_to_pos, (torch.int32,), 2)
    _check_tensor(fn, "pos_to_expert", pos_to_expert, (torch.int32,), 1)
    if token_topk_to_pos.shape[0] != x.shape[0]:
        raise ValueError(f"{fn}: token_topk_to_pos must have one row per token ({x.shape[0]}), "
                         f"got {token_topk_to_pos.shape[0]}")


def expand_to_fused(x: torch.Tensor, token_topk_to_pos: torch.Tensor, pos_to_expert: torch.Tensor) -> torch.Tensor:
    """Rows of ``x`` (T, H), any dtype, copied to their expert slots: out (N, H) with
    ``out[token_topk_to_pos[t, k]] = x[t]`` and zero rows where ``pos_to_expert < 0``."""
    fn = "expand_to_fused"
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or not x.is_contiguous():
        raise ValueError(f"{fn}: x must be a contiguous 2-D tensor")
    _check_mapping(fn, x, token_topk_to_pos, pos_to_expert)
    T, H = x.shape
    N = pos_to_expert.shape[0]
    out = torch.empty((N, H), dtype=x.dtype, device=x.device)
    if max(T, N) == 0 or H == 0:
        return out
    xr, outr = _raw(x), _raw(out)
    bh, nt = _row_chunks(xr.shape[1], xr.element_size())
    gens = (f"V={_RAW[xr.element_size()][1]}", f"H={xr.shape[1]}", f"BH={bh}", f"K={token_topk_to_pos.shape[1]}",
            f"NT={nt}")
    _runtime.kernel("expand_to_fused", gens, x).launch(xr, token_topk_to_pos, pos_to_expert, outr, stream=_runtime.stream(x))
    return out


def expand_to_fused_with_sf(x: QuantTensor, num_per_channels: int, token_topk_to_pos: torch.Tensor,
                            pos_to_expert: torch.Tensor, use_tma_aligned_col_major_sf: bool = False):
    """expand_to_fused of quantised data and its per-token scales: returns (out (N, H), out_sf
    (N, Hsf)), out_sf row-major, or with ``use_tma_aligned_col_major_sf`` the transposed view of a
    (Hsf, align(N, 4)) buffer (strides (1, align(N, 4))). Scales are f32, or int32 words of four
    packed UE8M0 bytes (column-major only); padding slots get zero scales."""
    fn = "expand_to_fused_with_sf"
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"{fn}: x must be a (data, sf) pair")
    data, sf = x
    if not isinstance(data, torch.Tensor) or data.dim() != 2 or not data.is_contiguous():
        raise ValueError(f"{fn}: the data must be a contiguous 2-D tensor")
    _check_tensor(fn, "sf", sf, (torch.float32, torch.int32), 2)
    if num_per_channels not in (32, 128):
        raise ValueError(f"{fn}: num_per_channels must be 32 or 128, got {num_per_channels}")
    T, H = data.shape
    ng = _cdiv(H, num_per_channels)
    if sf.dtype == torch.int32:
        if not use_tma_aligned_col_major_sf:
            raise ValueError(f"{fn}: packed UE8M0 (int32) scales need use_tma_aligned_col_major_sf=True")
        ng = _cdiv(ng, 4)
    if tuple(sf.shape) != (T, ng):
        raise ValueError(f"{fn}: sf must be ({T}, {ng}), got {tuple(sf.shape)}")
    _check_mapping(fn, data, token_topk_to_pos, pos_to_expert)
    N = pos_to_expert.shape[0]
    dev = data.device
    out = torch.empty((N, H), dtype=data.dtype, device=dev)
    if use_tma_aligned_col_major_sf:
        out_sf = torch.empty((ng, _align(N, 4)), dtype=sf.dtype, device=dev)[:, :N].T
    else:
        out_sf = torch.empty((N, ng), dtype=sf.dtype, device=dev)
    if max(T, N) == 0 or H == 0:
        return out, out_sf
    xr, outr = _raw(data), _raw(out)
    bh, nt = _row_chunks(xr.shape[1], xr.element_size())
    gens = (f"V={_RAW[xr.element_size()][1]}", f"H={xr.shape[1]}", f"BH={bh}", f"K={token_topk_to_pos.shape[1]}",
            f"NT={nt}")
    osf = out_sf.view(torch.int32) if out_sf.dtype != torch.int32 else out_sf
    _runtime.kernel("expand_to_fused_with_sf", gens, data).launch(
        xr, sf.view(torch.int32), token_topk_to_pos, pos_to_expert, outr, osf, stream=_runtime.stream(data))
    return out, out_sf


def _reduce_chunk(vectors: int) -> Tuple[int, int]:
    """(NT threads, V vectors per thread) of a reduce_fused block for rows of ``vectors`` 8-element
    vectors: NT a multiple of 32 up to 512 and V <= 4 with NT * V dividing the row, the largest
    chunk first (a whole row when possible), then the larger V. Bytes in flight per SM are what
    the kernel needs; four vectors per thread keep them high at 4 blocks per SM (about 70
    registers), where more rows per block would cost registers for each."""
    best = (32, 1)
    for v in (4, 3, 2, 1):
        for nt in range(32, 513, 32):
            if vectors % (nt * v) == 0 and nt * v > best[0] * best[1]:
                best = (nt, v)
    return best


def reduce_fused(x: Union[torch.Tensor, QuantTensor], topk_weights: Optional[torch.Tensor],
                 token_topk_to_pos: torch.Tensor, fp8_format: str = "", sf: Optional[torch.Tensor] = None,
                 out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Weighted sum of expert rows back to tokens (spec §1.7), bit-exact: for each token,
    ``acc = fma(x[p], s, acc)`` over its valid slots p in k order, s = weight (or 1) times the
    row scale ``x_sf[p]`` when x is (x, x_sf); then ``acc * sf[0]``; out in x's dtype (bf16
    rounded to nearest even) or, with fp8_format 'e4m3', e4m3 saturating at ±448."""
    fn = "reduce_fused"
    x_sf = None
    if isinstance(x, (tuple, list)):
        if len(x) != 2:
            raise ValueError(f"{fn}: x must be a tensor or an (x, x_sf) pair")
        x, x_sf = x
    _check_tensor(fn, "x", x, (torch.float32, torch.bfloat16), 2)
    N, H = x.shape
    if H % 256:
        raise ValueError(f"{fn}: the hidden size must be a multiple of 256, got {H}")
    if x_sf is not None:
        _check_tensor(fn, "x_sf", x_sf, (torch.float32,), 1)
        if x_sf.shape[0] != N:
            raise ValueError(f"{fn}: x_sf must have one scale per row of x ({N}), got {x_sf.shape[0]}")
    _check_tensor(fn, "token_topk_to_pos", token_topk_to_pos, (torch.int32,), 2)
    T, K = token_topk_to_pos.shape
    if topk_weights is not None:
        _check_tensor(fn, "topk_weights", topk_weights, (torch.float32,), 2)
        if tuple(topk_weights.shape) != (T, K):
            raise ValueError(f"{fn}: topk_weights must be ({T}, {K}) like token_topk_to_pos, "
                             f"got {tuple(topk_weights.shape)}")
    if fp8_format == "":
        odt = x.dtype
        if sf is not None:
            raise ValueError(f"{fn}: sf (the output scale) is only for fp8_format='e4m3'")
    elif fp8_format == "e4m3":
        odt = torch.float8_e4m3fn
    else:
        raise ValueError(f"{fn}: fp8_format must be '' or 'e4m3', got '{fp8_format}'")
    if sf is not None:
        if not isinstance(sf, torch.Tensor) or sf.dtype != torch.float32 or sf.numel() != 1:
            raise ValueError(f"{fn}: sf must be a float32 tensor with one element")
    if out is None:
        out = torch.empty((T, H), dtype=odt, device=x.device)
    else:
        if tuple(out.shape) != (T, H):
            raise ValueError(f"{fn}: out must be ({T}, {H}), got {tuple(out.shape)}")
        if out.dtype != odt:
            raise ValueError(f"{fn}: out must be {str(odt).replace('torch.', '')}, got {str(out.dtype).replace('torch.', '')}")
        if out.stride(1) != 1 and H > 1:
            raise ValueError(f"{fn}: out must have unit stride along the hidden dimension")
    if T == 0:
        return out
    nt, nv = _reduce_chunk(H // 8)
    oa = 1
    while oa < 16 // out.element_size() and out.stride(0) % (oa * 2) == 0:
        oa *= 2
    tx = "f32" if x.dtype == torch.float32 else "bf16"
    gens = (f"TX={tx}", f"TO={'e4m3' if fp8_format else tx}", f"H={H}", f"K={K}",
            f"NT={nt}", f"V={nv}", f"OA={oa}", _pres("topk_weights", topk_weights), _pres("x_sf", x_sf), _pres("sf", sf))
    _runtime.kernel("reduce_fused", gens, x).launch(x, token_topk_to_pos, topk_weights, x_sf,
                                         None if sf is None else sf.reshape(1), out, stream=_runtime.stream(x))
    return out


# ---- small utilities ----------------------------------------------------------------------------

def normalize_weight(topk_weights: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(den (T,), topk_weights / den) with den = ((1e-20 + w0) + w1) + ... in order."""
    fn = "normalize_weight"
    _check_tensor(fn, "topk_weights", topk_weights, (torch.float32,), 2)
    T, K = topk_weights.shape
    den = torch.empty(T, dtype=torch.float32, device=topk_weights.device)
    out = torch.empty((T, K), dtype=torch.float32, device=topk_weights.device)
    if T == 0:
        return den, out
    _runtime.kernel("normalize_weight", (f"K={K}",), topk_weights).launch(topk_weights, den, out, stream=_runtime.stream(topk_weights))
    return den, out


def _histogram(fn, idx, n, counts, freq, den):
    T, K = idx.shape
    single = T * K <= _SINGLE_HISTOGRAM
    gens = (f"E={n}", f"SINGLE={_b(single)}", _pres("counts", counts), _pres("freq", freq))
    _runtime.kernel("moe_histogram", gens, idx).launch(idx.view(T * K), counts, freq, den, stream=_runtime.stream(idx),
                                          num_sms=get_num_sms())


def group_count(group_idx: torch.Tensor, num_groups: int) -> torch.Tensor:
    """int32 (num_groups,) counts of each value of ``group_idx`` (-1 ignored; other values must
    lie in [0, num_groups))."""
    fn = "group_count"
    _check_tensor(fn, "group_idx", group_idx, (torch.int64,), 2)
    if not 1 <= num_groups <= 8192:
        raise ValueError(f"{fn}: num_groups must be in [1, 8192], got {num_groups}")
    T, K = group_idx.shape
    if T * K == 0:
        return torch.zeros(num_groups, dtype=torch.int32, device=group_idx.device)
    single = T * K <= _SINGLE_HISTOGRAM
    out = (torch.empty if single else torch.zeros)(num_groups, dtype=torch.int32, device=group_idx.device)
    _histogram(fn, group_idx, num_groups, out, None, 1.0)
    return out


def aux_fi(topk_idx: torch.Tensor, num_experts: int, num_aux_topk: int) -> torch.Tensor:
    """f32 (E,) load-balance frequencies ``count_e * E / (T * num_aux_topk)`` (-1 ignored). Exact
    (one division) for small inputs; larger ones add per-block fractions atomically, as
    TileKernels does, so the last bits may vary from run to run."""
    fn = "aux_fi"
    _check_tensor(fn, "topk_idx", topk_idx, (torch.int64,), 2)
    E = num_experts
    if not 1 <= E <= 8192:
        raise ValueError(f"{fn}: num_experts must be in [1, 8192], got {E}")
    if num_aux_topk < 1:
        raise ValueError(f"{fn}: num_aux_topk must be positive, got {num_aux_topk}")
    T, K = topk_idx.shape
    if T * K == 0:
        return torch.zeros(E, dtype=torch.float32, device=topk_idx.device)
    single = T * K <= _SINGLE_HISTOGRAM
    out = (torch.empty if single else torch.zeros)(E, dtype=torch.float32, device=topk_idx.device)
    _histogram(fn, topk_idx, E, None, out, float(T * num_aux_topk))
    return out


def mask_indices_by_tp(indices: torch.Tensor, n: int, num_ep_ranks: int, tp_rank: int,
                       num_tp_ranks: int) -> torch.Tensor:
    """Keeps the experts of the EP ranks that belong to TP rank ``tp_rank`` (EP rank r with
    r mod num_tp_ranks == tp_rank; ``n // num_ep_ranks`` experts per EP rank) and renumbers them
    densely; every other entry (and every negative one) becomes -1. Same dtype as ``indices``."""
    fn = "mask_indices_by_tp"
    _check_tensor(fn, "indices", indices, tuple(_INT_NAMES), 2)
    if num_ep_ranks < 1 or n // num_ep_ranks < 1:
        raise ValueError(f"{fn}: n // num_ep_ranks (experts per EP rank) must be positive, got n={n}, "
                         f"num_ep_ranks={num_ep_ranks}")
    if num_tp_ranks < 1 or not 0 <= tp_rank < num_tp_ranks:
        raise ValueError(f"{fn}: tp_rank must be in [0, num_tp_ranks), got {tp_rank} of {num_tp_ranks}")
    out = torch.empty_like(indices)
    N = indices.numel()
    if N == 0:
        return out
    # the experts per EP rank and the TP rank count are compile-time in the kernel (divisions by
    # constants); the few pairs a model uses compile once each
    _runtime.kernel("mask_indices_by_tp", (f"V={_INT_NAMES[indices.dtype]}", f"R={n // num_ep_ranks}",
                                   f"NTP={int(num_tp_ranks)}"), indices).launch(
        indices.view(N), out.view(N), int(tp_rank), stream=_runtime.stream(indices))
    return out


def inplace_unique_group_indices(group_indices: torch.Tensor, num_groups: int) -> None:
    """In place: an entry >= 0 that repeats an earlier entry of its row becomes -1. Values must be
    -1 or in [0, align(num_groups, 64)) (checked on the device)."""
    fn = "inplace_unique_group_indices"
    _check_tensor(fn, "group_indices", group_indices, (torch.int64,), 2)
    if not 1 <= num_groups <= 128:
        raise ValueError(f"{fn}: num_groups must be in [1, 128], got {num_groups}")
    T, K = group_indices.shape
    if T * K == 0:
        return None
    _runtime.kernel("inplace_unique_group_indices", (f"K={K}",), group_indices).launch(group_indices, _align(num_groups, 64),
                                                                 stream=_runtime.stream(group_indices))
    return None
