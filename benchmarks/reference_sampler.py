"""The key-based reference sampler: one key per event, 53-bit uniforms from ``jax.random.bits``, every family of a
slot evaluated and selected, gamma by ``jax.random.gamma`` (:func:`sample_with_key`).

It shares no code or random stream with the word-based samplers of :mod:`jaxq.sim.sampling` (its uniforms, logarithm,
normal quantile and gamma are JAX's), which is why it lives outside the package: ``profile_sampling.py`` times the
word-based samplers against it (its "old" rows), and ``tests/sim/test_sampling.py`` pins its outputs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxq.sim.sampling.methods import FAMILY_CODE
from jaxq.sim.sampling.spec import Spec

__all__ = ["open_uniforms", "sample_with_key"]


def open_uniforms(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Uniforms on the open interval (0, 1) from 53 random bits each (float64)."""
    bits = jax.random.bits(key, shape, dtype=jnp.uint64) >> jnp.uint64(11)
    return (bits.astype(jnp.float64) + 0.5) * (2.0**-53)


def _family_value(name: str, u: jax.Array, a: jax.Array, gkey, kmax: int) -> jax.Array:
    """One unit-mean variate of family ``name`` from the uniforms ``u`` (shape (m,)) and parameter a."""
    if name == "exponential":
        return -jnp.log(u[0])
    if name == "deterministic":
        return jnp.ones((), jnp.float64)
    if name == "erlang":
        j = jnp.arange(kmax)
        return -jnp.sum(jnp.where(j < a, jnp.log(u[:kmax]), 0.0)) / a
    if name == "hyperexponential":
        rate = 2.0 * jnp.where(u[0] < a, a, 1.0 - a)
        return -jnp.log(u[1]) / rate
    if name == "lognormal":
        z = jnp.sqrt(2.0) * jax.scipy.special.erfinv(2.0 * u[0] - 1.0)
        return jnp.exp(a * z - 0.5 * a * a)
    if name == "gamma":
        return jax.random.gamma(gkey, a, dtype=jnp.float64) / a
    raise ValueError(f"unknown family {name!r}")


def sample_with_key(key: jax.Array, spec: Spec, table: dict, idx: jax.Array) -> jax.Array:
    """The previous sampler: unit-mean variates of the streams ``idx`` from one key per event.

    53-bit uniforms from ``jax.random.bits``, every family present evaluated for every slot and
    selected, gamma by ``jax.random.gamma``. Same outputs as before; the baseline of
    ``benchmarks/profile_sampling.py`` (no engine calls it).
    """
    r = idx.shape[0]
    u = open_uniforms(key, (r, spec.uniforms))
    a = table["a"][idx]
    gkeys = jax.random.split(jax.random.fold_in(key, 1), r) if "gamma" in spec.families else [None] * r
    out = []
    for j in range(r):  # r is a small static number (2 in the 2x2 simulator)
        vals = [_family_value(f, u[j], a[j], gkeys[j], spec.kmax) for f in spec.families]
        v = vals[0]
        if len(vals) > 1:
            code = table["code"][idx[j]]
            for f, val in zip(spec.families[1:], vals[1:]):
                v = jnp.where(code == FAMILY_CODE[f], val, v)
        out.append(v)
    return jnp.stack(out)
