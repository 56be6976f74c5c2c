"""experiments/family_best.py (the best levels of the policy family by a grid on common random numbers) and
experiments/excursion_idle_check.py (where the T2 rule's dedicated server idles, by an observer of the path)."""

import importlib.util
import math
import sys
from pathlib import Path

from types import SimpleNamespace

import numpy as np
import pytest

from jaxq.policies import excursion
from jaxq.policies import pss2x2 as pol
from jaxq.precision import in_float64
from jaxq.studies.random_draw import draw_system


@pytest.mark.slow  # a second check: -m slow
def test_family_best_runs_the_levels_it_reports_on_common_random_numbers(experiment_script):
    """Every grid point runs at the Theta_n and z asked for (Theta_n = c exactly, z as given); the best is the
    least of the surface, and running its levels again on the search's replications gives the same number."""
    fb = experiment_script("family_best")
    d = draw_system(0, "T2T2", 3)
    row, surface = fb.best_levels(d.label, d.system, 100, theta_points=3, z_grid=(0.5, 2.0), search_reps=4,
                                  eval_reps=4, log=lambda *a: None)
    grid = [r for r in surface if r["stage"] == "grid"]
    thetas = sorted({int(t) for t in np.round(np.geomspace(1.0, 40.0, 3))})
    assert sorted({r["theta"] for r in grid}) == thetas
    assert sorted({round(r["z_over_z_star"], 12) for r in grid}) == [0.5, 2.0]
    assert len(grid) == 2 * len(thetas) and any(r["stage"] == "refine" for r in surface)
    assert len({(r["theta"], r["z"]) for r in surface}) == len(surface)  # no point run twice
    best = min(surface, key=lambda r: r["J_over_V0"])
    assert (row["best_theta"], row["best_z"], row["best_search"]) == (best["theta"], best["z"], best["J_over_V0"])
    with in_float64():
        again = fb._run(d.system, d.analysis, 100, 4, fb.SEARCH_SEED, fb._at(best["z"], best["theta"]))
    assert again[0] == best["J_over_V0"] and again[2] == best["theta"]
    assert row["best_fresh"] != row["best_search"]  # fresh replications: another seed
    assert math.isfinite(row["excursion_fresh"])


def test_idle_observer_reads_the_workload_and_the_waiting_jobs(experiment_script):
    """The observer on hand-made states: class 0 held, server 0 dedicated to it, alpha = (0.5, 2): the workload is
    x_0 / 0.5 + x_1 / 2 (not alpha . x), a job of class 1 waits only beyond those in service."""
    import jax.numpy as jnp

    chk = experiment_script("excursion_idle_check")
    obs = chk.idle_observer(0, 0, (0.5, 2.0), 1.0, 3.0)

    def seg(x0, x1, s0, s1):
        held = SimpleNamespace(x0=jnp.int32(x0), x1=jnp.int32(x1), s0=jnp.int32(s0), s1=jnp.int32(s1))
        return SimpleNamespace(held=held, weight=jnp.float64(1.0))

    def shares(*state):
        acc = obs.update(obs.init(None), seg(*state), None)
        return tuple(float(acc[k]) for k in chk.KEYS)

    assert shares(0, 5, -1, 1) == (1.0, 1.0, 0.0)  # W = 2.5 <= 3: idle while class 1 waits, not in the bulk
    assert shares(0, 7, -1, 1) == (1.0, 1.0, 1.0)  # W = 3.5 > 3: in the bulk
    assert shares(0, 1, -1, 1) == (1.0, 0.0, 0.0)  # class 1's only job is in service: nothing waits
    assert shares(2, 7, 0, 1) == (0.0, 0.0, 0.0)  # server 0 busy
    with pytest.raises(ValueError, match="single-mode T2"):
        d = draw_system(0, "T2T1", 0)
        chk.check(d.label, d.system, d.analysis, 1000, reps=2)


@pytest.mark.slow  # a second check: -m slow
def test_idle_check_observer_against_the_run_and_the_model(experiment_script):
    """The observer's idle shares are ordered (bulk <= while q waits <= at all), the share while a job waits
    equals the built-in diagnostics' idle_while_waiting of that server on the same replications, and the
    prediction is the excursion model's lost service over the dedicated server's rate."""
    chk = experiment_script("excursion_idle_check")
    d = draw_system(0, "T2", 25)
    row = chk.check(d.label, d.system, d.analysis, 1000, reps=8)
    assert 0.0 < row["idle"] <= 1.0 and row["theta"] == excursion.levels(d.analysis, pol.resolve(
        d.analysis, "auto", None), 1000).theta
    with in_float64():
        res = pol.resolve(d.analysis, "auto", None)
        held = excursion.held_queue(d.system, d.analysis.modes, res.lower, pol.RULE_T2, float(row["theta"]))
        k1 = int(d.analysis.modes.k1[res.lower])
        assert row["predicted"] == held.lost / float(d.system.mu[held.p, k1]) and row["server"] == k1 + 1
    import jaxq

    r = jaxq.simulate(d.system, 1000, 8, seed=chk.SEED)
    diag = r.info["diagnostics"]
    assert math.isclose(row["idle_waiting"], float(np.asarray(diag["idle_while_waiting"])[k1]), rel_tol=1e-9,
                        abs_tol=1e-12)
