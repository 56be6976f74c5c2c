"""The optimum of the n-th 2x2 system (jaxq.optimal, jaxq.mdp.pss2x2) against independent values: a brute-force
value iteration written here, the exact cost of every built-in policy on the same truncation (none may beat the
optimum), truncation doubling, and the optimal table run through both simulators."""

import math

import numpy as np
import pytest

import jaxq
from jaxq.diffusion.workload import analyze
from jaxq.errors import InputError
from jaxq.mdp import pss2x2 as dp
from jaxq.model.pss2x2 import PSS2x2
from jaxq.policies import pss2x2 as pol
from jaxq.sim import exact_ctmc
from jaxq.sim.pss2x2 import setup

SAMPLING = {pol.SAMPLE_NEVER: "never", pol.SAMPLE_K1_COMPLETION: "k1", pol.SAMPLE_EVERY_EVENT: "every"}


def brute_force(lam, mu, h, gamma, cap, tol=1e-12):
    """J* by plain value iteration over the states (x_1, x_2, s_1, s_2), s_k in {-1, 0, 1}: uniformised, every idle
    server may start any waiting job or idle after every event, arrivals to a full class lost."""
    states = [(x1, x2, s1, s2) for x1 in range(cap + 1) for x2 in range(cap + 1) for s1 in (-1, 0, 1)
              for s2 in (-1, 0, 1) if (s1 == 0) + (s2 == 0) <= x1 and (s1 == 1) + (s2 == 1) <= x2]
    rate = lam[0] + lam[1] + max(mu[0][0], mu[1][0]) + max(mu[0][1], mu[1][1])

    def decisions(x1, x2, s1, s2):
        for a1 in ((s1,) if s1 != -1 else (-1, 0, 1)):
            for a2 in ((s2,) if s2 != -1 else (-1, 0, 1)):
                if (a1 == 0) + (a2 == 0) <= x1 and (a1 == 1) + (a2 == 1) <= x2:
                    yield x1, x2, a1, a2

    v = dict.fromkeys(states, 0.0)
    while True:
        w = {y: min(v[z] for z in decisions(*y)) for y in states}
        new = {}
        for y in states:
            x1, x2, s1, s2 = y
            out, acc = 0.0, 0.0
            if x1 < cap:
                acc, out = acc + lam[0] * w[(x1 + 1, x2, s1, s2)], out + lam[0]
            if x2 < cap:
                acc, out = acc + lam[1] * w[(x1, x2 + 1, s1, s2)], out + lam[1]
            for k, s in ((0, s1), (1, s2)):
                if s != -1:
                    nxt = (x1 - (s == 0), x2 - (s == 1)) + ((-1, s2) if k == 0 else (s1, -1))
                    acc, out = acc + mu[s][k] * w[nxt], out + mu[s][k]
            new[y] = (h[0] * x1 + h[1] * x2 + acc + (rate - out) * v[y]) / (gamma + rate)
        change = max(abs(new[y] - v[y]) for y in states)
        v = new
        if change * rate / gamma < tol:
            return v[(0, 0, -1, -1)]


def random_system(seed: int) -> PSS2x2:
    """An exponential product-form system on the heavy-traffic line (rho* = 1), its cost and second-order terms
    drawn at random."""
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.5, 2.0, 2)
    beta1 = rng.uniform(0.2, 0.8)
    c1 = rng.uniform(0.2, 0.8)
    while min(abs(c1 - beta1), abs(c1 - (1 - beta1))) < 0.05:
        c1 = rng.uniform(0.2, 0.8)
    lam = np.array([c1, 1 - c1]) * alpha
    mu = np.outer(alpha, [beta1, 1 - beta1])
    return PSS2x2(lam=lam, mu=mu, lambda_hat=rng.uniform(-0.5, 0.5, 2) * lam,
                  mu_hat=rng.uniform(-0.5, 0.5, (2, 2)) * mu, h=rng.uniform(0.5, 2.0, 2),
                  gamma=float(rng.uniform(0.5, 2.0)))


