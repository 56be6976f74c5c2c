"""The policy functions and the uniformised engines reproduce their recorded outputs bit for bit.

``tests/sim/data/bitidentical.npz`` holds them. The policy outputs date from before the performance work
on the engines; the uniformised outputs were regenerated once, on purpose, when the 2x2 CTMC and M/M/c moved
to the one uniformised driver (its integer segments of ``floor(rate / Lambda (2^32 - 1))`` words
replace the engines' own thresholds, and warm-up is a whole number of pages), and once more when the window
became exactly the steps asked for (the M/M/c outputs; stream version 4). Regenerate only for an
intended change of the random streams: ``python tests/sim/test_bitidentical.py --write``.
"""

import itertools
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxq  # noqa: F401  (float64)
from jaxq.examples import path
from jaxq.model import load
from jaxq.policies import pss2x2 as pol
from jaxq.sim import network as NW
from jaxq.sim import pss2x2 as S

DATA = Path(__file__).parent / "data" / "bitidentical.npz"
CTMC_CASES = [  # (example, policy, switch_at): every rule and every sampling time
    ("pss_P", "auto", None), ("pss_P", "T2", None), ("pss_P", "T1T2", 0.4), ("pss_P", "T2T1", 0.3),
    ("pss_T2", "auto", None), ("pss_T2", "PP", 0.3), ("pss_T2", "T2T2", 0.2), ("pss_T2", "T1@2", None),
]


def policy_outputs() -> dict:
    """The policy functions on an exhaustive grid of small states."""
    out = {}
    xs = np.array(list(itertools.product(range(4), range(4))), np.int32)
    sv = np.array(list(itertools.product((-1, 0, 1), (-1, 0, 1))), np.int32)
    g = np.array(list(itertools.product(range(len(xs)), range(3), range(2), range(2), range(3))))
    x, rule, i1, i2, theta = xs[g[:, 0]], g[:, 1], g[:, 2], g[:, 3], g[:, 4]
    out["priority_class"] = jax.vmap(pol.priority_class)(rule, x, i1, i2, theta)
    g = np.array(list(itertools.product(range(len(xs)), range(len(sv)), range(2), range(2), range(2))))
    x, s = xs[g[:, 0]], sv[g[:, 1]]
    out["queues"] = jax.vmap(pol.queues)(x, s)
    srv, started = jax.vmap(pol.dispatch)(x, s, g[:, 2].astype(np.int32), g[:, 3].astype(np.int32),
                                          g[:, 4].astype(np.int32))
    out["dispatch_serving"], out["dispatch_started"] = srv, started
    g = np.array(list(itertools.product(range(2), range(3), range(2), range(2), range(4), range(3), range(2))))
    k1s = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.int32)
    out["sample_mode"] = jax.vmap(pol.sample_mode)(
        g[:, 0].astype(np.int32), g[:, 1].astype(np.int32), g[:, 2].astype(bool), g[:, 3].astype(np.int32),
        k1s[g[:, 4]], g[:, 5].astype(np.float64), np.ones(len(g)), g[:, 6].astype(np.int32),
        (1 - g[:, 6]).astype(np.int32))
    return {f"policy_{k}": np.asarray(v) for k, v in out.items()}


def ctmc_outputs() -> dict:
    out = {}
    for j, (name, policy, z) in enumerate(CTMC_CASES):
        r = S.simulate(load(path(name)), 16, 6, policy=policy, seed=j, truncation=S.Truncation(rel_tol=1e-2, engine="uniformized"),
                       levels=S.Levels(switch_at=z, theta_rule="paper"))  # the recorded threshold rule
        out[f"ctmc{j}_J"], out[f"ctmc{j}_switches"] = r.samples["J"], r.samples["switches"]
        out[f"ctmc{j}_stats"] = np.array([r.events, r["truncation_bound"], r["steps"]], np.float64)
    return out


def mmc_outputs() -> dict:
    out = {}
    for j, (lam, mu, c) in enumerate([(3.0, 1.0, 4), (9.0, 2.0, 5)]):
        r = NW.simulate_mmc(lam, mu, c, reps=5, seed=j, window=NW.Window(warmup=2.0, horizon=12.0))
        keys = ("mean_in_system", "mean_queue", "mean_idle", "p_wait")
        out[f"mmc{j}"] = np.array([r[k] for k in keys] + [r.events, r["steps"]] + [r[k + "_stderr"] for k in keys],
                                  np.float64)
    return out


def all_outputs() -> dict:
    return {**policy_outputs(), **ctmc_outputs(), **mmc_outputs()}


@pytest.fixture(scope="module")
def ref():
    with np.load(DATA) as z:
        return dict(z)


@pytest.mark.parametrize("produce", [policy_outputs, ctmc_outputs, mmc_outputs])
def test_outputs_are_bit_identical(ref, produce):
    new = produce()
    for k, v in new.items():
        np.testing.assert_array_equal(np.asarray(v), ref[k], err_msg=k)
        assert np.asarray(v).dtype == ref[k].dtype or k.startswith(("ctmc", "mmc")), k


if __name__ == "__main__" and "--write" in sys.argv:
    with np.load(DATA) as z:
        kept = {k: z[k] for k in z.files if k.startswith("policy_")}  # the policies' record is not rewritten
    new = {k: np.asarray(v) for k, v in {**ctmc_outputs(), **mmc_outputs()}.items()}
    for k, v in policy_outputs().items():
        np.testing.assert_array_equal(np.asarray(v), kept[k], err_msg=k)
    np.savez(DATA, **kept, **new)
    print(f"wrote {DATA}")
