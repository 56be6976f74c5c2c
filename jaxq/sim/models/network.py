"""The n-th many-server parallel server network (the uniform-stability and LAP-tightness papers) as a Markov chain,
stated once.

State of one replication: the queue ``q[i]`` of every class and the busy servers ``z[(i, j)]`` of every
activity the policy uses (scalars; idle servers ``y_j = N_j - sum_i z_ij``, jobs ``x_i = q_i + sum_j z_ij``).
Events: an arrival of class i (rate ``lambda_i``), a completion of activity (i, j) (rate ``mu_ij z_ij``);
after each, the policy (:mod:`jaxq.policies.network`) routes the arrival or reassigns the freed server
(non-preemptive rules) or re-solves the allocation (``swc``). Uniformisation rate
``Lambda = sum_i lambda_i + sum_j N_j max_i mu_ij`` (over the activities the policy uses).

Observed over time (:func:`markov`): queues, busy servers, their deviations from the fluid centre
``z_bar`` (absolute and squared), the idleness ``<e, X_hat>^-`` and, optionally, histograms of
``X_hat_i = (x_i - centre_i)/sqrt(n)`` and of their total; recorded per event in the window: arrivals and
arrivals that waited, per class; snapshot: the class counts x.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxq.policies.network import Layout, Rule, route, schedule, swc_allocation
from jaxq.mc import replications
from jaxq.sim.markov import Markov, MarkovModel, as_markov


class Params(NamedTuple):
    """Traced parameters of the n-th network under a policy.

    Attributes:
        lam: (I,) arrival rates.
        mu: (I, J) service rates (0 off the policy's activities).
        N: (J,) int32 pool sizes.
        rule: The policy's ranks.
        center: (I,) fluid centre of x.
        center_z: (I, J) fluid centre of z.
        scale: sqrt(n).
        hist_lo: The left end of the histogram range of X_hat.
        hist_width: The histogram's bin width.
        z0: (I, J) int32 start allocation (queues start empty).
    """

    lam: jnp.ndarray  # (I,) arrival rates
    mu: jnp.ndarray  # (I, J) service rates (0 off the policy's activities)
    N: jnp.ndarray  # (J,) int32 pool sizes
    rule: Rule  # the policy's ranks
    center: jnp.ndarray  # (I,) fluid centre of x
    center_z: jnp.ndarray  # (I, J) fluid centre of z
    scale: jnp.ndarray  # sqrt(n)
    hist_lo: jnp.ndarray  # left end of the histogram range of X_hat
    hist_width: jnp.ndarray  # bin width
    z0: jnp.ndarray  # (I, J) int32 start allocation (queues start empty)


class State(NamedTuple):
    """The state of one replication.

    Attributes:
        q: I int32 scalars, the queue of every class.
        z: int32 scalars, the busy servers of every activity of the layout.
    """

    q: tuple  # I int32 scalars
    z: tuple  # int32 scalars, one per activity of the layout


def jobs(s: State, lay: Layout) -> list:
    """``x_i = q_i + sum_j z_ij`` per class.

    Args:
        s: The state.
        lay: The layout.

    Returns:
        The jobs of each class (I int32 scalars).
    """
    return [s.q[i] + sum((zk for zk, e in zip(s.z, lay.edges) if e[0] == i), jnp.int32(0)) for i in range(lay.num_i)]


def transition(s: State, fired, p: Params, lay: Layout):
    """Apply the event that fired (arrivals first, then activity completions, in ``lay.edges`` order) and the policy's
    decision after it.

    Args:
        s: The state.
        fired (tuple): One bool per event, at most one True.
        p: The parameters.
        lay: The layout.

    Returns:
        (tuple[State, dict]): ``(state, record)`` with per-class ``arrivals`` and ``waited``.
    """
    I, J = lay.num_i, lay.num_j
    arrive = fired[:I]
    complete = dict(zip(lay.edges, fired[I:]))
    q, z = list(s.q), dict(zip(lay.edges, s.z))
    if lay.swc:
        x = jobs(s, lay)
        x = [x[i] + arrive[i].astype(jnp.int32)
             - sum((complete[e].astype(jnp.int32) for e in lay.edges if e[0] == i), jnp.int32(0)) for i in range(I)]
        new = swc_allocation(x, p.N, lay)
        grew = sum(new.values(), jnp.int32(0)) > sum(z.values(), jnp.int32(0))
        q_new = [x[i] - sum((new[e] for e in lay.edges if e[0] == i), jnp.int32(0)) for i in range(I)]
        served = [grew] * I
        z_new = new
    else:
        busy = {j: sum((z[e] for e in lay.edges if e[1] == j), jnp.int32(0)) for j in range(J)}
        y = {j: p.N[j] - busy[j] for j in range(J)}
        served, routed = [], {}
        for i in range(I):
            found, picks = route(i, y, p.N, p.rule, lay)
            served.append(found)
            for j, pk in picks.items():
                routed[(i, j)] = pk & found & arrive[i]
        taken = {}
        for j in range(J):
            found, picks = schedule(j, q, p.rule, lay)
            freed = sum((complete[(i, b)] for (i, b) in lay.edges if b == j), jnp.bool_(False))
            for i, pk in picks.items():
                taken[(i, j)] = pk & found & freed
        z_new = {e: z[e] + routed[e].astype(jnp.int32) - complete[e].astype(jnp.int32) + taken[e].astype(jnp.int32)
                 for e in lay.edges}
        q_new = [q[i] + (arrive[i] & ~served[i]).astype(jnp.int32)
                 - sum((taken[e].astype(jnp.int32) for e in lay.edges if e[0] == i), jnp.int32(0)) for i in range(I)]
    i32 = jnp.int32
    record = {"arrivals": tuple(a.astype(i32) for a in arrive),
              "waited": tuple((a & ~sv).astype(i32) for a, sv in zip(arrive, served))}
    return State(tuple(q_new), tuple(z_new[e] for e in lay.edges)), record


def observe(s: State, p: Params, lay: Layout, bins: int, deviations: bool):
    """The integrands of the time averages (float64 scalars).

    Args:
        s: The state.
        p: The parameters.
        lay: The layout.
        bins: Histogram bins of X_hat (0: none).
        deviations: Also ``|z - z_bar|`` and ``(z - z_bar)^2`` per activity.

    Returns:
        (dict): dict with ``q``, ``z``, ``neg`` (``<e, X_hat>^-``) and, as asked, ``absdev``, ``sqdev`` and ``hist``.
    """
    f64 = jnp.float64
    out = {"q": tuple(s.q), "z": tuple(s.z)}
    x = jobs(s, lay)
    xhat = [(x[i].astype(f64) - p.center[i]) / p.scale for i in range(lay.num_i)]
    total = sum(xhat, f64(0.0))
    out["neg"] = jnp.maximum(-total, 0.0)
    if deviations:
        dev = [zk.astype(f64) - p.center_z[i, j] for zk, (i, j) in zip(s.z, lay.edges)]
        out["absdev"] = tuple(jnp.abs(d) for d in dev)
        out["sqdev"] = tuple(d * d for d in dev)
    if bins:
        iota = jnp.arange(bins)
        out["hist"] = tuple(
            (iota == jnp.clip(jnp.floor((v - p.hist_lo) / p.hist_width).astype(jnp.int32), 0, bins - 1)).astype(jnp.int32)
            for v in xhat + [total])
    return out


def bound(p: Params, lay: Layout) -> float:
    """``Lambda = sum_i lambda_i + sum_j N_j max_i mu_ij`` over the layout's activities.

    Args:
        p: The parameters.
        lay: The layout.

    Returns:
        Lambda.
    """
    mu, big_n = np.asarray(p.mu), np.asarray(p.N)
    top = np.zeros(lay.num_j)
    for i, j in lay.edges:
        top[j] = max(top[j], mu[i, j])
    return float(np.sum(np.asarray(p.lam)) + np.sum(big_n * top))


def basis(lay: Layout) -> list[tuple[int, ...]]:
    """The control variates' basis in X_hat: ``x_a`` for every class, then ``x_a x_b`` for a <= b.

    (And, in :func:`controls`, the queue-like ``s^+`` and ``(s^+)^2`` of the total excess
    ``s = (sum x - sum N)/sqrt(n)``.)

    Args:
        lay: The layout.

    Returns:
        The basis, each function a tuple of class indices.
    """
    I = lay.num_i
    return [(a,) for a in range(I)] + [(a, b) for a in range(I) for b in range(a, I)]


def controls(s: State, p: Params, lay: Layout):
    """Approximating martingales (Henderson and Glynn): ``phi[g][e] = g(X_hat + d_e) - g(X_hat)``.

    d_e is the jump of X_hat at event e (``+e_i/sqrt(n)`` for an arrival of class i, ``-e_i/sqrt(n)`` for a
    completion of activity (i, j)), for g in the quadratic basis of :func:`basis`, then ``s^+`` and ``(s^+)^2`` with
    ``s = (sum_i x_i - sum_j N_j)/sqrt(n)``: queues form where s > 0, so these bend where the Poisson equation's
    solution does (measured: on the N network they double the variance reduction of the queues).

    Args:
        s: The state.
        p: The parameters.
        lay: The layout.

    Returns:
        (tuple): ``phi``: per basis function a tuple over events.
    """
    I = lay.num_i
    f64 = jnp.float64
    x = jobs(s, lay)
    xh = [(x[i].astype(f64) - p.center[i]) / p.scale for i in range(I)]
    step = 1.0 / p.scale
    jumps = [{i: step} for i in range(I)] + [{i: -step} for (i, _) in lay.edges]  # event -> {class: jump}
    excess = (sum(x[i].astype(f64) for i in range(I)) - jnp.sum(p.N).astype(f64)) * step
    out = []
    for g in basis(lay):
        row = []
        for d in jumps:
            if len(g) == 1:
                row.append(d.get(g[0], 0))
            else:
                a, b = g
                if a not in d and b not in d:
                    row.append(0)
                    continue
                da, db = d.get(a, 0.0), d.get(b, 0.0)
                row.append(xh[a] * db + xh[b] * da + da * db)
        out.append(tuple(row))
    for f in (lambda v: jnp.maximum(v, 0.0), lambda v: jnp.maximum(v, 0.0) ** 2):
        out.append(tuple(f(excess + sum(d.values())) - f(excess) for d in jumps))
    return tuple(out)


@lru_cache(maxsize=replications.PROGRAMS_KEPT)
def markov(lay: Layout, bins: int = 0, deviations: bool = True, cv: bool = False) -> Markov:
    """The Markov statement of a network layout (cached: one compiled program per layout and statistics).

    Args:
        lay: The layout.
        bins: Histogram bins of X_hat (0: none; one-hot sums cost ``bins`` operations a step).
        deviations: Accumulate ``|z - z_bar|`` and ``(z - z_bar)^2`` per activity.
        cv: State the quadratic-basis martingale controls (:func:`controls`).

    Returns:
        The statement.
    """
    I = lay.num_i

    def init(p: Params):
        return State(tuple(jnp.int32(0) for _ in range(I)), tuple(p.z0[i, j] for i, j in lay.edges))

    def counts(s: State, p: Params):
        return (1,) * I + tuple(s.z)

    def rates(p: Params):
        return jnp.concatenate([p.lam, jnp.stack([p.mu[i, j] for i, j in lay.edges])])

    def snapshot(s: State, p: Params):
        return jnp.stack(jobs(s, lay)).astype(jnp.float64)

    return as_markov(MarkovModel(
        name=f"network{I}x{lay.num_j}" + ("swc" if lay.swc else ""),
        init=init,
        counts=counts,
        rates=rates,
        rate_bound=lambda p: bound(p, lay),
        records=True,
        one_hot=True,
        transition=lambda s, fired, p: transition(s, fired, p, lay),
        observe=lambda s, p: observe(s, p, lay, bins, deviations),
        snapshot=snapshot,
        controls=(lambda s, p: controls(s, p, lay)) if cv else None,
    ))
