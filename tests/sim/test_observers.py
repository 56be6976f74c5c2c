"""A user's observers of the 2x2 system's path (jaxq.Observer of View segments) on both drivers.

Independent values: the engine's own cost accumulator (the observer of int exp(-gamma t) h.X_hat dt must equal it
replication by replication) and the arrival rate of exponential primitives (the discounted arrival count divided
by the weights' mass has expectation lambda_n exactly, on both drivers).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import jaxq
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import pss2x2
from jaxq.sim.pss2x2 import Outputs, Truncation

N = 100


def _cost_update(acc, seg, p):
    v = seg.held
    return acc + seg.weight * (p.h_hat[0] * v.x0 + p.h_hat[1] * v.x1)


COST = jaxq.Observer(lambda p: jnp.float64(0.0), _cost_update, lambda acc, mass, p: acc)


def _arrival_update(acc, seg, p):
    return acc + jnp.where(seg.after.x0 + seg.after.x1 > seg.held.x0 + seg.held.x1, seg.jump, 0.0)


ARRIVALS = jaxq.Observer(lambda p: jnp.float64(0.0), _arrival_update, lambda acc, mass, p: {"rate": acc / mass})


@pytest.mark.parametrize("engine", ["event", "uniformized"])
def test_user_observers_of_the_2x2_path(engine):
    system = load(path("pss_T2"))
    r = pss2x2.simulate(system, N, 400, policy="auto", seed=4, truncation=Truncation(engine=engine),
                        outputs=Outputs(cv=False, observers={"cost": COST, "arrivals": ARRIVALS}))
    assert r.engine == engine
    np.testing.assert_allclose(r.samples["cost"], r.samples["J"], rtol=1e-9)
    lam = float(np.sum(system.rates(N)[0]))
    est = r.estimates["arrivals_rate"]
    assert abs(est.value - lam) < 4 * est.stderr, (est.value, est.stderr, lam)
    assert sorted(r.info["observed"]) == ["arrivals_rate", "cost"]
    assert "diagnostics" in r.info  # the built-in diagnostics run beside them


def test_observers_through_jaxq_simulate_and_names_taken():
    system = load(path("pss_T2"))
    r = jaxq.simulate(system, N, 64, seed=1, observers={"cost": COST})
    np.testing.assert_allclose(r.samples["cost"], r.samples["J"], rtol=1e-9)
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate(system, N, 8, observers={"diagnostics": COST})
    assert e.value.key == "observers"
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate(system, N, 8, observers={"J": COST})
    assert e.value.key == "observers"
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate(system, N, 8, observers={"cost": "not an observer"})
    assert e.value.key == "observers.cost"


def _x1_count(v, p):
    return v.x0 * 1.0


def test_a_supremum_observer_ends_with_the_path_at_the_horizon():
    """On the event engine the observers never see the state after the first event past T: the supremum of class
    1's jobs is the engine's own sup_X_hat (times sqrt(n)), replication by replication."""
    from jaxq.mc.observer import supremum

    system = load(path("pss_T2"))  # n = 16 and a short horizon: the path often peaks at its end
    r = pss2x2.simulate(system, 16, 400, seed=0, truncation=Truncation(engine="event", horizon=2.0),
                        outputs=Outputs(cv=False, diagnostics=False, observers={"sup": supremum(_x1_count)}))
    np.testing.assert_allclose(r.samples["sup"], r.samples["sup_X_hat"][:, 0] * 4.0, rtol=1e-12)
