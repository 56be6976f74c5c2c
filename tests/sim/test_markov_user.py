"""jaxq.MarkovModel through jaxq.simulate, on both drivers, against exact values of the finite chains.

Every check is a 4-standard-error interval around the exact value (a linear solve on the enumerated chain:
:mod:`markov_examples`). The discount (gamma = 1) makes the truncation at the horizon negligible: the left-out
tail is at most ``max f exp(-gamma T) / gamma`` (below 1e-30 at T = 80), far below any standard error here.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import jaxq

_spec = importlib.util.spec_from_file_location("markov_examples", Path(__file__).with_name("markov_examples.py"))
ex = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ex)

GAMMA, WARMUP, HORIZON, REPS = 1.0, 10.0, 80.0, 256


def _within(est, exact, key):
    value, se = est.value, est.stderr
    assert se > 0, key
    assert abs(value - exact) < 4 * se, f"{key}: {value} +- {se} vs exact {exact}"


@pytest.mark.parametrize("engine", ["event", "uniformized"])
def test_mmcm_discounted_and_stationary_match_the_exact_chain(engine):
    p = ex.MMCM_PARAMS
    r = jaxq.simulate(ex.MMCM, reps=REPS, horizon=HORIZON, discount=GAMMA, warmup=WARMUP, params=p, engine=engine,
                      seed=3)
    assert r.engine == engine
    Q, f, start = ex.mmcm_chain(p)
    pi = ex.stationary(Q)
    for k in ("x", "q"):
        _within(r.estimates[f"{k}_discounted"], ex.discounted(Q, f[k], start, GAMMA), f"{k}_discounted")
        _within(r.estimates[f"{k}_average"], float(pi @ f[k]), f"{k}_average")


@pytest.mark.parametrize("engine", ["event", "uniformized"])
def test_tandem_discounted_stationary_and_loss_rate_match_the_exact_chain(engine):
    p = ex.TANDEM_PARAMS
    r = jaxq.simulate(ex.TANDEM, reps=REPS, horizon=HORIZON, discount=GAMMA, warmup=WARMUP, params=p, engine=engine,
                      seed=5)
    Q, f, start, lost = ex.tandem_chain(p)
    pi = ex.stationary(Q)
    for k in ("x1", "x2"):
        _within(r.estimates[f"{k}_discounted"], ex.discounted(Q, f[k], start, GAMMA), f"{k}_discounted")
        _within(r.estimates[f"{k}_average"], float(pi @ f[k]), f"{k}_average")
    _within(r.estimates["lost_rate"], float(pi @ lost), "lost_rate")


@pytest.mark.parametrize("engine", ["event", "uniformized"])
def test_difference_controls_have_mean_zero_and_keep_the_estimate_exact(engine):
    p = ex.MMCM_PARAMS
    g = lambda x, p: (x.astype(jnp.float64), x.astype(jnp.float64) ** 2)  # noqa: E731
    model = ex.MMCM._replace(controls=jaxq.difference_controls(g))
    r = jaxq.simulate(model, reps=REPS, horizon=HORIZON, discount=GAMMA, warmup=WARMUP, params=p, engine=engine,
                      seed=11)
    for kind in ("discounted", "window"):
        c = r.samples[f"controls_{kind}"]
        assert c.shape == (REPS, 2)
        m, se = c.mean(axis=0), c.std(axis=0, ddof=1) / math.sqrt(REPS)
        assert np.all(se > 0) and np.all(np.abs(m) < 4 * se), (kind, m, se)
    Q, f, start = ex.mmcm_chain(p)
    pi = ex.stationary(Q)
    for k in ("x", "q"):
        est = r.estimates[f"{k}_discounted"]
        assert est.controlled
        _within(est, ex.discounted(Q, f[k], start, GAMMA), f"{k}_discounted")
        est = r.estimates[f"{k}_average"]
        assert est.controlled and est.variance_reduction > 1.0
        _within(est, float(pi @ f[k]), f"{k}_average")


def test_replications_do_not_depend_on_chunks_and_fold_in_seeding():
    p = ex.MMCM_PARAMS
    kw = dict(horizon=20.0, discount=GAMMA, params=p, engine="uniformized", seed=7)
    a = jaxq.simulate(ex.MMCM, reps=8, **kw)
    b = jaxq.simulate(ex.MMCM, reps=8, chunk=3, **kw)
    np.testing.assert_array_equal(a.samples["x_discounted"], b.samples["x_discounted"])
    c = jaxq.simulate(ex.MMCM, reps=8, **{**kw, "seed": 8})
    assert not np.array_equal(a.samples["x_discounted"], c.samples["x_discounted"])


@pytest.mark.parametrize("kwargs, key", [
    (dict(horizon=10.0), "discount"),
    (dict(horizon=-1.0, discount=1.0), "horizon"),
    (dict(horizon=10.0, warmup=10.0), "warmup"),
    (dict(horizon=10.0, discount=1.0, engine="fast"), "engine"),
    (dict(horizon=10.0, discount=1.0, reps=1), "reps"),
    (dict(horizon=10.0, discount=1.0, policy="lap"), "policy"),
    (dict(horizon=10.0, discount=1.0, n=4), "n"),
    (dict(horizon=10.0, discount=1.0, horizn=3), "horizn"),
    (dict(discount=1.0), "horizon"),
])
def test_bad_input_is_an_input_error_naming_the_key(kwargs, key):
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate(ex.MMCM, params=ex.MMCM_PARAMS, **kwargs)
    assert e.value.key == key


def test_uniformized_without_rate_bound_is_refused_and_event_runs():
    model = ex.MMCM._replace(rate_bound=None)
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate(model, horizon=5.0, discount=1.0, params=ex.MMCM_PARAMS, engine="uniformized", reps=4)
    assert e.value.key == "engine"
    r = jaxq.simulate(model, horizon=5.0, discount=1.0, params=ex.MMCM_PARAMS, reps=4)
    assert r.engine == "event"


def test_rates_above_the_rate_bound_are_refused_naming_rate_bound():
    model = ex.MMCM._replace(rate_bound=lambda p: p["lam"] + p["mu"])  # below lam + c mu once two servers are busy
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate(model, horizon=20.0, discount=1.0, params=ex.MMCM_PARAMS, engine="uniformized", reps=8)
    assert e.value.key == "rate_bound"


@pytest.mark.parametrize("bad,engine", [(-1.0, "uniformized"), (math.nan, "event"), (math.inf, "event")])
def test_a_rate_that_is_negative_nan_or_infinite_in_a_reachable_state_is_refused(bad, engine):
    """A rate below 0, NaN or infinite in a state the paths reach (here the queue at 3) is one InputError naming
    ``rates`` and the event, on both drivers: the event driver ended such a path never (a NaN holding time: it
    hung), the uniformised one returned a wrong number without a word."""
    def rates(x, p):
        return jnp.stack([jnp.where(x < 5, 1.0, 0.0), jnp.where(x == 3, bad, 1.0 * (x > 0))])

    model = jaxq.MarkovModel(init=lambda p: jnp.int32(0), rates=rates,
                             transition=lambda x, e, p: x + jnp.where(e == 0, 1, -1),
                             observe=lambda x, p: {"x": x.astype(jnp.float64)}, rate_bound=lambda p: 3.0)
    with pytest.raises(jaxq.InputError, match=r"rates: .*negative, NaN or infinite rate in a state reached by "
                                              rf"\d+ of 16 replications \(event 1 has rate {bad!r}\)") as e:
        jaxq.simulate(model, params={}, reps=16, horizon=20.0, discount=1.0, engine=engine)
    assert e.value.key == "rates"


def _climbing(unit_rates, **kw):
    """Structured rates: x climbs from 0 to 3 (event 0) and event 1 has the multiplicity 1 - x, below 0 once x
    reaches 2 (with unit rates (1, 1) the total rate there is 0: the event driver stopped with a wrong number; with
    (1, 2) it is negative: the holding time too, and the event driver never reached the horizon)."""
    return jaxq.MarkovModel(init=lambda p: jnp.int32(0), counts=lambda x, p: ((x < 3).astype(jnp.int32), 1 - x),
                            rates=lambda p: jnp.asarray(unit_rates),
                            transition=lambda x, e, p: jnp.where(e == 0, x + 1, jnp.maximum(x - 1, 0)),
                            observe=lambda x, p: {"x": x.astype(jnp.float64)}, rate_bound=lambda p: 3.0, **kw)


@pytest.mark.parametrize("unit_rates,engine", [((1.0, 1.0), "event"), ((1.0, 2.0), "event"),
                                               ((1.0, 2.0), "uniformized")], ids=["event-stopped", "event-hung",
                                                                                  "uniformized"])
def test_a_negative_multiplicity_in_a_reachable_state_is_refused_naming_counts(unit_rates, engine):
    """A structured model whose multiplicity is below 0 in a state the paths reach is one InputError naming
    ``counts``, the event and its multiplicity, on both drivers (the event driver hung or returned a wrong number,
    the uniformised one returned a wrong number without a word)."""
    with pytest.raises(jaxq.InputError, match=r"counts: counts\(state, params\) returned a negative .*multiplicity "
                                              r"in a state reached by 8 of 8 replications \(event 1 has multiplicity "
                                              r"-1\); .*must be a non-negative integer") as e:
        jaxq.simulate(_climbing(unit_rates), params={}, reps=8, horizon=20.0, discount=1.0, engine=engine)
    assert e.value.key == "counts"


@pytest.mark.slow  # a compiled run on both drivers: a second check beside the refusals
def test_a_multiplicity_that_stays_non_negative_runs_on_both_drivers():
    """The checks of a structured model's multiplicities leave a valid one alone: x climbs to 3 and stays (event 1
    has the multiplicity 0 throughout)."""
    model = _climbing((1.0, 1.0))._replace(counts=lambda x, p: ((x < 3).astype(jnp.int32), 0 * x))
    for engine in ("event", "uniformized"):
        r = jaxq.simulate(model, params={}, reps=8, horizon=40.0, warmup=30.0, engine=engine)
        assert r.estimates["x_average"].value == pytest.approx(3.0, abs=1e-6)


@pytest.mark.parametrize("rates,words", [
    (lambda p: jnp.stack([p["lam"], -p["mu1"], p["mu2"]]), r"gives event 1 the unit rate -1\.3; every unit rate must "
                                                           r"be a finite number >= 0"),
    (lambda p: jnp.stack([p["lam"], p["mu1"], jnp.nan]), r"gives event 2 the unit rate nan"),
    (lambda p: jnp.stack([p["lam"], p["mu1"]]), r"must return a vector \(3,\) of unit rates, one per event of counts"),
], ids=["negative", "nan", "short"])
def test_unit_rates_of_a_structured_model_are_checked_before_the_run(rates, words):
    """rates(params) of the structured form below 0 or NaN (the event driver hung, the uniformised one drew from
    wrapped words) or not one per event (an index past its end read its last entry) is one InputError naming
    ``rates``, before any run."""
    with pytest.raises(jaxq.InputError, match=words) as e:
        jaxq.simulate(ex.TANDEM._replace(rates=rates), params=ex.TANDEM_PARAMS, reps=8, horizon=20.0, discount=1.0,
                      engine="event")
    assert e.value.key == "rates"


@pytest.mark.slow  # a compiled run on both drivers: a second check beside the refusals
def test_rates_above_the_rate_bound_of_a_structured_model_are_refused_naming_rate_bound():
    """A structured model's total rate above its rate_bound (its words wrapped: a wrong number, without a word)."""
    model = ex.TANDEM._replace(rate_bound=lambda p: p["lam"])
    with pytest.raises(jaxq.InputError, match=r"rate_bound: the total rate exceeded rate_bound\(params\) = 1 in 8 of "
                                              r"8 replications") as e:
        jaxq.simulate(model, params=ex.TANDEM_PARAMS, reps=8, horizon=20.0, discount=1.0, engine="uniformized")
    assert e.value.key == "rate_bound"


