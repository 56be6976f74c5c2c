"""Exact methods on the truncated chain (numpy/scipy): the independent checks of value iteration.

A *policy table* ``policy[x, c]`` gives the post-decision configuration chosen at the pre-decision
state ``(x, c)`` (the state just after an event); the job count moves from x to
``x - (count[policy] - count[c])``. Decisions are taken after every uniformised event, as in the
operator ``P Q`` of (12); for policies that are idempotent (re-deciding at the post-decision state
changes nothing: every policy (14) and every threshold policy) this is the continuous-time system.

Functions:
    transition_matrix: Uniformised post-decision chain of a policy (sparse, rows sum to 1).
    discounted_value: ``E int exp(-alpha t) (X + Y) dt`` by a sparse linear solve.
    average_cost: ``(g, h)`` from the Poisson equation, ``h(0, 0) = 0``.
    policy_iteration: Exact optimal policy (Howard), started from any policy.
    discounted_lp: The optimal discounted value from a linear program (small truncations).

(:func:`jaxq.mdp.policy.greedy_policy` gives policy (14) from a value function.)
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.linalg import spsolve

from jaxq.mdp.layout import Configurations
from jaxq.mdp.operators import assignment_tables, cost
from jaxq.mdp.policy import greedy_policy, post_state


def _slow_rates(layout: Configurations, mu2) -> np.ndarray:
    return np.tensordot(np.atleast_1d(np.asarray(mu2, dtype=float)), layout.move, axes=1)


def gamma_of(layout: Configurations, lam: float, mu1: float, mu2) -> float:
    """Uniformisation rate ``lam + mu1 + sum_j mu2_j``.

    Args:
        layout: The slow-server configurations.
        lam: The arrival rate.
        mu1: The fast service rate.
        mu2 (float | numpy.ndarray): The slow service rates, shape (J,) (identical layout: one entry).

    Returns:
        The uniformisation rate gamma.
    """
    return float(lam + mu1 + _slow_rates(layout, mu2)[0].sum())


def _events(layout: Configurations, N: int, lam: float, mu1: float, mu2):
    """Rows (post state), pre-decision target states and rates of all uniformised events."""
    C = layout.C
    R = _slow_rates(layout, mu2)
    x = np.repeat(np.arange(N + 1), C)
    c = np.tile(np.arange(C), N + 1)
    src, dst, rate = [], [], []
    src += [x * C + c]; dst += [np.minimum(x + 1, N) * C + c]; rate += [np.full(x.size, lam)]  # noqa: E702
    src += [x * C + c]; dst += [np.maximum(x - 1, 0) * C + c]; rate += [np.full(x.size, mu1)]  # noqa: E702
    for c1 in range(C):
        for c2 in range(C):
            if R[c1, c2] > 0:
                xs = np.arange(N + 1)
                src.append(xs * C + c1); dst.append(xs * C + c2); rate.append(np.full(xs.size, R[c1, c2]))  # noqa: E702
    return np.concatenate(src), np.concatenate(dst), np.concatenate(rate)


def transition_matrix(layout: Configurations, N: int, lam: float, mu1: float, mu2, policy: np.ndarray) -> sp.csr_matrix:
    """Uniformised transition matrix ``P_pi = (1/gamma) P Q_pi`` of the post-decision chain.

    Args:
        layout: The slow-server configurations.
        N: The truncation, ``x <= N``.
        lam: The arrival rate.
        mu1: The fast service rate.
        mu2 (float | numpy.ndarray): The slow service rates, shape (J,) (identical layout: one entry).
        policy: The policy table, shape (N+1, C).

    Returns:
        The sparse matrix, shape ((N+1) C, (N+1) C); rows sum to 1.

    Raises:
        ValueError: ``policy`` removes slow jobs or assigns more jobs than are queued
            (:func:`jaxq.mdp.policy.post_state`).
    """
    src, dst, rate = _events(layout, N, lam, mu1, mu2)
    to = post_state(layout, N, policy)[dst]
    n = (N + 1) * layout.C
    g = gamma_of(layout, lam, mu1, mu2)
    return sp.csr_matrix((rate / g, (src, to)), shape=(n, n))


def discounted_value(layout, N, lam, mu1, mu2, alpha, policy) -> np.ndarray:
    """Expected discounted cost (6) of ``policy`` from every post-decision state, shape (N+1, C).

    Solves ``((alpha + gamma) I - gamma P_pi) V = c``.

    Args:
        layout (jaxq.mdp.layout.Configurations): The slow-server configurations.
        N (int): The truncation, ``x <= N``.
        lam (float): The arrival rate.
        mu1 (float): The fast service rate.
        mu2 (float | numpy.ndarray): The slow service rates, shape (J,) (identical layout: one entry).
        alpha (float): The discount rate.
        policy (numpy.ndarray): The policy table, shape (N+1, C).

    Returns:
        V, shape (N+1, C).
    """
    P = transition_matrix(layout, N, lam, mu1, mu2, policy)
    g = gamma_of(layout, lam, mu1, mu2)
    A = (alpha + g) * sp.identity(P.shape[0], format="csr") - g * P
    return spsolve(A.tocsc(), cost(layout, N).reshape(-1)).reshape(N + 1, layout.C)


def average_cost(layout, N, lam, mu1, mu2, policy) -> tuple[float, np.ndarray]:
    """Average cost g and relative values h (``h(0,0) = 0``) of ``policy``: ``g + h = c + P_pi h``.

    g is the long-run time-average number of jobs in the system (the chain is unichain: every
    policy empties the box eventually).

    Args:
        layout (jaxq.mdp.layout.Configurations): The slow-server configurations.
        N (int): The truncation, ``x <= N``.
        lam (float): The arrival rate.
        mu1 (float): The fast service rate.
        mu2 (float | numpy.ndarray): The slow service rates, shape (J,) (identical layout: one entry).
        policy (numpy.ndarray): The policy table, shape (N+1, C).

    Returns:
        ``(g, h)``, h of shape (N+1, C).
    """
    P = transition_matrix(layout, N, lam, mu1, mu2, policy)
    n = P.shape[0]
    A = (sp.identity(n, format="csr") - P).tolil()
    A[:, 0] = np.ones((n, 1))  # unknown 0 is g (h(0, 0) = 0 is fixed)
    u = spsolve(A.tocsc(), cost(layout, N).reshape(-1))
    h = u.copy()
    h[0] = 0.0
    return float(u[0]), h.reshape(N + 1, layout.C)


def stationary_distribution(layout, N, lam, mu1, mu2, policy) -> np.ndarray:
    """Stationary distribution of the post-decision chain of ``policy``, shape (N+1, C).

    Args:
        layout (jaxq.mdp.layout.Configurations): The slow-server configurations.
        N (int): The truncation, ``x <= N``.
        lam (float): The arrival rate.
        mu1 (float): The fast service rate.
        mu2 (float | numpy.ndarray): The slow service rates, shape (J,) (identical layout: one entry).
        policy (numpy.ndarray): The policy table, shape (N+1, C).

    Returns:
        The distribution, shape (N+1, C).
    """
    P = transition_matrix(layout, N, lam, mu1, mu2, policy)
    n = P.shape[0]
    A = (sp.identity(n, format="csr") - P).T.tolil()
    A[0, :] = np.ones((1, n))
    b = np.zeros(n)
    b[0] = 1.0
    return spsolve(A.tocsc(), b).reshape(N + 1, layout.C)


def policy_iteration(layout, N, lam, mu1, mu2, alpha=None, policy=None, max_iter=100):
    """Howard's policy iteration on the truncated chain (alpha None: average cost).

    Args:
        layout (jaxq.mdp.layout.Configurations): The slow-server configurations.
        N (int): The truncation, ``x <= N``.
        lam (float): The arrival rate.
        mu1 (float): The fast service rate.
        mu2 (float | numpy.ndarray): The slow service rates, shape (J,) (identical layout: one entry).
        alpha (float | None): The discount rate (None: average cost).
        policy (numpy.ndarray | None): Starting policy table (default: assign every queued job a slow server can
            take).
        max_iter (int): The most policy improvements.

    Returns:
        (tuple): ``(policy, value, iterations)``: value is V* (discounted) or (g, h) (average).

    Raises:
        RuntimeError: The policy still changes after ``max_iter`` improvements.
    """
    if policy is None:
        policy = greedy_policy(layout, N, -np.broadcast_to(layout.count * 1.0, (N + 1, layout.C)))  # fill slow servers
    for it in range(1, max_iter + 1):
        if alpha is None:
            g, h = average_cost(layout, N, lam, mu1, mu2, policy)
            value, v = (g, h), h
        else:
            value = v = discounted_value(layout, N, lam, mu1, mu2, alpha, policy)
        new = greedy_policy(layout, N, v, tie=1e-10 * (1.0 + np.abs(v).max()), current=policy)
        if np.array_equal(new, policy):
            return policy, value, it
        policy = new
    raise RuntimeError("policy iteration did not terminate")


def discounted_lp(layout, N, lam, mu1, mu2, alpha) -> np.ndarray:
    """Optimal discounted value (6) from the LP ``max sum V + sum W`` subject to
    ``W(e) <= V(post(e, a))`` for every pre-decision state e and action a, and
    ``(alpha + gamma) V(s) <= c(s) + sum_e rate(s -> e) W(e)``. Use on small truncations only.

    Args:
        layout (jaxq.mdp.layout.Configurations): The slow-server configurations.
        N (int): The truncation, ``x <= N``.
        lam (float): The arrival rate.
        mu1 (float): The fast service rate.
        mu2 (float | numpy.ndarray): The slow service rates, shape (J,) (identical layout: one entry).
        alpha (float): The discount rate.

    Returns:
        V*, shape (N+1, C).

    Raises:
        RuntimeError: The linear program fails (its message).
    """
    n = (N + 1) * layout.C
    idx, ok = assignment_tables(layout, N)
    e_rows, a_cols = [], []
    for e in range(n):
        for t in idx.reshape(n, -1)[e][ok.reshape(n, -1)[e]]:
            e_rows.append(e)
            a_cols.append(t)
    m1 = len(e_rows)
    # W(e) - V(t) <= 0
    A1 = sp.csr_matrix((np.r_[np.ones(m1), -np.ones(m1)], (np.r_[np.arange(m1), np.arange(m1)], np.r_[n + np.array(e_rows), a_cols])), shape=(m1, 2 * n))
    src, dst, rate = _events(layout, N, lam, mu1, mu2)
    g = gamma_of(layout, lam, mu1, mu2)
    A2 = sp.csr_matrix((np.r_[np.full(n, alpha + g), -rate], (np.r_[np.arange(n), src], np.r_[np.arange(n), n + dst])), shape=(n, 2 * n))
    res = linprog(-np.ones(2 * n), A_ub=sp.vstack([A1, A2]), b_ub=np.r_[np.zeros(m1), cost(layout, N).reshape(-1)], bounds=(None, None), method="highs")
    if res.status != 0:
        raise RuntimeError(res.message)
    return res.x[:n].reshape(N + 1, layout.C)
