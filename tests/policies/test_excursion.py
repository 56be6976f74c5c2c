"""The excursion model of the n-th system (jaxq.policies.excursion): the held queue against an exact birth-death
chain and its own density, the workload cost against the threshold term it generalises, the levels it chooses."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.integrate import quad

import jaxq
from jaxq.diffusion.threshold import threshold_term
from jaxq.diffusion.workload import analyze
from jaxq.examples import path
from jaxq.model import load
from jaxq.policies import excursion
from jaxq.policies import pss2x2 as pol
from jaxq.policies import thresholds
from jaxq.sim import pss2x2 as sim

THRESHOLD_EXAMPLES = ("pss_T2", "pss_T2T2", "pss_T1T2", "pss_T2T1")


def _one_class(lam, mu1, mu2, ca2=1.0, cs2=(1.0, 1.0)):
    """Class 0 is i2 (T2: served by k1 = 0 below Theta and by both servers above) and i1 (T1: served by k2 = 1)."""
    system = SimpleNamespace(lam=np.array([lam, 0.1]), mu=np.array([[mu1, mu2], [0.1, 0.1]]),
                             ca2=np.array([ca2, 1.0]), cs2=np.array([list(cs2), [1.0, 1.0]]))
    modes = SimpleNamespace(i1=np.array([0, 0]), i2=np.array([0, 0]), k1=np.array([0, 0]))
    return system, modes


def _birth_death(lam, death, top=4000):
    """The exact stationary law of a birth-death chain with birth rate lam and death rate death(x) in state x."""
    logp = np.zeros(top)
    for x in range(1, top):
        logp[x] = logp[x - 1] + math.log(lam / death(x))
    p = np.exp(logp - logp.max())
    return p / p.sum()


@pytest.mark.parametrize("theta", [10, 40, 80])
def test_the_t2_held_queue_against_the_exact_birth_death_chain(theta, monkeypatch):
    """Exponential primitives, the server holding p's jobs idle only at 0: p's queue under the T2 rule is a
    birth-death chain (deaths mu1 below Theta, mu1 + mu2 from Theta on); its mean and the dedicated server's lost
    service mu1 P(x = 0) against the model's without its integer correction (floor 0). The model is
    the diffusion approximation: exact as the excursion depth D grows (here D = 39), within a few per cent."""
    monkeypatch.setattr(excursion, "BARRIER", 0.0)
    lam, mu1, mu2 = 1.0, 0.95, 0.3
    system, modes = _one_class(lam, mu1, mu2)
    held = excursion.held_queue(system, modes, 0, pol.RULE_T2, theta)
    pi = _birth_death(lam, lambda x: mu1 + (mu2 if x > theta else 0.0))
    mean = float(np.arange(pi.size) @ pi)
    assert held.p == 0
    assert held.mean == pytest.approx(mean, rel=0.03)
    assert held.lost == pytest.approx(mu1 * pi[0], rel=0.15)
    assert held.lost > 0
    # T1: no server is dedicated to the held class, nothing is lost
    t1 = excursion.held_queue(*_one_class(lam, mu1, 1.3), 0, pol.RULE_T1, theta)
    assert t1.lost == 0.0 and t1.mean > 0
    assert excursion.held_queue(system, modes, 0, pol.RULE_P, theta) is None


@pytest.mark.parametrize("rule", [pol.RULE_T1, pol.RULE_T2])
def test_the_held_queue_is_the_mean_of_its_two_sided_exponential_law(rule):
    """The closed forms against quadrature of the density exp(-(Theta - x)/D_-) on [0, Theta], exp(-(x - Theta)/D_+)
    above, with variable primitives (SCVs 4 and 0.25), and the lost service as the regulator (v_-/2) f(0)."""
    lam, mu1, mu2, ca2, cs2 = 0.8, 0.5, 1.1, 4.0, (0.25, 2.0)
    system, modes = _one_class(lam, mu1, mu2, ca2, cs2)
    theta = 7.0
    if rule == pol.RULE_T2:
        d_lo, v_lo = lam - mu1, lam * ca2 + mu1 * cs2[0]
        d_hi, v_hi = mu1 + mu2 - lam, v_lo + mu2 * cs2[1]
    else:
        d_lo, v_lo = lam, lam * ca2
        d_hi, v_hi = mu2 - lam, v_lo + mu2 * cs2[1]
    lo, hi = v_lo / (2 * d_lo), v_hi / (2 * d_hi)
    floor = 0.0
    if rule == pol.RULE_T2:  # the integer correction: the law reflected two jobs up
        floor = excursion.BARRIER
    dens = lambda x: (math.exp(-(theta - x) / lo) if x <= theta  # noqa: E731
                      else math.exp(-(x - theta) / hi)) if x >= floor else 0.0
    top = theta + 80.0 * hi  # the density above is below e^-80 of its peak
    norm = quad(dens, 0, theta)[0] + quad(dens, theta, top)[0]
    mean = (quad(lambda x: x * dens(x), 0, theta)[0] + quad(lambda x: x * dens(x), theta, top)[0]) / norm
    held = excursion.held_queue(system, modes, 0, rule, theta)
    assert held.mean == pytest.approx(mean, rel=1e-9)
    # the regulator at the floor, d_- D_- f(floor) (= (v_-/2) f(floor) with the uncorrected depth)
    assert held.lost == pytest.approx(d_lo * lo * dens(floor) / norm if rule == pol.RULE_T2 else 0.0, rel=1e-9, abs=0)


def test_the_t2_law_is_reflected_two_jobs_up():
    """Under T2 the held queue's law starts two jobs up (the job the other server holds and the queue's first
    whole step) with the diffusion's depth D_-: at Theta <= 2 the lower law is empty (N = D_+), the mean is
    2 + D_+ and the dedicated server loses the regulator d_- D_- / D_+; one job higher it loses less."""
    lam, mu1, mu2, ca2, cs2 = 0.8, 0.5, 1.1, 0.2, (0.3, 2.0)
    system, modes = _one_class(lam, mu1, mu2, ca2, cs2)
    d_lo, v_lo = lam - mu1, lam * ca2 + mu1 * cs2[0]
    lo, hi = v_lo / (2 * d_lo), (v_lo + mu2 * cs2[1]) / (2 * (mu1 + mu2 - lam))
    assert excursion.BARRIER == 2.0
    for theta in (1.0, 2.0):  # a threshold at or below the floor: the law is the upper exponential from the floor
        held = excursion.held_queue(system, modes, 0, pol.RULE_T2, theta)
        assert held.mean == pytest.approx(2.0 + hi, rel=1e-12)
        assert held.lost == pytest.approx(d_lo * lo / hi, rel=1e-12)
    # one job more above the floor: the lower law's mass 1 - e^{-1/D_-} moves off the floor
    held3 = excursion.held_queue(system, modes, 0, pol.RULE_T2, 3.0)
    e = math.exp(-1.0 / lo)
    assert held3.lost == pytest.approx(d_lo * lo * e / (lo * (1 - e) + hi), rel=1e-12)
    assert held3.lost < held.lost


@pytest.mark.parametrize("name", ["pss_T2", "pss_T2T2"])
def test_where_every_mode_uses_t2_the_search_starts_at_the_floor(name, monkeypatch):
    """Theta = 1 and Theta = 2 are the same to a T2 law (both at its floor): where every mode uses T2 the levels
    are searched from Theta = 2, so a tie is never broken toward a threshold the model cannot see; with the
    cost made flat in Theta (no holding cost, no idling) the search returns 2, not 1."""
    an = analyze(load(path(name)))
    res = pol.resolve(an, "auto", None)
    z = res.z if math.isfinite(res.z) else None
    assert excursion.model_cost(an, res, 1e4, 1.0, z) == excursion.model_cost(an, res, 1e4, 2.0, z)
    monkeypatch.setattr(excursion, "held_queue", lambda system, modes, m, rule, th: excursion.HeldQueue(0.0, 0.0, an.p))
    monkeypatch.setattr(excursion, "_held_queues", lambda system, modes, m, rule, ths: excursion.HeldQueue(
        np.zeros(len(ths)), np.zeros(len(ths)), an.p))  # the same, for the batched grid
    monkeypatch.setattr(excursion, "_DONE", {})
    assert excursion.levels(an, res, 1e4).theta == 2


@pytest.mark.parametrize("name", THRESHOLD_EXAMPLES)
def test_the_model_with_theta_held_exactly_is_the_threshold_term(name, monkeypatch):
    """With the held queue at exactly Theta and no lost service, the model's cost at z* is V0 plus the threshold
    term of jaxq.diffusion.threshold (checked there against finite differences)."""
    an = analyze(load(path(name)))
    res = pol.resolve(an, "auto", None)
    n = 1e4
    theta = 0.2 * math.sqrt(n) * an.modes.alpha[an.p] * (an.z_star if an.case != "single" else 1.0)
    monkeypatch.setattr(excursion, "held_queue",
                        lambda system, modes, m, rule, th: excursion.HeldQueue(th, 0.0, an.p))
    got = excursion.model_cost(an, res, n, theta, res.z)
    assert got == pytest.approx(an.V0 + threshold_term(an, an.policy, theta / math.sqrt(n)), rel=1e-10)


@pytest.mark.parametrize("name", THRESHOLD_EXAMPLES)
def test_the_levels_minimise_the_model_and_tend_to_the_limit(name):
    an = analyze(load(path(name)))
    res = pol.resolve(an, "auto", None)
    dual = an.case != "single"
    for n in (1e3, 1e4):
        found = excursion.levels(an, res, n)
        assert (found.z is not None) == dual
        root = thresholds.theta_level(n, 0.34, thresholds.theta_rule_constant("root", an, res))
        assert found.cost <= excursion.model_cost(an, res, n, root, res.z) + 1e-12  # the default's levels
        for theta in (found.theta - 1, found.theta + 1):  # a local minimum in Theta
            if theta >= 1:
                assert found.cost <= excursion.model_cost(an, res, n, theta, found.z) * (1 + excursion.TIE)
        assert found.cost == pytest.approx(excursion.model_cost(an, res, n, found.theta, found.z), rel=1e-12)
    # the model's cost at its minimiser tends to V0 (the lost service and the held jobs vanish)
    gaps = [excursion.levels(an, res, n).cost / an.V0 - 1.0 for n in (1e4, 1e6, 1e9)]
    assert all(b <= a + 2 * excursion.TIE for a, b in zip(gaps, gaps[1:])) and min(gaps) > -1e-9 and gaps[2] < 0.03
    assert gaps[0] > gaps[2] or gaps[0] < 1e-8  # falling, unless flat from the start (pss_T2T2: holding is free)
    if dual:  # a given switching level is kept
        fixed = excursion.levels(an, res, 1e4, switch_at=0.5 * an.z_star)
        assert fixed.z == 0.5 * an.z_star


def test_the_excursion_rule_in_the_simulators_setup():
    system = load(path("pss_T2T1"))
    an = analyze(system)
    res = pol.resolve(an, "auto", None)
    found = excursion.levels(an, res, 1e4)
    st = sim.setup(system, 1e4, analysis=an, levels=sim.Levels(theta_rule="excursion"))
    assert (st.theta, st.switch_at) == (found.theta, pytest.approx(found.z))
    # a switching level given by the user is kept; Theta_n is then the model's best at that level
    st2 = sim.setup(system, 1e4, analysis=an, levels=sim.Levels(switch_at=0.3, theta_rule="excursion"))
    assert st2.switch_at == 0.3 and st2.theta == excursion.levels(an, res, 1e4, switch_at=0.3).theta
    # a policy without a threshold keeps z*; the factor of RULE*k scales Theta_n
    pp = load(path("pss_PP"))
    assert sim.setup(pp, 1e4, levels=sim.Levels(theta_rule="excursion")).switch_at == pytest.approx(analyze(pp).z_star)
    st3 = sim.setup(system, 1e4, analysis=an, levels=sim.Levels(theta_rule="excursion", theta_constant=3.0))
    assert st3.theta == 3 * found.theta
    with pytest.raises(jaxq.InputError, match="^theta_rule: the excursion rule's constant depends on n"):
        thresholds.theta_rule_constant("excursion", an, res)
    assert "excursion" in jaxq.api.THETA_RULES
    # roles the model cannot describe (the held class's queue would not return to Theta): refused by name
    bad, modes = _one_class(1.0, 1.2, 0.3)
    with pytest.raises(jaxq.InputError, match="^theta_rule: "):
        excursion.held_queue(bad, modes, 0, pol.RULE_T2, 5.0)


def test_another_policy_than_the_theorems_takes_the_root_rule():
    """The model's held class is the HPC of Theorem 2.11's policy: a baseline policy gets root's threshold and z."""
    for name, policy in (("pss_P", "T2"), ("pss_PP", "T2T2"), ("pss_T2", "T1@1"), ("pss_T1T2", "T2T1")):
        system = load(path(name))
        exc = sim.setup(system, 1e4, policy=policy)
        root = sim.setup(system, 1e4, policy=policy, levels=sim.Levels(theta_rule="root"))
        assert (exc.theta, exc.switch_at) == (root.theta, root.switch_at), (name, policy)


