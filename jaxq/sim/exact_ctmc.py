"""Exact discounted cost of the n-th 2x2 system by a sparse linear solve: exponential and phase-type primitives.

With exponential interarrival and service times the system under a fixed-mode rule (P, T1 or T2 of
Definition 2.8, servers acting as in Definition 2.7, non-preemptive) is a CTMC on the post-decision
states ``(x_1, x_2, s_1, s_2, mode)``: jobs of each class in the system, the class each server serves
(-1 idle) and the current mode, which a switching policy (Definition 2.10) resamples at its sampling
times (transitions of the chain; constant for a fixed-mode rule). The discounted cost from state y,
``v(y) = E_y int_0^inf exp(-gamma t) h.X(t)/sqrt(n) dt``, solves ``(gamma I - Q) v = h.x/sqrt(n)``.
The state space is truncated at ``x_i <= cap`` (arrivals of a full class are lost);
:func:`discounted_cost` checks the truncation by solving at two caps.

With phase-type primitives (Erlang-k, the balanced-means hyperexponential, gamma with an integer shape, or
any phase-type law given as ``(alpha, S)``) the same system is a CTMC once the phases are in the state
(:func:`_solve_phase_type`): the phase of each class's running interarrival time and of each busy server's
job. A phase moves inside its law at the rates of ``S`` (scaled by the stream's rate) without touching the
queue; at absorption the arrival or completion happens, the servers decide as above, the next interarrival
time starts in a phase drawn from ``alpha``, and so does the service of every job that starts. At time 0
both interarrival times start afresh (phases drawn from ``alpha``), as in the event engine. This is the
exact value of the event engine's renewal systems (e.g. the dual-mode examples ``pss_T2T2``, ``pss_T2T1``)
at small n: a check of the engine with general primitives that shares nothing with it but the model.

This module is deliberately independent of the JAX simulator (plain Python decisions, scipy solve):
tests use it as the exact value the Monte Carlo estimate must match.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, bicgstab, spsolve

from jaxq.diffusion.workload import analyze
from jaxq.errors import InputError
from jaxq.model.distributions import Dist
from jaxq.model.policy_table import (
    RULE_NAMES,
    RULE_P,
    RULE_T1,
    RULE_T2,
    SAMPLE_K1_COMPLETION,
    SAMPLE_NEVER,
    SAMPLING_NAMES,
)
from jaxq.model.pss2x2 import PSS2x2, ScaledPSS2x2, system_of
from jaxq.model.validate import check_float
from jaxq.planning.modes import modes

IDLE = -1


def _decide(x, s, i1, i2, k1, rule, theta):
    """Post-decision server assignment (Definitions 2.7-2.8) written out case by case (``rule``: RULE_P, RULE_T1 or
    RULE_T2, the policy table's codes)."""
    s = list(s)
    k2 = 1 - k1
    q = [x[c] - (s[0] == c) - (s[1] == c) for c in (0, 1)]
    if s[k1] == IDLE and q[i2] > 0:  # dedicated server first (arrival rule of 2.7.2)
        s[k1] = i2
        q[i2] -= 1
    if rule == RULE_P:
        prio = i1
    elif rule == RULE_T1:
        prio = i1 if x[i1] >= theta else i2
    elif rule == RULE_T2:
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
    """Definition 2.10: the current mode after an event (``server``: the one that completed; ``sampling``: the policy
    table's SAMPLE_* code)."""
    if sampling == SAMPLE_NEVER:
        return mode
    if sampling == SAMPLE_K1_COMPLETION and (is_arrival or server != k1[mode]):
        return mode
    workload = x[0] / alpha[0] + x[1] / alpha[1]
    return lower if workload < level else higher


def _solve(lam_n, mu_n, h_hat, gamma, roles, rules, sampling, alpha, level, lower, higher, theta, cap, diag=None):
    i1, i2, k1 = roles
    mode0 = lower if 0.0 < level else higher
    start = (0, 0, IDLE, IDLE, mode0)
    index = {start: 0}
    states = [start]
    rows, cols, vals = [], [], []
    switch = []  # per state: the rate of the transitions that change the mode
    head = 0
    while head < len(states):
        switch.append(0.0)
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
            switch[head] += rate if m != mode else 0.0
        head += 1
    size = len(states)
    q = sp.csr_matrix((vals, (rows, cols)), shape=(size, size))
    out_rate = np.asarray(q.sum(axis=1)).ravel()
    a = sp.diags(gamma + out_rate) - q
    arr = np.array(states)
    cost = arr[:, 0] * h_hat[0] + arr[:, 1] * h_hat[1]
    if diag is None:
        v = spsolve(a.tocsc(), cost)
        return float(v[0]), size
    rhs = np.column_stack([cost, *_diag_functions(arr, np.asarray(switch), diag)])
    v = spsolve(a.tocsc(), rhs)
    return float(v[0, 0]), size, _diag_values(v[0, 1:], gamma)


def _diag_functions(arr, switch, diag):
    """The diagnostics' functions of the post-decision state (rows of ``arr``: x_1, x_2, s_1, s_2, mode, ...):
    server k idle while a class-i job waits (k-major), X_hat_p, in mode 0, and the rate of mode switches."""
    hpc, sqrt_n = diag
    x, s, mode = arr[:, 0:2], arr[:, 2:4], arr[:, 4]
    waits = [x[:, i] - (s[:, 0] == i) - (s[:, 1] == i) > 0 for i in (0, 1)]
    idle = [(s[:, k] == IDLE) & waits[i] for k in (0, 1) for i in (0, 1)]
    return [f.astype(float) for f in idle] + [x[:, hpc] / sqrt_n, (mode == 0).astype(float), switch]


def _diag_values(v, gamma: float) -> dict:
    """The discounted occupation measure ``gamma int exp(-gamma t) E f(Y_t) dt`` of each function of
    :func:`_diag_functions` (``v``: the solutions of ``(gamma - Q) u = f`` at the start), as the simulator reports
    them."""
    d = gamma * np.asarray(v, dtype=float)
    return {"idle_waiting": d[0:4].reshape(2, 2), "X_hat_p": float(d[4]),
            "mode_fraction": np.array([d[5], 1.0 - d[5]]), "switch_rate": float(d[6])}


SHAPE_TOL = 1e-9  # a gamma shape within this (relative) of an integer k is Erlang-k
LU_MAX_STATES = 100_000  # the sparse LU fallback of _solve_m_matrix (seconds here; minutes and GBs beyond)


def phase_type(d: Dist, key: str = "system") -> tuple[np.ndarray, np.ndarray]:
    """A unit-mean phase-type representation ``(alpha, S)`` of a primitive: the initial phase probabilities and
    the sub-generator (absorption rates ``-S 1``).

    Exponential: one phase of rate 1. Erlang-k (and gamma with an integer shape k): k phases in series, each of
    rate k. Hyperexponential with SCV c > 1 (balanced means, as sampled by :mod:`jaxq.sim.sampling`): phase j
    with probability ``p_j`` and rate ``2 p_j``, ``p_1 = (1 + sqrt((c - 1)/(c + 1)))/2`` rounded to a multiple of
    2^-32 below 1 as the sampler rounds it (its SCV within 2.3e-10 (c + 2 + 1/c) of c).

    Args:
        d: The primitive's law.
        key: The name an error gives.

    Returns:
        ``(alpha, S)``.

    Raises:
        InputError: Naming ``key``: a law without a finite phase-type form here.
    """
    if d.name == "exponential":
        return np.ones(1), -np.ones((1, 1))
    if d.name in ("erlang", "gamma"):
        shape = 1.0 / d.scv
        k = int(round(shape))
        if k >= 1 and abs(shape - k) <= SHAPE_TOL * shape:
            alpha = np.zeros(k)
            alpha[0] = 1.0
            return alpha, k * (np.eye(k, k=1) - np.eye(k))
    if d.name == "hyperexponential":  # p_1 on the sampler's 2^-32 grid (jaxq.sim.sampling.param_table): its law
        p1 = 0.5 * (1.0 + math.sqrt((d.scv - 1.0) / (d.scv + 1.0)))
        t = min(int(round(p1 * 2.0**32)), 2**32 - 1)
        p = np.array([t * 2.0**-32, (2**32 - t) * 2.0**-32])
        return p, -np.diag(2.0 * p)
    raise InputError(key, f"the exact solver needs phase-type primitives (exponential, Erlang, hyperexponential or "
                          f"gamma with an integer shape), not {d}")


def system_phase_types(system: PSS2x2):
    """``(arrivals, services)`` of :func:`phase_type` for the system's primitives.

    Args:
        system: The 2x2 system.

    Returns:
        (tuple | None): ``(arrivals, services)``: ``arrivals[i]`` and ``services[i][k]`` the laws ``(alpha, S)``; None
            for an exponential system (its chain needs no phases).

    Raises:
        InputError: Naming the first primitive without a phase-type form.
    """
    if system.exponential:
        return None
    return ([phase_type(d, f"system.interarrival[{i}]") for i, d in enumerate(system.interarrival)],
            [[phase_type(d, f"system.service[{i}][{k}]") for k, d in enumerate(row)]
             for i, row in enumerate(system.service)])


def _check_phase_type(alpha, S, key: str) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, S)`` as float arrays, refused unless a unit-mean phase-type law: alpha a probability vector, S a
    sub-generator (non-negative off the diagonal, rows summing to at most 0) with ``alpha (-S)^-1 1 = 1``."""
    a, m = np.asarray(alpha, dtype=float).ravel(), np.asarray(S, dtype=float)
    if m.shape != (a.size, a.size) or a.size == 0:
        raise InputError(key, f"needs alpha of length m and an m x m matrix S, got {a.shape} and {m.shape}")
    off = m - np.diag(np.diag(m))
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(m))) or np.any(a < 0) or abs(a.sum() - 1.0) > 1e-12:
        raise InputError(key, "alpha must be a probability vector")
    if np.any(off < 0) or np.any(m.sum(axis=1) > 1e-12 * np.abs(np.diag(m))):
        raise InputError(key, "S must be a sub-generator (non-negative off the diagonal, rows summing to <= 0)")
    try:
        mean = float(a @ np.linalg.solve(-m, np.ones(a.size)))
    except np.linalg.LinAlgError:
        raise InputError(key, "S is singular: the law is never absorbed") from None
    if not abs(mean - 1.0) <= 1e-9:
        raise InputError(key, f"the law must have mean 1 (the rates scale it), got {mean:.12g}")
    return a, m


def _solve_phase_type(lam_n, mu_n, h_hat, gamma, roles, rules, sampling, alpha, level, lower, higher, theta, cap,
                      arrival_ph, service_ph, diag=None):
    """:func:`_solve` with phase-type primitives: states ``(x_1, x_2, s_1, s_2, mode, a_1, a_2, b_1, b_2)``, a_i
    the phase of class i's interarrival time and b_k that of server k's job (0 when idle). Returns the value
    from the empty system with both interarrival phases drawn from alpha, and the number of states."""
    i1, i2, k1 = roles
    mode0 = lower if 0.0 < level else higher
    arr = [(a, S * lam_n[c]) for c, (a, S) in enumerate(arrival_ph)]
    svc = [[(a, S * mu_n[c, k]) for k, (a, S) in enumerate(service_ph[c])] for c in (0, 1)]
    index, states = {}, []
    switch = {}  # per state: the rate of the transitions that change the mode

    def state_id(z):
        j = index.get(z)
        if j is None:
            j = index[z] = len(states)
            states.append(z)
        return j

    start = [(p0 * p1, state_id((0, 0, IDLE, IDLE, mode0, j0, j1, 0, 0)))
             for j0, p0 in enumerate(arr[0][0]) for j1, p1 in enumerate(arr[1][0]) if p0 * p1 > 0]
    rows, cols, vals = [], [], []

    def emit(head, rate, z):
        rows.append(head)
        cols.append(state_id(z))
        vals.append(rate)

    def phase_moves(head, y, pos, S):
        """The moves of the phase at position ``pos`` of state y inside its law (sub-generator S, scaled)."""
        j = y[pos]
        for jj in range(S.shape[0]):
            if jj != j and S[j, jj] > 0:
                emit(head, S[j, jj], y[:pos] + (jj,) + y[pos + 1:])
        return -S[j].sum()  # its absorption rate

    def real_event(head, rate, x, a, s, b, mode, is_arrival, server):
        """An arrival or completion (``s``: the servers after it, before the decision): the mode, the decision,
        then the phase of every job that starts, drawn from its law's alpha."""
        m = _next_mode(mode, is_arrival, server, x, sampling, k1, alpha, level, lower, higher)
        if m != mode:
            switch[head] = switch.get(head, 0.0) + rate
        sn = _decide(x, s, i1[m], i2[m], k1[m], rules[m], theta)
        branches = [(rate, ())]
        for k in (0, 1):
            if sn[k] == IDLE:
                choice = [(1.0, 0)]
            elif s[k] != IDLE:  # busy before the decision: non-preemptive, its job keeps its phase
                choice = [(1.0, b[k])]
            else:
                start_alpha = svc[sn[k]][k][0]
                choice = [(p, j) for j, p in enumerate(start_alpha) if p > 0]
            branches = [(r * p, bs + (j,)) for r, bs in branches for p, j in choice]
        for r, bs in branches:
            emit(head, r, (x[0], x[1], sn[0], sn[1], m, a[0], a[1], bs[0], bs[1]))

    head = 0
    while head < len(states):
        x0, x1, s0, s1, mode, a0, a1, b0, b1 = y = states[head]
        x, s, a, b = (x0, x1), (s0, s1), (a0, a1), (b0, b1)
        for c in (0, 1):  # class c's interarrival phase (position 5 + c): a move inside its law, or an arrival
            al, S = arr[c]
            exit_rate = phase_moves(head, y, 5 + c, S)
            if exit_rate <= 0:
                continue
            for jj, p in enumerate(al):
                if p <= 0:
                    continue
                an = (jj, a[1]) if c == 0 else (a[0], jj)
                if x[c] < cap:
                    real_event(head, exit_rate * p, (x0 + (c == 0), x1 + (c == 1)), an, s, b, mode, True, -1)
                else:  # a full class loses the arrival; its next interarrival time starts all the same
                    emit(head, exit_rate * p, y[:5] + an + y[7:])
        for k in (0, 1):  # server k's job (phase at position 7 + k): a move inside its law, or a completion
            c = s[k]
            if c == IDLE:
                continue
            exit_rate = phase_moves(head, y, 7 + k, svc[c][k][1])
            if exit_rate > 0:
                sn = (IDLE, s[1]) if k == 0 else (s[0], IDLE)
                real_event(head, exit_rate, (x0 - (c == 0), x1 - (c == 1)), a, sn, b, mode, False, k)
        head += 1
    size = len(states)
    q = sp.csr_matrix((vals, (rows, cols)), shape=(size, size))
    out_rate = np.asarray(q.sum(axis=1)).ravel()
    arr_states = np.array(states)
    cost = arr_states[:, 0] * h_hat[0] + arr_states[:, 1] * h_hat[1]
    a = sp.diags(gamma + out_rate) - q
    v = _solve_m_matrix(a, cost, gamma)
    value = float(sum(p * v[j] for p, j in start))
    if diag is None:
        return value, size
    sw = np.zeros(size)
    for j, r in switch.items():
        sw[j] = r
    fs = _diag_functions(arr_states, sw, diag)
    if size <= LU_MAX_STATES:  # one sparse LU for every right-hand side (BiCGSTAB would iterate once per f)
        u = spsolve(a.tocsc(), np.column_stack(fs))
        us = [u[:, c] for c in range(u.shape[1])]
    else:
        us = [_solve_m_matrix(a, f, gamma) for f in fs]
    at_start = [sum(p * u[j] for p, j in start) for u in us]
    return value, size, _diag_values(np.asarray(at_start), gamma)