def _overflowing(dtype, counts: bool):
    """Arrivals (event 0, rate 3) faster than services (event 1, rate 1): an int8 queue from 120 passes 127; a uint8
    count of free places from 3 (an arrival takes one, without a check) passes 0. Plain or structured rates."""
    signed = jnp.dtype(dtype) == jnp.int8
    busy = (lambda x: x > 0) if signed else (lambda x: x < 3)
    model = jaxq.MarkovModel(
        init=lambda p: jnp.asarray(120 if signed else 3, dtype),
        rates=lambda x, p: jnp.stack([jnp.float64(3.0), 1.0 * busy(x)]),
        transition=lambda x, e, p: jnp.where((e == 0) == signed, x + 1, x - 1),
        observe=lambda x, p: {"x": x.astype(jnp.float64)}, rate_bound=lambda p: 4.0)
    if counts:
        model = model._replace(counts=lambda x, p: (1, busy(x).astype(jnp.int32)),
                               rates=lambda p: jnp.array([3.0, 1.0]))
    return model


@pytest.mark.parametrize("dtype,counts,engine", [
    ("int8", False, "event"), ("int8", False, "uniformized"), ("int8", True, "event"), ("uint8", True, "uniformized"),
])
def test_an_integer_state_that_wraps_around_its_dtype_is_refused(dtype, counts, engine):
    """An int8 queue that an arrival takes from 127 to -128 (or a uint8 one from 0 to 255) is one InputError naming
    ``transition``, the event and the values, on both drivers (the mean queue was negative, without a word)."""
    with pytest.raises(jaxq.InputError, match=r"transition: .*wrapped around its dtype .*event 0 takes the state "
                                              rf"\({dtype}\) from (127 to -128|0 to 255)") as e:
        jaxq.simulate(_overflowing(dtype, counts), params={}, reps=8, horizon=50.0, warmup=1.0, engine=engine)
    assert e.value.key == "transition"


