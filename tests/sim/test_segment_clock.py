"""The clock of a path's segments (``Segment.interval``) ends at the horizon.

A run simulates the path on [0, T]: the drivers with a clock hand each segment ``(t0, t1)`` with ``t1`` the time
of the event that ends it or T, whichever comes first, so no interval extends past the horizon (the first event
past T never happens: the path ends in the state held). What reads the clock keeps its numbers: the snapshots at
fixed times (the state at T included) and X(T) of the 2x2 rule.

Checks: a user's observer of the clock on the 2x2 event rule and on a MarkovModel's event driver (its last end is
T exactly, its lengths add up to T); :func:`jaxq.mc.observer.snapshots` and the 2x2 rule's X(T) on hand-made
segments (the state at T, an event exactly at T, a time past the end); the 2x2 rule's record at T against X(T).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np

import jaxq
from jaxq.examples import path
from jaxq.mc.observer import Segment, snapshots
from jaxq.model import load
from jaxq.sim import pss2x2
from jaxq.sim.models.pss2x2_diagnostics import View
from jaxq.sim.models.pss2x2_paths import X_AT_HORIZON, unpack2
from jaxq.sim.pss2x2 import Outputs, Truncation

_spec = importlib.util.spec_from_file_location("markov_examples", Path(__file__).with_name("markov_examples.py"))
ex = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ex)


def _clock(acc, seg, p):
    t0, t1 = seg.interval
    return {"end": jnp.maximum(acc["end"], t1), "length": acc["length"] + (t1 - t0),
            "shortest": jnp.minimum(acc["shortest"], t1 - t0)}


CLOCK = jaxq.Observer(lambda p: {"end": jnp.float64(0.0), "length": jnp.float64(0.0),
                                 "shortest": jnp.float64(jnp.inf)}, _clock, lambda acc, mass, p: acc)


def _clock_ends_at(samples, horizon):
    np.testing.assert_array_equal(samples["clock_end"], horizon)  # the last segment ends at T, none later
    np.testing.assert_allclose(samples["clock_length"], horizon, rtol=1e-12)  # the segments cover [0, T] once
    assert np.all(samples["clock_shortest"] >= 0)


def test_the_2x2_event_rule_clock_ends_at_the_horizon_and_its_record_at_t_is_x_t():
    T = 3.0
    system = load(path("pss_T2"))
    r = pss2x2.simulate(system, 16, 64, seed=2, truncation=Truncation(horizon=T, engine="event"),
                        outputs=Outputs(record_times=(0.0, 1.5, T), cv=False, diagnostics=False,
                                        observers={"clock": CLOCK}))
    _clock_ends_at(r.samples, T)
    x_t = r.samples["X_hat_T"]
    assert np.any(x_t > 0)
    alpha = np.asarray(jaxq.analyze(system).modes.alpha)
    np.testing.assert_allclose(r.samples["W_hat_t"][:, 2], x_t @ (1 / alpha), rtol=1e-12)


def test_a_markov_models_event_driver_clock_ends_at_the_horizon():
    r = jaxq.simulate(ex.MMCM, reps=32, horizon=3.0, discount=1.0, params=ex.MMCM_PARAMS, engine="event", seed=3,
                      observers={"clock": CLOCK})
    _clock_ends_at(r.samples, 3.0)


def _fold(observer, params, segments):
    s = observer.init(params)
    for seg in segments:
        s = observer.update(s, seg, params)
    return observer.finish(s, 1.0, params)


def _seg(held, after, t0, t1):
    return Segment(jnp.float64(held), 0.0, jnp.float64(after), 0.0, interval=(jnp.float64(t0), jnp.float64(t1)))


def test_snapshots_read_the_state_at_each_time_up_to_the_paths_end():
    """A path on [0, T], T = 2.5, jumps 1 -> 2 at t = 1; its last segment, ended by the horizon, does not jump.
    The state at T is the one held; a time past the end is not reached (0)."""
    snap = jax.jit(lambda segs: _fold(snapshots(lambda x, p: x, lambda p: 0.0), (None, times), segs))
    times = jnp.asarray([0.0, 0.5, 1.0, 2.0, 2.5, 3.0])
    np.testing.assert_array_equal(snap([_seg(1, 2, 0.0, 1.0), _seg(2, 2, 1.0, 2.5)]), [1, 1, 2, 2, 2, 0])
    # an event exactly at T: the state at T is the one after it (the path is right-continuous)
    np.testing.assert_array_equal(snap([_seg(1, 2, 0.0, 1.0), _seg(2, 3, 1.0, 2.5)]), [1, 1, 2, 2, 3, 0])


def test_the_2x2_rules_x_at_the_horizon_is_the_state_at_t():
    p = SimpleNamespace(horizon=jnp.float64(2.5))

    def view(x0, x1):
        z = jnp.int32(0)
        return View(jnp.int32(x0), jnp.int32(x1), z, z, z)

    def seg(held, after, t0, t1):
        return Segment(view(*held), 0.0, view(*after), 0.0, interval=(jnp.float64(t0), jnp.float64(t1)))

    last_held = [seg((0, 0), (1, 0), 0.0, 1.0), seg((1, 0), (1, 0), 1.0, 2.5)]  # ended by the horizon
    assert [int(v) for v in unpack2(_fold(X_AT_HORIZON, p, last_held))] == [1, 0]
    jump_at_t = [seg((0, 0), (1, 0), 0.0, 1.0), seg((1, 0), (1, 1), 1.0, 2.5)]  # an event exactly at T
    assert [int(v) for v in unpack2(_fold(X_AT_HORIZON, p, jump_at_t))] == [1, 1]
