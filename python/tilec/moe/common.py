"""Helpers shared by the MoE modules: argument checks, the generics' spelling, and the histogram
kernel behind group_count and aux_fi."""
import torch

from .. import _runtime
from ..config import get_num_sms

# one block does the whole histogram below this many (token, k) entries (decode): a single launch
SINGLE_HISTOGRAM = 8192


def gen_bool(v: bool) -> str:
    return "true" if v else "false"


def present(name: str, t) -> str:
    """The tensor-presence generic of an optional argument."""
    return f"{name}={'absent' if t is None else 'present'}"


def check_tensor(fn, name, t, dtypes, dim, contiguous=True):
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{fn}: {name} must be a tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        want = " or ".join(str(d).replace("torch.", "") for d in dtypes)
        raise ValueError(f"{fn}: {name} must be {want}, got {str(t.dtype).replace('torch.', '')}")
    if t.dim() != dim:
        raise ValueError(f"{fn}: {name} must be {dim}-D, got {t.dim()}-D")
    if contiguous and not t.is_contiguous():
        raise ValueError(f"{fn}: {name} must be contiguous")


def histogram(fn, idx, n, counts, freq, den):
    """Launches moe_histogram over the (T, K) indices ``idx``: the counts of the values in [0, n)
    into ``counts`` and/or aux_fi's frequencies (``den`` = T * num_aux_topk) into ``freq``."""
    T, K = idx.shape
    single = T * K <= SINGLE_HISTOGRAM
    gens = (f"E={n}", f"SINGLE={gen_bool(single)}", present("counts", counts), present("freq", freq))
    _runtime.kernel("moe_histogram", gens, idx).launch(idx.view(T * K), counts, freq, den, stream=_runtime.stream(idx),
                                                       num_sms=get_num_sms())