@pytest.mark.parametrize("engine", ["event", "uniformized"])
def test_an_integer_state_that_changes_sign_without_wrapping_runs(engine):
    """Only a jump of more than half a dtype's range is a wrap: an int8 walk between -3 and 3 (one step at a time,
    through 0) and a uint32 count run as before."""
    model = jaxq.MarkovModel(
        init=lambda p: (jnp.int8(0), jnp.uint32(0)),
        rates=lambda s, p: jnp.stack([1.0 * (s[0] < 3), 1.0 * (s[0] > -3)]),
        transition=lambda s, e, p: (s[0] + jnp.where(e == 0, jnp.int8(1), jnp.int8(-1)), s[1] + jnp.uint32(1)),
        observe=lambda s, p: {"x": s[0].astype(jnp.float64)}, rate_bound=lambda p: 2.0)
    r = jaxq.simulate(model, params={}, reps=64, horizon=40.0, warmup=5.0, engine=engine, seed=3)
    _within(r.estimates["x_average"], 0.0, "x_average")


def test_wraps_flags_a_jump_of_more_than_half_the_range_only():
    from jaxq.sim.markov import wraps

    def flag(dtype, a, b):
        return bool(wraps(jnp.asarray(a, dtype), jnp.asarray(b, dtype)))

    assert flag("int8", 127, -128) and flag("uint8", 0, 255) and flag("int16", -32768, 32767)
    assert flag("int32", 2**31 - 1, -(2**31)) and flag("uint32", 2**32 - 1, 0)
    assert not flag("int8", 0, -1) and not flag("int8", 100, -28) and not flag("uint8", 0, 128)
    assert flag("int8", 100, -29)  # a jump of 129: taken for the wrap of +127
    assert bool(wraps((jnp.int32(0), jnp.zeros(3, jnp.int8).at[1].set(100)),
                      (jnp.int32(1), jnp.full(3, -100, jnp.int8))))  # one entry of an array leaf
    assert wraps(jnp.float64(0.0), jnp.float64(1e9)) is None and wraps(jnp.int64(0), jnp.int64(-1)) is None
    assert wraps(jnp.bool_(False), jnp.bool_(True)) is None


