"""The n-th system as one value: ``PSS2x2.at(n)`` and ``Network.at(n, scaling)``.

Its fields are the rates of ``rates(n)`` (one computation behind both) and of the paper's formulas, it is frozen,
its refusals are ``rates(n)``'s word for word, and a run computes it once and hands it down.
"""

import dataclasses
import math

import numpy as np
import pytest

import jaxq
from jaxq.errors import InputError
from jaxq.examples import names
from jaxq.model.network import Network, ScaledNetwork
from jaxq.model.pss2x2 import PSS2x2, ScaledPSS2x2, system_of
from jaxq.sim import network as net_sim
from jaxq.sim import pss2x2

PSS = [name for name in names() if name.startswith("pss_")]
NETWORKS = ["network_N", "network_M", "network_lap", "network_classdep"]
NS = [16, 30.25, 1e6]


@pytest.mark.parametrize("name", PSS)
def test_the_nth_2x2_system_holds_the_rates_of_rates_n(name):
    s = jaxq.load(name)
    for n in NS:
        nth = s.at(n)
        lam_n, mu_n = s.rates(n)
        assert isinstance(nth, ScaledPSS2x2) and nth.system is s and nth.n == n
        assert np.array_equal(nth.lam_n, lam_n) and np.array_equal(nth.mu_n, mu_n)
        rn = math.sqrt(n)
        assert nth.sqrt_n == rn
        assert np.array_equal(nth.lam_n, n * s.lam + rn * s.lambda_hat)  # the paper's formulas, as written
        assert np.array_equal(nth.mu_n, n * s.mu + rn * s.mu_hat)
        assert np.array_equal(nth.h_hat, s.h / rn)  # the cost of the n-th system is h.X / sqrt(n)


@pytest.mark.parametrize("name", NETWORKS)
def test_the_nth_network_holds_the_rates_of_rates_n(name):
    net = jaxq.load(name)
    scalings = ["underloaded"] if net.scaling == "underloaded" else ["halfin-whitt", "underloaded"]
    for scaling in scalings:
        for n in NS:
            nth = net.at(n, scaling)
            lam_n, mu_n, big_n = net.rates(n, scaling)
            assert isinstance(nth, ScaledNetwork) and nth.network is net and nth.n == n and nth.scaling == scaling
            assert np.array_equal(nth.lam_n, lam_n) and np.array_equal(nth.mu_n, mu_n)
            assert np.array_equal(nth.N, big_n) and nth.N.dtype == np.int64
            assert nth.sqrt_n == math.sqrt(n)
    assert net.at(16, "auto").scaling == "halfin-whitt"  # rates(n, scaling): anything but underloaded


def test_the_nth_system_is_frozen():
    s, net = jaxq.load("pss_PP"), jaxq.load("network_N")
    nth, nth_net = s.at(16), net.at(16)
    for value, field in ((nth, "n"), (nth, "lam_n"), (nth, "system"), (nth_net, "N"), (nth_net, "scaling")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, None)
    for a in (nth.lam_n, nth.mu_n, nth.h_hat, nth_net.lam_n, nth_net.mu_n, nth_net.N):
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 0
    assert np.array_equal(s.at(16).lam_n, nth.lam_n) and not np.shares_memory(s.lam, nth.lam_n)
    underloaded = net.at(16, "underloaded")
    assert not np.shares_memory(underloaded.mu_n, net.mu) and net.mu.flags.writeable  # the network's own mu


def test_at_of_the_nth_system_is_itself_at_its_own_n():
    s, net = jaxq.load("pss_PP"), jaxq.load("network_N")
    nth = s.at(16)
    assert nth.at(16) is nth and nth.at(16.0) is nth
    other = nth.at(25)
    assert other is not nth and np.array_equal(other.lam_n, s.rates(25)[0])
    assert system_of(nth) is s and system_of(s) is s
    hw = net.at(16)
    assert hw.at(16) is hw and hw.at(16, "halfin-whitt") is hw
    assert hw.at(16, "underloaded") is not hw and hw.at(16, "underloaded").scaling == "underloaded"


