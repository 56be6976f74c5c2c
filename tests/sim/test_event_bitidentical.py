"""The event-driven 2x2 simulator (and its sampler) reproduce their earlier outputs bit for bit.

``tests/sim/data/event_outputs.npz`` holds the outputs of the event engine (the redesigned model
and driver reproduced the earlier ones exactly; regenerated when the engine began to draw each event's
words from one counter-based Threefry call instead of a key split, with a new word layout and Box-Muller
normals: an intended change of the random streams; STREAM_VERSION 5 added the gamma-only cases, whose event form
became the tangent envelope, and version 6 changed those three and the mixed cases with gamma: the step
envelope). Regenerate it only for such a change:
``python tests/sim/test_event_bitidentical.py --write``.
"""

import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import jaxq  # noqa: F401  (float64)
from jaxq.examples import path
from jaxq.model import load
from jaxq.model.pss2x2 import from_dict
from jaxq.sim import pss2x2 as S

DATA = Path(__file__).parent / "data" / "event_outputs.npz"
EXAMPLES = ("pss_P", "pss_PP", "pss_T1T2", "pss_T2", "pss_T2T1", "pss_T2T2", "pss_spec")
REC = (0.5, 2.0)
# (system, n, reps, policy, extra options): every bundled system with its auto policy, fixed rules,
# n = 100, the debug counters, the Gaussian perturbation, and every sampling family.
CASES = [(name, 16, 8, "auto", {}) for name in EXAMPLES] + [
    ("pss_P", 100, 12, "auto", {}),
    ("pss_spec", 100, 12, "auto", {}),
    ("pss_P", 16, 8, "T1@1", {}),
    ("pss_T2", 16, 8, "P@2", {}),
    ("pss_spec", 16, 8, "T2@1", {}),
    ("pss_T1T2", 16, 8, "auto", {"debug": True}),
    ("pss_T2T2", 16, 8, "auto", {"perturb": (1, 0.1, 0.2)}),
    ("families", 16, 8, "auto", {}),
    ("families", 100, 16, "T1@2", {"debug": True}),
    ("families_compact", 100, 16, "auto", {}),  # gamma and Z^2 without lognormal: one normal word a slot
    ("gamma_shared", 16, 8, "auto", {}),  # gamma-only, one law (shape 1/3): steps without log y, from row 0
    ("gamma_only", 100, 16, "auto", {}),  # gamma-only, four laws: steps with log y, tables by stream
    ("gamma_power", 16, 8, "auto", {}),  # gamma-only, shapes 1/3, 1/4, 1/5: no log y, y^q by stream
]
KEYS = ("J", "W_hat_t", "sup_X_hat", "X_hat_T", "switches")


def system(name):
    if not name.startswith(("families", "gamma_")):
        return load(path(name))
    data = tomllib.loads(Path(path("pss_spec")).read_text())
    if name == "gamma_shared":
        data["system"]["interarrival"] = ["gamma:3"] * 2
        data["system"]["service"] = [["gamma:3"] * 2] * 2
    elif name == "gamma_power":
        data["system"]["interarrival"] = ["gamma:3", "gamma:4"]
        data["system"]["service"] = [["gamma:5", "gamma:3"], ["gamma:4", "gamma:5"]]
    elif name == "gamma_only":
        data["system"]["interarrival"] = ["gamma:3", "gamma:0.7"]
        data["system"]["service"] = [["gamma:0.7", "gamma:4"], ["gamma:2.5", "gamma:3"]]
    elif name == "families":
        data["system"]["interarrival"] = ["gamma:0.5", "lognormal:2"]
        data["system"]["service"] = [["deterministic", "erlang:0.5"], ["gamma:3", "hyperexponential:2"]]
    else:
        data["system"]["interarrival"] = ["gamma:2", "exponential"]
        data["system"]["service"] = [["gamma:0.7", "erlang:0.25"], ["gamma:4", "hyperexponential:2"]]
    return from_dict(data)


def case_outputs(j, case) -> dict:
    name, n, reps, policy, opts = case
    # the recorded threshold rule, plain: the stored outputs do not involve the controls (test_control_variates.py)
    r = S.simulate(system(name), n, reps, policy=policy, seed=j,
                   truncation=S.Truncation(horizon=6.0, engine="event"),
                   levels=S.Levels(theta_rule="paper", perturb=opts.get("perturb")),
                   outputs=S.Outputs(record_times=REC, cv=False, debug=opts.get("debug", False)))
    out = {f"case{j}_{k}": np.asarray(r.samples[k]) for k in KEYS}
    out[f"case{j}_events"] = np.array([r.events], np.int64)
    if "violations" in r.info:
        out[f"case{j}_violations"] = np.array(list(r.info["violations"].values()), np.int64)
    if "eps" in r.samples:
        out[f"case{j}_eps"] = np.asarray(r.samples["eps"])
    return out


def all_outputs() -> dict:
    out = {}
    for j, case in enumerate(CASES):
        out.update(case_outputs(j, case))
    return out


@pytest.fixture(scope="module")
def stored():
    return dict(np.load(DATA))


# Cases 12, 13, 15, 16 and 19 repeat paths of the fast cases with an option (debug, perturb, compact, powers): -m slow.
SLOW_CASES = {8, 12, 13, 14, 15, 16, 17, 18, 19}


@pytest.mark.parametrize("j", [pytest.param(j, marks=pytest.mark.slow) if j in SLOW_CASES else j for j in range(len(CASES))])
def test_event_engine_bit_identical(stored, j):
    got = case_outputs(j, CASES[j])
    for k, v in got.items():
        assert k in stored, k
        np.testing.assert_array_equal(v, stored[k], err_msg=k)
        assert v.dtype == stored[k].dtype, k
    assert {k for k in stored if k.startswith(f"case{j}_")} == set(got)


if __name__ == "__main__" and "--write" in sys.argv:
    np.savez_compressed(DATA, **all_outputs())
    print(f"wrote {DATA}")