def optimum_at(system, n, cap):
    """J*_n on the truncation at ``cap`` (no doubling)."""
    return dp.policy_iteration(dp.chain(system, n, (cap, cap), exact_ctmc.system_phase_types(system))).start


def policy_at(system, n, cap, policy, switch_at=None):
    """The exact J_n of a built-in policy on the same truncation (arrivals to a full class lost)."""
    st = setup(system, n, policy=policy, levels=jaxq.sim.pss2x2.Levels(switch_at=switch_at))
    res = pol.resolve(st.analysis, policy, st.switch_at)
    sw = exact_ctmc.Switching(res.higher, pol.RULE_NAMES[res.rules.higher], SAMPLING[res.rules.sampling], res.z)
    return exact_ctmc.discounted_cost(system, n, res.lower, pol.RULE_NAMES[res.rules.lower], theta=st.theta or 0,
                                      cap=cap, check=False, switching=sw)["J"]


@pytest.mark.parametrize("seed,n,cap", [(1, 1.0, 3), (2, 2.0, 4), (3, 4.0, 4), (4, 3.0, 5)])
def test_policy_iteration_equals_a_brute_force_value_iteration(seed, n, cap):
    system = random_system(seed)
    lam, mu = system.rates(n)
    expected = brute_force(lam, mu.tolist(), system.h / math.sqrt(n), system.gamma, cap)
    assert optimum_at(system, n, cap) == pytest.approx(expected, rel=1e-8)


POLICIES = ("P", "T2", "PP", "T2T2", "T1T2", "T2T1", *pol.FIXED)


@pytest.mark.parametrize("seed", range(3))
def test_no_built_in_policy_beats_the_optimum(seed):
    """Every built-in policy (the six of Theorem 2.11, dual ones switching at a finite level, and the fixed-mode
    baselines) is a policy of the same truncated decision process: its exact cost is at least J*."""
    system, n, cap = random_system(100 + seed), 4.0, 14
    best = optimum_at(system, n, cap)
    costs = {p: policy_at(system, n, cap, p, switch_at=0.7 if pol.POLICIES.get(p, pol.POLICIES["P"]).dual else None)
             for p in POLICIES}
    assert all(c >= best * (1 - 1e-8) for c in costs.values()), (best, costs)
    assert min(costs.values()) > best * (1 + 1e-6)  # the optimum idles and crosses roles where they do not


@pytest.mark.parametrize("name", ["pss_T2T2", "pss_T1T2"])
def test_phase_type_optimum_is_below_every_policy_and_its_table(name):
    """With phases in the state the optimum sees them: below Theorem 2.11's policy and below the exact cost of
    the phase-blind table read off it."""
    system, n, cap = jaxq.load(name), 9.0, 8
    ch = dp.chain(system, n, (cap, cap), exact_ctmc.system_phase_types(system))
    sol = dp.policy_iteration(ch)
    acts, trans = dp.actions(ch.lay), dp.transitions(ch)
    table = dp.observable_table(ch, acts, trans, sol.value, sol.policy)
    j_table = dp.table_cost(ch, table)
    assert sol.start <= j_table * (1 + 1e-9)
    for p in ("auto", "P@1", "P@2"):
        assert sol.start <= policy_at(system, n, cap, p) * (1 + 1e-9)


