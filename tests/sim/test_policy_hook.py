"""The policy hook jaxq.Policy2x2 on both 2x2 drivers: a user's rule P against the built-in, longest queue first
against a plain Python event loop (4 stderr), refused assignments, the controls' mean under a user's policy, and the
built-ins run through the user's path."""

import dataclasses
import math

import jax.numpy as jnp
import numpy as np
import pytest

import jaxq
from jaxq.diffusion.workload import analyze
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.model import load
from jaxq.model.pss2x2 import Dist
from jaxq.policies import hook as hk
from jaxq.policies import pss2x2 as pol
from jaxq.sim.pss2x2 import setup, simulate
from jaxq.sim import pss2x2 as PT

N = 16


def _user_p_decide(queues, serving, memory, event, params):
    """Rule P written from Definitions 2.7-2.8: server k1 serves only class i2; server k2 prefers class i1."""
    i1, i2, k1 = params
    k2 = 1 - k1
    left = queues
    c1 = jnp.where((serving[k1] == -1) & (left[i2] > 0), i2, -1)  # the dedicated server decides first
    left = left - (jnp.arange(2) == c1)
    c2 = jnp.where(left[i1] > 0, i1, jnp.where(left[i2] > 0, i2, -1))
    c2 = jnp.where(serving[k2] == -1, c2, -1)
    out = jnp.stack([jnp.where(k1 == 0, c1, c2), jnp.where(k1 == 0, c2, c1)])
    return out, memory


def _user_p(system) -> jaxq.Policy2x2:
    an = analyze(system)
    m = pol.resolve(an, "P", None).lower
    roles = tuple(jnp.int32(int(np.asarray(r)[m])) for r in (an.modes.i1, an.modes.i2, an.modes.k1))
    return jaxq.Policy2x2(init=lambda params: jnp.int32(0), decide=_user_p_decide, params=roles, name="user-P")


def _lqf_decide(queues, serving, memory, event, params):
    """Longest queue first: an idle server (server 1 first) takes the class with more jobs waiting (ties: class 1)."""
    first = jnp.where(queues[1] > queues[0], 1, 0)
    out, left = [], queues
    for k in range(2):
        c = jnp.where(left[first] > 0, first, jnp.where(left[1 - first] > 0, 1 - first, -1))
        c = jnp.where(serving[k] == -1, c, -1)
        left = left - (jnp.arange(2) == c)
        out.append(c)
    return jnp.stack(out), memory


LQF = jaxq.Policy2x2(init=lambda params: (), decide=_lqf_decide, name="LQF")


def _exponential(name):
    """An example system with every primitive exponential (a CTMC: both drivers apply)."""
    e = Dist("exponential", 1.0)
    return dataclasses.replace(load(path(name)), interarrival=(e, e), service=((e, e), (e, e)))


def _agree(a, b):
    diff, se = a.value - b.value, math.hypot(a.stderr, b.stderr)
    assert abs(diff) <= 4.0 * se, (a.value, b.value, se)


@pytest.mark.parametrize("name, engine", [pytest.param("pss_PP_lognormal", "event", marks=pytest.mark.slow),
                                          ("pss_P", "uniformized")])
def test_user_rule_p_matches_builtin(name, engine):
    system = load(path(name))
    user, builtin = _user_p(system), "P"
    a = simulate(system, N, 1000, policy=user, seed=1,
                 truncation=PT.Truncation(engine=engine))
    b = simulate(system, N, 1000, policy=builtin, seed=2,
                 truncation=PT.Truncation(engine=engine))
    _agree(a, b)
    assert a.info["policy"] == "user-P" and a.engine == engine
    # same seed: the same decisions on the same random streams, hence the same paths
    c = simulate(system, N, 1000, policy=builtin, seed=1,
                 truncation=PT.Truncation(engine=engine))
    np.testing.assert_allclose(a.samples["J"], c.samples["J"], rtol=1e-12)


