"""Exact discounted cost of the n-th 2x2 system with exponential primitives, by a sparse linear solve.

With exponential interarrival and service times the system under a fixed-mode rule (P, T1 or T2 of
Definition 2.8, servers acting as in Definition 2.7, non-preemptive) is a CTMC on the post-decision
states ``(x_1, x_2, s_1, s_2, mode)``: jobs of each class in the system, the class each server serves
(-1 idle) and the current mode, which a switching policy (Definition 2.10) resamples at its sampling
times (transitions of the chain; constant for a fixed-mode rule). The discounted cost from state y,
``v(y) = E_y int_0^inf exp(-gamma t) h.X(t)/sqrt(n) dt``, solves ``(gamma I - Q) v = h.x/sqrt(n)``.
The state space is truncated at ``x_i <= cap`` (arrivals of a full class are lost);
:func:`discounted_cost` checks the truncation by solving at two caps.

This module is deliberately independent of the JAX simulator (plain Python decisions, scipy solve):
tests use it as the exact value the Monte Carlo estimate must match.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from jaxq.errors import InputError
from jaxq.model.pss2x2 import PSS2x2
from jaxq.planning.modes import modes

IDLE = -1


def _decide(x, s, i1, i2, k1, rule, theta):
    """Post-decision server assignment (Definitions 2.7-2.8) written out case by case."""
    s = list(s)
    k2 = 1 - k1
    q = [x[c] - (s[0] == c) - (s[1] == c) for c in (0, 1)]
    if s[k1] == IDLE and q[i2] > 0:  # dedicated server first (arrival rule of 2.7.2)
        s[k1] = i2
        q[i2] -= 1
    if rule == "P":
        prio = i1
    elif rule == "T1":
        prio = i1 if x[i1] >= theta else i2
    elif rule == "T2":
        prio = i2 if x[i2] >= theta else i1
    else:
        raise ValueError(rule)
    if s[k2] == IDLE:
        if q[prio] > 0:
            s[k2] = prio
        elif q[1 - prio] > 0:
            s[k2] = 1 - prio
    return tuple(s)


def _next_mode(mode, is_arrival, server, x, sampling, k1, alpha, level, lower, higher):
    """Definition 2.10: the current mode after an event (``server``: the one that completed)."""
    if sampling == "never":
        return mode
    if sampling == "k1" and (is_arrival or server != k1[mode]):
        return mode
    workload = x[0] / alpha[0] + x[1] / alpha[1]
    return lower if workload < level else higher


def _solve(lam_n, mu_n, h_hat, gamma, roles, rules, sampling, alpha, level, lower, higher, theta, cap):
    i1, i2, k1 = roles
    mode0 = lower if 0.0 < level else higher
    start = (0, 0, IDLE, IDLE, mode0)
    index = {start: 0}
    states = [start]
    rows, cols, vals = [], [], []
    head = 0
    while head < len(states):
        y = states[head]
        x, s, mode = (y[0], y[1]), (y[2], y[3]), y[4]
        moves = []
        for c in (0, 1):
            if x[c] < cap:
                xn = (x[0] + (c == 0), x[1] + (c == 1))
                moves.append((lam_n[c], xn, s, True, -1))
        for k in (0, 1):
            c = s[k]
            if c != IDLE:
                xn = (x[0] - (c == 0), x[1] - (c == 1))
                sn = (IDLE, s[1]) if k == 0 else (s[0], IDLE)
                moves.append((mu_n[c, k], xn, sn, False, k))
        for rate, xn, sn, is_arrival, server in moves:
            m = _next_mode(mode, is_arrival, server, xn, sampling, k1, alpha, level, lower, higher)
            z = xn + _decide(xn, sn, i1[m], i2[m], k1[m], rules[m], theta) + (m,)
            j = index.get(z)
            if j is None:
                j = index[z] = len(states)
                states.append(z)
            rows.append(head)
            cols.append(j)
            vals.append(rate)
        head += 1
    size = len(states)
    q = sp.csr_matrix((vals, (rows, cols)), shape=(size, size))
    out_rate = np.asarray(q.sum(axis=1)).ravel()
    a = sp.diags(gamma + out_rate) - q
    arr = np.array(states)
    cost = arr[:, 0] * h_hat[0] + arr[:, 1] * h_hat[1]
    v = spsolve(a.tocsc(), cost)
    return float(v[0]), size


def discounted_cost(
    system: PSS2x2,
    n: float,
    mode: int,
    rule: str,
    theta: int = 0,
    cap: int = 60,
    check: bool = True,
    *,
    higher: int | None = None,
    rule_higher: str | None = None,
    sampling: str = "never",
    switch_at: float = math.inf,
) -> dict:
    """Exact J_n from the empty state under a fixed-mode rule or a switching policy.

    Args:
      system: a 2x2 system with exponential primitives.
      n: the index of the system.
      mode: the LP mode (0-based) whose roles (Definition 2.8) the servers follow (the lower mode
        of a switching policy).
      rule: ``"P"``, ``"T1"`` or ``"T2"`` in that mode; theta: the threshold Theta_n for T1/T2.
      cap: truncation level per class.
      check: also solve at ``cap + cap // 2`` and report the difference.
      higher, rule_higher: the higher mode and its rule (switching policies, Definition 2.10).
      sampling: ``"never"``, ``"k1"`` (completions of the current mode's single-activity server: PP,
        T2T2) or ``"every"`` (every arrival and completion: T1T2, T2T1).
      switch_at: switching level z in scaled workload units (the lower mode below sqrt(n) z).

    Returns:
      dict with ``J`` (the value), ``states`` (size of the truncated chain) and ``truncation_change``
      (|J(cap) - J(1.5 cap)|, or None).
    """
    if not system.exponential:
        raise InputError("system", "the exact CTMC solver needs exponential interarrival and service times")
    md = modes(system.lam, system.mu)
    lam_n, mu_n = system.rates(n)
    h_hat = system.h / math.sqrt(n)
    hi = mode if higher is None else higher
    rules = {mode: rule}
    rules[hi] = rule if rule_higher is None else rule_higher
    roles = (md.i1.tolist(), md.i2.tolist(), md.k1.tolist())
    level = math.sqrt(n) * switch_at
    args = (lam_n, mu_n, h_hat, system.gamma, roles, rules, sampling, md.alpha, level, mode, hi, theta)
    value, size = _solve(*args, cap)
    change = None
    if check:
        value2, _ = _solve(*args, cap + cap // 2)
        change = abs(value2 - value)
        value = value2
    return {"J": value, "states": size, "truncation_change": change}
