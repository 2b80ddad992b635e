"""tilec.warm_up on the CPU emulator: a list of specialisations is built on a thread pool, the
kernels are then in memory (the package's later calls compile nothing), a failing entry is raised
after the others were built, and malformed entries are refused."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")))

import tilec  # noqa: E402
from tilec import _runtime  # noqa: E402

ENTRIES = [("mask_indices_by_tp", ("V=i64", f"R={r}", f"NTP={n}")) for r in (3, 5) for n in (1, 3)]


def test_warm_up_builds_everything_once():
    rt = _runtime.runtime(_runtime.CPU)
    before = rt.stats()
    tilec.warm_up(ENTRIES, threads=2)
    after = rt.stats()
    assert after["compiles"] + after["disk_hits"] - before["compiles"] - before["disk_hits"] == len(ENTRIES)
    tilec.warm_up(ENTRIES)  # in memory now
    lib = _runtime.library(_runtime.CPU)
    for name, gens in ENTRIES:
        lib.kernel(name, gens)
    final = rt.stats()
    assert final["compiles"] == after["compiles"] and final["disk_hits"] == after["disk_hits"]


def test_warm_up_reports_the_first_failure_after_the_rest():
    bad = ENTRIES[:1] + [("mask_indices_by_tp", ("V=i64", "R=0", "NTP=1"))] + [("mask_indices_by_tp", ("V=i32", "R=7", "NTP=2"))]
    with pytest.raises(RuntimeError, match="entry 1"):
        tilec.warm_up(bad, threads=3)
    rt = _runtime.runtime(_runtime.CPU)
    n = rt.stats()["compiles"] + rt.stats()["disk_hits"]
    _runtime.library(_runtime.CPU).kernel("mask_indices_by_tp", ("V=i32", "R=7", "NTP=2"))
    assert rt.stats()["compiles"] + rt.stats()["disk_hits"] == n  # built by the warm-up despite the failure


def test_warm_up_refuses_malformed_entries():
    lib = _runtime.library(_runtime.CPU)
    with pytest.raises(TypeError):
        lib.warm_up([("mask_indices_by_tp", ("V=i64", 3))])
    with pytest.raises(TypeError):
        lib.warm_up(["mask_indices_by_tp"])
    with pytest.raises(ValueError):
        lib.warm_up(ENTRIES, threads=-1)
    lib.warm_up([])
