"""The diagnostics of 2x2 runs (jaxq.sim.diagnostics) against the exact CTMC solve, on both drivers, and the
warning when J_hat is far above V0.

The exact values are the discounted occupation measure ``gamma int exp(-gamma t) E f(Y_t) dt`` of each
diagnostic's function of the state (server k idle while class i waits, X_hat_p, the mode) and of the rate of
mode switches, from the same sparse solve as J_n with other right-hand sides (:mod:`jaxq.sim.exact_ctmc`); the
simulators normalise the same measure over [0, T], which moves an indicator's value by at most 2 exp(-gamma T).
"""

import math

import numpy as np
import pytest

from jaxq.diffusion.workload import analyze
from jaxq.examples import path
from jaxq.model import load
from jaxq.model.policy_table import RULE_NAMES, SAMPLING_NAMES
from jaxq.policies import pss2x2 as pol
from jaxq.sim import diagnostics as diag
from jaxq.sim import event, exact_ctmc
from jaxq.sim.models import pss2x2 as model
from jaxq.sim.markov import Horizon
from jaxq.sim.pss2x2 import DISCOUNTED, setup, simulate
from jaxq.sim import pss2x2 as PT

N = 16
SAMPLING = dict(enumerate(SAMPLING_NAMES))  # the policy table's codes -> exact_ctmc's names
RULES = RULE_NAMES
KEYS = ("idle_waiting", "X_hat_p", "mode_fraction", "switch_rate")


def _exact(system, policy, switch_at, cap):
    st = setup(system, N, policy=policy, levels=PT.Levels(switch_at=switch_at))  # the default rule's levels
    res = pol.resolve(analyze(system), policy, st.switch_at)
    theta = st.theta or 0
    return exact_ctmc.discounted_cost(system, N, res.lower, RULES[res.rules.lower], theta=theta, cap=cap,
                                      switching=exact_ctmc.Switching(res.higher, RULES[res.rules.higher],
                                      SAMPLING[res.rules.sampling], res.z), diagnostics=True)


def _per_replication(samples):
    return {k: samples[diag.SAMPLE_PREFIX + k] for k in KEYS}


def _check(per_rep: dict, exact: dict, slack: float):
    """Every entry of every diagnostic within 4 standard errors (plus the truncation slack) of the exact value."""
    for k in KEYS:
        x = np.asarray(per_rep[k], dtype=float)
        mean, se = x.mean(axis=0), x.std(axis=0, ddof=1) / math.sqrt(x.shape[0])
        ex = np.asarray(exact["diagnostics"][k], dtype=float)
        scale = np.maximum(1.0, np.abs(ex)) if k in ("X_hat_p", "switch_rate") else 1.0
        tol = 4.0 * se + exact["diagnostics_change"] + slack * scale
        assert np.all(np.abs(mean - ex) <= tol), (k, mean, ex, se)