def _plain_lqf(system, n, reps, horizon, seed):
    """Longest queue first by a plain Python event loop (exponential clocks), J truncated at ``horizon``."""
    lam, mu = system.rates(n)
    h, g = np.asarray(system.h, float), float(system.gamma)
    rng = np.random.default_rng(seed)
    J = np.empty(reps)
    for r in range(reps):
        t, x, serving, cost = 0.0, [0, 0], [-1, -1], 0.0
        while True:
            rates = [lam[0], lam[1]] + [mu[serving[k], k] if serving[k] >= 0 else 0.0 for k in range(2)]
            total = sum(rates)
            dt = rng.exponential(1.0 / total)
            t1 = min(t + dt, horizon)
            cost += (h @ np.asarray(x, float)) / math.sqrt(n) * (math.exp(-g * t) - math.exp(-g * t1)) / g
            if t + dt >= horizon:
                break
            t = t + dt
            e = rng.choice(4, p=np.asarray(rates) / total)
            if e < 2:
                x[e] += 1
            else:
                x[serving[e - 2]] -= 1
                serving[e - 2] = -1
            q = [x[i] - sum(s == i for s in serving) for i in range(2)]
            for k in range(2):
                if serving[k] == -1:
                    first = 1 if q[1] > q[0] else 0
                    c = first if q[first] > 0 else (1 - first if q[1 - first] > 0 else -1)
                    if c >= 0:
                        serving[k] = c
                        q[c] -= 1
        J[r] = cost
    return J


def test_longest_queue_first_matches_plain_loop():
    system = load(path("pss_P"))
    horizon = 4.0
    J = _plain_lqf(system, 4, 600, horizon, seed=7)
    res = simulate(system, 4, 4000, policy=LQF, seed=3, truncation=PT.Truncation(engine="event", horizon=horizon),
                   outputs=PT.Outputs(cv=False))
    se = math.hypot(res.stderr, J.std(ddof=1) / math.sqrt(len(J)))
    assert abs(res.value - J.mean()) <= 4.0 * se, (res.value, J.mean(), se)


def _bad_decide(queues, serving, memory, event, params):  # every idle server takes class 1, waiting or not
    return jnp.zeros(2, jnp.int32), memory


def _alien_decide(queues, serving, memory, event, params):  # a class no server serves
    return jnp.full(2, 2, jnp.int32), memory


@pytest.mark.parametrize("engine", ["event", pytest.param("uniformized", marks=pytest.mark.slow)])
@pytest.mark.parametrize("decide", [_bad_decide, _alien_decide])
def test_invalid_assignment_fails_the_run(engine, decide):
    system = load(path("pss_P"))
    bad = jaxq.Policy2x2(init=lambda params: (), decide=decide, name="bad")
    with pytest.raises(InputError, match="policy: the Policy2x2 'bad' made [0-9]+ invalid assignments"):
        simulate(system, N, 8, policy=bad, truncation=PT.Truncation(engine=engine, steps=2000 if engine == "uniformized" else None))


def _returning(assignment=None, memory=None):
    """A decide returning ``assignment`` (default: both servers idle) and ``memory`` (default: the one it got)."""
    def decide(queues, serving, mem, event, params):
        return (jnp.full(2, -1, jnp.int32) if assignment is None else assignment,
                mem if memory is None else memory)
    return decide


@pytest.mark.parametrize("engine", ["event", "uniformized"])
@pytest.mark.parametrize("decide,init,words", [
    (_returning(jnp.full(3, -1, jnp.int32)), None,
     r"assignment of shape \(2,\) and an integer dtype .*got shape \(3,\)"),
    (_returning(jnp.int32(-1)), None, r"assignment of shape \(2,\) and an integer dtype .*got shape \(\)"),
    (_returning(jnp.full(2, -1.0)), None, r"assignment of shape \(2,\) and an integer dtype .*got .*float64"),
    (_returning((jnp.int32(-1),)), None, r"assignment of shape \(2,\) and an integer dtype .*got shape \(1,\)"),
    (lambda q, s, m, e, p: jnp.full(2, -1, jnp.int32), None, r"must return a pair \(assignment, memory\)"),
    (_returning(memory=(jnp.int32(0), jnp.int32(0))), lambda p: jnp.int32(0), r"memory of the structure"),
    (_returning(memory=jnp.zeros(3, jnp.int32)), lambda p: jnp.int32(0), r"memory of the structure"),
    (_returning(memory=jnp.float64(0.5)), lambda p: jnp.int32(0), r"memory of the structure"),
    (_returning(), lambda p: p["missing"], r"init\(params\) fails: KeyError"),
], ids=["shape-3", "scalar", "float", "tuple-1", "no-pair", "memory-structure", "memory-shape", "memory-dtype",
        "init-fails"])
