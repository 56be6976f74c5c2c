"""Coefficients of the reflected SDE ``dZ = b(Z) dt + sigma(Z) dB + dL`` on [0, inf) (2.15), (2.24).

Piecewise-constant coefficients are a pytree ``Piecewise(levels, b, s)``: jump points
``0 < c_1 < ... < c_m`` and the values ``b_k, s_k`` on the regions ``[c_k, c_{k+1}]`` (``c_0 = 0``,
``c_{m+1} = inf``). As in (2.25) a jump point belongs to the region below it (``phi*`` takes the lower
mode on ``[0, z*]``); the set {Z = c} has zero time, so this convention does not affect the law.

At a jump of sigma the generator is ``sigma^2/2 u'' + b u'`` with u, u' continuous (the HJB convention
of ``jaxq.diffusion.hjb``): the Ito solution. In Lamperti coordinates ``Y = Phi(Z) = int_0^Z dy/sigma``
the diffusion coefficient is one and the drift ``b/sigma``; the process is a skew Brownian motion at
``Phi(c)`` that leaves upwards with probability ``s_below / (s_below + s_above)``
(exit from ``(c - e, c + e)`` is symmetric for Z, so Y exits ``(-e/s_below, e/s_above)`` evenly).

Smooth coefficients are any function ``coef(params, z) -> (b, s)`` of a pytree of parameters.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError


class Piecewise(NamedTuple):
    """Piecewise-constant drift ``b`` and diffusion coefficient ``s`` with jumps at ``levels``.

    Attributes:
        levels: (m,) jump points, increasing, > 0.
        b: (m + 1,) drifts, one per region.
        s: (m + 1,) diffusion coefficients, one per region, > 0.
    """

    levels: jnp.ndarray  # (m,) increasing, > 0
    b: jnp.ndarray  # (m + 1,)
    s: jnp.ndarray  # (m + 1,), > 0


def piecewise(levels, b, s) -> Piecewise:
    """Validated :class:`Piecewise` coefficients (float64).

    Args:
        levels (array_like): The jump points ``0 < c_1 < ... < c_m``.
        b (array_like): The m + 1 drifts.
        s (array_like): The m + 1 diffusion coefficients.

    Returns:
        The coefficients.

    Raises:
        InputError: Naming ``coefficients`` or ``levels``: bad shapes, values that are not finite, diffusion
            coefficients that are not positive, or jump levels that are not positive and increasing.
    """
    levels = np.atleast_1d(np.asarray(levels, dtype=float)).reshape(-1)
    b = np.atleast_1d(np.asarray(b, dtype=float)).reshape(-1)
    s = np.atleast_1d(np.asarray(s, dtype=float)).reshape(-1)
    m = levels.size
    if b.size != m + 1 or s.size != m + 1:
        raise InputError("coefficients", f"{m} jump levels need {m + 1} drifts and diffusion coefficients")
    if not (np.all(np.isfinite(levels)) and np.all(np.isfinite(b)) and np.all(np.isfinite(s))):
        raise InputError("coefficients", "must be finite")
    if np.any(s <= 0):
        raise InputError("coefficients", "diffusion coefficients must be positive")
    if m and (levels[0] <= 0 or np.any(np.diff(levels) <= 0)):
        raise InputError("levels", "jump levels must be positive and increasing")
    return Piecewise(jnp.asarray(levels), jnp.asarray(b), jnp.asarray(s))


def wcp(bL, sL, bH, sH, switch_at) -> Piecewise:
    """The coefficients (2.25): lower mode on [0, z], higher mode above.

    Args:
        bL (float): The lower mode's drift.
        sL (float): The lower mode's diffusion coefficient.
        bH (float): The higher mode's drift.
        sH (float): The higher mode's diffusion coefficient.
        switch_at (float | None): The switching level z; None or z <= 0 means the higher mode throughout.

    Returns:
        The coefficients (:func:`piecewise`).
    """
    if switch_at is None or switch_at <= 0:
        return piecewise([], [bH], [sH])
    return piecewise([switch_at], [bL, bH], [sL, sH])


def region(levels, z):
    """Index k of the region of z (a level belongs to the region below it).

    Args:
        levels (jax.Array): The jump points, (m,).
        z (jax.Array): The states.

    Returns:
        (jax.Array): The region indices (the shape of z).
    """
    if levels.shape[0] == 0:
        return jnp.zeros(jnp.shape(z), dtype=jnp.int32)
    return jnp.sum(jnp.asarray(z)[..., None] > levels, axis=-1)


def piecewise_coefficients(p: Piecewise, z):
    """``(b(z), sigma(z))`` for piecewise-constant coefficients.

    Args:
        p: The coefficients.
        z (jax.Array): The states.

    Returns:
        (tuple[jax.Array, jax.Array]): ``(b(z), sigma(z))``.
    """
    k = region(p.levels, z)
    return p.b[k], p.s[k]


def lamperti_levels(p: Piecewise):
    """``Phi(c_j)``, the jump levels in Lamperti coordinates ``Phi(z) = int_0^z dy / sigma(y)``.

    Args:
        p: The coefficients.

    Returns:
        (jax.Array): The levels ``Phi(c_j)``, (m,).
    """
    widths = jnp.diff(jnp.concatenate([jnp.zeros(1), p.levels]))
    return jnp.cumsum(widths / p.s[:-1])


def to_lamperti(p: Piecewise, z):
    """``Phi(z)`` (piecewise linear).

    Args:
        p: The coefficients.
        z (jax.Array): The states.

    Returns:
        (jax.Array): ``Phi(z)``.
    """
    lz = jnp.concatenate([jnp.zeros(1), p.levels])
    ly = jnp.concatenate([jnp.zeros(1), lamperti_levels(p)])
    k = region(p.levels, z)
    return ly[k] + (z - lz[k]) / p.s[k]


def from_lamperti(p: Piecewise, y):
    """``Phi^{-1}(y)`` (piecewise linear).

    Args:
        p: The coefficients.
        y (jax.Array): The states in Lamperti coordinates.

    Returns:
        (jax.Array): ``Phi^{-1}(y)``.
    """
    lz = jnp.concatenate([jnp.zeros(1), p.levels])
    ly = jnp.concatenate([jnp.zeros(1), lamperti_levels(p)])
    k = region(ly[1:], y)
    return lz[k] + (y - ly[k]) * p.s[k]
