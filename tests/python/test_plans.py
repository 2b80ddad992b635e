"""Argument plans (tilec._plan): every public function called five times on the same shapes (the
first call in full, the second recorded, the later ones replayed) gives results bit-identical
to a call in full, writes its inputs as a full call does, and a call with one argument of the
wrong kind after the plans exist still raises the full path's error naming it — a value that
compares equal to the planned one (0 for False, 16.0 for 16) too, and -0.0 is not replayed as
0.0."""
import os
import sys

import inspect

import pytest
import torch

sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                                     "python")))
sys.path.insert(0, os.path.dirname(__file__))

from tilec import _plan  # noqa: E402
from tilec.modeling.mhc import ops as MO  # noqa: E402
from test_bad_arguments import CASES, DEFAULT_CASES, VALID  # noqa: E402
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


def _equal_kinds():
    """(function, argument, valid value, value of another kind that compares equal to it): 0 or
    1.0 for a bool, 16.0 for the int 16, for every bool or int argument of a VALID call and every
    bool or int default."""
    cases = []
    for fn, kw in VALID:
        given = dict(kw)
        for p in inspect.signature(fn).parameters.values():
            if p.name not in given and p.default is not inspect.Parameter.empty:
                given[p.name] = p.default
        for name, v in given.items():
            if type(v) is bool:
                cases += [(fn, name, v, int(v)), (fn, name, v, float(v))]
            elif type(v) is int:
                cases.append((fn, name, v, float(v)))
    return cases


EQUAL_KINDS = _equal_kinds()


@pytest.mark.parametrize("fn, name, good, bad", EQUAL_KINDS,
                         ids=[f"{f.__name__}-{n}-{type(b).__name__}" for f, n, _, b in EQUAL_KINDS])
def test_equal_value_of_another_kind_misses_the_plan(fn, name, good, bad):
    """A plan recorded with ``name=good`` (passed explicitly, so that the bad call's key differs
    from it only there) is not replayed for ``bad == good`` of another kind: the full path runs
    and refuses it by name."""
    kw = dict(next(a for f, a in VALID if f is fn))
    kw[name] = good
    for _ in range(3):
        fn(**_clone(kw))
    kw[name] = bad
    with pytest.raises((ValueError, TypeError)) as e:
        fn(**_clone(kw))
    assert str(e.value).startswith(f"{fn.__name__}:") and name in str(e.value), str(e.value)


@pytest.mark.parametrize("fn, name, bad", DEFAULT_CASES[::5],
                         ids=[f"{f.__name__}-{n}-{i}" for i, (f, n, b) in enumerate(DEFAULT_CASES[::5])])
def test_wrong_default_after_plans(fn, name, bad):
    """A parameter with a default given a wrong kind after the valid call's plan exists."""
    kw = dict(next(a for f, a in VALID if f is fn))
    for _ in range(3):
        fn(**_clone(kw))
    kw[name] = bad
    with pytest.raises((ValueError, TypeError)) as e:
        fn(**kw)
    assert str(e.value).startswith(f"{fn.__name__}:") and name in str(e.value), str(e.value)


def test_signed_zero_is_its_own_plan():
    """-0.0 compares equal to 0.0 but is another value: a plan recorded for mhc_post_mult_value=0.0
    is not replayed for -0.0 (the post mix is 0 * sigmoid, whose sign follows the value's)."""
    kw = dict(next(a for f, a in VALID if f is MO.mhc_pre_split_mixes))
    saved = _plan._MAX_PLANS
    _plan._MAX_PLANS = 0
    try:
        ref = MO.mhc_pre_split_mixes(**_clone(dict(kw, mhc_post_mult_value=-0.0)))
    finally:
        _plan._MAX_PLANS = saved
    for _ in range(3):
        MO.mhc_pre_split_mixes(**_clone(dict(kw, mhc_post_mult_value=0.0)))
    _same(ref, MO.mhc_pre_split_mixes(**_clone(dict(kw, mhc_post_mult_value=-0.0))))
    assert torch.signbit(ref[1]).any()


def test_nan_keys_one_plan():
    """Calls with a NaN float argument share one key (a NaN is unequal to itself, so keying it by
    value would add an entry per call until the table is full)."""
    fn = MO.mhc_pre_split_mixes
    k1 = _plan._key(fn, (), {"mhc_post_mult_value": float("nan")}, [])
    k2 = _plan._key(fn, (), {"mhc_post_mult_value": float("nan")}, [])
    assert k1 == k2
    assert _plan._key(fn, (), {"e": 0.0}, []) != _plan._key(fn, (), {"e": -0.0}, [])