def test_a_decide_that_returns_the_wrong_thing_is_named_before_the_run(engine, decide, init, words):
    """An assignment that is not (2,) integers (a scalar or a 1-tuple was broadcast to both servers, a float
    truncated, a (3,) a JAX traceback), a decide that returns no pair, memory unlike init's (a JAX carry-type
    traceback, or a float silently truncated to init's int): one InputError naming ``policy``, before the run."""
    pol = jaxq.Policy2x2(init=init or (lambda params: ()), decide=decide, params={}, name="odd")
    with pytest.raises(InputError, match=r"policy: the Policy2x2 'odd': .*" + words) as e:
        simulate(load(path("pss_P")), N, 8, policy=pol, truncation=PT.Truncation(engine=engine))
    assert e.value.key == "policy"


def test_a_decide_may_return_a_pair_of_ints_and_memory_of_another_width():
    """(2,) integers as a tuple, and memory of init's kind of another width (a Python int's int64 from an int32
    decide), are what the contract allows: they run."""
    pol = jaxq.Policy2x2(init=lambda params: 0, decide=_returning((jnp.int32(-1), -1), memory=jnp.int32(1)), name="ok")
    res = simulate(load(path("pss_P")), N, 8, policy=pol, truncation=PT.Truncation(engine="uniformized", steps=500))
    assert np.all(np.isfinite(res.samples["J"]))


def test_checked_refuses_each_invalid_request():
    q, idle = jnp.array([1, 0], jnp.int32), jnp.array([-1, -1], jnp.int32)
    assert not bool(hk.checked(jnp.array([0, -1]), q, idle)[2])
    assert bool(hk.checked(jnp.array([0, 0]), q, idle)[2])  # two jobs of class 1 asked, one waits
    assert bool(hk.checked(jnp.array([1, -1]), q, idle)[2])  # no class-2 job waits
    assert bool(hk.checked(jnp.array([-2, -1]), q, idle)[2])  # not a class
    busy = jnp.array([1, -1], jnp.int32)  # a busy server's entry is ignored, never preempted
    serving, started, bad = hk.checked(jnp.array([0, 0]), q, busy)
    assert serving.tolist() == [1, 0] and started.tolist() == [False, True] and not bool(bad)


def test_public_api_takes_a_policy2x2():
    system = load(path("pss_P"))
    res = jaxq.simulate(system, N, 200, policy=LQF, engine="uniformized")
    assert res.info["policy"] == "LQF" and res.engine == "uniformized"
    with pytest.raises(InputError, match="switch_at"):
        jaxq.simulate(system, N, 8, policy=LQF, switch_at=1.0)
    with pytest.raises(InputError, match="policy"):
        jaxq.simulate(load(path("network_N")), N, 8, policy=LQF)


@pytest.mark.parametrize("engine", ["event", pytest.param("uniformized", marks=pytest.mark.slow)])
def test_controls_have_mean_zero_under_a_user_policy(engine):
    system = load(path("pss_PP_lognormal")) if engine == "event" else _exponential("pss_PP")
    res = simulate(system, N, 1500, policy=LQF, seed=5,
                   truncation=PT.Truncation(engine=engine))
    c = np.asarray(res.samples["controls"])
    assert c.shape[1] == (17 if engine == "event" else 11)  # the renewal rule's second-order controls
    se = c.std(axis=0, ddof=1) / math.sqrt(c.shape[0])
    assert np.all(np.abs(c.mean(axis=0)) <= 4.0 * se), (c.mean(axis=0), se)
    assert np.all(se > 0)