CASES = [  # (example, policy, switch_at, engine, replications, cap)
    ("pss_P", "auto", None, "uniformized", 1500, 40),
    pytest.param("pss_P", "auto", None, "event", 1500, 40, marks=pytest.mark.slow),  # the event driver: pss_T2 below
    ("pss_T2", "PP", 0.3, "uniformized", 1500, 40),  # switches at completions of the single-activity server
    ("pss_T2", "PP", 0.3, "event", 1500, 40),
    ("pss_P", "T1T2", 0.4, "uniformized", 1500, 40),  # switches at every event
    # renewal primitives (Erlang and hyperexponential services): the phase-type chain's solve takes a minute
    pytest.param("pss_T2T2", "auto", None, "event", 1500, 20, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name, policy, switch_at, engine, reps, cap", CASES)
def test_diagnostics_match_the_exact_occupation_measure(name, policy, switch_at, engine, reps, cap):
    system = load(path(name))
    r = simulate(system, N, reps, policy=policy, seed=7,
                 truncation=PT.Truncation(engine=engine),
                 levels=PT.Levels(switch_at=switch_at))
    assert r.engine == engine
    ex = _exact(system, policy, switch_at, cap)
    _check(_per_replication(r.samples), ex, 2.0 * math.exp(-system.gamma * r.info["horizon"]))
    d = r.info["diagnostics"]
    # the summary is the mean of the samples; the per-server entry the sum over the waiting class
    np.testing.assert_allclose(d["idle_waiting"], r.samples["diag_idle_waiting"].mean(axis=0))
    np.testing.assert_allclose(d["idle_while_waiting"], np.sum(d["idle_waiting"], axis=1))
    assert ("switch_rate" in d) == (len(r.info["modes_used"]) > 1)
    # Definition 2.7: a server never idles while a job of a basic activity of the current mode waits, so only
    # non-basic activities (one per mode) can carry idling
    an = analyze(system)
    res = pol.resolve(an, policy, switch_at)
    nonbasic = {(int(an.modes.k1[m]), int(an.modes.i1[m])) for m in {res.lower, res.higher}}
    for k in (0, 1):
        for i in (0, 1):
            if (k, i) not in nonbasic:
                assert d["idle_waiting"][k][i] == 0.0


def test_the_markov_event_driver_folds_the_same_observer():
    """The generic Markov event driver with the observer of the CTMC's states, against the exact values."""
    system = load(path("pss_T2"))
    st = setup(system, N, policy="PP", levels=PT.Levels(switch_at=0.3))
    out, _ = event.run_markov(model.MARKOV, st.params, DISCOUNTED, 1500, 3, times=Horizon(system.gamma, 0.0, st.horizon),
                              observer=model.MARKOV_DIAGNOSTICS)
    _check({k: np.asarray(v) for k, v in out["observed"].items()}, _exact(system, "PP", 0.3, 40),
           2.0 * math.exp(-system.gamma * st.horizon))


@pytest.mark.slow
def test_observer_leaves_the_estimate_unchanged():
    """The diagnostics draw nothing: J and the samples of a run are the same with and without them."""
    system = load(path("pss_T2T2"))
    a = simulate(system, N, 40, seed=2, outputs=PT.Outputs(diagnostics=True))
    b = simulate(system, N, 40, seed=2, outputs=PT.Outputs(diagnostics=False))
    np.testing.assert_array_equal(a.samples["J"], b.samples["J"])
    assert "diagnostics" not in b.info and not any(k.startswith(diag.SAMPLE_PREFIX) for k in b.samples)


# ---------------------------------------------------------------------------------------------- the warning
DIAG = {"idle_waiting": [[0.0, 0.09], [0.0, 0.01]], "X_hat_p": 0.1, "mode_fraction": [0.4, 0.6], "switch_rate": 3.0}
KW = dict(gamma=0.5, h=[1.0, 0.5], hpc=1, theta=11, policy="T2T2")


def test_warning_rule_and_the_diagnostic_it_names():
    assert diag.warning(DIAG, J_hat=1.49, V0=1.0, n=1e4, **KW) is None  # within 50%
    assert diag.warning(DIAG, J_hat=3.0, V0=1.0, n=999, **KW) is None  # below n = 10^3
    s = diag.warning(DIAG, J_hat=3.0, V0=1.0, n=1000, **KW)
    assert "server 1 idled 9% of the time while class 2 waited" in s and "Theta_n = 11 is small" in s
    assert s.count(". ") == 0 and s.endswith(".")  # one sentence
    quiet = {**DIAG, "idle_waiting": [[0.0, 0.01], [0.0, 0.0]]}
    s = diag.warning({**quiet, "X_hat_p": 1.0}, J_hat=3.0, V0=1.0, n=1000, **KW)
    assert "X_hat_p = 1" in s and "Proposition 5.4" in s  # above 2 Theta_n / sqrt(n) = 0.70
    s = diag.warning(quiet, J_hat=3.0, V0=1.0, n=1000, **KW)
    assert "no diagnostic stands out" in s and "mode switches" in s
    s = diag.warning(quiet, J_hat=3.0, V0=1.0, n=1000, threshold_term=1.8, **KW)
    assert "threshold term Delta_n = 1.8" in s  # J - V0 - Delta_n = 0.2 is within 50% of V0
    assert "accounts for it" not in diag.warning(DIAG, J_hat=3.0, V0=1.0, n=1000, threshold_term=0.2, **KW)
    # Delta_n the smaller part of the excess (random system T1T2_032 at n = 10^4: J/V0 = 1.53, Delta_n/V0 = 0.17,
    # a server idle 5.6% while jobs wait): the idling is named first, Delta_n's share beside it
    s = diag.warning({**DIAG, "idle_waiting": [[0.0, 0.056], [0.0, 0.0]]}, J_hat=1.53, V0=1.0, n=1e4,
                     threshold_term=0.17, **KW)
    assert "server 1 idled 5.6%" in s and "Delta_n = 0.17 accounts for 32% of J_hat - V0" in s
    assert "accounts for it" not in s and s.count(". ") == 0 and s.endswith(".")
    s = diag.warning(None, J_hat=3.0, V0=1.0, n=1000, **KW)  # a run without diagnostics still says the gap
    assert s.startswith("J_hat = 3 is 200% above the lower bound V0 = 1 at n = 1000") and "diagnostics on" in s
    assert diag.warning(None, J_hat=1.2, V0=1.0, n=1000, **KW) is None


def _variable_t2t2():
    """A dual-mode T2T2 system whose services vary (hyperexponential SCV 4 and 2, Erlang)."""
    return load(path("pss_T2T2"))


def test_warning_fires_on_a_tiny_threshold():
    """Theta_n = ceil(1000^0.1) = 2 lets the queue the threshold protects run empty: its dedicated server idles
    while the other class waits, and the warning says so."""
    r = simulate(_variable_t2t2(), 1000, 48, seed=1,
                 levels=PT.Levels(theta_exponent=0.1, theta_rule="paper"))
    assert r.value > 1.5 * r.info["V0"]
    assert len(r.warnings) == 1 and "idled" in r.warnings[0] and "Theta_n = 2 is small" in r.warnings[0]
    bare = simulate(_variable_t2t2(), 1000, 48, seed=1, levels=PT.Levels(theta_exponent=0.1, theta_rule="paper"),
                    outputs=PT.Outputs(diagnostics=False))
    assert bare.value == r.value and "diagnostics" not in bare.info
    assert len(bare.warnings) == 1 and "above the lower bound" in bare.warnings[0]


@pytest.mark.parametrize("name", ["pss_T2T2", "pss_P"])
def test_no_warning_on_examples_at_their_default(name):
    r = simulate(load(path(name)), 1000, 48, seed=1)
    assert r.warnings == () and r.value < 1.5 * r.info["V0"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pss_PP", "pss_T1T2", "pss_T2T1", "pss_PP_gamma", "pss_PP_lognormal",
                                  "pss_T2T1_lognormal"])
def test_no_warning_on_more_examples_at_their_default(name):
    r = simulate(load(path(name)), 1000, 48, seed=1)
    assert r.warnings == ()


def test_pss_T2_at_n_1000_is_explained_by_the_threshold_term():
    """pss_T2 is 51% above V0 at n = 10^3 and (2.29)'s threshold (c = 1): the limit's threshold term Delta_n (the
    T2 rule holds the high-priority class near Theta_n) accounts for the gap, and the warning says that."""
    r = simulate(load(path("pss_T2")), 1000, 200, seed=5, levels=PT.Levels(theta_rule="paper"))
    assert r.value > 1.5 * r.info["V0"]
    assert len(r.warnings) == 1 and "threshold term Delta_n" in r.warnings[0]
