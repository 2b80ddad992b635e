"""Helpers of the quantisation GPU tests: dirty allocator memory before a call (so that an
element a kernel forgets to write shows up), and comparisons."""
import torch

from tilec.testing import assert_equal, check_bias  # noqa: F401


def dirty_allocator(nbytes: int = 1 << 30):
    """Fill a large block with 0xA5 and give it back to torch's caching allocator, so that the
    outputs the next call allocates start out as garbage rather than zeros."""
    t = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    t.fill_(0xA5)
    del t


def flags_id(f):
    return "col%d-round%d-packed%d" % f


FLAGS = [(False, True, False), (True, True, True)]
