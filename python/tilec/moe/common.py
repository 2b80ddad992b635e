"""Helpers shared by the MoE modules: argument checks, the generics' spelling, and the histogram
kernel behind group_count and aux_fi."""

from .. import _runtime
from .._checks import (check_bool, check_float, check_int, check_no_overlap, check_tensor,  # noqa: F401
                       invalid_counter)
from ..config import get_num_sms

# one block does the whole histogram below this many (token, k) entries (decode): a single launch
SINGLE_HISTOGRAM = 8192


def gen_bool(v: bool) -> str:
    return "true" if v else "false"


def present(name: str, t) -> str:
    """The tensor-presence generic of an optional argument."""
    return f"{name}={'absent' if t is None else 'present'}"


def histogram(fn, idx, n, counts, freq, den, invalid=None):
    """Launches moe_histogram over the (T, K) indices ``idx``: the counts of the values in [0, n)
    into ``counts`` and/or aux_fi's frequencies (``den`` = T * num_aux_topk) into ``freq``; values
    outside [-1, n) are ignored and counted into ``invalid`` when given."""
    T, K = idx.shape
    single = T * K <= SINGLE_HISTOGRAM
    gens = (f"E={n}", f"SINGLE={gen_bool(single)}", present("counts", counts), present("freq", freq),
            present("invalid", invalid))
    _runtime.kernel("moe_histogram", gens, idx).launch(idx.view(T * K), counts, freq, invalid, den,
                                                       stream=_runtime.stream(idx), num_sms=get_num_sms())
