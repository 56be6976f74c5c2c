"""The optimal control of the n-th 2x2 system: its optimal discounted cost J*_n by policy iteration.

The model is the one the simulators run (the switched-policies paper, Section 2): the n-th rates, one server per
pool, non-preemptive service, cost ``h.X(t)/sqrt(n)`` with X the jobs in the system, discount rate gamma, the
system empty at time 0. With exponential primitives it is a continuous-time Markov decision process on the
states ``(x_1, x_2, s_1, s_2)``: jobs of each class in the system and the class each server serves (idle or
class 1 or 2). After every transition each idle server may start a waiting job of either class (both servers
can serve both classes) or stay idle: idling is an action, so every non-anticipating policy is one of these.

With phase-type primitives (:func:`jaxq.sim.exact_ctmc.phase_type`) the phase of each class's interarrival time
and of each job in service are part of the state, and the controller sees them and may act at every phase
change too. Its optimum is then a lower bound on the cost of every non-anticipating policy (which sees only the
history of arrivals and completions), and J*_n of the phase-blind policies lies between the two.

The queues are truncated at a cap Q_i per class. An arrival to a full class is turned away and charged
(:func:`charges`). Charged ``h_i / (gamma sqrt(n))``, the cost of a job that is never served, the truncated optimum
is an upper bound: the full system copies the truncated policy and never serves the jobs the truncation turned
away, which costs exactly the charge. :func:`optimal_cost` doubles each class's cap until doubling it moves this
optimum by at most 1e-6 (relative, both classes together). Charged its *floor*, the truncated optimum is a lower
bound: the truncated system can copy any policy of the full one (idling for the turned-away jobs' services), and
each turned-away job costs the full system at least the floor, since it arrives behind Q jobs of its class and
(labelled the last of them to start) leaves only after Q completions of class i, which come at rate at most
R_i; :func:`bracket_cost` doubles one cap of both queues until the two truncations agree, a proven bracket that
closes at small n (at large n the floor optimum games the cap: it lets a queue fill up near it). (Turned away for
free, ``lost``, is the plain lower bound; its optimum games the cap more.) For one cap the solver is Howard's
policy iteration on the post-decision states: evaluate the policy by a sparse linear solve of
``(gamma + r(y)) v(y) - sum_e r_e(y) v(pi(e(y))) = c(y)`` (BiCGSTAB with a diagonal preconditioner, warm
started, to an error bound proven from the M-matrix structure), improve it greedily (ties keep the current
action), until no action changes. The value is exact for the truncated chain to the solver's tolerance
(1e-9 relative).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from jaxq.errors import InputError
from jaxq.model.pss2x2 import PSS2x2, ScaledPSS2x2, system_of
from jaxq.sim.exact_ctmc import system_phase_types

IDLE = -1
SOLVE_RTOL = 1e-9  # error bound of the final policy evaluations, relative to the largest value
LOOSE_RTOL = 1e-6  # error bound while the policy still changes (modified policy iteration)
MAX_ROUNDS = 20  # restarts of BiCGSTAB on the true residual
ROUND_ITERATIONS = 3000
TIE_RTOL = 1e-9  # an action is changed only when it improves the value by more than this (relative)
BYTES_PER_ENTRY = 40  # the sparse matrix in construction (COO -> CSR) per stored transition
BYTES_PER_STATE = 160  # the solver's vectors per state (BiCGSTAB's work vectors, values, policy, tables)


class StateSpace(NamedTuple):
    """The truncated state space: axes ``(x_1, x_2, a_1, a_2, sigma_1, sigma_2)``.

    ``a_i`` is the phase of class i's interarrival time; ``sigma_k`` the code of server k: 0 idle, then one
    code per (class, phase) it may serve (``cls[k][sigma]`` its class). With exponential primitives
    every law has one phase and ``sigma_k`` is 0 idle, 1 class 1, 2 class 2.

    Attributes:
        cap: The cap Q of each queue.
        shape: The shape of the state array, ``(Q_1 + 1, Q_2 + 1, A_1, A_2, M_1, M_2)``.
        cls: ``cls[k]``, shape (M_k,): the class of each server code, -1 idle.
        code: ``code[k][i]``: the first code of (class i at server k).
    """

    cap: tuple[int, int]
    shape: tuple[int, ...]
    cls: tuple[np.ndarray, np.ndarray]  # (M_k,) the class of each server code, -1 idle
    code: tuple[tuple[int, int], tuple[int, int]]  # first code of (class i at server k): code[k][i]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))


def layout(cap: tuple[int, int], arrival_phases: tuple[int, int], service_phases) -> StateSpace:
    """The state space for caps ``cap`` and the number of phases of each law (``service_phases[i][k]``).

    Args:
        cap: The cap of each queue.
        arrival_phases: The phases of each class's interarrival law.
        service_phases (typing.Sequence[typing.Sequence[int]]): ``service_phases[i][k]``, the phases of the
            service law of class i at server k.

    Returns:
        The state space.
    """
    cls, code = [], []
    for k in (0, 1):
        c, first = [IDLE], []
        for i in (0, 1):
            first.append(len(c))
            c += [i] * service_phases[i][k]
        cls.append(np.array(c))
        code.append(tuple(first))
    shape = (cap[0] + 1, cap[1] + 1, arrival_phases[0], arrival_phases[1], len(cls[0]), len(cls[1]))
    return StateSpace(tuple(cap), shape, tuple(cls), tuple(code))


def states_and_bytes(lay: StateSpace) -> tuple[int, int]:
    """The number of states and an estimate of the memory a solve at this layout takes.

    Args:
        lay: The state space.

    Returns:
        ``(states, bytes)``.
    """
    per_row = 1 + sum(lay.shape[2:4]) + 2 * max(lay.shape[4:]) * 4  # phase moves and events, phase draws
    return lay.size, lay.size * (BYTES_PER_STATE + BYTES_PER_ENTRY * per_row)


@dataclass(frozen=True, eq=False)
class Chain:
    """The n-th system's data on a layout: rates, laws, the grids of the state variables.

    Attributes:
        lay: The state space.
        lam: (2,) n-th arrival rates.
        mu: (2, 2) n-th service rates.
        arrivals: ``[(alpha, S)]`` unit-mean laws per class.
        services: ``[[(alpha, S)]]`` per activity (i, k).
        h_hat: ``h / sqrt(n)``.
        gamma: The discount rate.
        charge: The cost of each class-i arrival turned away at the cap (0: lost for free).
        grids: The value of each state variable at each state, flat (set at construction).
    """

    lay: StateSpace
    lam: np.ndarray  # (2,) n-th arrival rates
    mu: np.ndarray  # (2, 2) n-th service rates
    arrivals: list  # [(alpha, S)] unit-mean laws per class
    services: list  # [[(alpha, S)]] per activity (i, k)
    h_hat: np.ndarray  # h / sqrt(n)
    gamma: float
    charge: tuple = (0.0, 0.0)  # the cost of each class-i arrival turned away at the cap (0: lost for free)
    grids: tuple = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "grids", tuple(g.ravel() for g in np.indices(self.lay.shape)))

    def cost(self) -> np.ndarray:
        """The cost rate of each post-decision state: ``h.x / sqrt(n)`` plus the rate of arrivals turned away
        times their ``charge``."""
        c = self.h_hat[0] * self.grids[0] + self.h_hat[1] * self.grids[1]
        return c + sum(self.turned_away(i) * self.charge[i] for i in (0, 1) if self.charge[i] != 0.0)

    def turned_away(self, i: int) -> np.ndarray:
        """The rate of class-i arrivals lost at the cap, per state (0 below it).

        Args:
            i: The class (0 or 1).

        Returns:
            The rate per state.
        """
        _, S = self.arrivals[i]
        exit_rate = self.lam[i] * -S.sum(axis=1)  # per interarrival phase; the next phase restarts from alpha
        return np.where(self.grids[i] >= self.lay.cap[i], exit_rate[self.grids[2 + i]], 0.0)

    def in_service(self, i: int) -> np.ndarray:
        """Jobs of class i in service, per state.

        Args:
            i: The class (0 or 1).

        Returns:
            The count per state.
        """
        return sum((self.lay.cls[k][self.grids[4 + k]] == i).astype(np.int64) for k in (0, 1))

    def valid(self) -> np.ndarray:
        return (self.in_service(0) <= self.grids[0]) & (self.in_service(1) <= self.grids[1])


def _strides(shape) -> np.ndarray:
    return np.array([int(np.prod(shape[a + 1:])) for a in range(len(shape))])


def transitions(ch: Chain):
    """Every transition out of every post-decision state: ``(src, pre, rate, real)`` arrays, ``pre`` the state
    just after it (before the idle servers decide), ``real`` whether it is an arrival or a completion (not a phase
    change inside a law). Arrivals to a full class are lost (the interarrival phase restarts).

    Args:
        ch: The chain.

    Returns:
        (tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]): ``(src, pre, rate, real)``.
    """
    lay, g = ch.lay, ch.grids
    st = _strides(lay.shape)
    idx = np.arange(lay.size)
    valid = ch.valid()
    src, pre, rate, real = [], [], [], []

    def add(mask, to, r, event=True):
        m = mask & valid & (r > 0)
        src.append(idx[m])
        pre.append(to[m])
        rate.append(np.broadcast_to(r, idx.shape)[m])
        real.append(np.full(int(m.sum()), event))

    for c in (0, 1):  # class c's interarrival phase a_c (axis 2 + c)
        al, S = ch.arrivals[c]
        a = g[2 + c]
        exit_ = -S.sum(axis=1)
        for j in range(S.shape[0]):
            for jj in range(S.shape[0]):
                if jj != j and S[j, jj] > 0:
                    add(a == j, idx + (jj - j) * st[2 + c], np.full(lay.size, ch.lam[c] * S[j, jj]), False)
            for jj, p in enumerate(al):
                if p > 0 and exit_[j] > 0:
                    full = g[c] >= lay.cap[c]
                    to = idx + (jj - j) * st[2 + c] + np.where(full, 0, st[c])
                    add(a == j, to, np.full(lay.size, ch.lam[c] * exit_[j] * p))
    for k in (0, 1):  # server k's job: phase moves and completions (axis 4 + k)
        sig = g[4 + k]
        for i in (0, 1):
            al, S = ch.services[i][k]
            r = ch.mu[i, k]
            first = lay.code[k][i]
            exit_ = -S.sum(axis=1)
            for j in range(S.shape[0]):
                here = sig == first + j
                for jj in range(S.shape[0]):
                    if jj != j and S[j, jj] > 0:
                        add(here, idx + (jj - j) * st[4 + k], np.full(lay.size, r * S[j, jj]), False)
                if exit_[j] > 0:
                    add(here, idx - st[i] - sig * st[4 + k], np.full(lay.size, r * exit_[j]))
    return np.concatenate(src), np.concatenate(pre), np.concatenate(rate), np.concatenate(real)


class Actions(NamedTuple):
    """The decisions at a pre-decision state: per server the option ``o_k``: ``< M_k`` keep code o_k (idle stays
    idle, a busy server goes on), ``M_k + i`` start a job of class i (its phase drawn from the law's alpha).

    Attributes:
        options: (P, 2): the option pairs.
        starts: (P, 2): jobs of class i started by the pair.
        per_config: Per (sigma_1, sigma_2) pre-decision configuration: the indices of its feasible pairs.
    """

    options: np.ndarray  # (P, 2): the option pairs
    starts: np.ndarray  # (P, 2): jobs of class i started by the pair
    per_config: list  # per (sigma_1, sigma_2) pre-decision configuration: the indices of its feasible pairs


def actions(lay: StateSpace) -> Actions:
    """The option pairs of every pre-decision server configuration of ``lay`` (a busy server keeps its code, an idle
    one stays idle or starts a job of either class).

    Args:
        lay: The state space.

    Returns:
        The actions.
    """
    m = lay.shape[4:]
    pairs, index = [], {}
    per_config = []
    for s1 in range(m[0]):
        for s2 in range(m[1]):
            own = []
            for o1 in ([s1] if s1 != 0 else [0, m[0], m[0] + 1]):
                for o2 in ([s2] if s2 != 0 else [0, m[1], m[1] + 1]):
                    if (o1, o2) not in index:
                        index[(o1, o2)] = len(pairs)
                        pairs.append((o1, o2))
                    own.append(index[(o1, o2)])
            per_config.append(np.array(own))
    options = np.array(pairs)
    starts = np.zeros((len(pairs), 2), dtype=np.int64)
    for p, (o1, o2) in enumerate(pairs):
        for k, o in enumerate((o1, o2)):
            if o >= m[k]:
                starts[p, o - m[k]] += 1
    return Actions(options, starts, per_config)


def _option_values(ch: Chain, v: np.ndarray) -> np.ndarray:
    """``U[x, a, o_1, o_2]``: the expected value after options (o_1, o_2) (a start averages the value over the
    started job's first phase)."""
    lay = ch.lay
    u = v.reshape(lay.shape)
    for k in (0, 1):
        axis = 4 + k
        extra = []
        for i in (0, 1):
            al = ch.services[i][k][0]
            first = lay.code[k][i]
            block = np.take(u, np.arange(first, first + al.size), axis=axis)
            extra.append(np.tensordot(block, al, axes=([axis], [0])))
        u = np.concatenate([u] + [np.expand_dims(e, axis) for e in extra], axis=axis)
    return u


def greedy(ch: Chain, acts: Actions, v: np.ndarray, current: np.ndarray | None = None,
           tie_rtol: float = TIE_RTOL):
    """The greedy decision at every pre-decision state: the index of the option pair (into ``acts.options``) that
    minimises the value after it; where ``current`` is given it is kept unless another pair is better
    by more than ``tie_rtol`` of the largest value.

    Args:
        ch: The chain.
        acts: Its :func:`actions`.
        v: The values of the post-decision states.
        current: The current decisions (None: none).
        tie_rtol: The improvement, relative to the largest value, that changes a current decision.

    Returns:
        (numpy.ndarray): The option pair per pre-decision state (int16).
    """
    lay = ch.lay
    u = _option_values(ch, v)
    m1, m2 = lay.shape[4:]
    x1 = np.arange(lay.shape[0]).reshape(-1, 1, 1, 1)
    x2 = np.arange(lay.shape[1]).reshape(1, -1, 1, 1)
    in_srv = [[lay.cls[k] == i for k in (0, 1)] for i in (0, 1)]
    cnt = np.zeros((len(acts.options), 2), dtype=np.int64)
    for p, (o1, o2) in enumerate(acts.options):
        for i in (0, 1):
            cnt[p, i] = acts.starts[p, i] + sum(int(o < m and in_srv[i][k][o]) for k, (o, m) in
                                                enumerate(((o1, m1), (o2, m2))))
    policy = np.zeros(lay.shape, dtype=np.int16)
    tol = tie_rtol * max(float(np.abs(v).max()), 1e-300)
    cur = None if current is None else current.reshape(lay.shape)
    for s1 in range(m1):
        for s2 in range(m2):
            own = acts.per_config[s1 * m2 + s2]
            vals = np.stack([np.where((cnt[p, 0] <= x1) & (cnt[p, 1] <= x2),
                                      u[..., acts.options[p, 0], acts.options[p, 1]], np.inf) for p in own], axis=-1)
            best = np.argmin(vals, axis=-1)
            bv = np.take_along_axis(vals, best[..., None], -1)[..., 0]
            if cur is not None:
                c = cur[..., s1, s2]
                hit = own[None, None, None, None, :] == c[..., None]
                pos = np.argmax(hit, axis=-1)
                cv = np.take_along_axis(vals, pos[..., None], -1)[..., 0]
                keep = hit.any(axis=-1) & np.isfinite(cv) & (cv <= bv + tol)
                best = np.where(keep, pos, best)
            policy[..., s1, s2] = own[best]
    return policy.ravel()


def _post(ch: Chain, acts: Actions, pre: np.ndarray, pair: np.ndarray):
    """The post-decision states of pre-decision states ``pre`` under option pairs ``pair``, with probabilities:
    ``(states (B, len), probs (B, len))``, B the most phase draws of a pair of starts (0-probability padding)."""
    lay = ch.lay
    st = _strides(lay.shape)
    m = lay.shape[4:]
    outs = [(pre, np.ones(pre.size))]
    for k in (0, 1):
        sig = ch.grids[4 + k][pre]
        o = acts.options[pair, k]
        keep = o < m[k]
        laws = [ch.services[i][k][0] for i in (0, 1)]
        new = []
        for j in range(max(al.size for al in laws)):
            code = np.where(keep, o, 0)
            prob = np.where(keep, 1.0 if j == 0 else 0.0, 0.0)
            for i, al in enumerate(laws):
                if j < al.size:
                    start = o == m[k] + i
                    code = np.where(start, lay.code[k][i] + j, code)
                    prob = np.where(start, al[j], prob)
            for states, probs in outs:
                new.append((states + (code - sig) * st[4 + k], probs * prob))
        outs = new
    return np.stack([s for s, _ in outs]), np.stack([p for _, p in outs])


def policy_matrix(ch: Chain, acts: Actions, trans, policy: np.ndarray) -> sp.csr_matrix:
    """``gamma + r(y)`` on the diagonal, ``-rate x probability`` to each post-decision state off it.

    Args:
        ch: The chain.
        acts: Its :func:`actions`.
        trans (tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]): The chain's :func:`transitions`.
        policy: The option pair per pre-decision state.

    Returns:
        The matrix ``A_pi``.
    """
    src, pre, rate, _ = trans
    posts, probs = _post(ch, acts, pre, policy[pre])
    n = ch.lay.size
    rows = np.concatenate([np.tile(src, posts.shape[0]), np.arange(n)])
    cols = np.concatenate([posts.ravel(), np.arange(n)])
    out = np.bincount(src, weights=rate, minlength=n)
    vals = np.concatenate([-(probs * rate).ravel(), ch.gamma + out])
    keep = vals != 0
    return sp.csr_matrix((vals[keep], (rows[keep], cols[keep])), shape=(n, n))


def _bicgstab(a, b, dinv, tol, maxiter):
    """Preconditioned BiCGSTAB from 0 until the recursive residual's largest entry is at most ``tol``.

    ``dinv``: the preconditioner, an array (Jacobi: the inverse diagonal, applied entrywise) or a function
    (``dinv(r)`` approximates ``a^-1 r``). Written out (not scipy's) to keep the inner products off BLAS: a threaded
    ``ddot`` costs milliseconds a call on small shared machines, a hundred times the sparse product. Returns
    ``(x, matvecs)``.
    """
    x = np.zeros_like(b)
    r = b.copy()
    rhat = r.copy()
    rho = alpha = omega = 1.0
    v = np.zeros_like(b)
    p = np.zeros_like(b)
    apply = dinv if callable(dinv) else dinv.__mul__  # the preconditioner as a function, decided once
    with np.errstate(divide="ignore", invalid="ignore"):  # a breakdown is caught below, not warned about
        return _bicgstab_loop(a, apply, tol, maxiter, x, r, rhat, rho, alpha, omega, v, p)


def _bicgstab_loop(a, apply, tol, maxiter, x, r, rhat, rho, alpha, omega, v, p):
    for it in range(1, maxiter + 1):
        rho1 = np.sum(rhat * r)
        if not (np.isfinite(rho1) and rho1 != 0.0 and np.isfinite(omega) and omega != 0.0):
            return x, 2 * it  # a breakdown: the caller restarts from the true residual
        p = r + (rho1 / rho) * (alpha / omega) * (p - omega * v)
        ph = apply(p)
        v = a @ ph
        alpha = rho1 / np.sum(rhat * v)
        if not np.isfinite(alpha):
            return x, 2 * it
        s = r - alpha * v
        x += alpha * ph
        if np.abs(s).max() <= tol:
            return x, 2 * it
        sh = apply(s)
        t = a @ sh
        omega = np.sum(t * s) / np.sum(t * t)
        if not np.isfinite(omega):
            return x, 2 * it
        x += omega * sh
        r = s - omega * t
        rho = rho1
        if np.abs(r).max() <= tol:
            return x, 2 * it
    return x, 2 * maxiter


def solve(a: sp.csr_matrix, b: np.ndarray, v0: np.ndarray, gamma: float, rtol: float = SOLVE_RTOL,
          preconditioner=None):
    """``a v = b`` (rows of ``a`` summing to gamma, an M-matrix: ``|a^-1|_inf <= 1/gamma``) from ``v0``:
    BiCGSTAB rounds on the true residual until ``|a v - b|_inf / gamma`` (a bound on the error in every
    state) is below ``rtol`` of the largest value. Returns ``(v, matvecs)``.

    Args:
        a: The matrix.
        b: The right-hand side.
        v0: The start.
        gamma: The discount rate.
        rtol: The error bound, relative to the largest value.
        preconditioner (typing.Callable | None): ``preconditioner(r)`` approximating ``a^-1 r`` (for example the
            ``solve`` of scipy's sparse LU factors of ``a``: a direct solve whose error bound is still proven from
            the true residual); None: Jacobi (the inverse diagonal).

    Returns:
        (tuple[numpy.ndarray, int]): ``(v, matvecs)``.

    Raises:
        InputError: Naming ``n`` when the error bound is not reached in ``MAX_ROUNDS`` rounds.
    """
    dinv = 1.0 / a.diagonal() if preconditioner is None else preconditioner
    floor = max(rtol, 64.0 * np.finfo(float).eps * float(a.diagonal().max()) / gamma)
    v, its = v0.copy(), 0
    for _ in range(MAX_ROUNDS):
        r = b - a @ v
        bound = floor * max(np.abs(v).max(), np.abs(b).max() / gamma, 1e-300) * gamma
        if np.abs(r).max() <= bound:
            return v, its
        dv, k = _bicgstab(a, r, dinv, 0.25 * bound, ROUND_ITERATIONS)
        its += k
        if not np.all(np.isfinite(dv)):
            break
        v = v + dv
    raise InputError("n", f"the policy evaluation of {a.shape[0]:,} states did not reach its error bound in "
                          f"{its} products")


class CapSolution(NamedTuple):
    """Policy iteration's answer on one truncation.

    Attributes:
        chain: The truncated chain.
        value: v*(y) on the post-decision states.
        policy: Option pair per pre-decision state.
        start: J*_n from the empty system.
        iterations: Policy improvements.
        matvecs: Matrix-vector products (the evaluations' work).
    """

    chain: Chain
    value: np.ndarray  # v*(y) on the post-decision states
    policy: np.ndarray  # option pair per pre-decision state
    start: float  # J*_n from the empty system
    iterations: int  # policy improvements
    matvecs: int


def start_value(ch: Chain, v: np.ndarray) -> float:
    """The value from the empty system: both interarrival phases drawn from their laws' alpha.

    Args:
        ch: The chain.
        v: The values of the post-decision states.

    Returns:
        The value.
    """
    lay = ch.lay
    u = v.reshape(lay.shape)[0, 0, :, :, 0, 0]
    return float(ch.arrivals[0][0] @ u @ ch.arrivals[1][0])


def work_conserving_start(ch: Chain) -> np.ndarray:
    """Values whose greedy policy starts every job it can ("fewer jobs waiting is better"): where policy iteration
    starts without a smaller cap's solution.

    Args:
        ch: The chain.

    Returns:
        The values.
    """
    return ch.cost() / ch.gamma - sum(ch.in_service(i) for i in (0, 1)) * float(ch.h_hat.min()) / ch.gamma


def policy_iteration(ch: Chain, v0: np.ndarray | None = None, policy0: np.ndarray | None = None,
                     max_iterations: int = 200, evaluate=None) -> CapSolution:
    """Howard's policy iteration on one truncation, from ``policy0`` (default: greedy on ``v0``, or on
    :func:`work_conserving_start`). ``evaluate(a, b, v0, gamma, rtol) -> (v, work)`` solves a policy's equations
    (default :func:`solve`; ``work`` is summed into ``matvecs``).

    Args:
        ch: The chain.
        v0: The start values (None: :func:`work_conserving_start`).
        policy0: The start decisions (None: greedy on ``v0``).
        max_iterations: The most policy improvements.
        evaluate (typing.Callable | None): The policy evaluation (None: :func:`solve`).

    Returns:
        The solution.

    Raises:
        InputError: Naming ``n`` when the policy does not settle in ``max_iterations`` improvements, or as
            :func:`solve`.
    """
    evaluate = solve if evaluate is None else evaluate
    acts = actions(ch.lay)
    trans = transitions(ch)
    cost = ch.cost()
    v0 = work_conserving_start(ch) if v0 is None else v0
    policy = greedy(ch, acts, v0) if policy0 is None else policy0
    v, total, rtol = v0, 0, LOOSE_RTOL
    for it in range(1, max_iterations + 1):
        v, mv = evaluate(policy_matrix(ch, acts, trans, policy), cost, v, ch.gamma, rtol)
        total += mv
        new = greedy(ch, acts, v, policy, max(TIE_RTOL, 2.0 * rtol))  # a change beyond the values' error
        if np.array_equal(new, policy):
            if rtol == SOLVE_RTOL:
                return CapSolution(ch, v, policy, start_value(ch, v), it, total)
            rtol = SOLVE_RTOL  # the policy has settled on loose values: confirm it on exact ones
        policy = new
    raise InputError("n", f"policy iteration did not settle in {max_iterations} improvements")


def warm_start(last: CapSolution, ch: Chain) -> tuple[np.ndarray, np.ndarray]:
    """The start of policy iteration on ``ch`` from a smaller cap's solution: its values and decisions extended
    (:func:`extend`), then greedy where the extended decision is not allowed.

    Args:
        last: The smaller cap's solution.
        ch: The larger chain.

    Returns:
        ``(v0, policy0)``.
    """
    v0, p0 = extend(last.chain, ch, last.value, last.policy)
    acts = actions(ch.lay)
    return v0, greedy(ch, acts, v0, np.where(_feasible(ch, acts, p0), p0, -1))


def extend(old: Chain, new: Chain, values: np.ndarray, policy: np.ndarray):
    """A solution on a smaller cap as the start of a larger one: values and decisions of a state inside the old cap
    (the decision re-checked for feasibility by the first improvement).

    Along a queue whose cap grew from q to Q, a state up to ``h = max(q // 2, min(q, 2))`` takes its own values and
    decisions, and the states above take those of ``h .. q`` stretched over ``h .. Q``: the states near the new cap decide
    as the old chain does near its cap, where the charges of turned-away arrivals shape the decisions, and the
    states between as in its interior. (The decisions at the old cap copied to every state beyond it would start
    the new states with decisions shaped by the old cap, which policy iteration undoes a few states per
    improvement: ``pss_T2`` at n = 1000, caps (64, 256) to (64, 512), takes 161 improvements so and 7 stretched.)

    Args:
        old: The smaller chain.
        new: The larger chain.
        values: The values on ``old``.
        policy: The decisions on ``old``.

    Returns:
        (tuple[numpy.ndarray, numpy.ndarray]): ``(values, policy)`` on ``new``.
    """
    lo, hi = old.lay, new.lay
    g = new.grids
    xs = []
    for i in (0, 1):
        q, cap, x = lo.cap[i], hi.cap[i], g[i]
        if cap > q:
            half = max(q // 2, min(q, 2))  # two jobs of a class can be in service: those states map to themselves
            x = np.where(x <= half, x, half + np.rint((x - half) * (q - half) / (cap - half)).astype(x.dtype))
        xs.append(np.minimum(x, q))
    st = _strides(lo.shape)
    j = xs[0] * st[0] + xs[1] * st[1] + g[2] * st[2] + g[3] * st[3] + g[4] * st[4] + g[5] * st[5]
    h = new.h_hat
    v = values[j] + (h[0] * (g[0] - xs[0]) + h[1] * (g[1] - xs[1])) / new.gamma
    return v, policy[j]


def _laws(phase_types):
    if phase_types is None:
        one = (np.ones(1), -np.ones((1, 1)))
        return [one, one], [[one, one], [one, one]]
    return phase_types


def layout_of(phase_types, cap: tuple[int, int]) -> StateSpace:
    """The layout at caps ``cap`` for the laws ``phase_types`` (None: exponential), without building anything.

    Args:
        phase_types (tuple | None): ``(arrivals, services)`` of :func:`jaxq.sim.exact_ctmc.system_phase_types`
            (None: exponential).
        cap: The cap of each queue.

    Returns:
        The state space.
    """
    arrivals, services = _laws(phase_types)
    return layout(cap, (arrivals[0][0].size, arrivals[1][0].size),
                  [[services[i][k][0].size for k in (0, 1)] for i in (0, 1)])


TRUNCATIONS = ("lost", "floor", "never_served")


def charges(lam_n, mu_n, services, h_hat, gamma: float, cap: tuple[int, int], truncation: str) -> tuple:
    """The charge per class-i arrival turned away at the cap.

    ``lost``: 0. ``never_served``: ``h_i / (gamma sqrt(n))``, the cost of a job never served (an upper bound).
    ``floor``: ``h_i / (gamma sqrt(n)) (1 - (R_i / (R_i + gamma))^Q_i)``, a lower bound on what such a job costs
    in the full system: it arrives behind ``Q_i`` jobs of its class, and (the jobs of a class being exchangeable,
    label it the last of them to start) it leaves only after ``Q_i`` completions of class i, which come at rate
    at most ``R_i = sum_k mu_ik max_phase exit_ik`` (both servers serving class i in their fastest phase), so its
    time in the system is at least a Gamma(Q_i, R_i) time.

    Args:
        lam_n (numpy.ndarray): The n-th arrival rates, (2,).
        mu_n (numpy.ndarray): The n-th service rates, (2, 2).
        services (list): ``[[(alpha, S)]]`` unit-mean service laws per activity (i, k).
        h_hat (numpy.ndarray): ``h / sqrt(n)``.
        gamma: The discount rate.
        cap: The cap of each queue.
        truncation: ``"lost"``, ``"floor"`` or ``"never_served"``.

    Returns:
        The charge of each class.

    Raises:
        ValueError: ``truncation`` is none of :data:`TRUNCATIONS`.
    """
    if truncation == "lost":
        return (0.0, 0.0)
    never = [float(h_hat[i]) / gamma for i in (0, 1)]
    if truncation == "never_served":
        return tuple(never)
    if truncation != "floor":
        raise ValueError(f"truncation: expected one of {TRUNCATIONS}, got {truncation!r}")
    out = []
    for i in (0, 1):
        r = sum(float(mu_n[i, k]) * float((-services[i][k][1].sum(axis=1)).max()) for k in (0, 1))
        out.append(never[i] * -math.expm1(cap[i] * math.log(r / (r + gamma))))
    return tuple(out)


def chain(system: PSS2x2 | ScaledPSS2x2, n: float, cap: tuple[int, int], phase_types=None,
          truncation: str = "lost") -> Chain:
    """The n-th system truncated at ``cap``, arrivals to a full class turned away and charged as ``truncation``
    says (:func:`charges`).

    Args:
        system: The 2x2 system, or its n-th system (:meth:`jaxq.model.pss2x2.PSS2x2.at`: its rates are then read,
            not computed again).
        n: The index of the system.
        cap: The cap of each queue.
        phase_types (tuple | None): ``(arrivals, services)`` of :func:`jaxq.sim.exact_ctmc.system_phase_types`
            (None: exponential).
        truncation: ``"lost"``, ``"floor"`` or ``"never_served"``.

    Returns:
        The chain.

    Raises:
        ValueError: As :func:`charges`.
    """
    nth = system.at(n)
    lam_n, mu_n, h_hat = nth.lam_n, nth.mu_n, nth.h_hat
    arrivals, services = _laws(phase_types)
    gamma = float(nth.system.gamma)
    return Chain(layout_of(phase_types, cap), lam_n, mu_n, arrivals, services, h_hat, gamma,
                 charges(lam_n, mu_n, services, h_hat, gamma, cap, truncation))


MAX_STATES = 3_000_000
MAX_BYTES = 8 * 2**30


def check_size(lay: StateSpace, max_states: int, max_bytes: float, key: str) -> None:
    """Refuse a truncation whose chain is larger than ``max_states`` or would take more than ``max_bytes``.

    Args:
        lay: The state space.
        max_states: The most states.
        max_bytes: The most bytes.
        key: The key a refusal names.

    Raises:
        InputError: Naming ``key`` when the chain is too large.
    """
    size, nbytes = states_and_bytes(lay)
    if size > max_states or nbytes > max_bytes:
        raise InputError(key, f"the optimum at queue caps ({lay.cap[0]}, {lay.cap[1]}) needs {size:,} states and "
                              f"about {nbytes / 2**30:.1f} GiB (limits: max_states = {max_states:,}, "
                              f"{max_bytes / 2**30:.0f} GiB); take a smaller n or queue_cap")


class Optimum(NamedTuple):
    """J*_n of one truncation, with what a larger cap changes (see :func:`optimal_cost`).

    Attributes:
        J_star: The never-served truncation's optimum at ``cap``: an upper bound on J*_n, the cost of a policy.
        J_lower: With ``bracket``: the floor truncation's optimum at ``cap``, a lower bound on J*_n; else None.
        truncation_change: Without ``bracket``: the relative change of ``J_star`` when the cap of class 1 is
            doubled plus the one when the cap of class 2 is; with ``bracket``: ``(J_star - J_lower) / J_star``.
        cap: The caps ``(Q_1, Q_2)`` of the two queues.
        states: The states of the truncated chain at ``cap``.
        iterations: Policy improvements (all solves).
        matvecs: Matrix-vector products (all solves).
        updates: State updates: each solve's matrix-vector products times its chain's states, summed.
        wall_s: Seconds.
        solution: The never-served truncation's at ``cap``: its decisions are the policy reported.
        phases_observed: Whether the primitives have phases.
    """

    J_star: float  # the never-served truncation's optimum: an upper bound on J*_n, the cost of a policy
    J_lower: float | None  # with bracket: the floor truncation's optimum, a lower bound on J*_n
    truncation_change: float
    cap: tuple[int, int]
    states: int
    iterations: int
    matvecs: int
    updates: int  # sum over the solves of matrix-vector products x states
    wall_s: float
    solution: CapSolution  # the never-served truncation's: its decisions are the policy reported
    phases_observed: bool


LOWER = "floor"
FIRST_CAP_PER_ROOT_N = 2  # queue lengths live on the sqrt(n) scale; each class's cap doubles from here
BRACKET_FIRST_CAP_PER_ROOT_N = 4
MIN_CAP = 6
TRUNCATION_RTOL = 1e-6


def first_cap(n: float, queue_cap: int | None = None, bracket: bool = False) -> int:
    """The first queue cap of :func:`optimal_cost`: ``queue_cap``, or ``max(6, 2 sqrt(n))`` (``max(6, 4 sqrt(n))``
    with ``bracket``).

    Args:
        n: The index of the system.
        queue_cap: The user's cap (None: none).
        bracket: Whether the cap is the bracket's.

    Returns:
        The cap.
    """
    if queue_cap is not None:
        return int(queue_cap)
    per_root = BRACKET_FIRST_CAP_PER_ROOT_N if bracket else FIRST_CAP_PER_ROOT_N
    return max(MIN_CAP, math.ceil(per_root * math.sqrt(n)))


def optimal_cost(system: PSS2x2 | ScaledPSS2x2, n: float, queue_cap: int | None = None, *,
                 rtol: float = TRUNCATION_RTOL, max_states: int = MAX_STATES, max_bytes: float = MAX_BYTES,
                 evaluate=None, bracket: bool = False) -> Optimum:
    """J*_n of the n-th system from empty: the optimum of the truncation that charges arrivals to a full class the
    cost of a job never served, at caps where doubling either class's cap changes it by at most ``rtol / 2``.

    The never-served truncation's optimum ``J_star`` is an upper bound on J*_n and the cost of a policy of the n-th
    system (the truncated decisions, the turned-away jobs never served); it falls as a cap grows. Each class's cap
    starts at ``max(6, 2 sqrt(n))`` (or ``queue_cap``). In each round the two chains with one class's cap doubled
    are solved (at once, on two threads), and when ``J_star`` moves by more than ``rtol / 2`` (relative) in either,
    the doubled cap that moves it most is kept and the next round starts from it. ``truncation_change`` is the two
    tests' changes added, at the caps reported. With ``queue_cap`` there is one round and no cap is kept doubled.
    Every test starts from the solution kept (:func:`warm_start`).

    With ``bracket`` the answer is instead a proven bracket at one cap Q of both queues (:func:`bracket_cost`).

    Refuses (:class:`~jaxq.errors.InputError` naming ``queue_cap`` or ``n``) a truncation whose states or memory
    exceed the limits, before building it.

    Args:
        system: The 2x2 system (exponential or phase-type primitives), or its n-th system
            (:meth:`jaxq.model.pss2x2.PSS2x2.at`); every truncation is built from the one n-th system.
        n: The index of the system.
        queue_cap: The first cap of both queues (None: ``max(6, 2 sqrt(n))``, doubled per class as above).
        rtol: The largest ``truncation_change`` accepted.
        max_states: A larger chain is refused before it is built.
        max_bytes: A chain that would take more bytes is refused before it is built.
        evaluate (typing.Callable | None): The policy evaluation of :func:`policy_iteration` (None: :func:`solve`).
        bracket: Bracket J*_n between the floor and the never-served truncations at one cap instead.

    Returns:
        The optimum and its truncation change, with the never-served truncation's solution.

    Raises:
        InputError: Naming ``queue_cap`` or ``n`` when a truncation exceeds the limits; naming ``n`` as
            :func:`policy_iteration`; as :func:`jaxq.sim.exact_ctmc.system_phase_types` for a primitive that is not
            phase-type.
    """
    if bracket:
        return bracket_cost(system, n, queue_cap, rtol=rtol, max_states=max_states, max_bytes=max_bytes,
                            evaluate=evaluate)
    t0 = time.perf_counter()
    phase_types = system_phase_types(system_of(system))
    key = "n" if queue_cap is None else "queue_cap"
    c = (first_cap(n, queue_cap),) * 2
    for cap in (c, *doubled_caps(c)):  # the first solve and its first tests: refused before any work
        check_size(layout_of(phase_types, cap), max_states, max_bytes, key)
    nth = system.at(n)  # the n-th system of every truncation below
    counts = [0, 0, 0]

    def run(cap, start=None):
        ch = chain(nth, n, cap, phase_types, "never_served")
        return policy_iteration(ch, *(warm_start(start, ch) if start is not None else (None, None)),
                                evaluate=evaluate)

    kept = _tally(counts, run(c))
    with ThreadPoolExecutor(max_workers=2) as pool:  # the two tests of a round, one per core (numpy and scipy
        while True:                                  # release the GIL in their loops)
            doubled = doubled_caps(c)
            for d in doubled:
                check_size(layout_of(phase_types, d), max_states, max_bytes, key)
            together = sum(states_and_bytes(layout_of(phase_types, cap))[1] for cap in (c, *doubled))
            if together <= max_bytes:
                tests = [_tally(counts, t) for t in pool.map(lambda d: run(d, kept), doubled)]
            else:  # the two tests would not fit in memory together: one after the other
                tests = [_tally(counts, run(d, kept)) for d in doubled]
            change = [abs(kept.start - t.start) / abs(t.start) for t in tests]
            i = int(np.argmax(change))
            if queue_cap is not None or change[i] <= rtol / 2:
                break
            kept, c = tests[i], doubled[i]
    return Optimum(kept.start, None, change[0] + change[1], c, kept.chain.lay.size, *counts,
                   time.perf_counter() - t0, kept, phase_types is not None)


def _tally(counts: list, out: CapSolution) -> CapSolution:
    """Add a solve's improvements, products and updates (products x its chain's states) to ``counts``."""
    counts[0] += out.iterations
    counts[1] += out.matvecs
    counts[2] += out.matvecs * out.chain.lay.size
    return out


def doubled_caps(cap: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """The caps of the two doubling tests of :func:`optimal_cost`: class 1's cap doubled, class 2's doubled.

    Args:
        cap: The caps ``(Q_1, Q_2)``.

    Returns:
        ``((2 Q_1, Q_2), (Q_1, 2 Q_2))``.
    """
    return (2 * cap[0], cap[1]), (cap[0], 2 * cap[1])


def bracket_cost(system: PSS2x2 | ScaledPSS2x2, n: float, queue_cap: int | None = None, *,
                 rtol: float = TRUNCATION_RTOL, max_states: int = MAX_STATES, max_bytes: float = MAX_BYTES,
                 evaluate=None) -> Optimum:
    """J*_n of the n-th system from empty, bracketed by two truncations of the queues at one cap Q.

    With arrivals to a full class charged their floor (:func:`charges`), the truncated optimum ``J_lower`` is at
    most J*_n; with them charged ``h_i / (gamma sqrt(n))`` (a job never served), the truncated optimum
    ``J_star`` is at least J*_n and is the cost of a policy of the n-th system (the truncated decisions, the
    turned-away jobs never served). The cap is ``queue_cap``, or doubled from ``max(6, 4 sqrt(n))`` until
    ``truncation_change = (J_star - J_lower) / J_star`` is at most ``rtol``: no larger cap can move either
    optimum by more (both move towards J*_n).

    Every solve starts from the last one: the floor truncation from the never-served one at the same cap, a
    doubled cap from the last never-served solution (:func:`extend`). The floor truncation is solved only at a cap
    where :func:`truncation_gap` (one linear solve) cannot prove that the two disagree by more than ``rtol``. Both
    optimise every decision. A turned-away arrival that costs less than its real cost lets the lower truncation's
    optimum game the cap (let a queue fill up near it); the floor charge removes part of that gain, so it settles
    in fewer improvements than a free loss, but at large n the gain stays (at n = 1000 the floor optimum of
    ``pss_P`` fills queue 1 up to a cap of 254 and lies 0.3% below the never-served one).

    Args:
        system: As :func:`optimal_cost`.
        n: The index of the system.
        queue_cap: The cap of both queues (None: doubled from ``max(6, 4 sqrt(n))`` until ``rtol``).
        rtol: The largest ``truncation_change`` accepted.
        max_states: A larger chain is refused before it is built.
        max_bytes: A chain that would take more bytes is refused before it is built.
        evaluate (typing.Callable | None): The policy evaluation of :func:`policy_iteration` (None: :func:`solve`).

    Returns:
        The bracket, with the never-served truncation's solution.

    Raises:
        InputError: As :func:`optimal_cost`.
    """
    t0 = time.perf_counter()
    phase_types = system_phase_types(system_of(system))
    key = "n" if queue_cap is None else "queue_cap"
    c = first_cap(n, queue_cap, bracket=True)
    counts = [0, 0, 0]

    def run(cap, truncation, v0=None, policy0=None):
        ch = chain(nth, n, (cap, cap), phase_types, truncation)
        return _tally(counts, policy_iteration(ch, v0, policy0, evaluate=evaluate))

    check_size(layout_of(phase_types, (c, c)), max_states, max_bytes, key)
    nth = system.at(n)  # the n-th system of every truncation below
    upper = run(c, "never_served")
    while True:
        gap = 0.0
        if queue_cap is None:  # no need of the lower solve where the two cannot agree at this cap
            gap, work = truncation_gap(upper, chain(system, n, (c, c), phase_types, LOWER), rtol)
            counts[1] += work
            counts[2] += work * upper.chain.lay.size
        if gap == 0.0:
            lower = run(c, LOWER, upper.value, upper.policy)
            change = max(upper.start - lower.start, 0.0) / abs(upper.start)
            if queue_cap is not None or change <= rtol:
                break
        check_size(layout_of(phase_types, (2 * c, 2 * c)), max_states, max_bytes, key)
        ch = chain(nth, n, (2 * c, 2 * c), phase_types, "never_served")
        upper = run(2 * c, "never_served", *warm_start(upper, ch))
        c *= 2
    return Optimum(upper.start, lower.start, change, (c, c), upper.chain.lay.size, *counts,
                   time.perf_counter() - t0, upper, phase_types is not None)


def truncation_gap(upper: CapSolution, lower: Chain, rtol: float) -> tuple[float, int]:
    """Whether the two truncations at one cap can agree to ``rtol``, from one linear solve instead of the lower
    truncation's policy iteration.

    The lower truncation's optimum is at most the cost of the upper solution's policy on the lower chain (same
    matrix, the floor charges), so ``J_star - J_lower >= d(empty)`` with ``d = A_pi^-1 (c_upper - c_lower) >= 0``.
    ``d`` is solved to an error bound ``e`` (``|A_pi^-1|_inf <= 1/gamma``), first loosely; the answer is decided
    when ``d(empty) - e > rtol J_star`` (the truncations cannot agree: a larger cap is needed) or ``d(empty) + e <=
    rtol J_star`` (they may).

    Args:
        upper: The never-served truncation's solution at the cap.
        lower: The lower truncation's chain at the same cap.
        rtol: The truncation change sought.

    Returns:
        ``(gap, matvecs)``: a proven lower bound on ``(J_star - J_lower) / J_star`` when it exceeds ``rtol``, else 0
        (the lower truncation must be solved), and the solves' matrix-vector products.
    """
    ch = upper.chain
    b = ch.cost() - lower.cost()
    scale = float(np.abs(b).max()) / ch.gamma  # |d|_inf is at most this
    target = rtol * abs(upper.start)
    if scale <= target:
        return 0.0, 0
    a = policy_matrix(ch, actions(ch.lay), transitions(ch), upper.policy)
    d, work = np.zeros_like(b), 0
    machine = 64.0 * np.finfo(float).eps * float(a.diagonal().max()) / ch.gamma  # the solve's own floor
    for tol in (1e-3, max(0.1 * target / scale, SOLVE_RTOL)):
        d, k = solve(a, b, d, ch.gamma, tol)
        work += k
        err = max(tol, machine) * max(scale, float(np.abs(d).max()))  # solve's error bound
        at_empty = start_value(ch, d)
        if at_empty - err > target:
            return (at_empty - err) / abs(upper.start), work
        if at_empty + err <= target:
            break
    return 0.0, work


def _feasible(ch: Chain, acts: Actions, policy: np.ndarray) -> np.ndarray:
    """Whether each state's option pair is allowed there (busy servers keep their code; starts need jobs)."""
    lay = ch.lay
    g = ch.grids
    m = lay.shape[4:]
    o = acts.options[np.maximum(policy, 0)]
    ok = policy >= 0
    cnt = [acts.starts[np.maximum(policy, 0), i].copy() for i in (0, 1)]
    for k in (0, 1):
        sig = g[4 + k]
        ok &= np.where(sig != 0, o[:, k] == sig, (o[:, k] == 0) | (o[:, k] >= m[k]))
        keepc = lay.cls[k][np.minimum(o[:, k], m[k] - 1)]
        for i in (0, 1):
            cnt[i] = cnt[i] + ((o[:, k] < m[k]) & (keepc == i))
    return ok & (cnt[0] <= g[0]) & (cnt[1] <= g[1])


# --- the optimal decisions as a table the simulators run -----------------------------------------------------


def _start_distribution(ch: Chain) -> np.ndarray:
    """The law of the first post-decision state: the empty system, interarrival phases drawn from alpha."""
    lay = ch.lay
    p = np.zeros(lay.shape)
    p[0, 0, :, :, 0, 0] = np.outer(ch.arrivals[0][0], ch.arrivals[1][0])
    return p.ravel()


def discounted_occupation(ch: Chain, acts: Actions, trans, policy: np.ndarray) -> np.ndarray:
    """``d(y) = E int exp(-gamma t) 1{Y_t = y} dt`` from the start under ``policy``: ``d^T A_pi = p0^T``.

    Args:
        ch: The chain.
        acts: Its :func:`actions`.
        trans (tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]): The chain's :func:`transitions`.
        policy: The option pair per pre-decision state.

    Returns:
        d, per post-decision state.

    Raises:
        InputError: As :func:`solve`.
    """
    a = policy_matrix(ch, acts, trans, policy)
    d, _ = solve(a.T.tocsr(), _start_distribution(ch), np.zeros(ch.lay.size), ch.gamma)
    return d


def occupation(ch: Chain, acts: Actions, trans, policy: np.ndarray) -> np.ndarray:
    """The discounted rate of decisions at each pre-decision state under ``policy`` from the start:
    ``f(y') = sum_y d(y) r(y -> y')`` with d the :func:`discounted_occupation`.

    Args:
        ch: The chain.
        acts: Its :func:`actions`.
        trans (tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]): The chain's :func:`transitions`.
        policy: The option pair per pre-decision state.

    Returns:
        f, per pre-decision state.
    """
    d = discounted_occupation(ch, acts, trans, policy)
    src, pre, rate, _ = trans
    return np.bincount(pre, weights=d[src] * rate, minlength=ch.lay.size)


def activity_shares(ch: Chain, acts: Actions, trans, policy: np.ndarray) -> dict:
    """What the policy does, as shares of the discounted time ``gamma exp(-gamma t) dt``: ``serving[i][k]``, server
    k serving class i; ``idle_waiting[k]``, server k idle while a job waits (which it could serve: every server
    serves both classes).

    Args:
        ch: The chain.
        acts: Its :func:`actions`.
        trans (tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]): The chain's :func:`transitions`.
        policy: The option pair per pre-decision state.

    Returns:
        ``{"serving": ..., "idle_waiting": ...}``.
    """
    d = ch.gamma * discounted_occupation(ch, acts, trans, policy)
    g = ch.grids
    cls = [ch.lay.cls[k][g[4 + k]] for k in (0, 1)]
    waiting = (g[0] - ch.in_service(0) > 0) | (g[1] - ch.in_service(1) > 0)
    return {"serving": [[float(d[cls[k] == i].sum()) for k in (0, 1)] for i in (0, 1)],
            "idle_waiting": [float(d[(cls[k] == IDLE) & waiting].sum()) for k in (0, 1)]}


def observable_table(ch: Chain, acts: Actions, trans, value: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """The decisions as a function of what a :class:`jaxq.Policy2x2` sees: ``table[x_1, x_2, s_1 + 1, s_2 + 1, k]``,
    the class idle server k starts (-1: stays idle) when the jobs in the system are x and the servers serve s
    (-1 idle) after an event.

    Without phases this is the optimal policy itself. With phases, for each observable state the decision that
    minimises the optimal value averaged over the phases, weighted by how often the optimal policy decides there
    (:func:`occupation`; equal weights where it never does): the phase-blind policy nearest the optimum.

    Args:
        ch: The chain.
        acts: Its :func:`actions`.
        trans (tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]): The chain's :func:`transitions`.
        value: The optimal values of the post-decision states.
        policy: The optimal option pair per pre-decision state.

    Returns:
        The table (int8).
    """
    lay = ch.lay
    m = lay.shape[4:]
    u = _option_values(ch, value)
    phases = lay.shape[2:] != (1, 1, 3, 3)
    weight = occupation(ch, acts, trans, policy).reshape(lay.shape) if phases else None
    # semantic decisions per server: 0 keep, 1 start class 1, 2 start class 2
    table = np.full(lay.shape[:2] + (3, 3, 2), IDLE, dtype=np.int8)
    x1 = np.arange(lay.shape[0]).reshape(-1, 1)
    x2 = np.arange(lay.shape[1]).reshape(1, -1)
    if weight is None:  # one phase everywhere: read the policy's own decisions
        pol = policy.reshape(lay.shape)[:, :, 0, 0]
        for s1 in range(3):
            for s2 in range(3):
                opts = acts.options[pol[:, :, s1, s2]]
                for k, (o, mk) in enumerate(((opts[..., 0], m[0]), (opts[..., 1], m[1]))):
                    table[:, :, s1, s2, k] = np.where(o >= mk, o - mk, IDLE)
        return table
    for c1 in range(3):  # observable server classes: 0 idle, 1 class 1, 2 class 2
        for c2 in range(3):
            codes = [np.nonzero(lay.cls[k] == (c - 1))[0] for k, c in enumerate((c1, c2))]
            best, best_score = None, None
            for d1 in ([0] if c1 else [0, 1, 2]):
                for d2 in ([0] if c2 else [0, 1, 2]):
                    need = [(c1 == i + 1) + (c2 == i + 1) + (d1 == i + 1) + (d2 == i + 1) for i in (0, 1)]
                    ok = (need[0] <= x1) & (need[1] <= x2)
                    score = np.zeros(lay.shape[:2])
                    mass = np.zeros(lay.shape[:2])
                    plain = np.zeros(lay.shape[:2])
                    for s1 in codes[0]:
                        for s2 in codes[1]:
                            o1 = s1 if d1 == 0 else m[0] + d1 - 1
                            o2 = s2 if d2 == 0 else m[1] + d2 - 1
                            val = u[:, :, :, :, o1, o2]
                            w = weight[:, :, :, :, s1, s2]
                            fin = np.where(np.isfinite(val), val, 0.0)
                            score += (w * fin).sum(axis=(2, 3))
                            mass += w.sum(axis=(2, 3))
                            plain += fin.mean(axis=(2, 3))
                    score = np.where(mass > 0, score / np.where(mass > 0, mass, 1.0), plain)
                    score = np.where(ok & np.isfinite(score), score, np.inf)
                    if best is None:
                        best, best_score = np.zeros(lay.shape[:2] + (2,), dtype=np.int8), score
                        best[..., 0], best[..., 1] = d1 - 1 if d1 else IDLE, d2 - 1 if d2 else IDLE
                    else:
                        with np.errstate(invalid="ignore"):
                            better = score < best_score - TIE_RTOL * np.abs(best_score)
                        best_score = np.where(better, score, best_score)
                        best[..., 0] = np.where(better, d1 - 1 if d1 else IDLE, best[..., 0])
                        best[..., 1] = np.where(better, d2 - 1 if d2 else IDLE, best[..., 1])
            table[:, :, c1, c2] = best
    return table


def table_options(ch: Chain, acts: Actions, table: np.ndarray) -> np.ndarray:
    """The option pair of :func:`actions` that the observable ``table`` takes at every pre-decision state.

    Args:
        ch: The chain.
        acts: Its :func:`actions`.
        table: The table of :func:`observable_table`.

    Returns:
        The option pair per pre-decision state.
    """
    lay = ch.lay
    g = ch.grids
    m = lay.shape[4:]
    cls = [lay.cls[k][g[4 + k]] for k in (0, 1)]
    dec = table[g[0], g[1], cls[0] + 1, cls[1] + 1]
    opts = [np.where(cls[k] != IDLE, g[4 + k], np.where(dec[:, k] >= 0, m[k] + dec[:, k], 0)) for k in (0, 1)]
    out = _pair_index(acts, m)[opts[0], opts[1]]
    return np.where(out >= 0, out, 0)


def table_cost(ch: Chain, table: np.ndarray) -> float:
    """The exact discounted cost from the start of the phase-blind ``table`` on the chain: it decides after
    arrivals and completions only (what a :class:`jaxq.Policy2x2` sees); a phase change inside a law keeps the
    servers as they are.

    Args:
        ch: The chain.
        table: The table of :func:`observable_table`.

    Returns:
        The cost.

    Raises:
        InputError: As :func:`solve`.
    """
    acts = actions(ch.lay)
    src, pre, rate, real = transitions(ch)
    pol = table_options(ch, acts, table)
    keep = _keep_option(ch, acts)
    decided = np.where(real, pol[pre], keep[pre])
    posts, probs = _post(ch, acts, pre, decided)
    n = ch.lay.size
    rows = np.concatenate([np.tile(src, posts.shape[0]), np.arange(n)])
    cols = np.concatenate([posts.ravel(), np.arange(n)])
    vals = np.concatenate([-(probs * rate).ravel(), ch.gamma + np.bincount(src, weights=rate, minlength=n)])
    a = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    v, _ = solve(a, ch.cost(), ch.cost() / ch.gamma, ch.gamma)
    return start_value(ch, v)


def _pair_index(acts: Actions, m) -> np.ndarray:
    """``index[o_1, o_2]``: the position of an option pair in ``acts.options`` (-1: not an option)."""
    index = np.full((m[0] + 2, m[1] + 2), -1, dtype=np.int64)
    for j, (o1, o2) in enumerate(acts.options):
        index[o1, o2] = j
    return index


def _keep_option(ch: Chain, acts: Actions) -> np.ndarray:
    """The option pair 'every server keeps its code' at each state."""
    return _pair_index(acts, ch.lay.shape[4:])[ch.grids[4], ch.grids[5]]
