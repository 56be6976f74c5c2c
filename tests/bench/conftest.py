"""Fixtures of the benchmark tests: tiny ``jaxq bench`` runs, the 4-standard-error check."""

import contextlib
import importlib
import io
import json

import numpy as np
import pytest

import jaxq.bench


@pytest.fixture(scope="module")
def tiny_bench():
    """``tiny_bench(section, missing=False, setup=None, **sizes)``: the rows of
    ``jaxq bench --quick --only SECTION --json`` in tiny mode (``JAXQ_BENCH_TINY=1``).

    ``missing``: every baseline missing (the loader gives None, as without numba or the checkout);
    ``setup(monkeypatch)``: further patches; ``sizes`` override entries of the tiny grid
    (:func:`jaxq.bench.sizes.grid`) so that a run reuses the shapes, hence the compiled programs, of the
    other runs of its file. Module-scoped: a file's tests read the rows of the same runs.
    """

    def run(section: str, missing: bool = False, setup=None, **sizes) -> list[dict]:
        from jaxq.cli import main

        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("JAXQ_BENCH_TINY", "1")
            _one_round(mp)  # module-scoped runs come before the autouse fixture below
            mod = importlib.import_module(f"jaxq.bench.{section}")
            if sizes:
                grid = mod.grid
                mp.setattr(mod, "grid", lambda quick: {**grid(quick), **sizes})
            if missing:
                mp.setattr(jaxq.bench, "baseline", lambda name: None)
            if setup:
                setup(mp)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert main(["bench", "--quick", "--only", section, "--json"]) == 0
        result = json.loads(out.getvalue())
        assert list(result["sections"]) == [section] and result["quick"] is True
        return result["sections"][section]["rows"]

    return run


@pytest.fixture(autouse=True)
def one_timed_round(request, monkeypatch):
    """Every measurement of a benchmark test has one timed round after its first call (the rows' columns are
    those of several rounds); a test that checks the rounds themselves asks for ``all_rounds``."""
    if "all_rounds" not in request.fixturenames:
        _one_round(monkeypatch)


def _one_round(mp) -> None:
    from jaxq.bench import pss2x2, timing

    full = timing.measure_interleaved

    def once(jobs, repeats=1, best=False):
        return full(jobs, 1, best)

    mp.setattr(timing, "measure_interleaved", once)  # measure() calls it too
    mp.setattr(pss2x2, "measure_interleaved", once)


@pytest.fixture
def all_rounds():
    """The benchmark's own number of timed rounds (see ``one_timed_round``)."""


def within_4se(a, a_se, b, b_se) -> bool:
    """``|a - b| <= 4 sqrt(a_se^2 + b_se^2)``, elementwise for lists, with positive standard errors."""
    a, a_se, b, b_se = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (a, a_se, b, b_se))
    se = np.hypot(a_se, b_se)
    return bool(np.all(se > 0) and np.all(np.abs(a - b) <= 4.0 * se))


@pytest.fixture(scope="session")
def agree():
    """``agree(row_a, row_b, keys, b_keys=keys)``: the estimates of two rows (each key with ``<key>_stderr``)
    agree within 4 combined standard errors."""

    def check(a: dict, b: dict, keys, b_keys=None) -> None:
        for key, bkey in zip(keys, b_keys or keys):
            assert within_4se(a[key], a[key + "_stderr"], b[bkey], b[bkey + "_stderr"]), (key, a[key], b[bkey])

    return check


@pytest.fixture(scope="session")
def numba_or_skip():
    """Skip where numba (hence the baselines) is missing; the loaded baselines otherwise."""
    pytest.importorskip("numba")
    pytest.importorskip("ciw")
    assert all(jaxq.bench.baseline(name) is not None for name in jaxq.bench.SECTIONS)
    return jaxq.bench.baseline