# The refusals of rates(n), word for word (at(n) is the one computation behind both).
PSS_REFUSALS = [
    ("pss_T2T2", None, 0, "n: must be a positive finite number, got 0"),
    ("pss_T2T2", None, -1, "n: must be a positive finite number, got -1"),
    ("pss_T2T2", None, float("nan"), "n: must be a positive finite number, got nan"),
    ("pss_T2T2", None, float("inf"), "n: must be a positive finite number, got inf"),
    ("pss_T2T2", None, 1e200, "n: n = 1e+200 gives rates beyond 1e+150 (overflow)"),
    ("pss_T2T2", None, 1, "n: n = 1 gives a non-positive arrival rate [0.7, -0.4]"),
    ("pss_T2T2", [[0.5, -5.0], [-0.5, 0.0]], 4, "n: n = 4 gives a non-positive service rate [[2.6, -7.6], [2.2, 4.8]]"),
]


@pytest.mark.parametrize("name, mu_hat, n, message", PSS_REFUSALS)
def test_the_2x2_refusals_are_those_of_rates(name, mu_hat, n, message):
    s = jaxq.load(name)
    if mu_hat is not None:
        s = dataclasses.replace(s, mu_hat=np.array(mu_hat))
    for f in (s.at, s.rates):
        with pytest.raises(InputError) as e:
            f(n)
        assert str(e.value) == message and e.value.key == "n"


NETWORK_REFUSALS = [
    ("halfin-whitt", None, 0, "n: must be positive, got 0"),
    ("halfin-whitt", None, float("nan"), "n: must be positive, got nan"),
    ("halfin-whitt", None, 1e300, "n: n = 1e+300 gives rates beyond 1e+150 (overflow)"),
    ("halfin-whitt", None, 1e12, "n: n = 1e+12 gives pools of more than 2^31 - 1 servers "
                                 "[1000000500000.0, 500000300000.0]"),
    ("underloaded", None, 1e-12, "n: n = 1e-12 gives an empty server pool [0, 0]"),
    ("halfin-whitt", [-100.0, 0.0], 4, "system.pool_size_hat: pool 1 of the n = 4 system would have -196 servers "
                                       "(n pool_size + sqrt(n) pool_size_hat < 0): a pool cannot be negative"),
]


@pytest.mark.parametrize("scaling, nu_hat, n, message", NETWORK_REFUSALS)
def test_the_network_refusals_are_those_of_rates(scaling, nu_hat, n, message):
    net = jaxq.load("network_N")
    if nu_hat is not None:
        net = dataclasses.replace(net, nu_hat=np.array(nu_hat))
    for f in (net.at, net.rates):
        with pytest.raises(InputError) as e:
            f(n, scaling)
        assert str(e.value) == message


def _count(monkeypatch, cls) -> list:
    """Count the calls of ``cls.at`` (the one computation of the n-th rates; ``rates`` calls it too)."""
    calls = []
    own = cls.at

    def counted(self, *args, **kwargs):
        calls.append(args)
        return own(self, *args, **kwargs)

    monkeypatch.setattr(cls, "at", counted)
    return calls


@pytest.mark.parametrize("engine, horizon", [("event", 2.0), ("uniformized", None)])
def test_a_2x2_run_computes_its_rates_once(monkeypatch, engine, horizon):
    system = jaxq.load("pss_P")
    calls = _count(monkeypatch, PSS2x2)
    r = pss2x2.simulate(system, 16, 4, seed=1, truncation=pss2x2.Truncation(engine=engine, horizon=horizon),
                        outputs=pss2x2.Outputs(cv=False, diagnostics=False))
    assert r.engine == engine and calls == [(16.0 if horizon is not None else 16,)]
    nth = system.at(16)
    calls.clear()
    pss2x2.simulate(nth, 16, 4, seed=1, truncation=pss2x2.Truncation(engine=engine, horizon=horizon),
                    outputs=pss2x2.Outputs(cv=False, diagnostics=False))
    assert calls == []  # given the n-th system, the run reads its rates


def test_the_exact_solves_compute_the_rates_once(monkeypatch):
    system = jaxq.load("pss_P")
    calls = _count(monkeypatch, PSS2x2)
    jaxq.optimal(system, 4, queue_cap=8)  # the MDP's truncations and Theorem 2.11's exact cost beside them
    assert len(calls) == 1
    calls.clear()
    jaxq.exact_cost(system, 9)  # one chain per cap
    assert len(calls) == 1


def test_a_network_run_computes_its_rates_once(monkeypatch):
    calls = _count(monkeypatch, Network)
    net_sim.simulate(jaxq.load("network_N"), 25, reps=2, window=net_sim.Window(0.5, 1.0), seed=0,
                     outputs=net_sim.NetworkOutputs(hist_bins=0, cv=False))
    assert calls == [(25, "halfin-whitt")]