def test_the_truncations_bracket_the_optimum_and_close_as_the_cap_grows():
    """Arrivals to a full queue lost, or charged the floor of their cost: lower bounds on J*_n that grow with the
    cap (the floor above the free loss); charged as jobs never served: an upper bound that falls with it."""
    system, n = jaxq.load("pss_P"), 4.0

    def optimum(cap, truncation):
        return dp.policy_iteration(dp.chain(system, n, (cap, cap), None, truncation)).start

    caps = (3, 6, 12, 24)
    lost, floor, upper = ([optimum(c, t) for c in caps] for t in ("lost", "floor", "never_served"))
    tol = 1e-8 * upper[0]
    for lower in (lost, floor):
        assert all(a <= b + tol for a, b in zip(lower, lower[1:])), lower
    assert all(a >= b - tol for a, b in zip(upper, upper[1:])), upper
    assert all(a < b < c for a, b, c in zip(lost[:2], floor, upper))
    assert floor[-1] <= upper[-1] + tol and upper[0] - floor[0] > 1e-3 * upper[0]  # a tiny cap: a wide bracket
    assert upper[-1] - floor[-1] <= 1e-6 * upper[-1]


def _floor_systems():
    from dataclasses import replace

    from jaxq.model.distributions import Dist

    hyper = ((Dist("hyperexponential", 2.0), Dist("erlang", 1 / 2)),
             (Dist("exponential", 1.0), Dist("hyperexponential", 3.0)))
    for seed in (10, 11, 12):  # a high discount rate: the floor is a large part of a never-served job's cost
        system = replace(random_system(seed), gamma=3 * random_system(seed).gamma)
        yield system if seed < 12 else replace(system, service=hyper)


@pytest.mark.parametrize("system", list(_floor_systems()), ids=["exp10", "exp11", "hyper"])
def test_the_floor_charge_is_below_the_optimum_of_the_full_system(system, monkeypatch):
    """An arrival to a full class charged the floor of its cost in the full system (behind Q jobs of its class it
    leaves after Q class-i completions, at most R_i of them per unit time) keeps the truncated optimum below
    J*_n at every cap (J*_n from a cap where the bracket is closed to 1e-8), and well above the free loss. The
    check has teeth: the same charge with Q + 2 jobs ahead, or R_i halved, rises above J*_n on the exponential
    systems."""
    phases = exact_ctmc.system_phase_types(system)

    def optimum(cap, truncation):
        return dp.policy_iteration(dp.chain(system, 2.0, (cap, cap), phases, truncation)).start

    best, lost_big = optimum(20, "never_served"), optimum(20, "lost")
    assert best - lost_big <= 1e-8 * best
    for cap in (1, 2, 3, 4):
        lost, floor = optimum(cap, "lost"), optimum(cap, "floor")
        assert lost < floor <= best * (1 + 1e-9), (cap, lost, floor, best)
        assert best - floor < 0.6 * (best - lost)
    if phases is not None:  # the fastest phase of a hyperexponential law makes the floor loose: no teeth to test
        return
    charges = dp.charges
    for wrong in (lambda lam, mu, *a: charges(lam, mu, *a[:3], (a[3][0] + 2, a[3][1] + 2), *a[4:]),
                  lambda lam, mu, *a: charges(lam, 0.5 * mu, *a)):
        monkeypatch.setattr(dp, "charges", wrong)
        assert max(optimum(cap, "floor") for cap in (1, 2)) > best * (1 + 1e-6)


def test_the_floor_charge_is_a_gamma_time_at_the_fastest_class_rate():
    system, n, cap = random_system(3), 4.0, (5, 7)
    ch = dp.chain(system, n, cap, None, "floor")
    lam, mu = system.rates(n)
    for i in (0, 1):
        r = mu[i, 0] + mu[i, 1]
        never = system.h[i] / (2.0 * system.gamma)
        assert ch.charge[i] == pytest.approx(never * (1 - (r / (r + system.gamma)) ** cap[i]), rel=1e-12)
    assert dp.chain(system, n, cap, None, "lost").charge == (0.0, 0.0)
    with pytest.raises(ValueError, match="truncation"):
        dp.chain(system, n, cap, None, "free")


