"""The uniformised lockstep network engine: its transitions equal the event engine's state by state, its
estimates match exact values, and its results do not depend on batching."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxq
from jaxq.errors import InputError
from jaxq.model import load
from jaxq.sim import network_ctmc as C
from jaxq.sim import network_lockstep as L

EX = Path(jaxq.__file__).parent / "examples"


def _random_states(p, lay, rng, count):
    """Random feasible (q, z) over the policy's activities; for swc, z = z(x) (the policy's own states)."""
    num_i, num_j = lay.num_i, lay.num_j
    big_n = np.asarray(p["N"])
    qs = rng.integers(0, 4, size=(count, num_i)).astype(np.int32)
    zs = np.zeros((count, num_i, num_j), np.int32)
    for c in range(count):
        room = big_n.copy()
        for i, j in rng.permutation(lay.edges):
            zs[c, i, j] = rng.integers(0, room[j] + 1) if rng.random() < 0.8 else room[j]
            room[j] -= zs[c, i, j]
    if lay.swc:
        x = qs + zs.sum(axis=2)
        zs = np.stack([np.asarray(C.swc_allocation(jnp.asarray(xc), p)) for xc in x])
        qs = (x - zs.sum(axis=2)).astype(np.int32)
    return qs, zs


@pytest.mark.parametrize("example,policy", [("network_N", "priority"), ("network_N", "lqfs"),
                                            ("network_classdep", "lap"), ("network_classdep", "swc")])
def test_transitions_equal_the_event_engine_state_by_state(example, policy):
    st = C.setup(load(EX / f"{example}.toml"))
    p = C.make_params(st, 9, policy, 1.0, 5.0)  # small pools: full and empty pools are common
    lay = L.layout_of(p, policy)
    qs, zs = _random_states(p, lay, np.random.default_rng(7), 40)
    num_events = lay.num_i + lay.num_i * lay.num_j
    event_rule = C.swc_transition if policy == "swc" else C.static_transition

    @jax.jit
    def both(q, z, idx):
        q1, z1, is_arr, i_a, served = event_rule(q, z, idx, p)
        arrive = [idx == i for i in range(lay.num_i)]
        complete = {(i, j): idx == lay.num_i + i * lay.num_j + j for i, j in lay.edges}
        q2, z2, served2 = L.transition(list(q), {e: z[e] for e in lay.edges}, arrive, complete, p, lay)
        z2full = jnp.zeros_like(z)
        for e in lay.edges:
            z2full = z2full.at[e].set(z2[e])
        return q1, z1, served, jnp.stack(q2), z2full, jnp.stack(served2)[i_a]

    checked = 0
    for q, z in zip(qs, zs):
        for idx in range(num_events):
            i, j = divmod(idx - lay.num_i, lay.num_j)
            if idx >= lay.num_i and ((i, j) not in lay.edges or z[i, j] == 0):
                continue  # an impossible event (rate 0)
            q1, z1, s1, q2, z2, s2 = both(jnp.asarray(q), jnp.asarray(z), jnp.int32(idx))
            np.testing.assert_array_equal(q1, q2)
            np.testing.assert_array_equal(z1, z2)
            if idx < lay.num_i:
                assert bool(s1) == bool(s2)
            checked += 1
    assert checked > 100


def test_estimates_match_the_event_engine_and_erlang_c():
    st = C.setup(load(EX / "network_N.toml"))
    kw = dict(reps=48, warmup=5.0, horizon=60.0, seed=3)
    a = C.run(st, 16, "priority", engine="event", **kw)
    b = C.run(st, 16, "priority", engine="uniformized", **kw)
    assert b["engine"] == "uniformized" and "snapshots" not in b and b["events"] > 0
    for k in ("mean_in_system", "mean_queue", "mean_idle", "p_wait", "mean_abs_dev", "rms_dev"):
        d = np.abs(np.asarray(a[k]) - np.asarray(b[k]))
        assert np.all(d <= 4 * np.hypot(a[k + "_stderr"], b[k + "_stderr"]) + 1e-12), (k, a[k], b[k])
    np.testing.assert_allclose(b["hist_density"].sum(axis=1) * np.diff(b["hist_edges"])[0], 1.0, rtol=1e-9)


def test_batching_does_not_change_results_and_bad_options_are_refused():
    st = C.setup(load(EX / "network_mmc.toml"))
    kw = dict(reps=10, warmup=1.0, horizon=6.0, seed=5, engine="uniformized")
    a = C.run(st, 16, "swc", **kw)
    b = C.run(st, 16, "swc", chunk=3, **kw)
    for k in ("mean_in_system", "p_wait", "mean_idle", "hist_density", "events"):
        np.testing.assert_array_equal(a[k], b[k])
    with pytest.raises(InputError, match="snap_times"):
        C.run(st, 16, "swc", snap_times=np.array([1.0]), **kw)
    with pytest.raises(InputError, match="engine"):
        C.run(st, 16, "swc", reps=4, engine="fast")
