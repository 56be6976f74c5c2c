"""Observers of the workload diffusion's path on the SDE driver (the same jaxq.Observer as on the CTMC drivers).

Independent values: the closed form of ``v(0) = E_0 int_0^inf exp(-gamma t) Z_t^2 dt`` for reflected Brownian motion
with drift b < 0 and diffusion coefficient s (the polynomial solution of ``gamma v - s^2 v''/2 - b v' = z^2`` plus the
decaying exponential that makes ``v'(0) = 0``), and the running maximum of the snapshots at every step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import jaxq
from jaxq.sde import coefficients as C
from jaxq.sde.driver import TimeGrid, Record, simulate
from jaxq.diffusion.value import marginal, value_function
from jaxq.sde.estimators import SdeOutputs, SdeTruncation, discounted_cost, scheme
from jaxq.mc.observer import integral, supremum

B, S, G = -0.5, 1.0, 1.0


def square(z, p):
    return z * z


def level(z, p):
    return z


def rbm_second_moment_cost(b, s, g):
    """``E_0 int_0^inf exp(-g t) Z_t^2 dt`` of RBM(b, s) started at 0 (b < 0)."""
    c1 = 2.0 * b / g**2  # v_p = z^2 / g + c1 z + c0
    c0 = (s * s / g + 2.0 * b * b / g**2) / g
    lam = (-b - math.sqrt(b * b + 2.0 * s * s * g)) / (s * s)  # the decaying root of s^2 l^2 / 2 + b l - g = 0
    return c0 - c1 / lam


@pytest.mark.parametrize("name", ["skew", "euler"])
def test_an_integral_observer_matches_the_closed_form(name):
    dt, horizon = 1e-3, 14.0
    r = discounted_cost(C.piecewise([], [B], [S]), G, 0.0, dt=dt, truncation=SdeTruncation(horizon), paths=4000, seed=7,
                        scheme_name=name, outputs=SdeOutputs(cv=False, observers={"z2": integral(square)}))
    exact = rbm_second_moment_cost(B, S, G)
    est = r.estimates["z2"]
    # biases bounded: the linear interpolation of a Brownian bridge misses s^2 dt / 6 per unit time of int Z^2
    # (discounted: s^2 dt / (6 g)); the tail after T is below exp(-g T) E[Z_T^2 + ...] / g, tiny at T = 14
    bias = S * S * dt / (6.0 * G) + math.exp(-G * horizon) * 10.0
    assert abs(est.value - exact) < 4 * est.stderr + bias, (est.value, est.stderr, exact)
    assert r.info["observed"] == ["z2"]


def test_a_supremum_observer_is_the_running_maximum_of_the_path():
    dt, steps = 0.01, 256
    times = np.arange(steps + 1) * dt
    r = simulate(scheme("skew"), C.piecewise([], [B], [S]), 0.3, G, TimeGrid(dt, steps * dt), 64, seed=2,
                 record=Record(times, observers={"sup": supremum(level)}))
    np.testing.assert_array_equal(np.asarray(r["observed"]["sup"]), np.asarray(r["snaps"]).max(axis=1))


def test_the_cost_is_an_observer_and_user_observers_change_nothing_else():
    """The cost folded by the driver is the integral observer of Z; adding observers leaves cost and snapshots
    bit-identical (observers draw nothing)."""
    p = C.piecewise([1.0], [0.3, -0.8], [1.2, 1.6])
    a = simulate(scheme("skew"), p, 0.0, G, TimeGrid(0.01, 3.0), 48, seed=5, record=Record((1.0, 2.0)))
    b = simulate(scheme("skew"), p, 0.0, G, TimeGrid(0.01, 3.0), 48, seed=5,
                 record=Record((1.0, 2.0), observers={"cost_again": integral(level), "sup": supremum(level)}))
    np.testing.assert_array_equal(a["cost"], b["cost"])
    np.testing.assert_array_equal(a["snaps"], b["snaps"])
    np.testing.assert_array_equal(np.asarray(b["observed"]["cost_again"]), b["cost"])


def test_observers_through_jaxq_simulate_sde():
    system = jaxq.load("pss_T2T1")
    r = jaxq.simulate_sde(system, paths=64, dt=0.01, horizon=2.0, seed=1, observers={"sup": supremum(level)})
    assert r.estimates["sup"].value > 0 and r.samples["sup"].shape == (64,)
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate_sde(system, paths=8, dt=0.01, horizon=1.0, observers={"V": supremum(level)})
    assert e.value.key == "observers"


def test_no_observer_sees_the_steps_past_the_horizon():
    """250 steps in blocks of 64: the last block's 6 steps past the horizon are masked for the observers too, so a
    supremum (which reads no weight) is the maximum of the snapshots at steps 0 .. 250."""
    dt, steps = 0.01, 250
    times = np.arange(steps + 1) * dt
    r = simulate(scheme("skew"), C.piecewise([], [B], [S]), 0.3, G, TimeGrid(dt, steps * dt), 64, seed=3,
                 record=Record(times, observers={"sup": supremum(level)}))
    assert r["steps"] == steps
    np.testing.assert_array_equal(np.asarray(r["observed"]["sup"]), np.asarray(r["snaps"]).max(axis=1))


@pytest.mark.parametrize("block", [0, 1 << 16, 2.5, True])
def test_a_block_whose_noise_is_not_one_draw_is_an_input_error(block):
    """A block's noise is one draw of the path's stream (at most 2^17 words: 2^15 steps of one normal and one
    uniform); a block outside 1..that, or not a whole number, is refused naming ``block``."""
    with pytest.raises(jaxq.InputError) as e:
        simulate(scheme("skew"), C.piecewise([], [B], [S]), 0.0, G, TimeGrid(0.01, 1.0, block), 8)
    assert e.value.key == "block"


VF = value_function(B, S, B, S, G, math.inf)  # the value function of the single-mode system (the control's V)


def _ito_update(acc, seg, p):
    return {"plain": acc["plain"] + seg.martingale, "z": acc["z"] + seg.held * seg.martingale,
            "v": acc["v"] + marginal(VF, seg.held) * seg.martingale}


# Ito sums of the steps' martingale increments: with f = 1, f = Z and f = V' (the driver's own control)
ITO = jaxq.Observer(init=lambda p: {k: np.float64(0.0) for k in ("plain", "z", "v")}, update=_ito_update,
                    finish=lambda acc, mass, p: acc)


def test_the_steps_martingale_increments_give_ito_sums_of_mean_zero_and_the_drivers_control():
    """Segment.martingale on the SDE driver: sum f(Z_k) exp(-gamma t_k) dM_k has mean zero (4 standard errors) for
    f = 1 and f = Z, on 250 steps with the last block masked; with f = V' it is the driver's own control."""
    dt, steps = 0.01, 250
    p = C.piecewise([], [B], [S])
    r = simulate(scheme("euler"), p, 0.3, G, TimeGrid(dt, steps * dt), 4000, seed=9,
                 record=Record(value=VF, observers={"ito": ITO}))
    for k in ("plain", "z"):
        x = np.asarray(r["observed"]["ito"][k])
        se = x.std(ddof=1) / math.sqrt(x.size)
        assert se > 0 and abs(x.mean()) < 4 * se, (k, x.mean(), se)
    # the same sum, compiled in another program (XLA's fusion may reorder a rounding)
    np.testing.assert_allclose(np.asarray(r["observed"]["ito"]["v"]), np.asarray(r["control"]), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.slow  # bit-identity with a user's observers beside the driver's
def test_snapshots_and_the_control_are_observers_that_compose_with_a_users():
    """The driver folds its snapshots and its Ito-sum control through combine with the cost and a user's observers:
    adding user observers (one of them the generic snapshots observer, which reads each step's clock
    Segment.interval) leaves cost, snapshots and control bit-identical, and the user's snapshots observer at the
    same times gives the driver's snapshots (250 steps: the last block masked)."""
    from jaxq.mc import observer as O
    from jaxq.sde import driver

    p = C.piecewise([], [B], [S])
    dt, steps = 0.01, 250
    times = np.array([0.0, 0.5, 1.27, 2.5])
    user_snaps = O.with_params(O.snapshots(level, lambda q: np.float64(0.0)), lambda q: (q, times))
    a = simulate(scheme("skew"), p, 0.3, G, TimeGrid(dt, steps * dt), 32, seed=6, record=Record(times, VF))
    b = simulate(scheme("skew"), p, 0.3, G, TimeGrid(dt, steps * dt), 32, seed=6,
                 record=Record(times, VF, {"ito": ITO, "at": user_snaps, "sup": supremum(level)}))
    for k in ("cost", "snaps", "control"):
        np.testing.assert_array_equal(a[k], b[k])
    assert np.all(np.asarray(a["control"]) != 0) and np.all(np.asarray(a["snaps"])[:, 1:] > 0)
    np.testing.assert_array_equal(np.asarray(b["observed"]["at"]), b["snaps"])
    # the one observer a run folds: the driver's own parts and the user's, by name, all jaxq.Observer
    run = driver.folded(O.combine({"sup": supremum(level)}), True)
    state = run.init(driver.Observed(p, np.asarray(times), VF))
    assert isinstance(run, O.Observer) and set(state) == {"cost", "snaps", "control", "observed"}
    assert set(state["observed"]) == {"sup"} and np.shape(state["snaps"]) == times.shape
    assert driver.folded(None, False) is driver.folded(None, False)  # cached: one compiled program