@pytest.mark.parametrize("policy", ["T2T1", "PP", "T2@2"])
@pytest.mark.parametrize("name, engine", [("pss_T2T1", "uniformized"), ("pss_PP_lognormal", "event")])
def test_builtins_through_the_user_path_are_the_builtins(policy, name, engine):
    """A built-in as a user's Policy2x2 (memory: the current mode) gives the built-in's numbers exactly."""
    system = _exponential(name) if engine == "uniformized" else load(path(name))
    st = setup(system, N, policy=policy)
    user = hk.builtin(st.params.policy)
    a = simulate(system, N, 200, policy=user, seed=4, truncation=PT.Truncation(engine=engine),
                 outputs=PT.Outputs(cv=False, diagnostics=False))
    b = simulate(system, N, 200, policy=policy, seed=4, truncation=PT.Truncation(engine=engine),
                 outputs=PT.Outputs(cv=False, diagnostics=False))
    np.testing.assert_array_equal(a.samples["J"], b.samples["J"])


def _count_update(queues, serving, memory, event, params):
    """The memory counts the events (its parity is the recorded mode)."""
    return memory + 1


def _count_decide(queues, serving, memory, event, params):
    """Longest queue first, the count of events carried (``update`` None: counted here)."""
    return _lqf_decide(queues, serving, memory, event, params)[0], memory + (params["here"])


@pytest.mark.parametrize("engine", ["uniformized", "event"])
def test_update_splits_decide_in_two(engine):
    """``update`` gives the memory after the event before ``decide`` assigns in it: the built-ins as one function
    (no ``update``) and as the pair give the same numbers bit for bit, switches included; a memory counted by
    ``update`` or by ``decide`` is the same memory (a self-loop of the uniformised chain changes neither)."""
    system = _exponential("pss_T2T1")  # single-mode: T2T1 switches at the level given
    st = setup(system, N, policy="T2T1", levels=PT.Levels(switch_at=0.3))
    pair = hk.builtin(st.params.policy)
    one = pair._replace(update=None, decide=hk.builtin_decide_jobs)
    assert pair.update is not None and pair.decide is not hk.builtin_decide_jobs
    tr, out = PT.Truncation(engine=engine, steps=3000 if engine == "uniformized" else None), PT.Outputs(cv=False)
    a, b = (simulate(system, N, 64, policy=p, seed=4, truncation=tr, outputs=out) for p in (pair, one))
    for key in ("J", "switches"):
        np.testing.assert_array_equal(a.samples[key], b.samples[key])
    assert np.any(a.samples["switches"] > 0)
    counted = jaxq.Policy2x2(init=lambda params: jnp.int32(0), decide=_count_decide, params={"here": jnp.int32(1)},
                             mode=lambda m: m % 2, name="count")
    c, d = (simulate(system, N, 64, policy=p, seed=4, truncation=tr, outputs=out)
            for p in (counted, counted._replace(update=_count_update, params={"here": jnp.int32(0)})))
    for key in ("J", "switches"):
        np.testing.assert_array_equal(c.samples[key], d.samples[key])
    # every event flips the parity: the switches are the events (at most: the CTMC's run ends at its last step)
    assert np.all(d.samples["switches"] > 0) and np.all(d.samples["switches"] <= d.samples["events"])


def test_an_update_that_returns_other_memory_is_named_before_the_run():
    bad = LQF._replace(init=lambda params: jnp.int32(0), update=lambda q, s, m, e, p: jnp.float64(m))
    with pytest.raises(InputError, match=r"policy: .*update\(queues, serving, memory, event, params\) must return "
                                         r"memory"):
        simulate(load(path("pss_P")), N, 8, policy=bad, truncation=PT.Truncation(engine="uniformized", steps=100))


def _batch_decide(queues, serving, memory, event, params):
    """Idle until an arrival finds two jobs waiting, then start every idle server (a legal rule in itself)."""
    go = (event < hk.COMPLETION_1) & (queues[0] + queues[1] >= 2)
    out, left = [], queues
    for k in range(2):
        c = jnp.where(left[0] > 0, 0, jnp.where(left[1] > 0, 1, -1))
        c = jnp.where(go & (serving[k] == -1), c, -1)
        left = left - (jnp.arange(2) == c)
        out.append(c)
    return jnp.stack(out), memory


