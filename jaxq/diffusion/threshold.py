"""The threshold term of J_n - V0 under the threshold policies of Theorem 2.11 (Definitions 2.8-2.10, (2.29)).

A threshold rule holds the high-priority class p near Theta_n jobs instead of near 0. In the scaled system
that is ``Theta_hat_n = Theta_n / sqrt(n) = n^(a - 1/2)`` (2.29): it vanishes, so J_n -> V0 (Theorem 2.11),
but slowly, and at every n it adds a cost that the limit computes exactly. With the workload
``W = sum_i X_i / alpha_i`` the cost rate is ``h.X = h_q alpha_q W + (h_p - h_q alpha_q / alpha_p) X_p``, and
the rule that governs the lower mode (where the workload reflects) decides how the held jobs cost:

* **T2 rule** (policies T2, T2T2, T2T1: the single-activity server is dedicated to p). The workload still
  reflects at 0, and p's queue is held at ``min(Theta_hat, alpha_p W)``::

      J ~ V0 + (h_p - h_q alpha_q / alpha_p) E int_0^inf e^{-gamma t} min(Theta_hat, alpha_p Z_t) dt

* **T1 rule in the lower mode** (T1T2). While X_p < Theta_n the dual-activity server serves the other class
  first, so that class empties and its dedicated server idles: the workload reflects at
  ``Theta_hat / alpha_p`` instead of 0, with p held at Theta_hat. With ``Z^s = W - Theta_hat / alpha_p``
  reflected at 0 and switching modes at ``z* - Theta_hat / alpha_p`` (the rule switches on W itself)::

      J ~ h_q alpha_q E int_0^inf e^{-gamma t} Z^s_t dt + h_p Theta_hat / gamma

Both hold while the held jobs stay below the switching level, ``Theta_hat / alpha_p < z*`` (dual-mode
policies): at or above it the held queue alone moves the workload into the higher mode, which neither formula
models, and ``threshold_term`` returns None (measured: T2T1 at a = 0.46 is then far from V0,
docs/results/threshold-exponent.md).

``threshold_term`` returns ``Delta_n = J - V0`` of these formulas; ``J_n - V0 - Delta_n`` is what is left
for the diffusion approximation itself (it shrinks like n^-1/2 in the convergence studies, docs/results/convergence.md).
Both are discounted costs of a reflected diffusion with piecewise-constant coefficients and a continuous
piecewise-linear cost, solved here in closed form (:func:`discounted_cost`): numpy float64, checked against
the HJB's closed forms (:mod:`jaxq.diffusion.hjb`) and a finite-difference solve in the tests.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from jaxq.model.policy_table import POLICY_TABLE, RULE_T1, RULE_T2

# The policies with a threshold (the policy table's), in the order of the two cases above: T2 in the lower mode first.
THRESHOLD_POLICIES = tuple(sorted((name for name, spec in POLICY_TABLE.items() if spec.threshold),
                                  key=lambda name: POLICY_TABLE[name].lower != RULE_T2))


def _roots(b: float, s: float, gamma: float) -> tuple[float, float]:
    """``r_plus > 0 > r_minus`` of ``s^2 r^2 / 2 + b r - gamma = 0`` (no cancellation)."""
    d = math.sqrt(b * b + 2.0 * gamma * s * s)
    if b >= 0:
        return 2.0 * gamma / (b + d), -(b + d) / (s * s)
    return (d - b) / (s * s), -2.0 * gamma / (d - b)


def discounted_cost(slopes, kinks, gamma: float, b, s, levels=(), z0: float = 0.0, offsets=None) -> float:
    """``u(z0) = E_z0 int_0^inf e^{-gamma t} f(Z_t) dt`` for Z reflected at 0.

    Z has drift ``b[j]`` and standard deviation ``s[j]`` on the j-th interval cut by ``levels`` (ascending,
    positive; ``len(b) == len(levels) + 1``); f is piecewise linear, ``f(0) = offsets[0]``, with slope
    ``slopes[i]`` on the i-th interval cut by ``kinks`` (``len(slopes) == len(kinks) + 1``) plus the constant
    ``offsets[j]`` on the j-th interval cut by ``levels`` (default 0: f continuous; a cost that jumps where the
    mode changes). u solves
    ``gamma u = b u' + s^2 u'' / 2 + f`` with ``u'(0) = 0`` and linear growth; on each interval between
    consecutive break points it is the linear particular solution ``f / gamma + b f' / gamma^2`` plus
    ``A e^{r_+ (z - x_right)} + B e^{r_- (z - x_left)}`` (both at most 1 on the interval), and u, u' are
    continuous at every break point: a (2K+1)-square linear system for K break points.

    Args:
        slopes (typing.Sequence[float]): The slopes of f, one per interval cut by ``kinks``.
        kinks (typing.Sequence[float]): The kinks of f, ascending.
        gamma: The discount rate.
        b (typing.Sequence[float]): The drifts, one per interval cut by ``levels``.
        s (typing.Sequence[float]): The standard deviations, one per interval cut by ``levels``.
        levels (typing.Sequence[float]): The levels where the coefficients change, ascending, positive.
        z0: The starting point.
        offsets (typing.Sequence[float] | None): The constants of f, one per interval cut by ``levels`` (None: 0).

    Returns:
        ``u(z0)``.

    Raises:
        ValueError: ``slopes``/``kinks`` or ``b``/``s``/``levels``/``offsets`` have inconsistent lengths.
    """
    slopes = [float(m) for m in slopes]
    kinks = [float(k) for k in kinks]
    b = [float(v) for v in b]
    s = [float(v) for v in s]
    levels = [float(v) for v in levels]
    off = [0.0] * len(b) if offsets is None else [float(v) for v in offsets]
    if len(slopes) != len(kinks) + 1 or len(b) != len(levels) + 1 or len(s) != len(b) or len(off) != len(b):
        raise ValueError("slopes/kinks or b/s/levels/offsets have inconsistent lengths")
    xs = sorted({x for x in kinks + levels if x > 0})
    K = len(xs)
    edges = [0.0] + xs  # interval k is [edges[k], edges[k+1]) with edges[K+1] = inf

    def piece(z):  # the coefficients, slope and offset that hold just right of z
        j = _right(levels, z)
        i = _right(kinks, z)
        return b[j], s[j], slopes[i], off[j]

    def f(z):  # continuous piecewise linear, f(0) = 0
        val, lo = 0.0, 0.0
        for k_, m in zip(kinks + [math.inf], slopes):
            hi = min(z, k_)
            if hi > lo:
                val += m * (hi - lo)
            lo = max(lo, k_)
            if z <= k_:
                break
        return val

    coef = [piece(x) for x in edges]
    roots = [_roots(bk, sk, gamma) for bk, sk, _, _ in coef]
    return float(_value(edges, coef, roots, gamma, math.exp, _right(xs, z0), z0, f(z0)))


def _value(edges: list, coef: list, roots: list, gamma: float, exp, k: int, z0: float, f_z0):
    """``u(z0)`` of :func:`discounted_cost` from its intervals: the (2K+1)-square linear system of its docstring (the
    unknowns ``A_k``, ``B_k`` of the growing and the decaying exponential on each interval) assembled, solved, and u
    evaluated at ``z0``. One problem in Python floats, or a batch of them in arrays of one shape ``(size,)``, by the
    same operations (one LAPACK solve per problem).

    Args:
        edges: 0 and the K break points, ascending (numbers, or arrays of the batch's shape): interval k is
            ``[edges[k], edges[k+1])``, the last one unbounded.
        coef: ``(b, s, slope, offset)`` on each interval.
        roots: ``(r_plus, r_minus)`` on each interval (:func:`_roots`).
        gamma: The discount rate.
        exp (typing.Callable): :func:`math.exp` for numbers, :func:`exps` for arrays.
        k: The interval of ``z0`` (in every problem of a batch).
        z0: The starting point.
        f_z0 (float | numpy.ndarray): ``f(z0)`` without the offset.

    Returns:
        ``u(z0)``: a number (numpy float64) or an array of the batch's shape.
    """
    K = len(edges) - 1
    # unknowns: A_k (k < K; the growing exponential, anchored at the right end) and B_k (k <= K)
    ia = lambda k: k  # noqa: E731
    ib = lambda k: K + k  # noqa: E731
    batch = getattr(edges[0], "shape", ())  # () for one problem
    M = np.zeros(batch + (2 * K + 1, 2 * K + 1))
    rhs = np.zeros(batch + (2 * K + 1,))
    # filled through the transposes: MT[col, row] is M[..., row, col] and rhsT[row] is rhs[..., row], of one problem or
    # of every problem of a batch, by plain indexing (an Ellipsis is slower)
    MT, rhsT = M.T, rhs.T
    # the particular solution's constant on interval k: b m / gamma^2 plus the offset / gamma
    part = lambda k: coef[k][0] * coef[k][2] / gamma**2 + coef[k][3] / gamma  # noqa: E731
    # u'(0) = 0
    rp, rm = roots[0]
    first = exp(-rp * edges[1]) if K else None
    if K:
        MT[ia(0), 0] = rp * first
    MT[ib(0), 0] = rm
    rhsT[0] = -coef[0][2] / gamma
    for j in range(K):  # continuity of u and u' at x = edges[j+1]
        x = edges[j + 1]
        rp, rm = roots[j]
        rp2, rm2 = roots[j + 1]
        e_left = exp(rm * (x - edges[j]))
        e_right = exp(-rp2 * (edges[j + 2] - x)) if j + 1 < K else 0.0
        row = 1 + 2 * j
        MT[ia(j), row] = 1.0
        MT[ib(j), row] = e_left
        if j + 1 < K:
            MT[ia(j + 1), row] = -e_right
        MT[ib(j + 1), row] = -1.0
        rhsT[row] = part(j + 1) - part(j)
        MT[ia(j), row + 1] = rp
        MT[ib(j), row + 1] = rm * e_left
        if j + 1 < K:
            MT[ia(j + 1), row + 1] = -rp2 * e_right
        MT[ib(j + 1), row + 1] = -rm2
        rhsT[row + 1] = (coef[j + 1][2] - coef[j][2]) / gamma
    # sol[i]: the i-th unknown (of every problem of a batch); numpy reads a 2-D right-hand side as a matrix
    sol = (np.linalg.solve(M, rhs[..., None])[..., 0] if batch else np.linalg.solve(M, rhs)).T
    rp, rm = roots[k]
    if k == 0 and z0 == 0:  # the same numbers with no more exponentials of arrays: rp (0 - x) is -rp x exactly, and
        # exp(rm (0 - 0)) is 1 (nan for an infinite rm)
        grow = sol[ia(0)] * first if K else 0.0
        down = np.where(np.isfinite(rm), 1.0, math.nan) if batch else math.exp(rm * 0.0)
    else:
        grow = sol[ia(k)] * exp(rp * (z0 - edges[k + 1])) if k < K else 0.0
        down = exp(rm * (z0 - edges[k]))
    return f_z0 / gamma + part(k) + grow + sol[ib(k)] * down


def _right(values: list, x: float) -> int:
    """``np.searchsorted(values, x, side="right")``: the same binary search by :func:`bisect.bisect_right` (numpy's
    own where ``values`` hold a nan, which numpy orders after every number)."""
    if any(v != v for v in values):
        return int(np.searchsorted(values, x, side="right"))
    return bisect.bisect_right(values, x)


def discounted_costs(slopes, kinks, gamma: float, b, s, levels=(), offsets=None) -> np.ndarray:
    """:func:`discounted_cost` at ``z0 = 0`` for a batch of problems of one shape, bit for bit the same numbers.

    Every entry of ``slopes``, ``kinks``, ``b``, ``s``, ``levels`` and ``offsets`` is a number or an array (all
    arrays of one shape, the batch's); the break points (``kinks`` and ``levels``) must be positive and distinct
    and lie in one order throughout the batch (a ValueError otherwise). The arithmetic is that of
    :func:`discounted_cost`, by the same code on arrays (the exponentials by :func:`math.exp`, which
    ``numpy.exp`` does not always match to the last bit), and the linear systems are solved by one batched
    ``numpy.linalg.solve`` (the same LAPACK call per system).

    Args:
        slopes (typing.Sequence): The slopes of f (numbers or arrays), one per interval cut by ``kinks``.
        kinks (typing.Sequence): The kinks of f (numbers or arrays), ascending.
        gamma: The discount rate.
        b (typing.Sequence): The drifts (numbers or arrays), one per interval cut by ``levels``.
        s (typing.Sequence): The standard deviations (numbers or arrays), one per interval cut by ``levels``.
        levels (typing.Sequence): The levels where the coefficients change (numbers or arrays), ascending, positive.
        offsets (typing.Sequence | None): The constants of f (numbers or arrays), one per interval cut by ``levels``
            (None: 0).

    Returns:
        ``u(0)`` of each problem, in the batch's shape.

    Raises:
        ZeroDivisionError: ``gamma`` (or its square) is 0, or a root's denominator vanishes, as in
            :func:`discounted_cost`.
        ValueError: Inconsistent lengths, break points that are not positive, distinct and in one order throughout the
            batch, or a negative discriminant (as :func:`math.sqrt` raises).
    """
    if gamma == 0 or gamma**2 == 0:  # discounted_cost divides by these Python floats
        raise ZeroDivisionError("float division by zero")
    entries = [list(slopes), list(kinks), list(b), list(s), list(levels),
               [0.0] * len(b) if offsets is None else list(offsets)]
    if (len(entries[0]) != len(entries[1]) + 1 or len(entries[2]) != len(entries[4]) + 1
            or len(entries[3]) != len(entries[2]) or len(entries[5]) != len(entries[2])):
        raise ValueError("slopes/kinks or b/s/levels/offsets have inconsistent lengths")
    shape = np.broadcast_shapes(*(np.shape(x) for e in entries for x in e))
    slopes, kinks, b, s, levels, off = [[np.broadcast_to(np.asarray(x, np.float64), shape).ravel() for x in e]
                                        for e in entries]
    size = int(np.prod(shape, dtype=np.int64))
    # the break points in the order of the first problem; every problem must share it (strictly increasing, > 0)
    value = {**{("kink", i): x for i, x in enumerate(kinks)}, **{("level", j): x for j, x in enumerate(levels)}}
    order = sorted(value, key=lambda p: value[p][0]) if size else list(value)
    for kind, count in (("kink", len(kinks)), ("level", len(levels))):  # each list ascending, as discounted_cost asks
        ranks = [order.index((kind, i)) for i in range(count)]
        if ranks != sorted(ranks):
            raise ValueError(f"the {kind}s are not ascending")
    below = np.zeros(size)
    for p in order:
        if not np.all(value[p] > below):
            raise ValueError("the break points are not positive, distinct and in one order throughout the batch")
        below = value[p]
    xs = [value[p] for p in order]
    K = len(xs)
    edges = [np.zeros(size)] + xs

    def piece(k):  # the coefficients just right of edge k: np.searchsorted(..., side="right") of discounted_cost
        j = sum(1 for p in order[:k] if p[0] == "level")
        i = sum(1 for p in order[:k] if p[0] == "kink")
        return b[j], s[j], slopes[i], off[j]

    coef = [piece(k) for k in range(K + 1)]
    roots = [_roots_batch(bk, sk, gamma) for bk, sk, _, _ in coef]
    # z0 = 0 lies on the first interval (every break point is positive), where f(0) = 0
    return _value(edges, coef, roots, gamma, exps, 0, 0.0, 0.0).reshape(shape)


def _roots_batch(b: np.ndarray, s: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_roots` elementwise (the same operations; its errors on Python floats raised where any element would
    raise them)."""
    with np.errstate(all="ignore"):  # each branch is computed everywhere and kept where it applies
        square = b * b + 2.0 * gamma * s * s
        if np.any(square < 0):
            raise ValueError("math domain error")
        d = np.sqrt(square)
        up = b >= 0
        if np.any(s * s == 0) or np.any(np.where(up, b + d, d - b) == 0):
            raise ZeroDivisionError("float division by zero")
        rp = np.where(up, 2.0 * gamma / (b + d), (d - b) / (s * s))
        rm = np.where(up, -(b + d) / (s * s), -2.0 * gamma / (d - b))
    return rp, rm


def exps(x) -> np.ndarray:
    """``math.exp`` elementwise (``numpy.exp`` may differ from it in the last bit).

    Args:
        x (numpy.typing.ArrayLike): The exponents.

    Returns:
        ``exp(x)``, of the shape of ``x``.
    """
    x = np.asarray(x, np.float64)
    return np.fromiter(map(math.exp, x.ravel().tolist()), np.float64, x.size).reshape(x.shape)


def held_workload(analysis, theta_hat: float) -> float | None:
    """``Theta_hat / alpha_p``: the workload of p's jobs held at the threshold (under T1T2 the level the workload
    reflects at); None for a dual-mode system where it reaches the switching level z* (not modelled here).

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The analysis of the 2x2 system.
        theta_hat: ``Theta_hat = Theta_n / sqrt(n)``.

    Returns:
        ``Theta_hat / alpha_p``, or None.
    """
    w = float(theta_hat) / analysis.modes.alpha[analysis.p]
    return None if analysis.case != "single" and w >= analysis.z_star else w


def threshold_term(analysis, policy: str, theta_hat: float, switch_at: float | None = None) -> float | None:
    """``Delta_n`` of the module docstring for the theorem's threshold policy at ``Theta_hat = Theta_n /
    sqrt(n)``; 0 for P and PP; None for a policy other than the one Theorem 2.11 picks for the system, for a
    run that switches at a level ``switch_at`` other than z* (the term is that of z*), and for a dual-mode policy
    whose held jobs reach the switching level (``Theta_hat / alpha_p >= z*``).

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The analysis of the 2x2 system.
        policy: The policy's name.
        theta_hat: ``Theta_hat = Theta_n / sqrt(n)``.
        switch_at: The level the run switches at (None: z*).

    Returns:
        ``Delta_n``, 0 or None.
    """
    an = analysis
    if policy != an.policy:
        return None
    if switch_at is not None and (an.z_star is None or not math.isclose(switch_at, an.z_star, rel_tol=1e-12)):
        return None
    if policy not in THRESHOLD_POLICIES:
        return 0.0
    h, alpha, g = an.system.h, an.modes.alpha, an.system.gamma
    p, q = an.p, an.q
    bL, sL, bH, sH = an.mode_coefficients()
    levels, b, s = ((), [bL], [sL]) if an.case == "single" else ((an.z_star,), [bL, bH], [sL, sH])
    th, w = float(theta_hat), held_workload(an, theta_hat)
    if w is None:
        return None
    if POLICY_TABLE[policy].lower == RULE_T1:  # T1T2: the workload reflects at w = Theta_hat / alpha_p; Z^s at z* - w
        J = h[q] * alpha[q] * discounted_cost([1.0], [], g, b, s, (an.z_star - w,)) + h[p] * th / g
        return float(J - an.V0)
    held = discounted_cost([alpha[p], 0.0], [w], g, b, s, levels)  # E int e^{-gt} min(th, a_p Z)
    return float((h[p] - h[q] * alpha[q] / alpha[p]) * held)
