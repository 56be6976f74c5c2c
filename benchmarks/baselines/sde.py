"""The projected Euler scheme of the reflected SDE, one path at a time in numba.

``z <- max(z + b(z) h + sigma(z) sqrt(h) N, 0)`` with piecewise-constant coefficients (a level belongs
to the region below it), a plain loop over steps, ``prange`` over paths (all cores), path r seeded with
``np.random.seed(seed * 1_000_003 + r)``. The discounted cost integrates ``exp(-gamma t) Z_t`` exactly
against the linear interpolation of Z within each step (jaxq's weights
:func:`jaxq.sde.driver.step_weights`; the discount ``exp(-gamma h k)`` at step k updated by the factor
``exp(-gamma h)``, equal up to rounding) over the horizon rounded up to whole blocks of 64 steps
(:func:`jaxq.sde.driver.step_counts`), so it estimates what jaxq's ``euler`` scheme estimates.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

from jaxq.sde.driver import step_counts, step_weights
from jaxq.stats import mean_stderr


@numba.njit(cache=True)
def _one(levels, b, s, z0, h, w0, w1, q, steps):
    """One path: ``z <- max(z + b(z) h + sigma(z) sqrt(h) N, 0)``; its discounted cost (float64)."""
    sq = math.sqrt(h)
    z = z0
    cost = 0.0
    disc = 1.0  # exp(-gamma h k) at step k
    for _ in range(steps):
        k = 0
        for c in levels:  # a level belongs to the region below it
            if z > c:
                k += 1
        z1 = max(z + b[k] * h + s[k] * sq * np.random.standard_normal(), 0.0)
        cost += disc * (w0 * z + w1 * z1)
        disc *= q
        z = z1
    return cost


@numba.njit(parallel=True, cache=True)
def _euler(levels, b, s, z0, h, w0, w1, q, steps, paths, seed):
    costs = np.empty(paths)
    for r in numba.prange(paths):
        np.random.seed(seed * 1_000_003 + r)
        costs[r] = _one(levels, b, s, z0, h, w0, w1, q, steps)
    return costs


def euler(params, z0: float, gamma: float, dt: float, horizon: float, paths: int, seed: int = 0) -> dict:
    """The discounted cost ``int_0^T exp(-gamma t) Z_t dt`` of the projected Euler scheme.

    Args:
      params: ``(levels, b, s)`` piecewise-constant coefficients (e.g. :func:`jaxq.sde.coefficients.wcp`);
      z0 >= 0: start; gamma > 0: discount rate; dt: step; horizon: truncation time (rounded up to whole
      blocks of 64 steps, as in jaxq); paths, seed: Monte Carlo.
    Returns:
      ``cost`` (paths,), ``mean_cost`` and ``mean_cost_stderr``, ``steps``, ``events`` (path-steps) and
      ``wall_s`` (the first call also compiles).
    """
    n_blocks, block = step_counts(dt, horizon)
    steps = n_blocks * block
    w0, w1 = (float(w) for w in step_weights(gamma, dt))
    arrays = [np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape(-1)) for a in params]
    t = time.perf_counter()
    cost = _euler(*arrays, float(z0), float(dt), w0, w1, math.exp(-gamma * dt), int(steps), int(paths), int(seed))
    wall = time.perf_counter() - t
    m, se = mean_stderr(cost)
    return {"cost": cost, "mean_cost": m, "mean_cost_stderr": se, "steps": steps, "events": int(paths) * steps,
            "wall_s": wall}
