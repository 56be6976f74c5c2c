"""jaxq.bench.sde: the Euler scheme of jaxq and the numba baseline agree; the section runs with and without it."""

import pytest

from jaxq.bench import sde as B
from jaxq.sde import coefficients as C
from jaxq.sde.estimators import SCHEMES, SdeTruncation, discounted_cost
from jaxq.mc.replications import Batching

PATHS = 256  # the tiny grid's, so that every run of this file reuses the compiled programs of the tiny run


@pytest.fixture(scope="module")
def rows(tiny_bench):
    return tiny_bench("sde")


@pytest.mark.parametrize("z0", [0.0, 0.5])  # start in the lower region and next to the switching level
def test_numba_euler_agrees_with_jaxq(z0, agree, numba_or_skip):
    params = C.wcp(*B.T2T1)
    dt, horizon, paths = 0.01, 0.64, 16 * PATHS  # 64 steps: one block a call, as in the tiny run (one program)
    j = discounted_cost(params, 0.5, z0, dt, SdeTruncation(horizon), paths, seed=3, scheme_name="euler",
                        batching=Batching(chunk=PATHS))
    n = numba_or_skip("sde").euler(params, z0, 0.5, dt, horizon, paths, seed=3)
    assert n["steps"] == j["steps"] == 64 and n["cost"].shape == (paths,) and n["events"] == paths * 64
    agree({"V": j.value, "V_stderr": j.stderr}, n, ["V"], ["mean_cost"])


def test_tiny_run_has_every_scheme_and_numba_beside_euler(rows, agree, numba_or_skip):
    assert [(r["scheme"], r["impl"]) for r in rows] == [(s, B.JAXQ_IMPL) for s in SCHEMES] + [("euler", B.NUMBA_IMPL)]
    euler, numba = rows[-2:]
    assert numba["steps"] == euler["steps"] == 64 and numba["path_steps_per_s"] > 0
    agree(euler, numba, ["mean_cost"])
    assert numba["jaxq_ratio"] == pytest.approx(euler["path_steps_per_s"] / numba["path_steps_per_s"], rel=1e-12)


@pytest.mark.slow  # the plumbing without a baseline: tests/bench/test_pss2x2.py in the fast set
def test_section_runs_without_its_baseline(tiny_bench):
    rows = tiny_bench("sde", missing=True)
    numba = [r for r in rows if r["impl"] == B.NUMBA_IMPL]
    assert len(numba) == 1 and numba[0]["scheme"] == "euler"
    assert numba[0]["path_steps_per_s"] is None and numba[0]["jaxq_ratio"] is None and numba[0]["note"]
    for r in rows:
        if r["impl"] == B.JAXQ_IMPL:
            assert r["path_steps_per_s"] > 0 and r["mean_cost"] > 0 and r["mean_cost_stderr"] > 0
