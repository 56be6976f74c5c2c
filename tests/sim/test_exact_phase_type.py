"""The exact solve with phase-type primitives (phases in the state), and the event engine with renewal
primitives against it: every dual-mode example system (Theorem 2.11's cases 2(a)-(d), their own Erlang and
hyperexponential services) and single-mode systems with non-exponential interarrival times, within 4
standard errors at n = 16."""

import math

import numpy as np
import pytest

from jaxq.bench.pss2x2 import family_system
from jaxq.diffusion.workload import analyze
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.model import load
from jaxq.model.distributions import Dist
from jaxq.model.policy_table import RULE_NAMES, SAMPLING_NAMES
from jaxq.policies import pss2x2 as pol
from jaxq.sim import exact_ctmc
from jaxq.sim.pss2x2 import setup, simulate
from jaxq.sim import pss2x2 as PT

N = 16
SAMPLING = dict(enumerate(SAMPLING_NAMES))  # the policy table's codes -> exact_ctmc's names
RULES = RULE_NAMES


def _exact(system, policy="auto", switch_at=None, cap=45, rule=PT.DEFAULT_THETA_RULE, **kw):
    st = setup(system, N, policy=policy, levels=PT.Levels(switch_at=switch_at, theta_rule=rule))  # the rule's levels
    res = pol.resolve(analyze(system), policy, st.switch_at)
    theta = st.theta or 0
    return exact_ctmc.discounted_cost(system, N, res.lower, RULES[res.rules.lower], theta=theta, cap=cap,
                                      switching=exact_ctmc.Switching(res.higher, RULES[res.rules.higher],
                                      SAMPLING[res.rules.sampling], res.z), **kw)


def _moments(alpha, S):
    """Mean and SCV of a phase-type law: ``E X^k = k! alpha (-S)^-k 1``."""
    m1 = np.linalg.solve(-S, np.ones(alpha.size))
    mean = alpha @ m1
    second = 2.0 * alpha @ np.linalg.solve(-S, m1)
    return mean, second / mean**2 - 1.0


@pytest.mark.parametrize("d, phases", [(Dist("exponential", 1.0), 1), (Dist("erlang", 0.25), 4),
                                       (Dist("gamma", 0.5), 2), (Dist("hyperexponential", 4.0), 2),
                                       (Dist("hyperexponential", 1.5), 2)])
def test_phase_type_forms_have_the_declared_mean_and_scv(d, phases):
    alpha, S = exact_ctmc.phase_type(d)
    assert alpha.size == phases and alpha.sum() == pytest.approx(1.0, abs=1e-15)
    mean, scv = _moments(alpha, S)
    # the hyperexponential's p_1 sits on the sampler's 2^-32 grid: the SCV moves by at most 2.3e-10 (c + 2 + 1/c)
    tol = 2.3e-10 * (d.scv + 2 + 1 / d.scv) if d.name == "hyperexponential" else 1e-12
    assert mean == pytest.approx(1.0, rel=1e-13) and scv == pytest.approx(d.scv, rel=tol)
    if d.name == "hyperexponential":  # the sampler's phase probability, exactly
        from jaxq.sim.sampling import param_table

        assert alpha[0] == param_table([d])["thr"][0] * 2.0**-32


@pytest.mark.parametrize("d", [Dist("lognormal", 1.0), Dist("deterministic", 0.0), Dist("gamma", 3.0),
                               Dist("gamma", 2.0)])
def test_laws_without_a_phase_type_form_are_refused_by_key(d):
    with pytest.raises(InputError, match="phase-type") as e:
        exact_ctmc.phase_type(d, "system.service[1][0]")
    assert e.value.key == "system.service[1][0]"
    s = load(path("pss_P"))
    with pytest.raises(InputError, match="phase-type"):
        exact_ctmc.discounted_cost(load(path("pss_PP_gamma")), N, 0, "P", cap=10)
    exp = (np.ones(1), -np.ones((1, 1)))
    bad = [((np.array([0.5, 0.6]), -np.eye(2)), "probability"), ((np.ones(1), -2.0 * np.ones((1, 1))), "mean 1"),
           ((np.ones(1), np.ones((1, 1))), "sub-generator"), ((np.ones(2) / 2, -np.eye(3)), "alpha of length")]
    for law, why in bad:
        with pytest.raises(InputError, match=why):
            exact_ctmc.discounted_cost(s, N, 0, "P", cap=10, phase_types=([law, exp], [[exp, exp], [exp, exp]]))


