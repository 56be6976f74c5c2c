"""``jaxq.simulate``'s options as typed groups (``truncation=jaxq.Truncation(...)``, ``batching=jaxq.Batching(...)``,
...) or as their fields given flat (``horizon=``, ``chunk=``): the same run either way, one InputError naming the key
for a field given both ways, a group of the wrong type or an option the kind of system does not take; and the
declared options (:mod:`jaxq.api.simulate_options`) cover exactly what the simulators below take."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import numpy as np
import pytest

import jaxq
from jaxq.api import simulate_options as so
from jaxq.mc.replications import Batching
from jaxq.sim import network, pss2x2
from jaxq.sim.simulate_markov import MarkovRun, simulate_markov
from jaxq.tuning.prelimit import simulate_tuned


def _same(a, b, keys):
    for k in a.estimates:
        assert np.array_equal(a.estimates[k].value, b.estimates[k].value), k
    for k in keys:
        assert np.array_equal(a.samples[k], b.samples[k]), k


def test_2x2_groups_and_flat_keywords_give_the_same_numbers():
    flat = jaxq.simulate("pss_PP", 16, 8, seed=3, horizon=2.0, theta_exponent=0.4, record_times=[0.5, 1.0], chunk=4)
    grouped = jaxq.simulate("pss_PP", 16, 8, seed=3, truncation=jaxq.Truncation(horizon=2.0),
                            levels=jaxq.Levels(theta_exponent=0.4), outputs=jaxq.Outputs(record_times=[0.5, 1.0]),
                            batching=jaxq.Batching(chunk=4))
    _same(flat, grouped, ["J", "W_hat_t", "X_hat_T"])
    mixed = jaxq.simulate("pss_PP", 16, 8, seed=3, truncation=jaxq.Truncation(horizon=2.0), theta_exponent=0.4,
                          record_times=[0.5, 1.0], batching=jaxq.Batching(chunk=4))
    _same(flat, mixed, ["J", "W_hat_t"])


def test_2x2_engine_in_the_truncation_is_the_engine_argument():
    a = jaxq.simulate("pss_P", 16, 8, seed=1, engine="uniformized", cv=False)
    b = jaxq.simulate("pss_P", 16, 8, seed=1, truncation=jaxq.Truncation(engine="uniformized"),
                      outputs=jaxq.Outputs(cv=False))
    assert a.engine == b.engine == "uniformized"
    _same(a, b, ["J"])


def test_network_groups_and_flat_keywords_give_the_same_numbers():
    flat = jaxq.simulate("network_N", 4, 4, seed=2, warmup=1.0, horizon=5.0, snap_times=[2.0], chunk=2)
    grouped = jaxq.simulate("network_N", 4, 4, seed=2, window=jaxq.Window(warmup=1.0, horizon=5.0),
                            outputs=jaxq.NetworkOutputs(snap_times=[2.0]), batching=jaxq.Batching(chunk=2))
    _same(flat, grouped, ["mean_queue", "mean_in_system"])


def test_markov_batching_group_and_flat_keywords_give_the_same_numbers():
    spec = importlib.util.spec_from_file_location("markov_examples",
                                                  Path(__file__).parent / "sim" / "markov_examples.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    run = dict(reps=8, horizon=5.0, discount=1.0, params=ex.MMCM_PARAMS, seed=4)
    a = jaxq.simulate(ex.MMCM, chunk=4, **run)
    b = jaxq.simulate(ex.MMCM, batching=jaxq.Batching(chunk=4), **run)
    assert a.estimates.keys() == b.estimates.keys()
    for k in a.samples:
        assert np.array_equal(a.samples[k], b.samples[k]), k


def _refused(call, key: str) -> str:
    with pytest.raises(jaxq.InputError) as e:
        call()
    assert e.value.key == key, str(e.value)
    assert "\n" not in str(e.value)
    return e.value.reason


@pytest.mark.parametrize("call, key", [
    (lambda: jaxq.simulate("pss_PP", 16, 8, truncation=jaxq.Truncation(horizon=2.0), horizon=3.0), "horizon"),
    (lambda: jaxq.simulate("pss_PP", 16, 8, batching=jaxq.Batching(chunk=4), chunk=None), "chunk"),
    (lambda: jaxq.simulate("pss_PP", 16, 8, levels=jaxq.Levels(), switch_at=1.0), "switch_at"),
    (lambda: jaxq.simulate("pss_PP", 16, 8, engine="event", truncation=jaxq.Truncation(engine="uniformized")),
     "engine"),
    (lambda: jaxq.simulate("network_N", 4, 4, window=jaxq.Window(), warmup=1.0), "warmup"),
    (lambda: jaxq.simulate("network_N", 4, 4, outputs=jaxq.NetworkOutputs(), cv=False), "cv"),
])
def test_a_field_given_in_its_group_and_flat_is_refused_naming_it(call, key):
    assert "given twice" in _refused(call, key)


@pytest.mark.parametrize("call, key", [
    (lambda: jaxq.simulate("pss_PP", 16, 8, batching=3), "batching"),
    (lambda: jaxq.simulate("pss_PP", 16, 8, truncation={"horizon": 2.0}), "truncation"),
    (lambda: jaxq.simulate("pss_PP", 16, 8, outputs=jaxq.NetworkOutputs()), "outputs"),
    (lambda: jaxq.simulate("network_N", 4, 4, outputs=jaxq.Outputs()), "outputs"),
    (lambda: jaxq.simulate("network_N", 4, 4, window=(1.0, 5.0)), "window"),
])
def test_a_group_of_the_wrong_type_is_refused_naming_it(call, key):
    assert "expected a jaxq." in _refused(call, key)


@pytest.mark.parametrize("call, key, where", [
    (lambda: jaxq.simulate("pss_PP", 16, 8, qqqqqqqq=1), "qqqqqqqq", "(a 2x2 system)"),
    (lambda: jaxq.simulate("pss_PP", 16, 8, window=jaxq.Window()), "window", "(a 2x2 system)"),
    (lambda: jaxq.simulate("network_N", 4, 4, levels=jaxq.Levels()), "levels", "(a network)"),
    (lambda: jaxq.simulate("network_N", 4, 4, theta_exponent=0.4), "theta_exponent", "(a network)"),
    (lambda: jaxq.simulate("pss_PP", 16, 8, policy="tuned", block=1, qqqqqqqq=1), "qqqqqqqq",
     "(a 2x2 system, tuned)"),
])
def test_an_option_the_kind_does_not_take_is_named(call, key, where):
    reason = _refused(call, key)
    assert reason.startswith(f"is not a keyword argument of jaxq.simulate {where}")
    assert "valid: " in reason or "did you mean" in reason


@pytest.mark.parametrize("options, key", [({"levels": jaxq.Levels()}, "levels"), ({"switch_at": 1.0}, "switch_at"),
                                          ({"theta_rule": "root"}, "theta_rule")])
def test_the_tuned_policy_refuses_the_levels_it_sets(options, key):
    assert "tuned policy sets its own" in _refused(lambda: jaxq.simulate("pss_PP", 16, 8, policy="tuned", **options),
                                                   key)


def test_a_group_field_is_checked_as_its_flat_keyword():
    _refused(lambda: jaxq.simulate("pss_PP", 16, 4, outputs=jaxq.Outputs(cv="off")), "cv")
    _refused(lambda: jaxq.simulate("pss_PP", 16, 4, batching=jaxq.Batching(devices=0)), "devices")
    _refused(lambda: jaxq.simulate("pss_PP", 16, 4, outputs=jaxq.Outputs(record_times="1")), "record_times")


def _keywords(fn, skip: int) -> set[str]:
    params = list(inspect.signature(fn).parameters.values())[skip:]
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def test_the_declared_options_are_what_the_simulators_take():
    """The tables of jaxq.api.simulate_options cannot drift from the simulators: each kind's groups are the
    simulator's typed arguments (the same NamedTuples, so their _fields), and its plain options the simulator's other
    keywords (less those jaxq.simulate passes itself)."""
    kinds = so.KINDS
    assert dict(kinds["pss2x2"].groups) == pss2x2.GROUPS
    assert set(kinds["pss2x2"].plain) == _keywords(pss2x2.simulate, 3) - set(pss2x2.GROUPS) - {"policy", "seed"}
    assert dict(kinds["network"].groups) == network.GROUPS
    assert set(kinds["network"].plain) == _keywords(network.simulate, 3) - set(network.GROUPS) - {"reps", "seed",
                                                                                                   "engine"}
    # the tuned policy: simulate_tuned's own keywords, and the 2x2 simulator's options it passes on
    tuned = kinds["pss2x2_tuned"]
    assert so.valid(tuned) == so.valid(kinds["pss2x2"]) | (_keywords(simulate_tuned, 3) - {"policy", "seed",
                                                                                            "target"})
    assert {k: v for k, v in tuned.groups.items()} == {k: v for k, v in pss2x2.GROUPS.items() if k != "levels"}
    assert set(tuned.refused) == {"levels", *pss2x2.Levels._fields} - set(tuned.plain)
    # a MarkovModel: MarkovRun's fields (engine: jaxq.simulate's own) and simulate_markov's params
    markov = kinds["markov"]
    assert dict(markov.groups) == {"batching": Batching}
    assert set(markov.plain) == (set(MarkovRun._fields) - {"engine", "batching"}) | (
        _keywords(simulate_markov, 2) - {"reps", "seed"})
    for kind in kinds.values():
        f = [name for cls in kind.groups.values() for name in cls._fields]
        assert len(f) == len(set(f)), kind.where  # a flat keyword belongs to one group
        assert not set(f) & (set(kind.plain) | set(kind.groups)), kind.where
        assert all(cls in so.GROUP_CLASSES.values() for cls in kind.groups.values())


def test_simulate_takes_every_group_by_keyword_and_exports_its_class():
    params = inspect.signature(jaxq.simulate).parameters
    named = {k for k, p in params.items() if p.kind is not p.VAR_KEYWORD}
    groups = {g for kind in so.KINDS.values() for g in kind.groups}
    assert named == set(so.OWN) | groups
    for name, cls in so.GROUP_CLASSES.items():
        assert getattr(jaxq, name) is cls and getattr(jaxq.api, name) is cls and name in jaxq.__all__


def _shown(default) -> set[str]:
    if isinstance(default, str):
        return {f'``"{default}"``'}
    if isinstance(default, tuple):
        return {f"``{default!r}``"}
    if isinstance(default, float):
        return {repr(default), f"{default:g}", f"{default:.0e}".replace("e-0", "e-")}
    return {repr(default)}


def test_the_docstring_lists_every_option_with_its_default():
    doc = inspect.getdoc(jaxq.simulate)
    for kind in so.KINDS.values():
        for group, cls in kind.groups.items():
            assert f"- ``{group}`` (``jaxq.{cls.__name__}``)" in doc, (kind.where, group)
            for f, default in cls._field_defaults.items():
                assert any(f"- ``{f}`` ({shown})" in doc for shown in _shown(default)), (kind.where, cls, f)
        for name in (*kind.plain, *kind.refused):
            assert f"``{name}``" in doc, (kind.where, name)
