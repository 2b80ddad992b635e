"""What the grid tests (test_grid_*_emu.py) share: TileKernels' hidden sizes, token counts,
option grids and routing configurations, scaled to the CPU, and the input generators.

Token counts: every case runs 0 tokens and one of TOKENS (1, 67: ragged, 300: a few hundred),
given in turn over the grid by grid() / spread() or balance(), so that each function meets all
four counts and each of its option combinations at least 0 and one other; functions that need a
multiple of 128 or 64 tokens take TOKENS128 / their own multiples instead. For the MoE functions
the count is the number of tokens routed to this rank (the rows of topk_idx, routed()), and where
a case is costly on a CPU, balance() gives it one of the counts that fit a budget (within()).
Where a test gives an option (a routing configuration, say) in turn rather than crossing it, its
test_grid asserts with check_meets() that every value meets every hidden size."""
import collections
import itertools
import math

import pytest
import torch

import tilec

HIDDEN = (576, 2048, 2560, 3072, 4096, 6144, 7168)
TOKENS = (1, 67, 300)
TOKENS128 = (128, 256, 384)
FLAGS = [(False, True, False), (True, True, True)]  # (col-major, round, packed): TileKernels' grids
DT = {"bf16": torch.bfloat16, "f32": torch.float32}
# TileKernels' routing configurations (generate_moe_params): (num_topk, experts per rank, EP ranks)
# for num_topk in (2, 6, 8, 9) x (72 or 256 experts over 8 or 64 ranks, where they divide)
MOE = [(k, total // ep, ep) for k in (2, 6, 8, 9) for total in (72, 256) for ep in (8, 64) if total % ep == 0]


def hidden_sizes(align=64):
    return [h for h in HIDDEN if h % align == 0]


def spread(factors, values):
    """The cross product of the factors, each case given one of ``values`` (appended): case
    (i_1, ..., i_n) (the indices of its factor values) gets values[(i_1 + ... + i_n) % len(values)].
    So for any one factor value the other factors' index sums run through every residue (when the
    others have at least len(values) index sums), and every value of every factor meets every
    entry of ``values``: check_meets() asserts it where a test relies on it."""
    idx = itertools.product(*[range(len(f)) for f in factors])
    return [tuple(f[i] for f, i in zip(factors, ii)) + (values[sum(ii) % len(values)],) for ii in idx]


def grid(*factors, tokens=TOKENS):
    """The cross product of the factors, each case given a token count by spread()."""
    return spread(factors, tokens)


def check_meets(cases, pos, value_pos=-1, values=None):
    """Asserts that in ``cases`` (tuples) every value at position ``pos`` appears together with
    every value at ``value_pos`` (default: the last, the spread value), or with each of ``values``."""
    want = set(values) if values is not None else {c[value_pos] for c in cases}
    seen = {}
    for c in cases:
        seen.setdefault(repr(c[pos]), set()).add(c[value_pos])
    missing = {k: want - v for k, v in seen.items() if want - v}
    assert not missing, f"position {pos} does not meet {missing} (position {value_pos})"


def check_coverage(name, cases, counts, moe_pos):
    """The cases of function `name` meet every token count of `counts` (the last factor); where
    the routing configuration is factor `moe_pos` (given in turn or crossed), every configuration
    meets every hidden size (factor 0) and every option value, and every option value every hidden
    size."""
    assert {c[-1] for c in cases} == set(counts), name
    if moe_pos is not None:
        for pos in range(1, len(cases[0])):
            check_meets(cases, pos, value_pos=0)
            if pos != moe_pos and pos != len(cases[0]) - 1:
                check_meets(cases, pos, value_pos=moe_pos)


def cid(v):
    if isinstance(v, tuple) and len(v) == 3 and all(isinstance(b, bool) for b in v):
        return "col%d-round%d-packed%d" % v
    return str(v)


def kw(flags):
    col, rnd, packed = flags
    return dict(use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)


def sample(t, h, dtype=torch.float32, scale=1.0, seed=0):
    """randn rows (a fixed seed per shape) with, where there are enough rows, a row of zeros, one
    of negative zeros, one far below the amax clamp and one of large values."""
    g = torch.Generator().manual_seed(seed * 7919 + t * 31 + h)
    x = torch.randn((t, h), generator=g) * scale
    if t > 4:
        x[1] = 0.0
        x[2] = -0.0
        x[3] *= 1e-30
        x[4] *= 3000.0
    return x.to(dtype)


def routing(k, experts, ranks, tokens, seed=0):
    """generate_topk_idx on the CPU: top-k of random scores over every rank's experts, experts of
    other ranks -1, tokens routed nowhere here dropped."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.rand((tokens * ranks, experts * ranks), generator=g)
    idx = torch.topk(scores, k, dim=-1, sorted=False).indices
    idx = torch.where(idx >= experts, torch.full_like(idx, -1), idx)
    return idx[(idx >= 0).any(dim=1)].contiguous()


def routed(k, experts, ranks, t, seed=0):
    """routing() with exactly t tokens routed here: (t, k) int64, t = 0 included."""
    tokens = max(1, t)
    while True:
        idx = routing(k, experts, ranks, tokens, seed)
        if idx.shape[0] >= t:
            return idx[:t].contiguous()
        tokens *= 2


def num_sms_values():
    """generate_num_sms(): the device's SM count less 20, then the device's count."""
    return (tilec.get_device_num_sms() - 20, tilec.get_device_num_sms())


@pytest.fixture
def restore_num_sms():
    """The SM count as before the test (tilec.set_num_sms in a test is undone)."""
    saved = tilec.config._num_sms
    yield
    tilec.config._num_sms = saved


def balance(cases, values, fits=None):
    """Appends one of ``values`` to each case, among those that ``fits(case, value)`` allows (all
    where fits is None or allows none): first one that the case's first factor value (the hidden
    size) has not met yet, the one allowed in the fewest cases of that hidden size first; then the
    one that the most of the case's factor values have not met yet; then the one they have met
    least often; ties: the values in turn. A rotation in which every value of every factor meets
    every value where there are enough cases: check_meets() asserts what a test relies on."""
    seen = collections.Counter()
    allowed = [[v for v in values if fits is None or fits(c, v)] or list(values) for c in cases]
    scarce = collections.Counter((repr(c[0]), repr(v)) for c, ok in zip(cases, allowed) for v in ok)
    out = []
    for i, (c, ok) in enumerate(zip(cases, allowed)):
        v = min(ok, key=lambda v: (seen[(0, repr(c[0]), repr(v))] > 0, scarce[(repr(c[0]), repr(v))],
                                   -sum(seen[(p, repr(x), repr(v))] == 0 for p, x in enumerate(c)),
                                   sum(seen[(p, repr(x), repr(v))] for p, x in enumerate(c)),
                                   (values.index(v) - i) % len(values)))
        for p, x in enumerate(c):
            seen[(p, repr(x), repr(v))] += 1
        out.append(c + (v,))
    return out


def fused_rows(moe_cfg, t, alignment):
    """About how many rows get_fused_mapping gives t tokens routed here with alignment: the
    slots of this rank's experts, each expert's padded to a multiple of alignment (a CPU's budget
    for a case; the tests use the real mapping)."""
    k, experts, ranks = moe_cfg
    if t == 0:
        return 0
    local = k / ranks / (1.0 - (1.0 - 1.0 / ranks) ** k)   # this rank's slots per token routed here
    slots = t * local
    hit = experts * (1.0 - math.exp(-slots / experts))
    return hit * alignment * math.ceil(slots / hit / alignment)


# the routing configuration of the fewest expanded rows: a case of it takes any token count,
# whatever a test's budget (so that every hidden size meets every count)
CHEAPEST_MOE = min(MOE, key=lambda m: fused_rows(m, TOKENS[-1], 128))


def within(budget, moe_pos, alignment, width):
    """balance()'s fits for a fused-layout function: a token count whose expanded rows x width
    (``alignment`` and ``width`` functions of the case) are at most ``budget`` elements, any count
    for CHEAPEST_MOE."""
    return lambda c, t: c[moe_pos] == CHEAPEST_MOE or fused_rows(c[moe_pos], t, alignment(c)) * width(c) <= budget
