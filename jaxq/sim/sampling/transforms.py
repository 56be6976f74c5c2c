"""The transforms of a slot's words into a unit-mean variate for the methods without rejection: exponential
``-log U``, Erlang-k ``-log(U_1 ... U_k) / k``, hyperexponential with balanced means (the phase from one word, then
``-log U`` times the phase mean), lognormal ``exp(s Z - s^2/2)`` and gammahalf ``(-log(U_1 ... U_k) + Z^2/2) /
(k + 1/2)`` (the laws and their resolution: :mod:`jaxq.sim.sampling`).
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxq.mc import rng
from jaxq.sim.sampling.kernels import log


# Word layout of one slot (its own words, a whole number of Threefry blocks of two words): every
# value that is computed once and read by several later computations (a uniform that feeds a logarithm,
# a normal quantile) takes a block of its own, so an engine that materialises it (``keep``) computes that
# block once; the spare word of such a block is unused.
def _exponential(w, c, keep):
    return -log(keep(rng.uniform(w[0])))


def _erlang(w, c, kdirect, keep):
    p = rng.uniform(w[0])
    for j in range(1, kdirect):
        p = p * jnp.where(j < c[0], rng.uniform(w[j]), 1.0)  # >= 2^-33 each: no underflow for k <= 30
    return -log(keep(p)) * c[1]


def _hyperexponential(w, c, thr, keep):
    # the phase travels with the uniform as its sign: one materialised value per slot
    u = keep(jnp.where(w[0] < thr, rng.uniform(w[1]), -rng.uniform(w[1])))
    return -log(jnp.abs(u)) * jnp.where(u > 0.0, c[0], c[1])


def _lognormal(w, c, keep, z):
    return jnp.exp(c[0] * z + c[1])


def _gammahalf(w, c, khalf, keep, z):
    """Gamma with shape k + 1/2: ``(E_k + Z^2/2) / (k + 1/2)``, ``E_k = -log(U_1 ... U_k) ~ Gamma(k)`` and Z an
    independent standard normal (``Z^2/2 ~ Gamma(1/2)``; the sum of independent gammas is gamma)."""
    x = 0.5 * z * z
    if khalf:
        p = rng.uniform(w[0])
        for j in range(1, khalf):
            p = p * jnp.where(j < c[0], rng.uniform(w[j]), 1.0)
        x = x - jnp.where(c[0] > 0, log(keep(p)), 0.0)
    return x * c[1]