def _queue(**kw):
    d = dict(init=lambda p: jnp.int32(0), rates=lambda x, p: jnp.stack([jnp.where(x < 5, 1.0, 0.0), 1.0 * (x > 0)]),
             transition=lambda x, e, p: x + jnp.where(e == 0, 1, -1), observe=lambda x, p: {"x": x.astype(jnp.float64)},
             rate_bound=lambda p: 3.0)
    return jaxq.MarkovModel(**{**d, **kw})


@pytest.mark.parametrize("kw,key,words", [
    (dict(transition=lambda x, e, p: (x + jnp.where(e == 0, 1, -1)).astype(jnp.float64)), "transition", "dtypes"),
    (dict(transition=lambda x, e, p: jnp.stack([x, x])), "transition", "shapes"),
    (dict(rates=lambda x, p: jnp.stack([jnp.int32(1), jnp.int32(1)])), "rates", "floats"),
    (dict(rates=lambda x, p: jnp.zeros((0,))), "rates", "no event"),
    (dict(observe=lambda x, p: {"x": "abc"}), "observe", r"observe\(state, params\)"),
    (dict(rate_bound=3.0), "rate_bound", "function of params"),
    (dict(init=lambda p: jnp.int32(0) + "x"), "init", r"init\(params\) fails"),
], ids=["transition-dtype", "transition-shape", "integer-rates", "zero-events", "observe-string", "bound-number",
        "init-fails"])