@pytest.mark.slow
def test_two_starts_at_an_arrival_refused_by_the_event_driver_only():
    system = load(path("pss_P"))
    batch = jaxq.Policy2x2(init=lambda params: (), decide=_batch_decide, name="batch")
    with pytest.raises(InputError, match="both servers a job at an arrival"):
        simulate(system, N, 8, policy=batch, truncation=PT.Truncation(engine="event"))
    res = simulate(system, N, 8, policy=batch, truncation=PT.Truncation(engine="uniformized", steps=2000))  # the CTMC has no such limit
    assert np.all(np.isfinite(res.samples["J"]))


def test_exact_cost_refuses_a_policy2x2():
    with pytest.raises(InputError, match="policy: .*Policy2x2 runs in jaxq.simulate only"):
        jaxq.exact_cost(load(path("pss_P")), N, policy=LQF._replace(params={"w": jnp.ones(2)}))


@pytest.mark.parametrize("engine", ["event", pytest.param("uniformized", marks=pytest.mark.slow)])
def test_params_and_memory_of_a_user_policy(engine):
    """A threshold rule with memory: params are traced (new values, other numbers, same compiled engine) and the
    memory (a count of events, from init's Python int) is carried: the rule turns on after ``after`` events."""

    def decide(queues, serving, memory, event, params):  # after `after` events: class 2 first once it waits >= theta
        first = jnp.where((memory >= params["after"]) & (queues[1] >= params["theta"]), 1, 0)
        out, left = [], queues
        for k in range(2):
            c = jnp.where(left[first] > 0, first, jnp.where(left[1 - first] > 0, 1 - first, -1))
            c = jnp.where(serving[k] == -1, c, -1)
            left = left - (jnp.arange(2) == c)
            out.append(c)
        return jnp.stack(out), memory + 1

    system = load(path("pss_P"))
    steps = 4000 if engine == "uniformized" else None
    pol = jaxq.Policy2x2(init=lambda params: 0, decide=decide, params={"theta": jnp.int32(1), "after": jnp.int32(0)},
                         name="thr")

    def run(theta, after):
        params = {"theta": jnp.int32(theta), "after": jnp.int32(after)}
        return simulate(system, N, 64, policy=pol._replace(params=params), seed=0, truncation=PT.Truncation(engine=engine, steps=steps))

    a, b = run(1, 0), run(10**6, 0)
    assert b.compile_s < 0.5 * a.compile_s or b.compile_s < 0.05  # the same compiled engine
    assert not np.array_equal(a.samples["J"], b.samples["J"])
    # the rule never on (after beyond every run's events) is class 1 first, bit for bit; on after 40 events it is
    # neither: the memory counts the events
    np.testing.assert_array_equal(run(1, 2**30).samples["J"], b.samples["J"])
    mid = run(1, 40).samples["J"]
    assert not np.array_equal(mid, a.samples["J"]) and not np.array_equal(mid, b.samples["J"])


@pytest.mark.slow  # a second check of the built-ins as a Policy2x2 (the user path runs fast)
@pytest.mark.parametrize("engine", ["event", "uniformized"])
def test_a_users_policy_gets_what_the_builtins_have(engine):
    """The built-ins' features are fields of the public type: a user's Policy2x2 with the built-in's fields (jobs
    in the system, unchecked, its mode recorded, its Definition 2.7 invariants) gives the named policy's numbers
    bit for bit, its switches, mode fractions and (debug) invariant counters included."""
    system = _exponential("pss_T2T1")  # single-mode: T2T1 switches at the level given
    levels = PT.Levels(switch_at=0.3)
    st = setup(system, N, policy="T2T1", levels=levels)
    mine = hk.builtin(st.params.policy)._replace(name="mine")
    assert mine.jobs and not mine.checked and mine.mode is not None and mine.invariants == hk.VIOLATIONS
    debug = engine == "event"
    a, b = (simulate(system, N, 200, policy=p, seed=4, truncation=PT.Truncation(engine=engine),
                     outputs=PT.Outputs(cv=False, debug=debug), levels=lv)
            for p, lv in ((mine, PT.Levels()), ("T2T1", levels)))
    assert a.info["policy"] == "mine"
    for key in ("J", "switches", "diag_mode_fraction"):
        np.testing.assert_array_equal(a.samples[key], b.samples[key])
    assert np.any(a.samples["switches"] > 0)
    if debug:
        assert a.info["violations"] == b.info["violations"] and list(a.info["violations"]) == list(hk.VIOLATIONS)


