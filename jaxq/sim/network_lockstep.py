"""The network CTMC of :mod:`jaxq.sim.network_ctmc`, uniformised and run in lockstep over replications.

Same model, policies, start state and statistics as the event-driven engine; a different way to sample
it. The CTMC is uniformised at ``Lambda = sum_i lambda_i + sum_j N_j max_i mu_ij``: each step is an
arrival of class i with probability ``lambda_i / Lambda``, a completion of activity (i, j) with
probability ``mu_ij z_ij / Lambda``, and otherwise a self-loop. The transitions are those of the event
engine (``static_transition`` and ``swc_transition``; a test checks them state by state), so the jump
chain is the same Markov chain, and the time spent in a state is integrated out: stationary time
averages over [warmup, horizon] become averages over the ``round(Lambda (horizon - warmup))`` steps
after ``round(Lambda warmup)`` warm-up steps (each step stands for a mean time ``1/Lambda``, whatever
the state), unbiased for the same stationary means. Snapshots at fixed times need the event engine.

Why it is fast: the state of a replication is a handful of scalars (queue per class, busy servers per
activity) and the step is written out activity by activity at trace time (the network is static), so
that under ``vmap`` every operation runs along the replications (SIMD lanes) instead of along tiny
class and pool axes; one 32-bit random word per step, compared with the cumulative thresholds
``floor(p 2^32)`` (probabilities rounded to multiples of 2^-32, a relative bias below 1e-8; left-over
words are self-loops), drawn 64 steps at a time from ``fold_in(fold_in(PRNGKey(seed), r), page)``, so
results do not depend on batching or device count; on a CPU each chunk is cut into slices over the
cores (:mod:`jaxq.sim.lockstep`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError
from jaxq.sim.lockstep import run_replications

PAGE = 64  # steps per batch of random words (fixed: part of the random stream's definition)
TWO32 = 2.0**32
NONE = 1e30  # score of a pool/class that cannot be chosen (as in network_ctmc)


class Layout(NamedTuple):
    """The static shape of the network under one policy (hashable: part of the compiled program)."""

    num_i: int
    num_j: int
    edges: tuple  # activities (i, j) the policy may use, row-major
    elim: tuple  # swc: greedy elimination order of the tree's activities
    swc: bool
    bins: int  # histogram bins


def layout_of(p: dict, policy: str) -> Layout:
    """The :class:`Layout` of parameters from :func:`jaxq.sim.network_ctmc.make_params`."""
    edge = np.asarray(p["edge"])
    edges = tuple((int(i), int(j)) for i, j in zip(*np.nonzero(edge)))
    elim = tuple((int(i), int(j)) for i, j in np.asarray(p["elim"]))
    return Layout(edge.shape[0], edge.shape[1], edges, elim, policy == "swc", int(np.shape(p["hist_edges"])[0] - 1))


def uniformization_rate(p: dict) -> float:
    """``Lambda = sum_i lambda_i + sum_j N_j max_i mu_ij``: the largest total event rate of any state."""
    mu = np.asarray(p["mu"])
    return float(np.sum(np.asarray(p["lam"])) + np.sum(np.asarray(p["N"]) * mu.max(axis=0)))


def word_thresholds(p: dict, big: float, lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    """``(arrival_cum, activity_words)``: ``floor(cumsum(lambda)/Lambda 2^32)`` (I,) and the words of one
    busy server of each activity of ``lay.edges``, ``floor(mu_ij/Lambda 2^32)``, as exact float64 integers.

    The activity segments follow the last arrival threshold; their total never exceeds 2^32 since
    ``sum_ij mu_ij z_ij <= sum_j N_j max_i mu_ij`` in every feasible state."""
    lam = np.asarray(p["lam"], dtype=np.float64)
    mu = np.asarray(p["mu"], dtype=np.float64)
    arr = np.floor(np.cumsum(lam) / big * TWO32)
    act = np.array([np.floor(mu[i, j] / big * TWO32) for i, j in lay.edges])
    return arr, act


# ---------------------------------------------------------------------------------- one step
def _first_min(cands):
    """``(found, one-hot)`` of the first candidate with the smallest score among ``(ok, score)`` pairs
    (``argmin`` over scores with ``NONE`` where not ok: ties go to the first)."""
    best = jnp.float64(NONE)
    picks = []
    for ok, score in cands:
        s = jnp.where(ok, score, NONE)
        better = s < best
        picks = [pk & ~better for pk in picks] + [better]
        best = jnp.where(better, s, best)
    return best < NONE, picks


def transition(q, z, arrive, complete, p, lay: Layout):
    """One event on the scalar state: ``q`` (I,) queues, ``z`` {(i, j): busy} over ``lay.edges``;
    ``arrive[i]``, ``complete[(i, j)]`` mutually exclusive flags (none: a self-loop).

    Returns ``(q, z, served)`` with ``served[i]``: an arriving class-i job found a server. The rules are
    those of :func:`jaxq.sim.network_ctmc.static_transition` and ``swc_transition``.
    """
    I, J = lay.num_i, lay.num_j
    busy = {j: sum((z[e] for e in lay.edges if e[1] == j), jnp.int32(0)) for j in range(J)}
    y = {j: p["N"][j] - busy[j] for j in range(J)}
    if lay.swc:
        x = [q[i] + sum((z[e] for e in lay.edges if e[0] == i), jnp.int32(0)) for i in range(I)]
        x = [x[i] + arrive[i].astype(jnp.int32)
             - sum((complete[e].astype(jnp.int32) for e in lay.edges if e[0] == i), jnp.int32(0)) for i in range(I)]
        cap = {("i", i): x[i] for i in range(I)} | {("j", j): p["N"][j] for j in range(J)}
        new = {e: jnp.int32(0) for e in lay.edges}
        for i, j in lay.elim:  # greedy leaf elimination (network_ctmc.swc_allocation)
            f = jnp.minimum(cap[("i", i)], cap[("j", j)])
            cap[("i", i)] = cap[("i", i)] - f
            cap[("j", j)] = cap[("j", j)] - f
            new[(i, j)] = f
        total_before = sum(busy.values(), jnp.int32(0))
        total_after = sum(new.values(), jnp.int32(0))
        q_new = [x[i] - sum((new[e] for e in lay.edges if e[0] == i), jnp.int32(0)) for i in range(I)]
        return q_new, new, [total_after > total_before for _ in range(I)]
    # routing of an arrival of class i (lowest score among its idle pools) and scheduling at pool j
    served, route = [], {}
    for i in range(I):
        js = [j for (a, j) in lay.edges if a == i]
        found, picks = _first_min([(y[j] > 0, p["route_rank"][i, j] - p["route_dyn"] * y[j] / p["N"][j]) for j in js])
        served.append(found)
        for j, pk in zip(js, picks):
            route[(i, j)] = pk & found
    sched = {}
    for j in range(J):
        cls = [i for (i, b) in lay.edges if b == j]
        found, picks = _first_min([(q[i] > 0, p["sched_rank"][i, j] - p["sched_dyn"] * q[i]) for i in cls])
        freed = sum((complete[(i, j)] for i in cls), jnp.bool_(False))  # a pool-j server completed
        for i, pk in zip(cls, picks):
            sched[(i, j)] = pk & found & freed
    z_new = {e: z[e] + (arrive[e[0]] & route[e]).astype(jnp.int32) - complete[e].astype(jnp.int32)
             + sched[e].astype(jnp.int32) for e in lay.edges}
    q_new = [q[i] + (arrive[i] & ~served[i]).astype(jnp.int32)
             - sum((sched[e].astype(jnp.int32) for e in lay.edges if e[0] == i), jnp.int32(0)) for i in range(I)]
    return q_new, z_new, served


def _run(keys, p, arr_cum, act_words, warm, total, lay: Layout):
    """Per-replication sums over the recorded steps (see :func:`to_time_averages`) and the event count."""
    I, E, nb = lay.num_i, len(lay.edges), lay.bins
    edges = p["hist_edges"]
    width = edges[1] - edges[0]
    center_z = [p["center_z"][i, j] for i, j in lay.edges]
    iota = jnp.arange(nb)
    page_steps = jnp.arange(PAGE, dtype=jnp.int64)

    def step(s, nu):
        n, word = nu
        q, z = list(s["q"]), dict(zip(lay.edges, s["z"]))
        r = ((n >= warm) & (n < total)).astype(jnp.float64)
        x = [q[i] + sum((z[e] for e in lay.edges if e[0] == i), jnp.int32(0)) for i in range(I)]
        xhat = [(x[i].astype(jnp.float64) - p["center"][i]) / p["scale"] for i in range(I)]
        vals = xhat + [sum(xhat)]
        bins = [jnp.clip(jnp.floor((v - edges[0]) / width).astype(jnp.int32), 0, nb - 1) for v in vals]
        dev = [z[e].astype(jnp.float64) - c for e, c in zip(lay.edges, center_z)]
        # which event: arrival segments, then one segment of z_ij words per busy server of (i, j)
        u = word.astype(jnp.float64)
        arrive, lo = [], jnp.float64(0.0)
        for i in range(I):
            arrive.append((u >= lo) & (u < arr_cum[i]))
            lo = arr_cum[i]
        complete = {}
        for k, e in enumerate(lay.edges):
            hi = lo + z[e].astype(jnp.float64) * act_words[k]
            complete[e] = (u >= lo) & (u < hi)
            lo = hi
        q1, z1, served = transition(q, z, arrive, complete, p, lay)
        live = n < total
        arrived = [a & live & (r > 0) for a in arrive]
        out = {
            "q": tuple(q1),
            "z": tuple(z1[e] for e in lay.edges),
            "sq": tuple(s["sq"][i] + r * q[i] for i in range(I)),
            "sz": tuple(s["sz"][k] + r * z[e] for k, e in enumerate(lay.edges)),
            "sabs": tuple(s["sabs"][k] + r * jnp.abs(dev[k]) for k in range(E)),
            "ssq": tuple(s["ssq"][k] + r * dev[k] * dev[k] for k in range(E)),
            "neg": s["neg"] + r * jnp.maximum(-vals[-1], 0.0),
            "hist": tuple(s["hist"][k] + r * (iota == bins[k]) for k in range(I + 1)),
            "arrivals": tuple(s["arrivals"][i] + arrived[i] for i in range(I)),
            "waited": tuple(s["waited"][i] + (arrived[i] & ~served[i]) for i in range(I)),
            "events": s["events"] + (live & (sum(arrive, jnp.int32(0)) + sum(complete.values(), jnp.int32(0)) > 0)),
        }
        return out, None

    def one(key):
        f0, i0 = jnp.float64(0.0), jnp.int64(0)
        s = {
            "q": tuple(jnp.int32(0) for _ in range(I)),
            "z": tuple(p["z0"][i, j] for i, j in lay.edges),
            "sq": (f0,) * I, "sz": (f0,) * E, "sabs": (f0,) * E, "ssq": (f0,) * E, "neg": f0,
            "hist": tuple(jnp.zeros(nb, jnp.float64) for _ in range(I + 1)),
            "arrivals": (i0,) * I, "waited": (i0,) * I, "events": i0,
        }

        def page(b, s):
            words = jax.random.bits(jax.random.fold_in(key, b.astype(jnp.uint32)), (PAGE,), jnp.uint32)
            s, _ = jax.lax.scan(step, s, (b * PAGE + page_steps, words))
            return s

        s = jax.lax.fori_loop(jnp.int64(0), (total + PAGE - 1) // PAGE, page, s)
        return (jnp.stack(s["sq"]), jnp.stack(s["sz"]), jnp.stack(s["sabs"]), jnp.stack(s["ssq"]), s["neg"],
                jnp.stack(s["hist"]), jnp.stack(s["arrivals"]), jnp.stack(s["waited"]), s["events"])

    return jax.vmap(one)(keys)


_run_jit = jax.jit(_run, static_argnames=("lay",))
SUMS = ("sq", "sz", "sabs", "ssq", "neg", "hist", "arrivals", "waited", "events")


def to_time_averages(sums: dict, p: dict, lay: Layout, steps: int) -> dict:
    """The event engine's final-state statistics (time integrals over [warmup, horizon]) from step sums.

    Each recorded step stands for ``w = (horizon - warmup) / steps``. Activities the policy never uses
    keep z = 0, so their deviation sums are ``steps |c|`` and ``steps c^2`` in closed form.
    """
    w = (float(p["horizon"]) - float(p["warmup"])) / steps
    c = np.asarray(p["center_z"], dtype=np.float64)
    reps = np.shape(sums["sq"])[0]
    sz = np.zeros((reps,) + c.shape)
    sabs = np.broadcast_to(steps * np.abs(c), sz.shape).copy()
    ssq = np.broadcast_to(steps * c * c, sz.shape).copy()
    for k, (i, j) in enumerate(lay.edges):
        sz[:, i, j] = sums["sz"][:, k]
        sabs[:, i, j] = sums["sabs"][:, k]
        ssq[:, i, j] = sums["ssq"][:, k]
    sq = np.asarray(sums["sq"], dtype=np.float64)
    return {
        "acc_q": w * sq,
        "acc_x": w * (sq + sz.sum(axis=2)),
        "acc_y": w * (steps * np.asarray(p["N"], dtype=np.float64) - sz.sum(axis=1)),
        "acc_z": w * sz,
        "acc_absdev": w * sabs,
        "acc_sqdev": w * ssq,
        "acc_neg": w * np.asarray(sums["neg"]),
        "hist": w * np.asarray(sums["hist"]),
        "arrivals": np.asarray(sums["arrivals"], dtype=np.float64),
        "waited": np.asarray(sums["waited"], dtype=np.float64),
        "events": np.asarray(sums["events"]),
    }


def simulate_final(p: dict, policy: str, reps: int, seed: int, chunk: int | None = None, progress=None,
                   snap_times=None) -> tuple[dict, float]:
    """Per-replication statistics in the form of the event engine's final states (for ``summarize``).

    Args:
      p: parameters from :func:`jaxq.sim.network_ctmc.make_params`; policy: its policy.
      reps, seed, chunk: replications, base seed, replications per compiled call.
      snap_times: refused (snapshots at fixed times need the event engine).
    Returns:
      ``(final, compile_s)``: dict of (reps, ...) arrays with the event engine's statistics
      (:func:`to_time_averages`), ``events`` and ``steps`` (no ``snap``).
    """
    if snap_times is not None:
        raise InputError("snap_times", "snapshots at fixed times need the event engine (engine = 'event')")
    lay = layout_of(p, policy)
    big = uniformization_rate(p)
    warmup, horizon = float(p["warmup"]), float(p["horizon"])
    warm = round(big * warmup)
    steps = max(1, round(big * (horizon - warmup)))
    if warm + steps >= 2**37:
        raise InputError("horizon", f"{warm + steps:.3g} uniformised steps exceed the 2^37 supported")
    arr, act = word_thresholds(p, big, lay)
    args = (p, jnp.asarray(arr), jnp.asarray(act), jnp.int64(warm), jnp.int64(warm + steps))
    cols, compile_s = run_replications(_run_jit, args, {"lay": lay}, reps, seed, chunk, progress=progress)
    final = to_time_averages(dict(zip(SUMS, cols)), p, lay, steps)
    final["steps"] = warm + steps
    return final, compile_s
