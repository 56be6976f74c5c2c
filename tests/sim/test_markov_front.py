"""One front for the Markov simulators (jaxq.sim.simulate_markov.run_chain): one engine dispatch, one rule for
``engine="auto"``, and a user's observers on the network CTMC, M/M/c and the fast/slow system.

Independent values: each observer's time average (or discounted integral) equals, replication by replication, the
same quantity from the simulator's own output; the M/M/c observer of P(all servers busy) is checked against
Erlang C within 4 standard errors.
"""

from __future__ import annotations

import ast
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import jaxq
from jaxq.sim import fastslow, network
from jaxq.sim.simulate_markov import LOCKSTEP_BATCH, LOCKSTEP_LONG, choose_engine, slow_lockstep

PACKAGE = Path(jaxq.__file__).parent


def _queue0(acc, seg, p):
    return acc + seg.weight * seg.held.q[0]


QUEUE0 = jaxq.Observer(lambda p: jnp.float64(0.0), _queue0, lambda acc, mass, p: acc / mass)


@pytest.mark.slow  # a second check of the one front (the M/M/c observer test runs fast)
@pytest.mark.parametrize("engine", ["event", "uniformized"])
def test_network_observer_is_the_window_average_of_a_queue(engine):
    r = jaxq.simulate("network_N", n=4, reps=16, seed=2, engine=engine, horizon=40.0, warmup=5.0,
                      observers={"queue0": QUEUE0})
    assert r.engine == engine
    np.testing.assert_allclose(r.samples["queue0"], r.samples["mean_queue"][:, 0], rtol=1e-9, atol=1e-12)
    assert r.info["observed"] == ["queue0"]
    with pytest.raises(jaxq.InputError) as e:  # a name the simulator's result has
        jaxq.simulate("network_N", n=4, reps=4, seed=2, engine=engine, horizon=5.0, warmup=1.0,
                      observers={"p_wait": QUEUE0})
    assert e.value.key == "observers"


def _in_system(acc, seg, p):
    return {"x": acc["x"] + seg.weight * seg.held, "busy": acc["busy"] + seg.weight * (seg.held >= p.c)}


IN_SYSTEM = jaxq.Observer(lambda p: {"x": jnp.float64(0.0), "busy": jnp.float64(0.0)}, _in_system,
                          lambda acc, mass, p: {k: v / mass for k, v in acc.items()})


@pytest.mark.parametrize("engine", ["event", "uniformized"])
def test_mmc_observer_against_its_own_output_and_erlang_c(engine):
    lam, mu, c = 8.0, 1.0, 10
    r = network.simulate_mmc(lam, mu, c, reps=64, seed=5, engine=engine, window=network.Window(5.0, 60.0),
                             observers={"o": IN_SYSTEM})
    assert r.engine == engine
    np.testing.assert_allclose(r.samples["o_x"], r.samples["mean_in_system"], rtol=1e-9)
    busy = r.estimates["o_busy"]  # the time all c servers are busy: Erlang C (PASTA)
    exact = network.erlang_c(lam, mu, c)["p_wait"]
    assert abs(busy.value - exact) < 4 * busy.stderr, (busy.value, busy.stderr, exact)


def _cost(acc, seg, p):
    return acc + seg.weight * (seg.held.x + seg.held.y)


COST = jaxq.Observer(lambda p: jnp.float64(0.0), _cost, lambda acc, mass, p: acc)


@pytest.mark.slow  # a second check of the one front (the M/M/c observer test runs fast)
def test_fastslow_observer_is_the_discounted_cost():
    r = jaxq.simulate_fastslow(1.0, 1.5, 0.5, [2, 5], reps=8, seed=3, steps=3000, warmup=300,
                               observers={"cost": COST})
    np.testing.assert_allclose(r.samples["cost"], r.samples["value_empty"], rtol=1e-9)
    plain = fastslow.simulate(1.0, 1.5, 0.5, [2, 5], reps=8, seed=3, window=fastslow.StepWindow(3000, 300))
    np.testing.assert_array_equal(plain.samples["value_empty"], r.samples["value_empty"])  # observers draw nothing


def test_mmc_auto_is_the_uniformised_driver_as_before():
    a = network.simulate_mmc(8.0, 1.0, 10, reps=4, seed=1, window=network.Window(1.0, 5.0))
    b = network.simulate_mmc(8.0, 1.0, 10, reps=4, seed=1, window=network.Window(1.0, 5.0), engine="uniformized")
    assert a.engine == "uniformized"
    np.testing.assert_array_equal(a.samples["mean_in_system"], b.samples["mean_in_system"])


