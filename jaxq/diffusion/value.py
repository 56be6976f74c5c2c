"""The value function V of a switching policy of the WCP and its derivative V', for control variates.

For the reflected diffusion (2.24) that uses the lower mode (b_L, sigma_L) on [0, z] and the higher mode
(b_H, sigma_H) above z, the cost from z0, ``V(z0) = E int_0^inf exp(-gamma t) Z_t dt``, is the solution of
the HJB (2.17) of :mod:`jaxq.diffusion.hjb`; Ito's formula on ``exp(-gamma t) V(Z_t)`` gives

    int_0^inf exp(-gamma t) Z_t dt = V(Z_0) + int_0^inf exp(-gamma t) sigma(Z_t) V'(Z_t) dB_t

(the reflection term vanishes because V'(0) = 0). The simulators weight centred random inputs by
``exp(-gamma t) V'(W_hat(t))`` (:mod:`jaxq.sim.models.pss2x2`, :mod:`jaxq.sde.driver`): mean-zero controls
whose variance reduction grows with n. :class:`ValueFunction` holds the constants of V' (computed once, on the
host), :func:`marginal` evaluates ``V'(w)`` in JAX (two exponentials, non-positive exponents).
A policy that never switches (level inf) uses the lower mode throughout, one with level 0 the higher mode.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp

from jaxq.diffusion import hjb


class ValueFunction(NamedTuple):
    """The constants of ``V'`` for a switching level (traced float64 scalars).

    Attributes:
        z: The switching level.
        gamma: The discount rate.
        bL: The drift of the lower mode.
        a: The constant a of the lower side of ``W = gamma V'`` (:mod:`jaxq.diffusion.hjb`).
        c: The constant c of the lower side.
        f: The constant f of the upper side.
        p: The root p of the lower mode (``exp(p (x - z))``).
        q: The root q of the lower mode (``exp(q x)``).
        r: The root r of the higher mode (``exp(r (x - z))``).
    """

    z: jnp.ndarray
    gamma: jnp.ndarray
    bL: jnp.ndarray
    a: jnp.ndarray
    c: jnp.ndarray
    f: jnp.ndarray
    p: jnp.ndarray
    q: jnp.ndarray
    r: jnp.ndarray


def value_function(b_lo: float, s_lo: float, b_hi: float, s_hi: float, gamma: float, level: float) -> ValueFunction:
    """The value function of the policy that switches from the lower to the higher mode at ``level``.

    Args:
        b_lo: The drift of the lower mode.
        s_lo: The diffusion coefficient of the lower mode.
        b_hi: The drift of the higher mode.
        s_hi: The diffusion coefficient of the higher mode.
        gamma: The discount rate.
        level: The switching level (inf: the lower mode throughout; 0 or below: the higher mode throughout).

    Returns:
        The constants of ``V'``.
    """
    if not math.isfinite(level):  # never switches: the lower mode throughout (a switch between equal modes)
        b_hi, s_hi, level = b_lo, s_lo, 1.0
    elif level <= 0.0:  # the higher mode throughout
        b_lo, s_lo, level = b_hi, s_hi, 1.0
    f64 = jnp.float64
    a, c, f, p, q, r = hjb._coefficients(f64(level), f64(b_lo), f64(s_lo), f64(b_hi), f64(s_hi), f64(gamma))
    return ValueFunction(f64(level), f64(gamma), f64(b_lo), a, c, f, p, q, r)


def marginal(vf: ValueFunction, w):
    """``V'(w)`` (``w >= 0``, workload units); ``V'(0) = 0`` and ``V' -> 1/gamma`` as w grows.

    Args:
        vf: The constants of ``V'`` (:func:`value_function`).
        w (jax.typing.ArrayLike): The workload.

    Returns:
        (jax.Array): ``V'(w)``.
    """
    W, _, _ = hjb._marginal(w, vf.z, vf.bL, vf.a, vf.c, vf.f, vf.p, vf.q, vf.r)
    return W / vf.gamma
