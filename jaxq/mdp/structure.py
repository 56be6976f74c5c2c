"""Threshold structure of fast/slow policies and the inequalities (K1)-(K6) of the fast/slow-servers paper.

Thresholds (Theorem 1, made precise). With ``n = x + y`` jobs in the system, let
``D_m(n) = V(n-m+1, m-1) - V(n-m, m)`` (for K = 2: ``D_1 = D*_01`` (23), ``D_2 = D*_12`` (24)):
the gain of holding m rather than m-1 jobs at the slow servers. The *population threshold*
``n_m = min{n >= m : D_m(n) > 0}`` ((38)-(39): ``n_1 = x_L``, ``n_2 = x_H``) and the queue thresholds
are ``q_m = n_m - 1`` ((45)-(46): ``q_1 = q_L``, ``q_2 = q_H``); ``inf`` if the set is empty.

A *threshold policy* with population thresholds ``n_1 <= ... <= n_K`` keeps, after each decision, the
servers of speed rank ``r`` with ``n >= n_r`` busy as far as queued jobs allow: from the pre-decision
state (x, y) it holds ``min(y + (x-1)^+, max(y, #{m : x + y >= n_m}))`` jobs at the slow servers. For
K = 2 this is Theorem 1: with both slow servers idle and q = x - 1 queued jobs it assigns 0 / 1 /
min(2, q) for q < q_L / q_L <= q < q_H / q >= q_H, and with one idle it assigns one iff q >= q_H - 1.
Heterogeneous slow servers: the same rule, idle servers filled fastest first.
"""

from __future__ import annotations

import numpy as np

from jaxq.mdp.layout import Configurations
from jaxq.policies.fastslow import threshold_policy  # noqa: F401  (the rule lives with the policies)

INF = np.iinfo(np.int64).max // 4  # "no threshold" (the slow server is never used)


def population_thresholds(value: np.ndarray, K: int, X: int, tie: float = 0.0) -> np.ndarray:
    """Population thresholds ``n_m`` (m = 1..K) read off a value function as in (38)-(39).

    Args:
        value: Value (or relative value) function of the identical layout, shape (>= X+1, K+1).
        K: The number of slow servers.
        X: Largest x used (the region where the truncation is known not to matter).
        tie: ``D_m(n) > tie`` counts as positive (ties go to fewer slow jobs, as in (14)).

    Returns:
        Int array (K,), ``INF`` where no ``n`` with ``n - m + 1 <= X`` qualifies.
    """
    out = np.full(K, INF, dtype=np.int64)
    for m in range(1, K + 1):
        n = np.arange(m, X + m)  # n - m + 1 <= X
        D = value[n - m + 1, m - 1] - value[n - m, m]
        hit = np.nonzero(D > tie)[0]
        if hit.size:
            out[m - 1] = n[hit[0]]
    return out


def thresholds_from_policy(layout: Configurations, policy: np.ndarray, X: int) -> np.ndarray:
    """Population thresholds read off a policy table alone (x <= X).

    ``n_r`` is the smallest ``x + y`` at which the policy newly uses the server of rank r while it
    could also have filled every faster idle server; ``INF`` if it never does. If the policy is a
    threshold policy, :func:`threshold_policy` of these thresholds reproduces it.

    Args:
        layout: The slow-server configurations.
        policy: The policy table, shape (>= X+1, C).
        X: Largest x used.

    Returns:
        Int array (K,), ``n_r`` by speed rank r.
    """
    out = np.full(layout.K, INF, dtype=np.int64)
    by_rank = np.argsort(layout.rank)
    for c in range(layout.C):
        m = int(layout.mask[c])
        for r, j in enumerate(by_rank):
            if m >> j & 1:
                continue
            need = sum(1 for jj in by_rank[: r + 1] if not m >> jj & 1)
            for x in range(need + 1, X + 1):
                if int(layout.mask[policy[x, c]]) >> j & 1:
                    out[r] = min(out[r], x + layout.count[c])
                    break
    return out


def monotone_in_queue(layout: Configurations, policy: np.ndarray, X: int) -> bool:
    """Whether, for each pre-decision configuration, the busy set after the decision grows with x.

    Args:
        layout: The slow-server configurations.
        policy: The policy table, shape (>= X+1, C).
        X: Largest x used.

    Returns:
        Whether it grows on ``x <= X``.
    """
    masks = layout.mask[policy[: X + 1]]
    return bool(np.all((masks[:-1] & ~masks[1:]) == 0))


def structure(layout: Configurations, policy: np.ndarray, X: int) -> dict:
    """Threshold-type test of a policy on ``x <= X``.

    Args:
        layout: The slow-server configurations.
        policy: The policy table, shape (>= X+1, C).
        X: Largest x used.

    Returns:
        Dict with ``monotone`` (busy set nondecreasing in the queue length), ``ordered`` (thresholds
            nondecreasing in the speed rank), ``threshold`` (the policy equals the threshold policy of its
            read-off thresholds: Theorem 1's structure, including the one-idle-server rule), and
            ``population_thresholds`` (``n_r``; None = never used) and ``violations`` (number of states
            where it differs from that threshold policy).
    """
    n_thr = thresholds_from_policy(layout, policy, X)
    fit = threshold_policy(layout, X, n_thr)
    diff = int(np.sum(fit != policy[: X + 1]))
    finite = n_thr[n_thr < INF]
    ordered = bool(np.all(np.diff(finite) >= 0) and np.all(n_thr[len(finite):] == INF))
    return {
        "monotone": monotone_in_queue(layout, policy, X),
        "ordered": ordered,
        "threshold": diff == 0 and ordered,
        "population_thresholds": [None if v >= INF else int(v) for v in n_thr],
        "violations": diff,
    }


def inequalities(value: np.ndarray, K: int, X: int) -> dict[str, float | None]:
    """Worst margins of (K1)-(K6) on ``x <= X`` (K slow servers: the same sums for every y).

    (K1) f(x+1,y) - f(x,y); (K2) f(x+2,y) + f(x,y+1) - f(x+1,y) - f(x+1,y+1);
    (K3) f(x,y) + f(x+1,y+1) - f(x+1,y) - f(x,y+1); (K4) f(x,y+1) - f(x,y);
    (K5) f(x,y) + f(x,y+2) - 2 f(x,y+1); (K6) f(x+2,y) + f(x,y+2) - 2 f(x+1,y+1).
    A margin is the minimum of the left side over all (x, y) with every term inside ``x <= X``;
    the inequality holds when it is >= 0 (None: no (x, y) applies, e.g. (K5)-(K6) for K = 1).

    Args:
        value: Value (or relative value) function f of the identical layout, shape (>= X+1, K+1).
        K: The number of slow servers.
        X: Largest x used.

    Returns:
        The margin of each of ``"K1"`` .. ``"K6"``.
    """
    f = np.asarray(value)[: X + 1]
    sums = {
        "K1": f[1:, :] - f[:-1, :],
        "K2": f[2:, :-1] + f[:-2, 1:] - f[1:-1, :-1] - f[1:-1, 1:],
        "K3": f[:-1, :-1] + f[1:, 1:] - f[1:, :-1] - f[:-1, 1:],
        "K4": f[:, 1:] - f[:, :-1],
        "K5": f[:, :-2] + f[:, 2:] - 2 * f[:, 1:-1],
        "K6": f[2:, :-2] + f[:-2, 2:] - 2 * f[1:-1, 1:-1],
    }
    return {k: (float(v.min()) if v.size else None) for k, v in sums.items()}
