"""Study 'markov' through `jaxq run`: a user's module on sys.path, its table against the exact finite chain."""

from __future__ import annotations

import csv
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxq.cli import main

EXAMPLES = Path(__file__).parents[1] / "sim" / "markov_examples.py"

EXPERIMENT = """
[experiment]
study = "markov"
replications = 256
chunk = 128
seeds = [2]
[grid]
model = "{model}"
params = {params}
horizon = 60.0
discount = 1.0
warmup = 10.0
engines = ["event", "uniformized"]
{observers}
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """The example models as a module of the user's, importable from tmp_path."""
    shutil.copy(EXAMPLES, tmp_path / "user_markov_models.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield sys.modules.setdefault("user_markov_models", __import__("user_markov_models"))
    sys.modules.pop("user_markov_models", None)


def _toml_table(d):
    return "{" + ", ".join(f"{k} = {v!r}" for k, v in d.items()) + "}"


def _rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("which", [*(pytest.param(w, marks=pytest.mark.slow) for w in ("MMCM", "TANDEM")), "mmcm_with_controls"])
def test_jaxq_run_markov_study_matches_the_exact_chain(tmp_path, user_module, which):
    m = user_module
    observers = ""
    if which != "TANDEM":
        params = m.MMCM_PARAMS
        Q, f, start = m.mmcm_chain(params)
        extra = {}
        # the user's observers of the path, from the same module: exact values by linear solves
        observers = ('observers = {departures = "user_markov_models:DEPARTURES", '
                     'full = "user_markov_models:FULL"}')
        x = np.arange(len(Q))
        out_rate = params["mu"] * np.minimum(x, params["c"]) + params["theta"] * np.maximum(x - params["c"], 0)
        full = (x == params["c"] + params["K"]).astype(float)
        extra = {"departures": m.discounted(Q, out_rate, start, 1.0), "full_time": m.discounted(Q, full, start, 1.0)}
        extra["full_share"] = extra["full_time"] / (-np.expm1(-60.0))  # divided by the mass (1 - e^-T) / gamma
    else:
        params = m.TANDEM_PARAMS
        Q, f, start, lost = m.tandem_chain(params)
        extra = {"lost_rate": None}
    pi = m.stationary(Q)
    exact = {f"{k}_discounted": m.discounted(Q, v, start, 1.0) for k, v in f.items()}
    exact.update({f"{k}_average": float(pi @ v) for k, v in f.items()})
    if which == "TANDEM":
        exact["lost_rate"] = float(pi @ lost)
    else:
        exact.update(extra)
    exp = tmp_path / "m.toml"
    exp.write_text(EXPERIMENT.format(model=f"user_markov_models:{which}", params=_toml_table(params),
                                     observers=observers))
    out = tmp_path / "out"
    assert main(["run", str(exp), "--out", str(out), "--no-progress"]) == 0
    rows = _rows(out / "estimates.csv")
    assert {r["engine"] for r in rows} == {"event", "uniformized"}
    seen = set()
    for r in rows:
        key = r["quantity"]
        seen.add((r["engine"], key))
        value, se = float(r["estimate"]), float(r["stderr"])
        assert int(r["reps"]) == 256 and se > 0
        assert abs(value - exact[key]) < 4 * se, (r, exact[key])
        if which == "mmcm_with_controls" and key not in extra:  # controlled, cross-fitted over the point's 256 replications (2 chunks)
            assert float(r["variance_reduction"]) > 1.0, r
    assert seen == {(e, k) for e in ("event", "uniformized") for k in exact}
    # resumed: every chunk reused, the same table
    assert main(["run", str(exp), "--out", str(out), "--no-progress", "--resume"]) == 0
    again = _rows(out / "estimates.csv")
    assert [r["estimate"] for r in again] == [r["estimate"] for r in rows]


def test_a_model_that_cannot_be_imported_is_refused_naming_grid_model(tmp_path, user_module, capsys):
    exp = tmp_path / "m.toml"
    exp.write_text(EXPERIMENT.format(model="user_markov_models:NOPE", params="{}", observers=""))
    assert main(["run", str(exp), "--out", str(tmp_path / "o"), "--no-progress"]) != 0
    assert "grid.model" in capsys.readouterr().err
    assert not (tmp_path / "o" / "estimates.csv").exists()


def test_an_observer_that_is_not_one_is_refused_naming_its_key(tmp_path, user_module, capsys):
    exp = tmp_path / "m.toml"
    exp.write_text(EXPERIMENT.format(model="user_markov_models:MMCM", params=_toml_table(user_module.MMCM_PARAMS),
                                     observers='observers = {bad = "user_markov_models:MMCM_PARAMS"}'))
    assert main(["run", str(exp), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert "grid.observers.bad" in capsys.readouterr().err
    assert not (tmp_path / "o" / "estimates.csv").exists()


@pytest.mark.parametrize("params,words", [
    ("{lam = 3.0, mu = 1.0, theta = 0.5, c = 3}", r"grid\.params: .*reads params\['K'\], which is not given"),
    ('{lam = "3.0", mu = 1.0, theta = 0.5, c = 3, K = 5}',
     r"grid\.params: .*params\['lam'\] must be a number or an array of numbers, got '3.0'"),
], ids=["missing", "string"])
def test_params_missing_an_entry_or_not_numbers_are_refused_naming_grid_params(tmp_path, user_module, capsys, params,
                                                                              words):
    """grid.params without an entry the model reads, or with a string, is one line naming grid.params and the
    entry, before the run starts (it named the model function that failed, or was an internal error)."""
    exp = tmp_path / "m.toml"
    exp.write_text(EXPERIMENT.format(model="user_markov_models:MMCM", params=params, observers=""))
    assert main(["run", str(exp), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(words, err[0]), err
    assert not (tmp_path / "o" / "manifest.json").exists()  # refused before anything is written


BAD_MODELS = '''
import jax.numpy as jnp
import jaxq

# event 1 has the multiplicity 1 - x, below 0 once x reaches 2 (the event driver hung on it)
CLIMBING = jaxq.MarkovModel(init=lambda p: jnp.int32(0), counts=lambda x, p: ((x < 3).astype(jnp.int32), 1 - x),
                            rates=lambda p: jnp.stack([p["up"], 2.0 * p["up"]]),
                            transition=lambda x, e, p: jnp.where(e == 0, x + 1, jnp.maximum(x - 1, 0)),
                            observe=lambda x, p: {"x": x.astype(jnp.float64)}, rate_bound=lambda p: 3.0 * p["up"])
# only the rate bound reads params
BOUND_READS = CLIMBING._replace(counts=lambda x, p: ((x < 3).astype(jnp.int32), jnp.int32(0) * x),
                                rates=lambda p: jnp.array([1.0, 1.0]), rate_bound=lambda p: 2.0 * p["up"])
'''


@pytest.mark.parametrize("which,engine,words", [
    ("CLIMBING", "event", r"jaxq: error: grid\.model's counts: engine event: counts\(state, params\) returned a negative .*multiplicity .*"
                          r"\(event 1 has multiplicity -1\); .*non-negative integer"),
    ("CLIMBING", "uniformized", r"grid\.model's counts: engine uniformized: counts\(state, params\) .*\(event 1 has multiplicity -1\)"),
    ("BOUND_READS", "event", r"grid\.params: .*rate_bound\(params\) reads params\['up'\], which is not given"),
], ids=["negative-count-event", "negative-count-uniformized", "bound-reads-params"])
def test_a_model_with_a_negative_multiplicity_or_a_bound_reading_missing_params_is_one_line(
        tmp_path, monkeypatch, capsys, which, engine, words):
    """`jaxq run` of a markov study: a multiplicity below 0 in a reachable state (the event driver hung) and a
    rate_bound reading an entry grid.params lacks (an internal error) are one line on stderr and exit code 2."""
    (tmp_path / "user_bad_models.py").write_text(BAD_MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "user_bad_models", raising=False)
    exp = tmp_path / "m.toml"
    params = "{}" if which == "BOUND_READS" else "{up = 1.0}"
    exp.write_text(EXPERIMENT.format(model=f"user_bad_models:{which}", params=params, observers="")
                   .replace("replications = 256\nchunk = 128", "replications = 8\nchunk = 8")
                   .replace('engines = ["event", "uniformized"]', f'engines = ["{engine}"]'))
    assert main(["run", str(exp), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(words, err[0]), err