def test_the_upper_modes_held_jobs_cost_their_excess_over_the_workload(monkeypatch):
    """T1T2: the upper mode's held queue differs from the lower mode's by a constant k; the model's cost then
    moves by (h_p - h_q alpha_q / alpha_p) k / sqrt(n) times the discounted time above the level (a held job of p
    instead of its workload in q), checked against the same cost with the constant put in by hand."""
    an = analyze(load(path("pss_T1T2")))
    res = pol.resolve(an, "auto", None)
    n, theta, k = 1e4, 5.0, 7.0
    h, alpha, p, q, g = an.system.h, an.modes.alpha, an.p, an.q, an.system.gamma
    monkeypatch.setattr(excursion, "held_queue", lambda system, modes, m, rule, th: excursion.HeldQueue(
        th + (k if m == res.higher else 0.0), 0.0, an.p))
    got = excursion.model_cost(an, res, n, theta, an.z_star)
    w = theta / math.sqrt(n) / alpha[p]
    bL, sL, bH, sH = an.mode_coefficients()
    from jaxq.diffusion.threshold import discounted_cost
    excess = h[p] - h[q] * alpha[q] / alpha[p]
    above = discounted_cost([0.0], [], g, [bL, bH], [sL, sH], (an.z_star - w,), offsets=(0.0, 1.0))  # E int 1{above}
    base = an.V0 + threshold_term(an, "T1T2", theta / math.sqrt(n))
    assert got == pytest.approx(base + excess * k / math.sqrt(n) * above, rel=1e-10)
    assert excess != h[p]  # the coefficient differs from h_p: the test tells them apart


