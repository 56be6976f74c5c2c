"""The benchmark plumbing: sizes, the exact integer thresholds, core slices, optional numba."""

import importlib
import sys

import numpy as np
import pytest

import jaxq  # noqa: F401
from jaxq.bench import sizes
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import lockstep
from jaxq.sim import pss2x2_ctmc as U


def test_tiny_switch_shrinks_every_size(monkeypatch):
    full = sizes.grid(False)
    monkeypatch.setenv("JAXQ_BENCH_TINY", "1")
    small = sizes.grid(False)
    assert small["target_events"] < full["target_events"] and small["mmc_reps"] < full["mmc_reps"]
    assert max(small["pss2x2_ctmc_reps"]) < max(full["pss2x2_ctmc_reps"])
    monkeypatch.setenv("JAXQ_BENCH_TINY", "0")
    assert sizes.grid(False) == full


@pytest.mark.parametrize("level", [0.0, 1e-9, 0.37, 1.0, 2.5, 3.999999999, 4.0])
def test_words_below_is_the_exact_float_threshold(level):
    big = 4.0 + 1e-7  # not a power of two: u * big rounds
    c = U.words_below(level, big)
    assert c == 0 or U._point(c - 1, big) < level
    assert c == U.TWO32 or not U._point(c, big) < level


def test_word_thresholds_split_the_unit_interval():
    lam = np.array([0.3, 0.5])
    mu = np.array([[1.0, 0.7], [0.4, 1.3]])
    t = U.word_thresholds(lam, mu)
    big, m0 = U.uniformization(lam, mu)
    frac = lambda words: words / 2.0**32  # noqa: E731
    assert abs(frac(int(t["cls0_last"]) + 1) - lam[0] / big) < 1e-9
    assert abs(frac(int(t["arr_last"]) + 1) - lam.sum() / big) < 1e-9
    assert abs(frac(int(t["seg_start"][1])) - (lam.sum() + m0) / big) < 1e-9
    np.testing.assert_allclose(frac(t["seg_len"].astype(float)), mu / big, atol=1e-9)


def test_core_slices_only_split_large_cpu_chunks():
    assert lockstep.core_slices(lockstep.MIN_SLICE - 1) == 1
    assert 1 <= lockstep.core_slices(10**6) <= max(1, __import__("os").cpu_count())


def test_steps_override_and_its_check():
    s = load(path("pss_P"))
    r = U.simulate_cost(s, 16, 4, steps=100, seed=2)
    assert r["steps"] == 128 and r["events"] > 0
    with pytest.raises(InputError, match="steps"):
        U.simulate_cost(s, 16, 4, steps=0)


def test_pss2x2_section_imports_and_runs_without_numba(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba now raises ImportError
    import jaxq.bench.pss2x2 as B

    B = importlib.reload(B)
    s = load(path("pss_P"))
    row = B._numba_row(s, 16, 4, 1.0)
    assert row["baseline_events_per_s"] is None and "numba" in row["note"]
    row = B._ctmc_row(s, 16, 4, 64)
    assert row["events_per_s"] > 0 and row["reps"] == 4 and np.isfinite(row["J_hat"])