def _solve_m_matrix(a, b, gamma: float, tol: float = 1e-10) -> np.ndarray:
    """``a v = b`` for ``a = (gamma + out) I - Q`` (Q a generator's off-diagonal part), to a proven accuracy.

    BiCGSTAB with the diagonal as preconditioner and up to three rounds of refinement on the true residual (a
    fraction of a second at 10^5 states, where a sparse LU takes half a minute). The rows of ``a`` sum to gamma
    and it is an M-matrix (strictly diagonally dominant by gamma), so ``|a^-1|_inf <= 1/gamma``: in every state
    the error is at most ``|a v - b|_inf / gamma``. The solve stops when that bound is below ``tol`` times the
    largest value, or below what rounding allows (``64 eps max(a_ii) / gamma``, the problem's own conditioning:
    small gamma); if it does not get there, the sparse LU solves it (small chains only: a larger one is refused).
    """
    a = a.tocsr()
    diag = a.diagonal()
    pre = LinearOperator(a.shape, lambda r: r / diag)
    floor = max(tol, 64.0 * np.finfo(float).eps * float(diag.max()) / gamma)
    v = np.zeros_like(b)
    for attempt in range(5):
        r = b - a @ v
        if np.abs(r).max() / gamma <= floor * max(np.abs(v).max(), 1e-300):
            return v
        if attempt == 4:
            break
        dv, _ = bicgstab(a, r, M=pre, rtol=1e-13, atol=0.0, maxiter=10_000)
        if not np.all(np.isfinite(dv)):
            break
        v = v + dv
    if a.shape[0] > LU_MAX_STATES:
        raise InputError("n", f"the iterative solve of {a.shape[0]} states did not reach its error bound and a sparse "
                              f"LU of more than {LU_MAX_STATES} states would take too long; take a smaller n")
    return spsolve(a.tocsc(), b)