def test_ties_go_to_the_smaller_threshold_and_an_unreachable_level_takes_root():
    an = analyze(load(path("pss_T2T2")))  # h_1 alpha_1 = h_2 alpha_2: holding costs nothing, the cost is flat
    res = pol.resolve(an, "auto", None)
    thetas = [excursion.levels(an, res, n).theta for n in (1e4, 1e6, 1e8)]
    assert thetas == sorted(thetas)  # no noise-driven jumps
    # a given level below the held jobs' workload at every threshold: the model does not apply, root stands in
    system = load(path("pss_T2T1"))
    t2t1 = analyze(system)
    assert excursion.levels(t2t1, pol.resolve(t2t1, "auto", None), 1e4, switch_at=1e-9) is None
    st = sim.setup(system, 1e4, levels=sim.Levels(switch_at=1e-9))
    root = sim.setup(system, 1e4, levels=sim.Levels(switch_at=1e-9, theta_rule="root"))
    assert (st.theta, st.switch_at) == (root.theta, 1e-9)


def test_where_the_model_does_not_describe_n_the_root_rule_stands_in():
    """T2T1_019 of the random systems (z* = 0.007) at n = 100: one held job's workload exceeds every switching level
    the model tries, so the rule gives root's levels (z*)."""
    from jaxq.studies.random_draw import draw_system

    d = draw_system(0, "T2T1", 19)
    res = pol.resolve(d.analysis, "auto", None)
    assert excursion.levels(d.analysis, res, 100.0) is None
    exc = sim.setup(d.system, 100.0, analysis=d.analysis)
    root = sim.setup(d.system, 100.0, analysis=d.analysis, levels=sim.Levels(theta_rule="root"))
    assert (exc.theta, exc.switch_at) == (root.theta, root.switch_at)
    assert excursion.levels(d.analysis, res, 1e4) is not None