@pytest.mark.slow  # a second check of the built-ins as a Policy2x2 (the user path runs fast)
def test_a_users_policy_is_smoothed_by_its_perturb():
    """``perturb`` is public: the built-in with its perturbation as a user's value runs each replication with the
    parameters its own Gaussian draw gives, as ``levels.perturb`` does for the named policy (same eps, same J)."""
    system = load(path("pss_PP_lognormal"))
    levels = PT.Levels(perturb=(1, 0.3, 0.2))
    st = setup(system, N, policy="PP", levels=levels)
    assert st.policy2x2.perturb is not None
    mine = st.policy2x2._replace(params=st.params.policy_params, name="mine-smoothed")
    a = simulate(system, N, 64, policy=mine, seed=3, outputs=PT.Outputs(cv=False, diagnostics=False))
    b = simulate(system, N, 64, policy="PP", seed=3, levels=levels, outputs=PT.Outputs(cv=False, diagnostics=False))
    assert a.engine == "event"
    np.testing.assert_array_equal(a.samples["eps"], b.samples["eps"])
    np.testing.assert_array_equal(a.samples["J"], b.samples["J"])


def test_a_policy_from_the_rules_of_definition_2_8():
    """``builtin_policy``: a named policy's modes, sampling, level and Theta_n with the rule of each mode replaced.
    Without ``rules`` it is the named policy (plain estimate bit for bit); with ``rules`` its data carries them; bad
    rules are one InputError naming ``rules``."""
    from jaxq.policies import pss2x2 as rules_of
    from jaxq.sim.pss2x2 import builtin_policy

    system = jaxq.load("pss_T2T2")
    same = builtin_policy(system, 16, "T2T2")
    a = jaxq.simulate(system, n=16, reps=64, policy=same, seed=3, cv=False)
    b = jaxq.simulate(system, n=16, reps=64, policy="T2T2", seed=3, cv=False)
    assert a.value == b.value and a.info["policy"] == "T2T2"
    mixed = builtin_policy(system, 16, "T2T2", rules=("P", "T2"))
    p = mixed.params.policy
    assert mixed.name == "P/T2"
    assert int(p.rule[int(p.lower)]) == rules_of.RULE_P and int(p.rule[int(p.higher)]) == rules_of.RULE_T2
    assert (p.level, p.theta) == (same.params.policy.level, same.params.policy.theta)
    for bad in (("P",), ("P", "T3"), "PT2"):
        with pytest.raises(InputError, match="rules"):
            builtin_policy(system, 16, "T2T2", rules=bad)


@pytest.mark.slow
def test_a_policy_from_the_rules_runs_at_its_exact_cost():
    """P below the switching level and T2 above it on pss_T2T2 (phase-type primitives), n = 16: the simulated J_n
    (both the plain and the controlled estimate) agrees with the exact chain's within 4 standard errors."""
    import math

    from jaxq.sim import exact_ctmc
    from jaxq.sim.pss2x2 import builtin_policy

    system, n = jaxq.load("pss_T2T2"), 16
    pt2 = builtin_policy(system, n, "T2T2", rules=("P", "T2"))
    p = pt2.params.policy
    exact = exact_ctmc.discounted_cost(system, n, int(p.lower), "P", int(p.theta), cap=60, switching=exact_ctmc.Switching(
        int(p.higher), "T2", "k1", float(p.level) / math.sqrt(n)))
    assert exact["truncation_change"] < 1e-4
    r = jaxq.simulate(system, n=n, reps=16000, policy=pt2, seed=11)
    assert abs(r.value - exact["J"]) <= 4 * r.stderr + exact["truncation_change"], (r.value, r.stderr, exact["J"])
    t2t2 = exact_ctmc.discounted_cost(system, n, int(p.lower), "T2", int(p.theta), cap=60, switching=exact_ctmc.Switching(
        int(p.higher), "T2", "k1", float(p.level) / math.sqrt(n)))
    assert abs(r.value - t2t2["J"]) > 4 * r.stderr + t2t2["truncation_change"]  # T2T2's exact cost is refused
