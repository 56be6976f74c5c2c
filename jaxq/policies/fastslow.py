"""Threshold policies of one fast and K slow servers (the fast/slow-servers paper, Theorem 1), as pure functions.

With ``x`` jobs in the queue plus the fast server and ``y`` jobs at the (identical) slow servers before a
decision, a threshold policy with population thresholds ``n_1 <= ... <= n_K`` keeps, after the decision,

    min(y + (x - 1)^+, max(y, #{m : x + y >= n_m}))

jobs at the slow servers (:func:`slow_jobs`): the servers of speed rank r with ``n >= n_r`` busy as far as
queued jobs allow, never preempting. For K = 2 this is Theorem 1: with both slow servers idle and
q = x - 1 queued jobs it assigns 0 / 1 / min(2, q) for q < q_L / q_L <= q < q_H / q >= q_H, and with one
idle it assigns one iff q >= q_H - 1 (queue thresholds ``q_m = n_m - 1``). Heterogeneous slow servers
(bitmask configurations): the same rule, idle servers filled fastest first (:func:`threshold_policy`).

The simulator (:mod:`jaxq.sim.models.fastslow`) and the MDP's structure test (:mod:`jaxq.mdp.structure`)
both call these functions.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

NEVER = 2**31 - 1  # population threshold of a slow server that is never used (int32)


def slow_jobs(x, y, n_thr):
    """Jobs at the identical slow servers after the decision (numpy or JAX arrays, broadcast together).

    Args:
        x (int | numpy.ndarray | jax.Array): Jobs in the queue plus the fast server before the decision.
        y (int | numpy.ndarray | jax.Array): Jobs at the slow servers before it.
        n_thr (array_like): Population thresholds ``n_1 <= ... <= n_K``, shape (K,).

    Returns:
        (numpy.ndarray | jax.Array): The jobs at the slow servers after the decision (numpy for numpy ``x``, else JAX).
    """
    xp = np if isinstance(x, (int, np.integer, np.ndarray)) else jnp
    target = sum(((x + y) >= n).astype(xp.asarray(y).dtype) for n in n_thr)
    return xp.minimum(y + xp.maximum(x - 1, 0), xp.maximum(y, target))


def decide(x, y, n_thr):
    """The post-decision state ``(x', y')`` of identical slow servers under the threshold policy.

    Args:
        x (int | numpy.ndarray | jax.Array): Jobs in the queue plus the fast server before the decision.
        y (int | numpy.ndarray | jax.Array): Jobs at the slow servers before it.
        n_thr (array_like): Population thresholds ``n_1 <= ... <= n_K``, shape (K,).

    Returns:
        (tuple): ``(x', y')``: the queue plus the fast server and the slow servers' jobs after the decision
            (:func:`slow_jobs`).
    """
    k = slow_jobs(x, y, n_thr)
    return x - (k - y), k


def population_thresholds(q_thresholds) -> np.ndarray:
    """Population thresholds ``n_m = q_m + 1`` (int32) from queue thresholds.

    Args:
        q_thresholds (Iterable[int | None]): The queue thresholds q_m; None means never.

    Returns:
        The population thresholds, :data:`NEVER` for a server never used.
    """
    return np.array([NEVER if q is None else min(int(q) + 1, NEVER) for q in q_thresholds], dtype=np.int32)


def threshold_policy(layout, N: int, n_thr) -> np.ndarray:
    """Policy table (N+1, C) of the threshold policy with population thresholds ``n_thr[r]`` by speed rank.

    Identical servers: :func:`slow_jobs`; heterogeneous ones: idle servers filled fastest first.

    Args:
        layout (jaxq.mdp.layout.Configurations): The slow servers' configurations.
        N: The largest queue plus fast server ``x``.
        n_thr (array_like): Population thresholds by speed rank.

    Returns:
        The table (int64): entry ``[x, c]`` is the configuration after the decision from queue-plus-fast ``x`` and
            slow configuration c.
    """
    n_thr = np.asarray(n_thr)
    if layout.kind == "identical":
        x = np.arange(N + 1)[:, None]
        y = np.asarray(layout.count)[None, :]
        return np.broadcast_to(slow_jobs(x, y, n_thr), (N + 1, layout.C)).astype(np.int64)
    order = np.argsort(layout.rank)  # servers, fastest first
    pol = np.empty((N + 1, layout.C), dtype=np.int64)
    for c in range(layout.C):
        m = int(layout.mask[c])
        for x in range(N + 1):
            free, new = max(x - 1, 0), m
            for j in order:
                if free and not m >> j & 1 and x + layout.count[c] >= n_thr[layout.rank[j]]:
                    new |= 1 << j
                    free -= 1
            pol[x, c] = layout.config_of_mask(new)
    return pol