def test_a_switching_level_of_zero_is_a_level_like_any_other(monkeypatch):
    """``switch_at = 0`` (switch at the empty workload, the policies study's baseline) gets its Theta_n: the tie
    between equal costs is broken toward the smaller Theta, then the z nearer z* measured without a logarithm of
    0 (which raised a bare ValueError from jaxq.simulate and from read_run of the policies study)."""
    an = analyze(load(path("pss_T2T1")))
    res = pol.resolve(an, "auto", 0.0)
    monkeypatch.setattr(excursion, "_DONE", {})
    got = excursion.levels(an, res, 100.0, switch_at=0.0)
    assert got is None or got.z == 0.0  # None: the held jobs reach z = 0 (the model does not apply; the rule falls back)


@pytest.mark.parametrize("name", THRESHOLD_EXAMPLES + ("pss_T2T1_lognormal",))
def test_the_batched_model_gives_the_one_by_one_costs_bit_for_bit(name):
    """The level search evaluates its grid of (Theta, z) in one batch (``model_costs``): every cost is
    ``model_cost``'s to the last bit, for every policy with a threshold, inf where the held jobs reach z."""
    an = analyze(load(path(name)))
    rng = np.random.default_rng(3)
    for policy in ("auto", "T2", "T2T2", "T1T2", "T2T1"):
        res = pol.resolve(an, policy, None)
        for n in (1.0, 100.0, 1e4, 1e7):
            thetas = np.concatenate([np.arange(1.0, 9.0), rng.integers(1, 4 * int(math.sqrt(n)) + 3, 24)])
            zs = (an.z_star or 1.0) * np.exp(rng.uniform(-5.0, 5.0, thetas.size))
            zs[:2] = 0.0, 1e-9
            dual = excursion._switches(res)
            try:
                want = [excursion.model_cost(an, res, n, float(t), float(z) if dual else None)
                        for t, z in zip(thetas, zs)]
            except jaxq.InputError as e:  # roles that are not Theorem 2.11's: the batch refuses them alike
                with pytest.raises(jaxq.InputError, match=re.escape(e.reason)):
                    excursion.model_costs(an, res, n, thetas, zs)
                continue
            got = excursion.model_costs(an, res, n, thetas, zs if dual else None)
            assert got.tolist() == want