def test_a_model_function_that_returns_the_wrong_thing_is_named_before_the_run(kw, key, words):
    """Checked on the start state before any run: the model function that returns the wrong type, shape or dtype
    is named, never a JAX traceback or a wrong number (integer rates once gave a negative mean)."""
    with pytest.raises(jaxq.InputError, match=words) as e:
        jaxq.simulate(_queue(**kw), params={}, reps=8, horizon=20.0, discount=1.0, engine="event")
    assert e.value.key == key


@pytest.mark.parametrize("params,words", [
    ({"lam": 3.0, "mu": 1.0, "theta": 0.5, "c": 3}, r"params: rates\(state, params\) reads params\['K'\], which is "
                                                  r"not given \(params has c, lam, mu, theta\)"),
    ({"lamda": 3.0, "mu": 1.0, "theta": 0.5, "c": 3, "K": 5}, r"reads params\['lam'\], which is not given "
                                                            r"\(params has K, c, lamda, mu, theta\)"),
    ({**ex.MMCM_PARAMS, "lam": "3.0"}, r"params: params\['lam'\] must be a number or an array of numbers, got '3.0'"),
    (None, r"params: rates\(state, params\) reads params\['c'\], params\['K'\], params\['lam'\], params\['mu'\], "
           r"params\['theta'\], but params is None \(not given\): give params as a dict with these entries"),
    (3.0, r"params: rates\(state, params\) reads params\['c'\], .* but params is the number 3\.0: give params as a "
          r"dict"),
], ids=["missing", "misspelt", "string", "none", "number"])
def test_params_missing_an_entry_or_not_numbers_are_named(params, words):
    """A params entry the model reads but the caller does not give, or one that is not a number, is one InputError
    naming ``params`` and the entry (the model function that failed on it, or a raw JAX TypeError, before)."""
    with pytest.raises(jaxq.InputError, match=words) as e:
        jaxq.simulate(ex.MMCM, params=params, reps=8, horizon=5.0, discount=1.0, engine="event")
    assert e.value.key == "params"


def test_a_model_reading_fields_of_params_not_given_is_named():
    """A model whose functions read fields of a named tuple (the built-in M/M/c statement), run without params: one
    InputError naming ``params`` and the field (a TypeError reported against counts, before)."""
    from jaxq.sim.models import mmc

    with pytest.raises(jaxq.InputError, match=r"params: counts\(state, params\) reads params\.c, but params is None "
                                              r"\(not given\): give params with this field") as e:
        jaxq.simulate(mmc.MODEL, reps=8, horizon=5.0, discount=1.0, engine="event")
    assert e.value.key == "params"


@pytest.mark.parametrize("params,words", [
    ({}, r"params: rate_bound\(params\) reads params\['lam'\], params\['c'\], params\['mu'\], params\['K'\], "
         r"params\['theta'\], which are not given \(params has no entry\)"),
    (None, r"params: rate_bound\(params\) reads params\['lam'\], .* but params is None \(not given\)"),
], ids=["missing", "none"])
def test_a_rate_bound_that_reads_params_they_lack_is_named_before_the_run(params, words):
    """rate_bound(params), called on the host, reads entries the caller does not give (the other functions read
    none): one InputError naming ``params`` and the entries (a raw KeyError or TypeError, before)."""
    model = ex.MMCM._replace(rates=lambda x, p: ex._mmcm_rates(x, ex.MMCM_PARAMS),
                             observe=lambda x, p: {"x": x.astype(jnp.float64)})
    with pytest.raises(jaxq.InputError, match=words) as e:
        jaxq.simulate(model, params=params, reps=8, horizon=5.0, discount=1.0, engine="event")
    assert e.value.key == "params"


def test_a_rate_bound_that_returns_no_number_is_named():
    with pytest.raises(jaxq.InputError, match=r"rate_bound: rate_bound\(params\) must return a number, got 'x'") as e:
        jaxq.simulate(_queue(rate_bound=lambda p: "x"), params={}, reps=8, horizon=5.0, discount=1.0, engine="event")
    assert e.value.key == "rate_bound"