def test_the_one_rule_for_auto():
    assert choose_engine("auto", rate_bound=True) == "uniformized"
    assert choose_engine("auto", rate_bound=True, needs_event=True) == "event"
    assert choose_engine("auto", rate_bound=False) == "event"
    assert choose_engine("auto", rate_bound=True, long_and_few=True) == "event"
    assert choose_engine("uniformized", rate_bound=True, long_and_few=True) == "uniformized"  # as given
    assert slow_lockstep(LOCKSTEP_BATCH - 1, LOCKSTEP_LONG + 1)
    assert not slow_lockstep(LOCKSTEP_BATCH, LOCKSTEP_LONG + 1) and not slow_lockstep(16, LOCKSTEP_LONG)
    refused = (("uniformized", False, False, "engine"), ("uniformized", True, True, "snap_times"),
               ("fast", True, False, "engine"))
    for engine, bound, snaps, key in refused:
        with pytest.raises(jaxq.InputError) as e:
            choose_engine(engine, bound, snaps)
        assert e.value.key == key


def test_auto_gives_few_long_2x2_replications_to_the_event_driver(monkeypatch):
    """With replications priced as long (as at n = 10^5), 8 of pss_P run on the event driver, 256 and an explicit
    engine='uniformized' on the uniformised one."""
    from jaxq.sim import simulate_markov

    assert jaxq.simulate("pss_P", n=16, reps=8, seed=1).engine == "uniformized"
    monkeypatch.setattr(simulate_markov, "LOCKSTEP_LONG", 1)
    few = jaxq.simulate("pss_P", n=16, reps=8, seed=1)
    assert few.engine == "event"
    assert few.value == jaxq.simulate("pss_P", n=16, reps=8, seed=1, engine="event").value
    assert jaxq.simulate("pss_P", n=16, reps=8, seed=1, engine="uniformized").engine == "uniformized"
    assert jaxq.simulate("pss_P", n=16, reps=LOCKSTEP_BATCH, seed=1).engine == "uniformized"
    assert jaxq.simulate("pss_P", n=16, reps=8, seed=1, steps=4000).engine == "uniformized"  # steps: the lockstep's
    targeted = jaxq.simulate("pss_P", n=16, rel_se=0.02, seed=2)  # the fixed run with the same R, same engine
    assert targeted.engine == "event" and targeted.reps < LOCKSTEP_BATCH
    assert targeted.value == jaxq.simulate("pss_P", n=16, reps=targeted.reps, seed=2).value


def _driver_calls(tree: ast.AST) -> list[str]:
    """The calls ``uniformized.run(...)``, ``event.run(...)``, ``event.run_markov(...)`` (any ``event.run*``)."""
    out = []
    for node in ast.walk(tree):
        call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if call and isinstance(node.func.value, ast.Name):
            owner, name = node.func.value.id, node.func.attr
            if (owner == "uniformized" and name == "run") or (owner == "event" and name.startswith("run")):
                out.append(f"{owner}.{name}")
    return out


def test_one_engine_dispatch():
    """In all of jaxq only the front (sim/simulate_markov.py) and the 2x2 system (sim/pss2x2.py, its own engines)
    call the drivers."""
    calling = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        calls = _driver_calls(ast.parse(f.read_text()))
        if calls:
            calling[f.relative_to(PACKAGE).as_posix()] = calls
    assert set(calling) == {"sim/simulate_markov.py", "sim/pss2x2.py"}, calling
    assert sorted(calling["sim/simulate_markov.py"]) == ["event.run_markov", "uniformized.run"]


@pytest.mark.slow  # a second check of the one front (the M/M/c observer test runs fast)
def test_fastslow_precision_target():
    r = jaxq.simulate_fastslow(1.0, 1.5, 0.5, [2, 5], rel_se=0.05, max_reps=512, seed=3, steps=2000, warmup=200)
    est = r.estimates["value_empty"]
    assert r.info["stopped_by"] == "target" and est.stderr <= 0.05 * abs(est.value) * 1.0001
    fixed = jaxq.simulate_fastslow(1.0, 1.5, 0.5, [2, 5], reps=r.reps, seed=3, steps=2000, warmup=200)
    np.testing.assert_array_equal(fixed.samples["value_empty"], r.samples["value_empty"])  # a prefix of the fixed run