# (system, n) -> (Theta_n, z_n, the model's cost) as the one-by-one search found them
PINNED_LEVELS = {
    ("pss_T2", 100.0): (6, None, 0.7030351240234003),
    ("pss_T2T2", 316.0): (18, 1.0167214366320478, 2.0070857446062016),
    ("pss_T1T2", 1e4): (1, 31.27852122854887, 2.2596947172880117),
    ("pss_T2T1", 1e3): (1, 0.18657967885716994, 1.663990997700672),
    ("pss_T2T1_lognormal", 1e5): (22, 0.5155745582120767, 1.6441617116924163),
}


@pytest.mark.parametrize("key", list(PINNED_LEVELS))
def test_the_levels_are_those_of_the_one_by_one_search(key, monkeypatch):
    """The batched search chooses the levels the search that evaluated its grid one pair at a time chose (the
    committed results' thresholds and switching levels depend on them)."""
    monkeypatch.setattr(excursion, "_DONE", {})
    an = analyze(load(path(key[0])))
    got = excursion.levels(an, pol.resolve(an, "auto", None), key[1])
    theta, z, cost = PINNED_LEVELS[key]
    assert got.theta == theta
    assert got.z == (None if z is None else pytest.approx(z, rel=1e-12))
    assert got.cost == pytest.approx(cost, rel=1e-12)