@pytest.mark.parametrize("engine", ["event", "uniformized"])
def test_observers_of_the_path_match_the_exact_chain(engine):
    """A user's observers (a jump statistic and a holding-time statistic) on both drivers, against linear solves:
    E sum exp(-gamma T_i) 1{departure} = E int exp(-gamma t) (mu min(x, c) + theta (x - c)^+) dt."""
    p = ex.MMCM_PARAMS
    r = jaxq.simulate(ex.MMCM, reps=REPS, horizon=HORIZON, discount=GAMMA, params=p, engine=engine, seed=11,
                      observers={"departures": ex.DEPARTURES, "full": ex.FULL, "events": ex.EVENTS})
    Q, f, start = ex.mmcm_chain(p)
    x = np.arange(len(Q))
    rate_out = p["mu"] * np.minimum(x, p["c"]) + p["theta"] * np.maximum(x - p["c"], 0)
    full = (x == p["c"] + p["K"]).astype(float)
    _within(r.estimates["departures"], ex.discounted(Q, rate_out, start, GAMMA), "departures")
    _within(r.estimates["full_time"], ex.discounted(Q, full, start, GAMMA), "full_time")
    # the share: the discounted time divided by the weights' mass (1 - exp(-gamma T)) / gamma, per replication
    _within(r.estimates["full_share"], ex.discounted(Q, full, start, GAMMA) * GAMMA, "full_share")
    # the segments' fired event types and compensators: services and abandonments separately, the compensator of
    # their sum as an estimate of the same expectation, and the martingale between them, mean zero
    served = p["mu"] * np.minimum(x, p["c"])
    _within(r.estimates["events_served"], ex.discounted(Q, served, start, GAMMA), "events_served")
    _within(r.estimates["events_abandoned"], ex.discounted(Q, rate_out - served, start, GAMMA), "events_abandoned")
    _within(r.estimates["events_compensator"], ex.discounted(Q, rate_out, start, GAMMA), "events_compensator")
    _within(r.estimates["events_martingale"], 0.0, "events_martingale")
    np.testing.assert_allclose(r.samples["events_served"] + r.samples["events_abandoned"], r.samples["departures"],
                               rtol=1e-12)
    assert sorted(r.info["observed"]) == ["departures", "events_abandoned", "events_compensator",
                                          "events_martingale", "events_served", "full_share", "full_time"]
    assert r.samples["departures"].shape == (REPS,)
    # the observers draw nothing: the model's own estimates are those of a run without them
    plain = jaxq.simulate(ex.MMCM, reps=REPS, horizon=HORIZON, discount=GAMMA, params=p, engine=engine, seed=11)
    np.testing.assert_array_equal(r.samples["x_discounted"], plain.samples["x_discounted"])


@pytest.mark.parametrize("observers, key", [
    ({"departures": lambda s: s}, "observers.departures"),
    ({"not a name": None}, "observers"),
    ([1, 2], "observers"),
    ({"x_discounted": None}, "observers.x_discounted"),
])
def test_bad_observers_are_input_errors_naming_the_key(observers, key):
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate(ex.MMCM, reps=8, horizon=5.0, discount=1.0, params=ex.MMCM_PARAMS, observers=observers)
    assert e.value.key == key


# the departures per unit time of the window (the count divided by the window's length, the mass)
DEPARTURE_RATE = ex.DEPARTURES._replace(finish=lambda acc, mass, p: acc / mass)


@pytest.mark.parametrize("engine", ["event", pytest.param("uniformized", marks=pytest.mark.slow)])
def test_observers_without_a_discount_fold_the_window_and_give_stationary_values(engine):
    """Without ``discount`` the observers get the window's weights (1 over [warmup, T]; the mass its length): the
    share of time with the waiting room full is the stationary probability of the full state, the departures per
    unit time the stationary throughput, against the exact stationary law (4 standard errors)."""
    p = ex.MMCM_PARAMS
    r = jaxq.simulate(ex.MMCM, reps=REPS, horizon=HORIZON, warmup=WARMUP, params=p, engine=engine, seed=13,
                      observers={"full": ex.FULL, "departures": DEPARTURE_RATE})
    Q, f, start = ex.mmcm_chain(p)
    pi = ex.stationary(Q)
    x = np.arange(len(Q))
    rate_out = p["mu"] * np.minimum(x, p["c"]) + p["theta"] * np.maximum(x - p["c"], 0)
    _within(r.estimates["full_share"], pi[-1], "full_share")
    _within(r.estimates["departures"], float(pi @ rate_out), "departures")


