"""One fast and K slow servers (the fast/slow-servers paper): the optimal policy, its thresholds and its structure.

Model (the fast/slow-servers paper, Section 3): Poisson arrivals at rate ``lam``, one fast server (rate ``mu1``) and K
slow servers (rate ``mu2``; the paper has K = 2; a vector ``mu2`` gives heterogeneous slow
servers), nonpreemptive assignment of queued jobs right after each arrival or departure, holding
cost one per job per unit time. Post-decision state ``(x, y)``: x = queue + job at the fast server
(which is never idle while jobs wait, Lemma 1), y = jobs at the slow servers (or, heterogeneous, the
set of busy slow servers). Uniformisation rate ``gamma = lam + mu1 + sum(mu2)``.

:func:`solve` runs value iteration (13) / relative value iteration (181) in JAX on a truncated box
``x <= N``, with N chosen automatically from a power-of-two bucket and verified by doubling it, then
reads off the policy (14), its thresholds and the inequalities (K1)-(K6) (see
:mod:`jaxq.mdp.structure` for the precise threshold definitions). :func:`solve_many` solves many
parameter sets at once with ``vmap``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError
from jaxq.mdp import structure as st
from jaxq.mdp.policy import greedy_policy
from jaxq.mdp.layout import Configurations, heterogeneous, identical
from jaxq.mdp.value_iteration import VIParams, solve_capped, solver
from jaxq.model.validate import MAX_MAGNITUDE, MIN_POSITIVE, check_slower

BUCKETS = tuple(2**k - 1 for k in range(5, 14))  # truncations N: 31, 63, ..., 8191
TOL = 1e-10  # relative stopping tolerance of (relative) value iteration
MAX_ITER = 500_000
TIME_LIMIT = 60.0  # seconds of value iteration per solve (all truncations together)
TAIL_SLACK = 18.5 / 25.0  # suggest_truncation aims at e^-25; the doubling check needs about 1e-8 = e^-18.4
VERIFY_RTOL = 1e-8  # value change allowed when the truncation doubles
TIE = 1e-10  # relative tie tolerance of policy (14) and of the thresholds
# Value iteration may stop at its round-off floor (value_iteration.ROUNDOFF_ULPS) before meeting TOL; such a stop is
# accepted only while the bounds stay within FLOOR_RTOL of each other, relative to the answer (the answer to at least
# half the digits TOL asks for). The floor is an absolute spread (an ulp of the largest values, about N^2 / mu1), so
# the relative width grows like 1 / lam as the load vanishes: average cost, mu1 = 1, mu2 = 0.3, K = 2: 2.8e-8 at
# lam = 1e-6, 1.4e-6 at 1e-8, 5.7e-5 at 1e-10 (refused), 2 at 1e-14 (the midpoint off by half); mu2 = 0.05: 1.6e-6
# at lam = 1e-6. The discounted value from the empty state is computed from V*(1, 0) instead (see _sharpen).
FLOOR_RTOL = 1e-5


@dataclass(frozen=True, eq=False)
class Problem:
    """A validated fast/slow control problem.

    Attributes:
        lam: Arrival rate.
        mu1: Fast service rate.
        mu2: Slow service rates, shape (J,) (J = 1: K identical servers).
        K: Number of slow servers.
        alpha: Discount rate, or None for the average cost.
        layout: Slow-server configurations (:mod:`jaxq.mdp.layout`).
    """

    lam: float
    mu1: float
    mu2: np.ndarray
    K: int
    alpha: float | None
    layout: Configurations

    @property
    def average(self) -> bool:
        return self.alpha is None

    @property
    def capacity(self) -> float:
        return self.mu1 + (self.K * self.mu2[0] if self.layout.kind == "identical" else float(self.mu2.sum()))


def _positive(key: str, v) -> float:
    if isinstance(v, (bool, np.bool_, str)):
        raise InputError(key, f"must be a number, got {v!r}")
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise InputError(key, f"must be a number, got {v!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise InputError(key, f"must be a positive finite number, got {v}")
    if not MIN_POSITIVE <= v <= MAX_MAGNITUDE:
        raise InputError(key, f"{v:g} is outside the supported range [{MIN_POSITIVE:g}, {MAX_MAGNITUDE:g}]")
    return v


def problem(lam, mu1, mu2, *, discount=None, slow_servers: int | None = None) -> Problem:
    """Validate the inputs (raises :class:`jaxq.InputError`) and build a :class:`Problem`.

    Args:
        lam (float): Arrival rate (> 0).
        mu1 (float): Fast service rate (> 0).
        mu2 (float | typing.Sequence[float]): Slow service rate (scalar: identical servers) or a sequence of rates
            (heterogeneous); every slow rate must be below ``mu1`` (assumption (1)).
        discount (float | None): Discount rate alpha > 0, or None for the average cost (needs
            ``lam < mu1 + sum of slow rates``).
        slow_servers: K (default 2, or ``len(mu2)``).

    Returns:
        The problem.

    Raises:
        InputError: Naming ``lam``, ``mu1``, ``mu2`` or ``discount`` when it is not a positive finite number in the
            supported range; ``mu2`` when a slow rate is not below ``mu1``, it is not a rate or a list of rates, or
            it has more than 6 heterogeneous rates; ``slow_servers`` when it is not a positive integer, does not
            match the rates in ``mu2`` or exceeds 64; ``lam`` when the average cost is asked for and
            ``lam >= mu1 + sum(mu2)``.
    """
    lam, mu1 = _positive("lam", lam), _positive("mu1", mu1)
    rates = np.atleast_1d(np.asarray(mu2, dtype=object))
    if rates.ndim != 1 or rates.size == 0:
        raise InputError("mu2", "must be a rate or a list of rates")
    rates = np.array([_positive("mu2", r) for r in rates])
    check_slower(mu1, rates)
    if slow_servers is not None and (isinstance(slow_servers, bool) or not isinstance(slow_servers, (int, np.integer))
                                     or slow_servers < 1):
        raise InputError("slow_servers", f"must be a positive integer, got {slow_servers!r}")
    if rates.size > 1:
        if slow_servers is not None and slow_servers != rates.size:
            raise InputError("slow_servers", f"{slow_servers} does not match the {rates.size} rates in mu2")
        K = rates.size
        if K > 6:
            raise InputError("mu2", "at most 6 heterogeneous slow servers (2^K configurations)")
        layout = identical(K) if np.all(rates == rates[0]) else heterogeneous(rates)
        if layout.kind == "identical":
            rates = rates[:1]
    else:
        K = 2 if slow_servers is None else int(slow_servers)
        if K > 64:
            raise InputError("slow_servers", "at most 64 slow servers")
        layout = identical(K)
    alpha = None if discount is None else _positive("discount", discount)
    p = Problem(lam, mu1, rates, K, alpha, layout)
    if alpha is None and lam >= p.capacity:
        raise InputError("lam", f"unstable for the average cost: need lam < mu1 + sum(mu2) = {p.capacity:g}")
    return p


def needed_truncation(p: Problem) -> tuple[float, float, float]:
    """``(thresholds, tail, need)``: the x-range the thresholds need, the queue tail length that makes the
    neglected tail about ``e^-25``, and their sum (see :func:`suggest_truncation`); may be astronomical.

    Args:
        p: The problem.

    Returns:
        ``(thresholds, tail, need)``.
    """
    thr = (p.K + 1) * (p.mu1 / float(p.mu2.min()) + 1.0)
    tails = []
    if p.lam < p.capacity:
        tails.append(25.0 / -math.log(p.lam / p.capacity))
    if not p.average:  # arrivals alone; or drift plus five standard deviations over time 25 / alpha
        t = 25.0 / p.alpha
        tails.append(25.0 / math.log1p(p.alpha / p.lam))
        tails.append(max(p.lam - p.capacity, 0.0) * t + 5.0 * math.sqrt((p.lam + p.capacity) * t))
    tail = min(tails)
    return thr, tail, thr + tail


def check_tractable(p: Problem, max_iter: int = MAX_ITER) -> None:
    """Refuse, before any value iteration, a problem the largest truncation (8191) or the iteration cap
    cannot solve: thresholds beyond x = 4095 (slow servers too slow, ``mu1 / mu2`` too large), a queue
    tail longer than the box (load too close to 1, or arrivals far beyond capacity with little
    discounting), or a discount rate so small that value iteration needs more than 20 ``max_iter``
    Bellman updates (``(gamma / alpha) ln(1 / tol)``).

    Args:
        p: The problem.
        max_iter: The cap on Bellman updates of each solve.

    Raises:
        InputError: Naming ``mu2`` (thresholds too far out), ``lam`` (queue tail too long) or ``discount``
            (discount rate too small).
    """
    thr, tail, _ = needed_truncation(p)
    top = BUCKETS[-1]
    if thr > top // 2:
        raise InputError("mu2", f"mu1 / mu2 = {p.mu1 / float(p.mu2.min()):.3g}: the thresholds may reach x = {thr:.3g}, "
                                f"beyond the largest truncation this solver supports (x <= {top // 2})")
    if thr + TAIL_SLACK * tail > top:
        if p.average:
            raise InputError("lam", f"load lam / (mu1 + sum mu2) = {p.lam / p.capacity:.6g} is too close to 1: "
                                    f"the queue tail needs a truncation of about {thr + TAIL_SLACK * tail:.3g} states "
                                    f"(at most {top})")
        raise InputError("lam", f"the queue can grow to about {thr + TAIL_SLACK * tail:.3g} jobs before discounting "
                                f"(lam = {p.lam:g}, capacity {p.capacity:g}, discount {p.alpha:g}): beyond the largest "
                                f"truncation {top}")
    if not p.average:
        gamma = p.lam + p.capacity
        need = (gamma / p.alpha) * math.log(1.0 / TOL)
        if need > 20 * max_iter:
            raise InputError("discount", f"discount rate {p.alpha:g} is too small against the event rate {gamma:g}: "
                                         f"value iteration would need about {need:.3g} Bellman updates "
                                         f"(limit {20 * max_iter:.3g}); use --average for the long-run average")


def suggest_truncation(p: Problem) -> int:
    """A first truncation N (a bucket): room for the thresholds plus a geometric tail.

    The thresholds scale like ``K mu1 / mu2``; above them the queue is an M/M/1 queue with service
    rate ``mu1 + sum(mu2)`` whose tail decays like ``rho^x``; with discounting, reaching level x from
    0 costs at least ``(lam / (lam + alpha))^x``. The tail length makes these about ``e^-25``;
    the doubling check in :func:`solve` is what guarantees the truncation.

    Args:
        p: The problem.

    Returns:
        The smallest bucket of :data:`BUCKETS` at least the need (the largest when none is).
    """
    _, _, need = needed_truncation(p)
    return next((b for b in BUCKETS if b >= need), BUCKETS[-1])


@dataclass(frozen=True, eq=False)
class Solution:
    """The optimal policy of a :class:`Problem` and what is known about it.

    Attributes:
        problem: The problem solved.
        N: Truncation of the solve reported (``x <= N``); the solve at ``(N-1)/2`` gave the same
            thresholds, value and policy (``verified``).
        X: X = N // 2: region of the reported policy, thresholds, structure test and inequalities (``x <= X``).
        value: ``(alpha+gamma) V*`` (discounted, the paper's scaling of (13)) or the relative value h
            (average), shape (N+1, C).
        value_empty: Discounted cost (6) from the empty system, ``V*(0, 0)`` (None for average cost).
        average_cost: Optimal long-run average number of jobs in the system (None when discounted).
        bounds: McQueen / relative value iteration bounds on value_empty (through ``V*(1, 0)``, see
            :func:`_sharpen`) or average_cost; within ``TOL`` of each other, or ``FLOOR_RTOL`` where round-off
            stopped the iteration.
        policy: Policy (14) as a table of post-decision configurations, shape (N+1, C).
        population_thresholds: ``n_m`` (identical: from the value function, (38)-(39); heterogeneous:
            read off the policy); ``INF`` when not used on ``x <= X``.
        structure: :func:`jaxq.mdp.structure.structure` on ``x <= X``, plus ``matches_thresholds``: the
            policy equals the threshold policy of ``population_thresholds`` on ``x <= X``.
        margins: Worst margins of (K1)-(K6) on ``x <= X`` (identical slow servers only).
        iterations: Value iteration count.
        converged: Whether value iteration met the tolerance.
        verified: Whether the doubling check passed.
    """

    problem: Problem
    N: int
    X: int
    value: np.ndarray
    value_empty: float | None
    average_cost: float | None
    bounds: tuple[float, float]
    policy: np.ndarray
    population_thresholds: np.ndarray
    structure: dict
    margins: dict
    iterations: int
    converged: bool
    verified: bool

    @property
    def queue_thresholds(self) -> list[int | None]:
        """``q_m = n_m - 1`` (K = 2: ``[q_L, q_H]``); None = infinite."""
        return [None if n >= st.INF else int(n) - 1 for n in self.population_thresholds]

    @property
    def ineq_tol(self) -> float:
        """Margins above ``-ineq_tol`` count as holding (round-off and the VI tolerance)."""
        return 1e-8 * (1.0 + float(np.abs(self.value[: self.X + 1]).max()))

    @property
    def inequalities_hold(self) -> dict[str, bool | None]:
        return {k: (None if v is None else bool(v >= -self.ineq_tol)) for k, v in self.margins.items()}


def _params(p: Problem, tol: float, max_iter: int) -> VIParams:
    f = jnp.float64
    return VIParams(f(p.lam), f(p.mu1), jnp.asarray(p.mu2, dtype=jnp.float64), f(p.alpha or 1.0), f(tol), jnp.int64(max_iter))


def _sharpen(lam, alpha, lo, hi, value):
    """Bounds on ``(alpha+gamma) V*(0, 0)`` from those on ``(alpha+gamma) V*(1, 0)`` (discounted; arrays broadcast).

    From the empty state the first event that matters is an arrival, and the arriving job goes to the fast
    server without a decision, so ``V*(0, 0) = lam / (alpha + lam) V*(1, 0)`` exactly (also on the truncated
    box). The McQueen bounds have the same width ``hi - lo`` at every state; ``V*(1, 0)`` is of order
    ``1 / mu1`` at any load, so through it the bounds on ``V*(0, 0)`` are ``lam / (alpha + lam)`` times
    narrower: a lightly loaded system's value (about ``lam / alpha``) keeps its digits where the round-off floor of
    the values (of order ``N / alpha``) would swamp the direct bounds. ``value`` is the McQueen midpoint
    estimate: ``value[..., 1, 0]`` is the midpoint of the bounds on ``(alpha+gamma) V*(1, 0)``.
    """
    q = lam / (alpha + lam)
    half = 0.5 * (hi - lo)
    return q * (value[..., 1, 0] - half), q * (value[..., 1, 0] + half)


def _resolved(lo, hi, tol: float):
    """Whether bounds ``[lo, hi]`` pin their midpoint to ``max(tol, FLOOR_RTOL)`` relative (arrays broadcast)."""
    return hi - lo <= max(tol, FLOOR_RTOL) * np.abs(0.5 * (lo + hi))


def _run(p: Problem, N: int, tol: float, max_iter: int, deadline: float | None = None):
    """One value iteration solve at truncation N; non-convergence (iteration cap or deadline) and an answer below
    the round-off resolution of value iteration (:data:`FLOOR_RTOL`) are InputErrors. Discounted: ``lo``, ``hi``
    are the bounds of :func:`_sharpen`."""
    r, timed_out = solve_capped(p.layout, N, p.average, _params(p, tol, max_iter), deadline)
    r = {k: np.asarray(v) for k, v in r._asdict().items()}
    if not bool(r["converged"]):
        key = "lam" if p.average else "discount"
        why = f"the time limit ({TIME_LIMIT:g} s)" if timed_out else f"{int(r['iterations'])} Bellman updates"
        raise InputError(key, f"value iteration at truncation {N} did not converge within {why} "
                              f"(relative tolerance {tol:g}); the parameters are too extreme for this solver")
    if not p.average:
        r["lo"], r["hi"] = _sharpen(p.lam, p.alpha, r["lo"], r["hi"], r["value"])
    if not _resolved(r["lo"], r["hi"], tol):
        what = "average cost" if p.average else "discounted cost (alpha + gamma) V*(0, 0)"
        lo, hi = float(r["lo"]), float(r["hi"])
        raise InputError("lam" if p.average else "discount",
                         f"the {what} (between {lo:.6g} and {hi:.6g}, {hi - lo:.2g} apart) is below value iteration's "
                         f"round-off resolution (one ulp of values up to {float(np.abs(r['value']).max()):.3g}): its "
                         f"bounds do not pin it to {max(tol, FLOOR_RTOL):g} relative")
    return r


def _read(p: Problem, r: dict, N: int, X: int):
    value = r["value"]
    tie = TIE * (1.0 + float(np.abs(value[: X + 1]).max()))
    policy = greedy_policy(p.layout, N, value, tie=tie)
    if p.layout.kind == "identical":
        n_thr = st.population_thresholds(value, p.K, X, tie=tie)
    else:
        n_thr = st.thresholds_from_policy(p.layout, policy, X)
    return policy, n_thr


def solve(lam, mu1, mu2, *, discount=None, slow_servers=None, truncation: int | None = None,
          verify: bool = True, tol: float = TOL, max_iter: int = MAX_ITER,
          time_limit: float = TIME_LIMIT) -> Solution:
    """Optimal policy of the fast/slow system by (relative) value iteration.

    Args:
        lam (float): See :func:`problem`.
        mu1 (float): See :func:`problem`.
        mu2 (float | typing.Sequence[float]): See :func:`problem`.
        discount (float | None): See :func:`problem` (discount None: average cost).
        slow_servers (int | None): See :func:`problem`.
        truncation: First N to try (default :func:`suggest_truncation`); rounded up to a bucket.
        verify: Check that halving N (to H = (N-1)/2) changes neither the thresholds, nor the policy
            on ``x <= (H-1)/2``, nor the value (relative ``VERIFY_RTOL``, beyond the two solves' own bounds);
            double N until it does not.
        tol: Relative stopping tolerance of value iteration.
        max_iter: Cap on Bellman updates of each solve.
        time_limit: Seconds of value iteration for the whole call (all truncations).

    Returns:
        A :class:`Solution` (always converged: ``converged`` is True).

    Raises:
        InputError: Bad parameters, a problem beyond the solver's reach (:func:`check_tractable`), value
            iteration that does not converge within ``max_iter`` updates or ``time_limit`` seconds, an average cost
            below its round-off resolution (bounds wider than ``FLOOR_RTOL``: e.g. lam <= 1e-9, mu1 = 1,
            mu2 = 0.3), or no truncation up to 8191 that passes the doubling check.
    """
    p = problem(lam, mu1, mu2, discount=discount, slow_servers=slow_servers)
    if truncation is not None and (isinstance(truncation, bool) or not isinstance(truncation, (int, np.integer))
                                   or not 1 <= truncation <= BUCKETS[-1]):
        raise InputError("truncation", f"must be an integer in [1, {BUCKETS[-1]}], got {truncation!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise InputError("max_iter", f"must be a positive integer, got {max_iter!r}")
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol >= 0):
        raise InputError("tol", f"must be a finite number >= 0, got {tol!r}")
    check_tractable(p, max_iter)
    deadline = time.monotonic() + float(time_limit)
    N = suggest_truncation(p) if truncation is None else next((b for b in BUCKETS if b >= truncation), BUCKETS[-1])
    r = _run(p, N, tol, max_iter, deadline)
    verified = False
    if verify:  # the solve at H = (N-1)/2 and the one at N must agree on x <= (H-1)/2
        H = (N - 1) // 2
        rh = _run(p, H, tol, max_iter, deadline)
        while True:
            X = (H - 1) // 2
            (pol_h, thr_h), (pol_n, thr_n) = _read(p, rh, H, X), _read(p, r, N, X)
            mid_h, mid_n = 0.5 * (rh["lo"] + rh["hi"]), 0.5 * (r["lo"] + r["hi"])
            if (np.array_equal(thr_h, thr_n) and np.array_equal(pol_h[: X + 1], pol_n[: X + 1])
                    and abs(mid_h - mid_n) <= VERIFY_RTOL * abs(mid_n) + 0.5 * (rh["hi"] - rh["lo"] + r["hi"] - r["lo"])):
                verified = True
                break
            if N >= BUCKETS[-1]:
                raise InputError("truncation", "thresholds or value still change at x = 8191; parameters too extreme")
            H, rh, N = N, r, 2 * N + 1
            r = _run(p, N, tol, max_iter, deadline)
    X = N // 2
    pol, thr = _read(p, r, N, X)
    g = float(r["gamma"])
    mid = 0.5 * (float(r["lo"]) + float(r["hi"]))
    scale = 1.0 if p.average else 1.0 / (p.alpha + g)
    margins = st.inequalities(r["value"], p.K, X) if p.layout.kind == "identical" else {}
    shape = st.structure(p.layout, pol, X)
    shape["matches_thresholds"] = bool(np.array_equal(st.threshold_policy(p.layout, X, thr), pol[: X + 1]))
    return Solution(
        problem=p, N=N, X=X, value=r["value"],
        value_empty=None if p.average else mid * scale,
        average_cost=mid if p.average else None,
        bounds=(float(r["lo"]) * scale, float(r["hi"]) * scale),
        policy=pol, population_thresholds=thr, structure=shape, margins=margins,
        iterations=int(r["iterations"]), converged=bool(r["converged"]), verified=verified,
    )


def solve_many(lam, mu1, mu2, discount=None, *, slow_servers: int = 2, truncation: int | None = None,
               tol: float = 1e-10, max_iter: int = MAX_ITER) -> dict:
    """Solve many identical-slow-server problems at once (``vmap`` over the parameter sets).

    Args:
        lam (numpy.typing.ArrayLike): Arrival rates, an array of length B (broadcast with ``mu1``, ``mu2``).
        mu1 (numpy.typing.ArrayLike): Fast service rates, an array of length B (broadcast).
        mu2 (numpy.typing.ArrayLike): Slow service rates, an array of length B (broadcast).
        discount (numpy.typing.ArrayLike | None): Array of discount rates (B,), or None for the average cost of
            every set.
        slow_servers: K, the number of identical slow servers.
        truncation: Common N (default: the largest suggested one; not verified by doubling).
        tol: Relative stopping tolerance of value iteration.
        max_iter: Cap on Bellman updates of each solve.

    Returns:
        Dict of arrays over the B sets: ``q_thresholds`` (B, K) with -1 for infinite, ``value_empty``
            or ``average_cost``, ``iterations``, ``converged`` (the stopping rule was met and the bounds pin the
            answer, see :func:`_resolved`), ``threshold`` (structure test), and ``N``.

    Raises:
        InputError: As :func:`problem`, for any of the sets.
    """
    lam, mu1, mu2 = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (lam, mu1, mu2)))
    alpha = None if discount is None else np.broadcast_to(np.asarray(discount, dtype=float), lam.shape)
    probs = [problem(lam[i], mu1[i], mu2[i], discount=None if alpha is None else alpha[i], slow_servers=slow_servers)
             for i in range(lam.size)]
    N = max(suggest_truncation(q) for q in probs) if truncation is None else next(b for b in BUCKETS if b >= truncation)
    layout = identical(slow_servers)
    f = lambda a: jnp.asarray(a, dtype=jnp.float64)  # noqa: E731
    params = VIParams(f(lam), f(mu1), f(mu2)[:, None], f(np.ones_like(lam) if alpha is None else alpha),
                      f(np.full(lam.shape, tol)), jnp.full(lam.shape, max_iter, dtype=jnp.int64))
    r = {k: np.asarray(v) for k, v in solver(layout, N, alpha is None, batched=True)(params)._asdict().items()}
    X = N // 2
    q = np.empty((lam.size, slow_servers), dtype=np.int64)
    thr_ok = np.empty(lam.size, dtype=bool)
    for i, pb in enumerate(probs):
        ri = {k: v[i] for k, v in r.items()}
        pol, n_thr = _read(pb, ri, N, X)
        q[i] = np.where(n_thr >= st.INF, -1, n_thr - 1)
        thr_ok[i] = st.structure(layout, pol, X)["threshold"]
    if alpha is not None:
        r["lo"], r["hi"] = _sharpen(lam, alpha, r["lo"], r["hi"], r["value"])
    mid = 0.5 * (r["lo"] + r["hi"])
    out = {"q_thresholds": q, "iterations": r["iterations"], "threshold": thr_ok, "N": N,
           "converged": r["converged"] & _resolved(r["lo"], r["hi"], tol)}
    if alpha is None:
        out["average_cost"] = mid
    else:
        out["value_empty"] = mid / (alpha + r["gamma"])
    return out
