"""Argument plans (tilec._plan): every public function called five times on the same shapes (the
first call in full, the second recorded, the later ones replayed) gives results bit-identical
to a call in full, writes its inputs as a full call does, and a call with one argument of the
wrong kind after the plans exist still raises the full path's error naming it."""
import os
import sys

import pytest

sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                                     "python")))
sys.path.insert(0, os.path.dirname(__file__))

from tilec import _plan  # noqa: E402
from test_bad_arguments import CASES, VALID  # noqa: E402
from call_results import assert_same as _same, clone_args as _clone  # noqa: E402


@pytest.mark.parametrize("fn, kw", VALID, ids=[f.__name__ for f, _ in VALID])
def test_replay_bit_identical(fn, kw):
    _plan.clear()
    base = _clone(kw)
    ref_args = _clone(base)
    saved = _plan._MAX_PLANS
    _plan._MAX_PLANS = 0          # the reference: a call in full
    try:
        ref = fn(**ref_args)
    finally:
        _plan._MAX_PLANS = saved
    for _ in range(5):
        args = _clone(base)
        res = fn(**args)
        _same(ref, res)
        _same(list(ref_args.values()), list(args.values()))   # inputs written as a full call writes them


def test_plans_are_made():
    """Most functions replay a plan from the third call of a shape on."""
    _plan.clear()
    for fn, kw in VALID:
        for _ in range(3):
            fn(**_clone(kw))
    made = [k for k, p in _plan._plans.items() if isinstance(p, _plan._Plan)]
    assert len(made) >= 30, len(made)


@pytest.mark.parametrize("fn, name, bad", CASES[::7], ids=[f"{f.__name__}-{n}-{i}" for i, (f, n, b) in
                                                            enumerate(CASES[::7])])
def test_wrong_argument_after_plans(fn, name, bad):
    kw = dict(next(a for f, a in VALID if f is fn))
    for _ in range(3):
        fn(**_clone(kw))
    kw[name] = bad
    try:
        fn(**kw)
    except (ValueError, TypeError) as e:
        assert str(e).startswith(f"{fn.__name__}:"), str(e)