def test_observers_refuse_taken_names():
    clash = ex.DEPARTURES._replace(finish=lambda acc, mass, p: {"discounted": acc})  # "x" + "_discounted"
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate(ex.MMCM, reps=8, horizon=5.0, discount=1.0, params=ex.MMCM_PARAMS, observers={"x": clash})
    assert e.value.key == "observers"


def test_two_observers_whose_outputs_share_a_name_are_refused():
    """FULL returns {"time", "share"}: an observer called "full_time" beside it would share the name full_time."""
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate(ex.MMCM, reps=8, horizon=5.0, discount=1.0, params=ex.MMCM_PARAMS,
                      observers={"full": ex.FULL, "full_time": ex.DEPARTURES})
    assert e.value.key == "observers"


def _count_fired(acc, seg, p):
    return acc + sum(f.astype(jnp.float64) for f in seg.fired)


COUNT_FIRED = jaxq.Observer(init=lambda p: jnp.float64(0.0), update=_count_fired, finish=lambda acc, mass, p: acc)


@pytest.mark.parametrize("engine", ["event", pytest.param("uniformized", marks=pytest.mark.slow)])
def test_fired_events_are_the_real_events_of_the_run(engine):
    """Counting ``Segment.fired`` without any weight gives the run's events exactly: no observer sees the event
    past the horizon (event driver) or a self-loop (uniformised)."""
    r = jaxq.simulate(ex.MMCM, reps=16, horizon=6.0, discount=1.0, params=ex.MMCM_PARAMS, engine=engine, seed=2,
                      observers={"fired": COUNT_FIRED})
    assert np.sum(r.samples["fired"]) == r.events > 0


def test_an_observer_output_named_as_the_controls_is_refused():
    """``controls_discounted`` holds the model's controls: an observer whose output takes that name is refused."""
    clash = ex.DEPARTURES._replace(finish=lambda acc, mass, p: {"discounted": acc})
    with pytest.raises(jaxq.InputError) as e:
        jaxq.simulate(ex.mmcm_with_controls(), reps=8, horizon=5.0, discount=1.0, params=ex.MMCM_PARAMS,
                      observers={"controls": clash})
    assert e.value.key == "observers"


@pytest.mark.parametrize("obs,words", [
    (jaxq.Observer(init=lambda p: jnp.float64(0.0), update=lambda a, s, p: a + s.weight, finish=lambda a, m, p: None),
     r"finish\(state, mass, params\) must return numbers"),
    (jaxq.Observer(init=lambda p: jnp.float64(0.0), update=lambda a, s, p: (a + s.weight).astype(jnp.float32),
                   finish=lambda a, m, p: a), r"update\(state, segment, params\) must return a state of the structure"),
    (jaxq.Observer(init=lambda p: jnp.float64(0.0), update=lambda a, s, p: jnp.stack([a, a]),
                   finish=lambda a, m, p: a), r"update\(state, segment, params\) must return a state of the structure"),
    (jaxq.Observer(init=lambda p: jnp.float64(0.0), update=lambda a, s, p: a + s.weight, finish=lambda a, m, p: "x"),
     r"finish\(state, mass, params\) must return numbers"),
], ids=["finish-none", "update-dtype", "update-shape", "finish-string"])
@pytest.mark.parametrize("where", ["markov", "pss"])
def test_an_observer_that_returns_the_wrong_thing_is_named(obs, words, where):
    """An observer whose update changes its state's layout, or whose finish returns None or a non-number, is one
    InputError naming it (a JAX carry-type traceback, or a result without its estimate, before)."""
    with pytest.raises(jaxq.InputError, match=words) as e:
        if where == "markov":
            jaxq.simulate(_queue(), params={}, reps=8, horizon=5.0, discount=1.0, engine="event", observers={"o": obs})
        else:
            jaxq.simulate("pss_P", n=16, reps=8, observers={"o": obs})
    assert e.value.key == "observers.o"