def test_the_bracket_holds_with_phases_in_the_state():
    """Phase-type arrivals lose an arrival only at the end of the interarrival law (its exit rate from the phase):
    the two truncations still bracket, and close as the cap grows."""
    system = jaxq.load("pss_T2T2")
    phases = exact_ctmc.system_phase_types(system)

    def optimum(cap, truncation):
        return dp.policy_iteration(dp.chain(system, 4.0, (cap, cap), phases, truncation)).start

    for lower in ("lost", "floor"):
        (l1, u1), (l2, u2) = [(optimum(c, lower), optimum(c, "never_served")) for c in (3, 6)]
        tol = 1e-8 * u1
        assert l1 <= l2 + tol <= u2 + 2 * tol <= u1 + 3 * tol
        assert u2 - l2 < 0.5 * (u1 - l1)


def test_the_charge_is_the_lost_arrivals_times_a_never_served_job():
    from dataclasses import replace

    from jaxq.model.distributions import Dist

    system = replace(jaxq.load("pss_T2T2"), interarrival=(Dist("erlang", 1 / 3), Dist("hyperexponential", 2.0)))
    phases = exact_ctmc.system_phase_types(system)
    lost, charged = (dp.chain(system, 9.0, (4, 5), phases, c) for c in ("lost", "never_served"))
    extra = charged.cost() - lost.cost()
    g = lost.grids
    assert max(lost.arrivals[i][0].size for i in (0, 1)) > 1  # an interarrival law with phases
    want = sum(np.where(g[i] == lost.lay.cap[i], lost.lam[i] * -lost.arrivals[i][1].sum(axis=1)[g[2 + i]], 0.0)
               * system.h[i] / (3.0 * system.gamma) for i in (0, 1))
    np.testing.assert_allclose(extra, want, rtol=1e-12, atol=0)
    assert (extra[(g[0] < 4) & (g[1] < 5)] == 0).all() and extra.max() > 0


def test_the_reported_bracket_holds_the_optimum_at_any_larger_cap():
    res = jaxq.optimal("pss_P", 4, exact_policy=False, bracket=True)
    assert res.truncation_change <= 1e-6 and res.queue_cap[0] == res.queue_cap[1]
    assert res.J_star_lower <= res.J_star * (1 + 1e-9)
    assert res.truncation_change == pytest.approx((res.J_star - res.J_star_lower) / res.J_star, abs=1e-12)
    q = res.queue_cap[0]
    again = jaxq.optimal("pss_P", 4, queue_cap=2 * q, exact_policy=False, bracket=True)  # no doubling past a cap
    assert again.queue_cap == (2 * q, 2 * q)
    tol = 1e-8 * res.J_star
    for j in (again.J_star, again.J_star_lower):
        assert res.J_star_lower - tol <= j <= res.J_star + tol
    small = jaxq.optimal("pss_P", 4, queue_cap=3, exact_policy=False, bracket=True)
    assert small.truncation_change > 1e-3  # a cap far too small shows in the bracket it reports
    assert small.J_star_lower - tol <= res.J_star and res.J_star_lower <= small.J_star + tol


def _cold(system, n, cap):
    """The never-served truncation's optimum at ``cap``, solved from scratch (no warm start)."""
    return dp.policy_iteration(dp.chain(system, n, cap, None, "never_served")).start


