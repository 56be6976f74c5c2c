"""The SDE convergence study (--small) and the SDE benchmark run and produce sane output."""

import math

import numpy as np
import pytest


def test_fit_order_recovers_a_known_slope(experiment_script):
    mod = experiment_script("sde_convergence")
    dts = np.array([0.1, 0.05, 0.025, 0.0125])
    err = 0.3 * dts**0.5
    slope, sd, n = mod.fit_order(dts, err, 1e-4 * np.ones(4))
    assert n == 4 and abs(slope - 0.5) < 1e-9 and sd < 1e-2
    assert mod.fit_order(dts, 1e-5 * np.ones(4), np.ones(4))[2] == 0  # all within noise: no fit


@pytest.mark.slow
def test_small_study_writes_csv_and_png(tmp_path, experiment_script):
    mod = experiment_script("sde_convergence")
    res = mod.main(["--small", "--out", str(tmp_path)])
    assert (tmp_path / "errors.csv").exists() and (tmp_path / "orders.csv").exists()
    assert (tmp_path / "sde_convergence.png").stat().st_size < 200_000
    assert len(res["rows"]) == 6 and all(math.isfinite(r["V_hat"]) for r in res["rows"])


@pytest.mark.slow
def test_bench_rows():
    import jaxq.bench.sde as mod

    rows = list(mod.bench(quick=True))  # a generator: read it once
    assert {r["scheme"] for r in rows} == {"euler", "exact", "skew"}
    ours = [r for r in rows if r["impl"].startswith("jaxq")]  # numba rows are empty without numba
    assert len(ours) >= 3 and all(r["path_steps_per_s"] > 0 for r in ours)
