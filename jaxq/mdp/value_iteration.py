"""Value iteration (13) and relative value iteration (181) for the fast/slow MDP, in JAX.

Discounted cost (discount rate alpha): ``V <- T V`` with the Bellman operator (12),
``T f = c + (rho_alpha / gamma) P Q f``, ``rho_alpha = gamma / (alpha + gamma)``; its fixed point is
``(alpha + gamma) V*_alpha`` (the paper's scaling), V* the expected discounted cost (6).
Stopping uses the McQueen bounds: with ``d = T V - V``,
``T V + rho/(1-rho) min d <= V_fixed <= T V + rho/(1-rho) max d`` everywhere.

Average cost: relative value iteration ``h <- T0 h - (T0 h)(0, 0)``, ``T0 h = c + P Q h / gamma``;
``min d <= g <= max d`` bounds the optimal average cost g (jobs in system, time average), and the
iteration stops when ``max d - min d <= tol * min d``. Both rules accept a spread of d down to the round-off of
``T f - f`` (``ROUNDOFF_ULPS`` ulps of ``max |T f|``) when the tolerance asks for less: the bounds ``lo``, ``hi``
returned say how close the answer is (a cost far below the values, e.g. at a vanishing load, is not resolved at
all: :func:`jaxq.mdp.fastslow.solve` refuses bounds wider than ``FLOOR_RTOL`` relative).

One compiled function per (layout, truncation N, criterion): the rates are traced, so new parameters
reuse the compile, and :func:`solver` ``(batched=True)`` solves many parameter sets at once (vmap).

:func:`solve_capped` runs the same iteration in compiled segments of at most ``SEGMENT`` Bellman updates
and checks a wall-clock deadline between segments, so a solve that cannot converge stops after
``max_iter`` updates or at the deadline, whichever comes first, and says so (``converged``,
``timed_out``).
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxq.mdp.layout import Configurations
from jaxq.mdp.operators import assign, assignment_tables, cost, events, slow_rate_matrix

INNER = 32  # Bellman updates between two convergence checks
SEGMENT = 64 * (INNER + 1)  # Bellman updates per compiled segment of solve_capped (deadline checks)
ROUNDOFF_ULPS = 1  # the stopping rules accept a spread of T f - f down to this many ulps of max |T f|


class VIParams(NamedTuple):
    """Traced inputs of one solve (each a scalar, ``mu2`` of shape (J,); add a leading axis to batch).

    Attributes:
        lam: Arrival rate.
        mu1: Fast service rate.
        mu2: Slow service rates, shape (J,).
        alpha: Discount rate (ignored for the average cost).
        tol: Relative tolerance of the stopping rule.
        max_iter: Cap on Bellman updates.
    """

    lam: jax.Array
    mu1: jax.Array
    mu2: jax.Array
    alpha: jax.Array  # discount rate (ignored for the average cost)
    tol: jax.Array  # relative tolerance of the stopping rule
    max_iter: jax.Array  # cap on Bellman updates


class VIResult(NamedTuple):
    """Output of one solve.

    Attributes:
        value: Discounted: the McQueen midpoint estimate of ``(alpha+gamma) V*``; average: the relative
            value ``h`` with ``h(0, 0) = 0``. Shape (N+1, C).
        lo: Discounted: lower bound on ``(alpha+gamma) V*(0,0)``; average: lower bound on g.
        hi: Discounted: upper bound on ``(alpha+gamma) V*(0,0)``; average: upper bound on g.
        iterations: Bellman updates done.
        converged: Whether the stopping rule was met before ``max_iter``.
        gamma: Uniformisation rate ``lam + mu1 + sum(mu2)``.
    """

    value: jax.Array
    lo: jax.Array
    hi: jax.Array
    iterations: jax.Array
    converged: jax.Array
    gamma: jax.Array


def _machinery(p: VIParams, layout: Configurations, N: int, average: bool):
    """The Bellman operator, normalisation and stopping bounds of one parameter set."""
    idx, ok = assignment_tables(layout, N)
    c = jnp.asarray(cost(layout, N))
    R = slow_rate_matrix(layout, p.mu2)
    gamma = p.lam + p.mu1 + R[0].sum()
    rho = 1.0 if average else gamma / (p.alpha + gamma)
    w = rho / (1.0 - rho) if not average else 0.0  # McQueen weight rho / (1 - rho) (12)

    def bellman(f):  # (12) or the average-cost operator of (181)
        return c + (rho / gamma) * events(assign(f, idx, ok), p.lam, p.mu1, R)

    def norm(f):
        return f - f[0, 0] if average else f

    def bounds(f, tf):
        d = tf - f
        lo, hi = d.min(), d.max()
        # the spread of d cannot fall below the round-off of tf - f (a few ulps of the values): a lightly
        # loaded system's cost (lam = 1e-6: g about 1e-6) would otherwise never meet a relative tolerance
        floor = ROUNDOFF_ULPS * jnp.finfo(jnp.float64).eps * jnp.abs(tf).max()
        if average:
            return lo, hi, hi - lo <= jnp.maximum(p.tol * jnp.abs(lo), floor)
        return (tf[0, 0] + w * lo, tf[0, 0] + w * hi,
                w * (hi - lo) <= jnp.maximum(p.tol * jnp.abs(tf[0, 0]), w * floor))

    def body(carry):
        f, it, *_ = carry
        f = jax.lax.fori_loop(0, INNER, lambda _, v: norm(bellman(v)), f)
        tf = bellman(f)
        lo, hi, done = bounds(f, tf)
        return norm(tf), it + INNER + 1, lo, hi, done

    return body, gamma


def _init(layout: Configurations, N: int):
    zero = jnp.zeros((N + 1, layout.C))
    return (zero, jnp.int64(0), jnp.float64(0.0), jnp.float64(jnp.inf), jnp.bool_(False))


def _iterate(p: VIParams, carry, stop_at, layout: Configurations, N: int, average: bool):
    """Bellman updates from ``carry`` until the stopping rule holds or ``it >= stop_at``."""
    body, _ = _machinery(p, layout, N, average)

    def cond(carry):
        _, it, _, _, done = carry
        return jnp.logical_and(jnp.logical_not(done), it < stop_at)

    return jax.lax.while_loop(cond, body, carry)


def _result(p: VIParams, carry, layout: Configurations, N: int, average: bool) -> VIResult:
    _, gamma = _machinery(p, layout, N, average)
    f, it, lo, hi, done = carry
    if not average:  # midpoint of the McQueen bounds (a constant shift: policies unchanged)
        f = f + (0.5 * (lo + hi) - f[0, 0])
    return VIResult(f, lo, hi, it, done, gamma)


def _solve_one(p: VIParams, layout: Configurations, N: int, average: bool) -> VIResult:
    carry = _iterate(p, _init(layout, N), p.max_iter, layout, N, average)
    return _result(p, carry, layout, N, average)


@lru_cache(maxsize=None)
def _segments(layout: Configurations, N: int, average: bool):
    step = jax.jit(lambda p, carry, stop_at: _iterate(p, carry, stop_at, layout, N, average))
    done = jax.jit(lambda p, carry: _result(p, carry, layout, N, average))
    return step, done


def solve_capped(layout: Configurations, N: int, average: bool, p: VIParams, deadline: float | None = None):
    """One solve in compiled segments: stops at convergence, at ``p.max_iter`` updates or at ``deadline``.

    Args:
        layout: As for :func:`solver`.
        N: As for :func:`solver`.
        average: As for :func:`solver`.
        p: The parameters (unbatched).
        deadline: ``time.monotonic()`` value after which no further segment is started (None: no limit).

    Returns:
        (tuple[VIResult, bool]): ``(VIResult, timed_out)``.
    """
    step, finish = _segments(layout, N, average)
    carry = _init(layout, N)
    max_iter = int(p.max_iter)
    timed_out = False
    while True:
        it, done = int(carry[1]), bool(carry[4])
        if done or it >= max_iter:
            break
        if deadline is not None and time.monotonic() > deadline:
            timed_out = True
            break
        carry = step(p, carry, jnp.int64(min(it + SEGMENT, max_iter)))
    return finish(p, carry), timed_out


@lru_cache(maxsize=None)
def solver(layout: Configurations, N: int, average: bool, batched: bool = False):
    """The compiled solver ``VIParams -> VIResult`` for one layout, truncation and criterion.

    Args:
        layout: The slow-server configurations.
        N: The truncation, ``x <= N``.
        average: Average cost (relative value iteration) rather than discounted.
        batched: Solve a batch of parameter sets (``vmap`` over a leading axis).

    Returns:
        (typing.Callable[[VIParams], VIResult]): The jitted solver.
    """
    fn = lambda p: _solve_one(p, layout, N, average)  # noqa: E731
    return jax.jit(jax.vmap(fn) if batched else fn)
