"""An independent check of the HJB (2.17)-(2.18): finite differences and policy iteration.

On a grid 0 = x_0 < ... < x_N = X the equation ``gamma u = min_m (b_m u' + s_m^2 u''/2) + x`` is
discretised with central differences where the scheme is monotone and upwind differences elsewhere;
``u'(0) = 0`` by a reflecting ghost node, and ``u'(X) = 1/gamma`` (the slope of every solution of
linear growth far from the origin). Policy iteration alternates an exact sparse solve for a fixed
choice of mode per node with the greedy choice; it stops when the choice no longer changes.
This solver shares no code with :mod:`jaxq.diffusion.hjb` and is used to test it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla


def _operator(b, s2, h):
    """Coefficients (lower, diag, upper) of ``b u' + s2/2 u''`` at interior nodes."""
    central = np.abs(b) * h <= s2  # monotone when the diffusion dominates
    lo = np.where(central, s2 / (2 * h * h) - b / (2 * h), s2 / (2 * h * h) + np.maximum(-b, 0) / h)
    up = np.where(central, s2 / (2 * h * h) + b / (2 * h), s2 / (2 * h * h) + np.maximum(b, 0) / h)
    return lo, -(lo + up), up


def solve(b, sigma, gamma, x_max, n=20000, max_iter=100):
    """Solve the HJB by policy iteration.

    Args:
        b (numpy.typing.ArrayLike): Sequence of the drift of each mode.
        sigma (numpy.typing.ArrayLike): Sequence of the diffusion coefficient of each mode.
        gamma (float): Discount rate.
        x_max (float): Right end of the grid (take it many length scales beyond the switching point).
        n (int): Number of grid intervals.
        max_iter (int): Most policy iterations.

    Returns:
        (tuple): ``(x, u, mode)``: grid, value function, and the index of the minimising mode at each node.

    Raises:
        RuntimeError: Policy iteration did not converge within ``max_iter`` iterations.
    """
    b = np.asarray(b, float)
    s2 = np.asarray(sigma, float) ** 2
    x = np.linspace(0.0, x_max, n + 1)
    h = x[1] - x[0]
    ops = [_operator(bm, s2m, h) for bm, s2m in zip(b, s2)]
    mode = np.zeros(n + 1, dtype=int)
    previous = None
    for _ in range(max_iter):
        lo = np.choose(mode, [o[0] for o in ops]) * np.ones(n + 1)
        di = np.choose(mode, [o[1] for o in ops]) * np.ones(n + 1)
        up = np.choose(mode, [o[2] for o in ops]) * np.ones(n + 1)
        rhs = x.copy()
        # ghost nodes: u_{-1} = u_1 (u'(0) = 0); u_{n+1} = u_{n-1} + 2h/gamma (u'(X) = 1/gamma)
        sup = up[:-1].copy()
        sub = lo[1:].copy()
        sup[0] += lo[0]
        sub[-1] += up[-1]
        rhs[-1] += up[-1] * 2 * h / gamma
        a = sp.diags([-sub, gamma - di, -sup], [-1, 0, 1], format="csc")
        u = spla.spsolve(a, rhs)
        # greedy improvement with the same differences
        ug = np.concatenate([[u[1]], u, [u[-2] + 2 * h / gamma]])
        vals = np.stack([o[0] * ug[:-2] + o[1] * ug[1:-1] + o[2] * ug[2:] for o in ops])
        new = np.argmin(vals, axis=0)
        keep = vals[mode, np.arange(n + 1)] <= vals.min(axis=0) + 1e-12 * np.abs(vals).max()
        new = np.where(keep, mode, new)
        if np.array_equal(new, mode):
            return x, u, mode
        if previous is not None and np.array_equal(new, previous):
            # a two-cycle: nodes whose two modes tie within the solves' round-off flip back and forth (seen
            # at the discretised switching point); both policies are optimal to that precision
            return x, u, mode
        previous, mode = mode, new
    raise RuntimeError("policy iteration did not converge")


def switching_point(x, mode):
    """The first grid point where the chosen mode changes (NaN when it never changes).

    Args:
        x (numpy.ndarray): The grid.
        mode (numpy.ndarray): The index of the chosen mode at each node.

    Returns:
        (float): The midpoint of the first grid interval where the mode changes, or NaN.
    """
    change = np.nonzero(np.diff(mode))[0]
    return 0.5 * (x[change[0]] + x[change[0] + 1]) if len(change) else np.nan