# Two representations of the exponential law with two phases: a mixture of equal phases, and phase 0 leaving
# for phase 1 at rate 2 besides its absorption at rate 1 (absorbed at rate 1 in every phase: memoryless).
MIXTURE = (np.array([0.3, 0.7]), -np.eye(2))
MOVING = (np.array([1.0, 0.0]), np.array([[-3.0, 2.0], [0.0, -1.0]]))
EXP = (np.ones(1), -np.ones((1, 1)))


@pytest.mark.parametrize("name, policy, switch_at", [("pss_P", "P", None), ("pss_T2", "auto", None),
                                                      ("pss_P", "T2T2", 0.5), ("pss_T2", "T1T2", 0.4)])
def test_redundant_phases_give_the_exponential_chain_value(name, policy, switch_at):
    """The phase-type chain of an exponential system written with redundant phases lumps to the chain without
    phases: the same value to rounding, from a different chain (phase moves, starts drawn from alpha). Lumping
    holds at every cap: a small one keeps the phased chain (2^6 phase combinations a queue state) small."""
    s = load(path(name))
    plain = _exact(s, policy, switch_at, cap=12, check=False)
    phased = _exact(s, policy, switch_at, cap=12, check=False,
                    phase_types=([MIXTURE, MOVING], [[MOVING, EXP], [MIXTURE, MOVING]]))
    assert phased["states"] > 3 * plain["states"]
    assert phased["J"] == pytest.approx(plain["J"], rel=1e-10)


def _renewal(name):
    if ":" in name:  # a family in all six streams of pss_T2 (single mode; T2 with its threshold)
        return family_system(name, "pss_T2")
    return load(path(name))


# the cap of the exact chain per system: T2T2 and T2T1 hold a long queue of one class (see truncation_change: at
# cap 45 it is a third of the controlled estimate's standard error)
CAPS = {"pss_PP": 30, "pss_T2T2": 55, "pss_T1T2": 30, "pss_T2T1": 55, "erlang:0.5": 30, "hyperexponential:3": 30}


# the fast set: a bundled dual-mode system (Erlang and hyperexponential services); the others (cap 55: about
# 8-22 s of state space building each; hyperexponential:3 about 8 s) with the slow checks
FAST = ("pss_PP",)


@pytest.mark.parametrize("name", [name if name in FAST else pytest.param(name, marks=pytest.mark.slow)
                                  for name in CAPS])
def test_event_engine_matches_the_exact_phase_type_value(name):
    """The renewal event engine (the sampler's Erlang and hyperexponential streams, voids never: no gamma) with the
    Theorem 2.11 policy of each system against the exact value, 4 standard errors; at z* (the root rule) so that
    every dual-mode system switches (the default rule keeps pss_T1T2 in one mode at this n)."""
    s = _renewal(name)
    assert not s.exponential
    ex = _exact(s, cap=CAPS[name], rule="root")
    r = simulate(s, N, 4000, policy="auto", seed=21, truncation=PT.Truncation(horizon=25.0),
                 levels=PT.Levels(theta_rule="root"))
    assert r.engine == "event" and r["truncation_bound"] < 0.1 * r.stderr  # the horizon's cut-off tail
    assert ex["truncation_change"] < 0.2 * r.stderr  # the exact chain's cap
    # the controlled estimate (the renewal control variates: one per stream, weighted by V') and the plain one
    assert abs(r.value - ex["J"]) <= 4 * r.stderr + r["truncation_bound"], (r.value, ex["J"], r.stderr)
    assert abs(r.main.plain - ex["J"]) <= 4 * r.main.plain_stderr + r["truncation_bound"]
    assert r.main.variance_reduction > 1.5
    assert r.stderr < 0.02 * ex["J"]
    if analyze(s).case == "dual":
        assert r["switches"].sum() > 0
    assert math.isfinite(ex["J"])


# the fast set: the exponential chains (a fraction of a second to a few seconds); the phase-type T1T2 chain (about
# 10^5 states, two solves of it: the slowest of the three) with the slow checks, its phase-type cap search and
# switching level covered in the fast set by tests/studies/test_exact_check_script.py (pss_PP through exact_cost)
@pytest.mark.parametrize("name, policy", [pytest.param("pss_T1T2", "auto", marks=pytest.mark.slow), ("pss_P", "T2"),
                                          pytest.param("pss_P", "T2T2", marks=pytest.mark.slow)])