class Switching(NamedTuple):
    """The second mode of a switching policy (Definition 2.10) for :func:`discounted_cost`.

    Attributes:
        higher: The higher mode (0-based; default: the lower mode's, no switch).
        rule_higher: Its rule (default: the lower mode's).
        sampling: ``"never"``, ``"k1"`` (completions of the current mode's single-activity server: PP, T2T2) or
            ``"every"`` (every arrival and completion: T1T2, T2T1): the policy table's ``SAMPLING_NAMES``.
        switch_at: The switching level z in scaled workload units (the lower mode below sqrt(n) z).
    """

    higher: int | None = None
    rule_higher: str | None = None
    sampling: str = SAMPLING_NAMES[SAMPLE_NEVER]
    switch_at: float = math.inf


def _code(names: tuple[str, ...], name: str, key: str) -> int:
    """The policy table's code of a rule or sampling-time name (``names``: RULE_NAMES or SAMPLING_NAMES)."""
    if name not in names:
        raise ValueError(f"{key}: expected one of {', '.join(names)}, got {name!r}")
    return names.index(name)


def discounted_cost(system: PSS2x2 | ScaledPSS2x2, n: float, mode: int, rule: str, theta: int = 0, cap: int = 60,
                    check: bool = True, *, switching: Switching = Switching(), phase_types=None,
                    diagnostics: bool = False) -> dict:
    """Exact J_n from the empty state under a fixed-mode rule or a switching policy.

    An exponential system (and no ``phase_types``) is solved on the chain without phases (:func:`_solve`).

    Args:
        system: A 2x2 system with phase-type primitives (exponential, Erlang, hyperexponential, gamma with an
            integer shape: :func:`phase_type`), or its n-th system (:meth:`jaxq.model.pss2x2.PSS2x2.at`, whose rates
            are then read, not computed again).
        n: The index of the system.
        mode: The LP mode (0-based) whose roles (Definition 2.8) the servers follow (the lower mode of a switching
            policy).
        rule: ``"P"``, ``"T1"`` or ``"T2"`` in that mode.
        theta: The threshold Theta_n for T1/T2.
        cap: Truncation level per class.
        check: Also solve at ``cap + cap // 2`` and report the difference.
        switching: The higher mode, its rule, when the mode is sampled and the switching level (:class:`Switching`).
        phase_types (tuple | None): Optional ``(arrivals, services)``: unit-mean phase-type laws ``(alpha, S)`` for
            the two interarrival times and ``services[i][k]`` for activity (i, k), in place of the system's
            primitives (any phase-type law, e.g. a Coxian; the system's rates and cost are used as they are).
        diagnostics: Also the exact values of the simulator's diagnostics.

    Returns:
        dict with ``J`` (the value), ``states`` (size of the truncated chain) and ``truncation_change``
            (|J(cap) - J(1.5 cap)|, or None). With ``diagnostics``, also ``diagnostics``: the exact values of the
            simulator's diagnostics (:mod:`jaxq.sim.diagnostics`) under the discounted occupation measure ``gamma
            exp(-gamma t) dt`` on [0, inf): ``idle_waiting`` (2, 2), ``X_hat_p``, ``mode_fraction`` (2,) and
            ``switch_rate``, the same linear solve with other right-hand sides (``switch_rate``: the rate of the
            transitions that change the mode), and ``diagnostics_change``, their largest change from cap to 1.5 cap.

    Raises:
        InputError: Naming the primitive or ``phase_types``: a law without a phase-type form.
        ValueError: An unknown rule or sampling-time name.
    """
    higher, rule_higher, sampling, switch_at = switching
    base = system_of(system)
    if phase_types is not None:  # given: checked; the system's own forms are right by construction
        arrivals, services = phase_types
        phase_types = ([_check_phase_type(*arrivals[i], f"phase_types arrival {i}") for i in (0, 1)],
                       [[_check_phase_type(*services[i][k], f"phase_types service ({i}, {k})") for k in (0, 1)]
                        for i in (0, 1)])
    else:
        phase_types = system_phase_types(base)
    md = modes(base.lam, base.mu)
    nth = system.at(n)
    hi = mode if higher is None else higher
    rules = {mode: _code(RULE_NAMES, rule, "rule")}
    rules[hi] = rules[mode] if rule_higher is None else _code(RULE_NAMES, rule_higher, "rule_higher")
    sampling = _code(SAMPLING_NAMES, sampling, "sampling")
    roles = (md.i1.tolist(), md.i2.tolist(), md.k1.tolist())
    level = nth.sqrt_n * switch_at
    args = (nth.lam_n, nth.mu_n, nth.h_hat, base.gamma, roles, rules, sampling, md.alpha, level, mode, hi, theta)
    diag = (analyze(base).p, nth.sqrt_n) if diagnostics else None  # the HPC p of X_hat_p

    def solve(c):
        if phase_types is None:
            return _solve(*args, c, diag=diag)
        return _solve_phase_type(*args, c, *phase_types, diag=diag)

    value, size, *d = solve(cap)
    change = d_change = None
    if check:
        value2, _, *d2 = solve(cap + cap // 2)
        change = abs(value2 - value)
        value = value2
        if diagnostics:
            d_change = max(float(np.max(np.abs(np.asarray(d2[0][k]) - np.asarray(d[0][k])))) for k in d[0])
            d = d2
    out = {"J": value, "states": size, "truncation_change": change}
    if diagnostics:
        out.update(diagnostics=d[0], diagnostics_change=d_change)
    return out


FIRST_CAP = 20
START_CAP_PER_ROOT_N = 10  # queue lengths live on the sqrt(n) scale: the first cap is max(20, 10 sqrt(n))


def _states_bound(phase_types, cap: int, dual: bool) -> int:
    """An upper bound on the states of the truncated chain at ``cap`` (before building it): ``phase_types`` of
    :func:`system_phase_types` (None: one phase each)."""
    size = (lambda law: 1) if phase_types is None else (lambda law: law[0].size)  # noqa: E731
    arrivals, services = phase_types or ([None] * 2, [[None] * 2] * 2)
    servers = 1
    for k in (0, 1):
        servers *= 1 + sum(size(services[i][k]) for i in (0, 1))
    return (cap + 1) ** 2 * servers * size(arrivals[0]) * size(arrivals[1]) * (2 if dual else 1)


def policy_cost(system: PSS2x2 | ScaledPSS2x2, n: float, *, policy: str = "auto", switch_at: float | None = None,
                theta_exponent: float | None = None, theta_constant: float = 1.0, theta_rule: str | None = None,
                rtol: float = 1e-5, max_states: int = 2_000_000) -> dict:
    """Exact J_n under a policy as :func:`jaxq.sim.pss2x2.simulate` runs it.

    Its setup validates the arguments and gives the policy, Theta_n and switching level; the truncation cap is
    chosen here: from ``max(20, 10 sqrt(n))`` (queue lengths live on the sqrt(n) scale), each cap 1.5 times the
    last, until two successive values agree within ``rtol`` of the value (the error of the last cap is then smaller
    still: it decays geometrically in the cap). ``system`` may be the n-th system itself
    (:meth:`jaxq.model.pss2x2.PSS2x2.at`); the setup's n-th system is handed to every solve.

    Args:
        system: The 2x2 system (phase-type primitives).
        n: The scale n.
        policy: The policy's name (as :func:`jaxq.sim.pss2x2.simulate`).
        switch_at: The switching level z (None: the rule's).
        theta_exponent: The exponent a_bar of Theta_n (None: the default).
        theta_constant: The factor of the rule's constant c.
        theta_rule: The threshold rule (None: the default).
        rtol: The relative agreement of two successive caps' values.
        max_states: The largest chain allowed.

    Returns:
        dict with ``J``, ``truncation_change`` (the last two caps' difference), ``cap``, ``states``, ``policy``,
            ``theta`` (None without a threshold rule) and ``switch_at`` (None unless the policy switches).

    Raises:
        InputError: Naming ``n``: a chain whose states could exceed ``max_states``, named with the bound, before it
            is built (at once when the first cap's chain is too large, n = 10^3 and above for the example systems,
            or before a larger cap when the value has not settled by then); or as the setup refuses the arguments.
    """
    from jaxq.policies import pss2x2 as pol
    from jaxq.sim.pss2x2 import DEFAULT_THETA_EXPONENT, DEFAULT_THETA_RULE, Levels, setup

    check_float(rtol, "rtol", gt=0.0, lt=1.0)
    check_float(max_states, "max_states", ge=1.0)
    phase_types = system_phase_types(system_of(system))  # refuses laws without a phase-type form before anything else
    exponent = DEFAULT_THETA_EXPONENT if theta_exponent is None else theta_exponent
    levels = Levels(switch_at, exponent, DEFAULT_THETA_RULE if theta_rule is None else theta_rule, theta_constant)
    st = setup(system, n, policy=policy, levels=levels)
    res = pol.resolve(st.analysis, policy, st.switch_at)  # the level the setup chose (the rule's, or switch_at)
    kw = dict(theta=st.theta or 0, check=False, switching=Switching(res.higher, RULE_NAMES[res.rules.higher],
                                                                    SAMPLING_NAMES[res.rules.sampling], res.z))
    dual = res.lower != res.higher
    cap, last, out = max(FIRST_CAP, math.ceil(START_CAP_PER_ROOT_N * st.nth.sqrt_n)), None, None
    while True:
        bound = _states_bound(phase_types, cap, dual)
        if bound > max_states:
            raise InputError("n", f"the truncated chain at cap {cap} could have {bound:.3g} states (more than "
                                  f"max_states = {max_states:.3g})" + ("" if last is None else
                                  f" before J_n settles within rtol = {rtol:g}") + "; take a smaller n"
                                  + ("" if last is None else " or a larger rtol"))
        out = discounted_cost(st.nth, n, res.lower, RULE_NAMES[res.rules.lower], cap=cap, **kw)
        if last is not None:
            change = abs(out["J"] - last)
            if change <= rtol * abs(out["J"]):
                break
        last = out["J"]
        cap = cap + cap // 2
    return {"J": out["J"], "truncation_change": change, "cap": cap, "states": out["states"], "policy": st.policy,
            "theta": st.theta, "switch_at": st.switch_at}