@pytest.mark.parametrize("seed", [0, 3])
def test_the_doubling_reports_what_doubling_each_cap_changes(seed):
    """The caps reported: doubling either changes J_star by what ``truncation_change`` adds up (each at most
    rtol / 2, solved here from scratch), a cap doubled past the first one was needed (halving it changes J_star by
    more than rtol / 2), and J_star lies in the proven bracket."""
    system, n, rtol = random_system(seed), 9.0, 1e-6
    res = dp.optimal_cost(system, n, rtol=rtol)
    q1, q2 = res.cap
    assert res.J_lower is None and res.states == 9 * (q1 + 1) * (q2 + 1)
    j = _cold(system, n, res.cap)
    assert res.J_star == pytest.approx(j, rel=1e-8)
    changes = [abs(j - _cold(system, n, c)) / j for c in ((2 * q1, q2), (q1, 2 * q2))]
    assert max(changes) <= rtol / 2 * (1 + 1e-3) + 2e-8
    assert res.truncation_change == pytest.approx(sum(changes), abs=4e-8)
    first = dp.first_cap(n)
    for i, half in enumerate(((q1 // 2, q2), (q1, q2 // 2))):
        if res.cap[i] > first:
            assert abs(_cold(system, n, half) - j) / j > rtol / 2
    br = dp.optimal_cost(system, n, rtol=rtol, bracket=True)
    assert br.J_lower * (1 - 1e-9) <= res.J_star <= br.J_star * (1 + 1e-6)


def test_the_doubling_follows_the_classes_when_they_are_swapped():
    """Swapping the two classes (and the two servers) of a system swaps the caps and keeps J*_n: each round tests
    both classes from the same caps, so the class whose cap needs doubling is found whichever it is (``pss_P`` at
    n = 100: class 1's cap grows to 80, class 2's stays at 20)."""
    from dataclasses import replace

    system = jaxq.load("pss_P")
    swap = replace(system, lam=system.lam[::-1], mu=system.mu[::-1, ::-1], lambda_hat=system.lambda_hat[::-1],
                   mu_hat=system.mu_hat[::-1, ::-1], h=system.h[::-1])
    a, b = dp.optimal_cost(system, 100.0), dp.optimal_cost(swap, 100.0)
    assert a.cap == (80, 20) and b.cap == (20, 80)
    assert b.J_star == pytest.approx(a.J_star, rel=1e-7)


def test_the_first_doubling_tests_are_refused_before_any_solve(monkeypatch):
    """A cap whose own chain fits but whose doubling tests do not is refused before the first solve, naming both
    caps of the chain refused."""
    monkeypatch.setattr(dp, "policy_iteration", lambda *a, **k: pytest.fail("solved before the refusal"))
    with pytest.raises(InputError, match=r"^queue_cap: the optimum at queue caps \(20, 10\) needs 2,079 states"):
        jaxq.optimal("pss_P", 4, queue_cap=10, exact_policy=False, max_states=9 * 11 * 11)


def test_a_grown_cap_starts_from_the_old_solution_stretched():
    """``extend``: along a grown queue the states up to half the old cap (at least 2: two jobs of a class can be in
    service) keep their own values and decisions, the new cap takes the old cap's, and the map is monotone."""
    system = jaxq.load("pss_P")
    for q, big in ((2, 4), (3, 6), (8, 16), (9, 20)):
        old, new = (dp.chain(system, 4.0, (q, 5), None, "never_served"), dp.chain(system, 4.0, (big, 5), None,
                                                                                   "never_served"))
        x_old = old.grids[0].astype(float)
        v, p = dp.extend(old, new, x_old, np.arange(old.lay.size))
        src, x = old.grids[0][p], new.grids[0]  # the old x_1 each new state reads, and its own
        f = []
        for k in range(big + 1):
            (fk,) = set(src[x == k].tolist())  # one old x_1 per new x_1
            f.append(fk)
        h = max(q // 2, min(q, 2))
        assert f[: h + 1] == list(range(h + 1)) and f[-1] == q and all(np.diff(f) >= 0)
        assert (old.grids[1][p] == new.grids[1]).all()  # the queue whose cap did not grow maps to itself
        np.testing.assert_allclose(v - x_old[p], system.h[0] / 2.0 * (x - src) / system.gamma)  # h / sqrt(n), n = 4


def test_a_fixed_cap_tests_each_class_once():
    res = jaxq.optimal("pss_P", 4, queue_cap=3, exact_policy=False)
    assert res.queue_cap == (3, 3) and res.J_star_lower is None
    assert res.truncation_change > 1e-3  # a cap far too small shows in the doubling
    big = jaxq.optimal("pss_P", 4, exact_policy=False)
    assert big.J_star <= res.J_star * (1 + 1e-9) and big.truncation_change <= 1e-6


@pytest.mark.parametrize("seed", [1, 5])
def test_the_gap_test_is_a_lower_bound_on_the_bracket_and_skips_only_open_ones(seed):
    """``truncation_gap`` (one linear solve: the upper policy's cost under the floor charges) is at most the
    bracket the floor truncation's policy iteration finds, and it rules out the floor solve exactly where that
    bracket is open: at small caps it proves the bracket wider than ``rtol``; where the bracket closes it never
    claims otherwise."""
    system, n = random_system(seed), 4.0
    closed = open_ = 0
    for cap in (2, 3, 5, 8, 14, 24):
        upper = dp.policy_iteration(dp.chain(system, n, (cap, cap), None, "never_served"))
        floor_chain = dp.chain(system, n, (cap, cap), None, "floor")
        lower = dp.policy_iteration(floor_chain, upper.value, upper.policy)
        change = (upper.start - lower.start) / upper.start
        for rtol in (1e-6, 1e-3):
            gap, work = dp.truncation_gap(upper, floor_chain, rtol)
            assert gap <= change * (1 + 1e-6) + 1e-12, (cap, rtol, gap, change)
            assert (gap > rtol) == (gap > 0) and work >= 0
            if change <= rtol:
                closed += 1
                assert gap == 0.0
            elif change > 3 * rtol:
                open_ += 1
                assert gap > rtol, (cap, rtol, gap, change)
    assert closed and open_


def test_optimal_cost_skips_only_the_floor_solves_that_cannot_close(monkeypatch):
    """The answer is the one found with a floor solve at every cap (same caps, same bracket), with fewer
    improvements."""
    system = random_system(2)
    fast = dp.optimal_cost(system, 9.0, bracket=True)
    monkeypatch.setattr(dp, "truncation_gap", lambda *a: (0.0, 0))
    slow = dp.optimal_cost(system, 9.0, bracket=True)
    assert (fast.J_star, fast.J_lower, fast.cap) == (slow.J_star, slow.J_lower, slow.cap)
    assert fast.iterations < slow.iterations


def test_result_reports_the_policy_the_bound_and_the_ratios():
    res = jaxq.optimal("pss_P", 9)
    d = res.to_dict()
    assert d["V0"] == pytest.approx(analyze(jaxq.load("pss_P")).V0)
    assert d["exact_cost"] == pytest.approx(jaxq.exact_cost("pss_P", 9)["J"], rel=1e-5)
    assert d["J_star"] < d["exact_cost"]
    assert d["J_star_over_V0"] == pytest.approx(d["J_star"] / d["V0"])
    assert d["J_star_over_exact_cost"] == pytest.approx(d["J_star"] / d["exact_cost"])
    assert d["J_table"] == d["J_star"] and d["phases_observed"] is False and d["note"] is None
    for key in ("J_star", "J_star_lower", "truncation_change", "states", "iterations", "wall_s", "queue_cap"):
        assert key in d


@pytest.mark.parametrize("engine", ["uniformized", pytest.param("event", marks=pytest.mark.slow)])
def test_the_table_runs_in_both_simulators_and_gives_the_optimum(engine):
    """The table policy simulated (controlled estimates) agrees with J*_n within 4 standard errors, on the
    uniformised and the event driver."""
    res = jaxq.optimal("pss_P", 9, exact_policy=False)
    r = jaxq.simulate("pss_P", n=9, reps=2000, policy=res.policy, engine=engine, seed=3)
    assert abs(r.value - res.J_star) <= 4 * r.stderr, (engine, r.value, r.stderr, res.J_star)


@pytest.mark.slow
def test_the_phase_blind_table_runs_in_the_event_simulator_and_gives_its_exact_cost():
    res = jaxq.optimal("pss_T2T2", 9, exact_policy=False, rtol=1e-4)
    assert res.phases_observed and "lower bound" in res.note
    assert res.J_star <= res.J_table
    r = jaxq.simulate("pss_T2T2", n=9, reps=2000, policy=res.policy, seed=5)
    assert abs(r.value - res.J_table) <= 4 * r.stderr, (r.value, r.stderr, res.J_table)


def test_the_table_decides_beyond_the_cap_as_at_the_cap():
    res = jaxq.optimal("pss_P", 4, queue_cap=4, exact_policy=False)
    import jax.numpy as jnp

    from jaxq.mdp.optimum import TABLE

    far = TABLE.decide(jnp.array([50, 60]), jnp.array([-1, -1]), (), 0, res.policy.params)[0]
    cap = res.table.shape[0] - 1
    assert np.array_equal(np.asarray(far), res.table[cap, cap, 0, 0])


def test_bad_input_is_refused_in_one_line():
    with pytest.raises(InputError, match=r"^n: .*states and about .* GiB"):
        jaxq.optimal("pss_P", 1e6)
    with pytest.raises(InputError, match=r"^queue_cap: .*states"):
        jaxq.optimal("pss_P", 4, queue_cap=5000)
    with pytest.raises(InputError, match=r"lognormal"):
        jaxq.optimal("pss_PP_lognormal", 4)
    with pytest.raises(InputError, match=r"^queue_cap"):
        jaxq.optimal("pss_P", 4, queue_cap=0)
    with pytest.raises(InputError, match=r"^n"):
        jaxq.optimal("pss_P", -1)


def test_the_activity_shares_satisfy_the_discounted_flow_balance():
    """``gamma^2 E int exp(-gamma t) X_i dt = lambda_i - sum_k mu_ik serving[i][k]`` (X_i(0) = 0): the shares give
    J*_n back through the cost, a check independent of the value function."""
    system, n = jaxq.load("pss_P"), 9.0
    res = jaxq.optimal(system, n, exact_policy=False)
    lam, mu = system.rates(n)
    q = [(lam[i] - sum(mu[i, k] * res.serving[i][k] for k in (0, 1))) / system.gamma**2 for i in (0, 1)]
    assert sum(system.h[i] * q[i] for i in (0, 1)) / math.sqrt(n) == pytest.approx(res.J_star, rel=1e-5)
    assert all(0.0 <= s <= 1.0 for row in res.serving for s in row)
    assert res.idle_waiting[0] >= 0.0 and res.idle_waiting[1] >= 0.0


def test_a_bicgstab_breakdown_returns_finite_values_for_a_restart():
    """A breakdown (here rhat.v = 0 at the first step) ends the inner iteration with finite values, so the caller's
    restart from the true residual can go on (it produced NaN and ran to its iteration limit)."""
    import scipy.sparse as sp

    a = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    x, products = dp._bicgstab(a, np.array([1.0, 0.0]), np.ones(2), 1e-12, 50)
    assert np.all(np.isfinite(x)) and products <= 4


def test_an_lu_preconditioner_solves_in_one_step_to_the_same_bound():
    """``solve`` with the LU factors of the matrix itself is a direct solve: one BiCGSTAB step, its error bound
    still proven from the true residual, the values those of the Jacobi-preconditioned solve within the bound."""
    import scipy.sparse.linalg as spla

    ch = dp.chain(random_system(3), 9.0, (12, 12), None, "never_served")
    acts = dp.actions(ch.lay)
    a = dp.policy_matrix(ch, acts, dp.transitions(ch), dp.greedy(ch, acts, dp.work_conserving_start(ch)))
    b = ch.cost()
    direct, products = dp.solve(a, b, np.zeros_like(b), ch.gamma, preconditioner=spla.splu(a.tocsc()).solve)
    jacobi, many = dp.solve(a, b, np.zeros_like(b), ch.gamma)
    assert products <= 2 < many
    bound = 2 * dp.SOLVE_RTOL * np.abs(jacobi).max()
    np.testing.assert_allclose(direct, jacobi, rtol=0, atol=bound)
    assert np.abs(a @ direct - b).max() / ch.gamma <= dp.SOLVE_RTOL * np.abs(direct).max()