def test_exact_cost_runs_the_policy_simulate_runs_and_picks_its_cap(name, policy):
    """``jaxq.exact_cost``: the same policy, Theta_n and switching level as ``simulate`` (through the setup), and a
    cap at which the last two caps agree within rtol; the value equals a fixed-cap solve at that cap. (The
    phase-type pss_T1T2 case runs with the slow checks; the fast set solves the phase-type pss_PP through
    exact_cost in tests/studies/test_exact_check_script.py.)"""
    import jaxq
    from jaxq.sim.pss2x2 import setup

    s = load(path(name))
    got = jaxq.exact_cost(s, N, policy=policy, switch_at=0.5 if policy == "T2T2" else None, rtol=1e-4)
    st = setup(s, N, policy=policy, levels=PT.Levels(switch_at=0.5 if policy == "T2T2" else None))
    assert (got["policy"], got["theta"], got["switch_at"]) == (st.policy, st.theta, st.switch_at)
    assert got["truncation_change"] <= 1e-4 * got["J"] and got["cap"] >= 40
    res = pol.resolve(analyze(s), policy, got["switch_at"])
    fixed = exact_ctmc.discounted_cost(s, N, res.lower, RULES[res.rules.lower], theta=got["theta"] or 0,
                                       cap=got["cap"], check=False,
                                       switching=exact_ctmc.Switching(res.higher, RULES[res.rules.higher],
                                                                      SAMPLING[res.rules.sampling], res.z))
    assert fixed["J"] == got["J"] and fixed["states"] == got["states"]


def test_exact_cost_refuses_before_building_what_it_cannot_finish():
    import time

    import jaxq

    t = time.perf_counter()
    with pytest.raises(InputError, match="states") as e:
        jaxq.exact_cost("pss_T2T2", 10**6)
    assert e.value.key == "n" and time.perf_counter() - t < 30
    with pytest.raises(InputError) as e:
        jaxq.exact_cost("pss_PP_lognormal", N)
    assert e.value.key == "system.interarrival[0]"
    for kw, key in [({"rtol": 0.0}, "rtol"), ({"switch_at": -1.0}, "switch_at"), ({"theta_exponent": 2.0},
                                                                                  "theta_exponent")]:
        with pytest.raises(InputError) as e:
            jaxq.exact_cost("pss_P", N, **kw)
        assert e.value.key == key
    for bad_n in (0.5, 10**400, math.nan):  # an int beyond float64 too: an InputError, not an OverflowError
        with pytest.raises(InputError) as e:
            jaxq.exact_cost("pss_P", bad_n)
        assert e.value.key == "n"
        with pytest.raises(InputError) as e:
            jaxq.simulate("pss_P", bad_n, 8)
        assert e.value.key == "n"
    for kw, key in [({"theta_constant": math.nan}, "theta_constant"), ({"theta_constant": -1.0}, "theta_constant"),
                    ({"switch_at": "a"}, "switch_at"), ({"rtol": "a"}, "rtol"), ({"max_states": None}, "max_states")]:
        with pytest.raises(InputError) as e:
            jaxq.exact_cost("pss_T2", N, **kw)
        assert e.value.key == key
    # an extreme SCV: the sampler's law (p_2 = 2^-32), solved, not refused as singular
    r = jaxq.exact_cost(family_system("hyperexponential:1e20", "pss_P"), 1, rtol=1e-3)
    assert math.isfinite(r["J"]) and r["J"] > 0


@pytest.mark.parametrize("gamma", [0.5, 1e-3, 1e-6])
def test_iterative_solve_meets_its_bound_against_sparse_lu(gamma):
    """``_solve_m_matrix`` on a random generator: within its stated bound of the sparse LU, small gamma included
    (the bound then rests on the problem's conditioning, 64 eps max(a_ii)/gamma)."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve

    rng = np.random.default_rng(7)
    m = 400
    q = sp.random(m, m, density=0.02, random_state=rng, format="csr") * 10.0
    q.setdiag(0.0)
    q.eliminate_zeros()
    a = sp.diags(gamma + np.asarray(q.sum(axis=1)).ravel()) - q
    b = rng.uniform(0.0, 5.0, m)
    v = exact_ctmc._solve_m_matrix(a, b, gamma)
    ref = spsolve(a.tocsc(), b)
    floor = max(1e-10, 64 * np.finfo(float).eps * a.diagonal().max() / gamma)
    assert np.abs(v - ref).max() <= 2 * floor * np.abs(ref).max()
