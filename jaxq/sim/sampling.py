"""Exact JAX sampling of the mean-1 renewal primitives of SPEC.md (no rejection loops of our own).

A simulator has a fixed list of *streams* (e.g. two interarrival and four service distributions). The
set of distribution families present is static (:class:`Spec`, hashable, part of the compiled
program); the numeric parameters are a small table of arrays (traced, so another SCV does not
recompile). :func:`sample` draws one unit-mean variate for each requested stream index from one key.

Families (all with mean 1 and SCV c):

* exponential: ``-log U``;
* erlang (c = 1/k): ``-(1/k) sum_{j<k} log U_j`` with k <= ``Spec.kmax`` uniforms;
* gamma: shape ``1/c``, scale ``c`` (``jax.random.gamma``, exact);
* lognormal: ``exp(-s^2/2 + s Z)``, ``s^2 = log(1 + c)``, Z standard normal from one uniform;
* hyperexponential with balanced means: phase j w.p. ``p_j``, rate ``2 p_j``,
  ``p_1 = (1 + sqrt((c - 1)/(c + 1)))/2`` (so ``p_1/rate_1 = p_2/rate_2 = 1/2``);
* deterministic: 1.

Uniforms are built from 53 random bits as ``(b + 1/2) 2^-53``, which lies in the open interval (0, 1),
so ``log U`` and the normal quantile are always finite.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.model.distributions import NAMES, Dist

FAMILY_CODE = {name: c for c, name in enumerate(NAMES)}


class Spec(NamedTuple):
    """Static part of a list of distributions: the families present and the largest Erlang k."""

    families: tuple[str, ...]
    kmax: int

    @property
    def uniforms(self) -> int:
        """Uniforms drawn per variate (the most any present family needs)."""
        need = {"exponential": 1, "erlang": self.kmax, "lognormal": 1, "hyperexponential": 2}
        return max([need.get(f, 0) for f in self.families] + [1])


def spec_of(dists: Sequence[Dist]) -> Spec:
    """The static :class:`Spec` of a list of distributions."""
    fams = tuple(sorted({d.name for d in dists}, key=FAMILY_CODE.get))
    kmax = max([d.k for d in dists if d.name == "erlang"] + [1])
    return Spec(fams, kmax)


def param_table(dists: Sequence[Dist]) -> dict[str, np.ndarray]:
    """Numeric parameters per stream: family ``code``, ``a`` and ``b`` (meaning depends on the family).

    erlang: a = k; gamma: a = shape 1/c; lognormal: a = s = sqrt(log(1+c)); hyperexponential: a = p_1.
    """
    code, a = [], []
    for d in dists:
        code.append(FAMILY_CODE[d.name])
        if d.name == "erlang":
            a.append(float(d.k))
        elif d.name == "gamma":
            a.append(1.0 / d.scv)
        elif d.name == "lognormal":
            a.append(math.sqrt(math.log1p(d.scv)))
        elif d.name == "hyperexponential":
            a.append(0.5 * (1.0 + math.sqrt((d.scv - 1.0) / (d.scv + 1.0))))
        else:
            a.append(1.0)
    return {"code": np.array(code, dtype=np.int32), "a": np.array(a, dtype=np.float64)}


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


def sample(key: jax.Array, spec: Spec, table: dict, idx: jax.Array) -> jax.Array:
    """Unit-mean variates of the streams ``idx`` (int array of shape (r,)), one per entry, from ``key``.

    Args:
      key: a PRNG key; the variates are a deterministic function of (key, idx).
      spec: the static families present (:func:`spec_of`).
      table: the per-stream parameters (:func:`param_table`), as arrays.
      idx: stream indices, shape (r,).

    Returns:
      float64 array of shape (r,): entry j is a draw of stream ``idx[j]``, entries independent.
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


def sample_dist(key: jax.Array, dist: Dist, count: int) -> jax.Array:
    """``count`` independent unit-mean draws of one distribution (for tests and diagnostics)."""
    spec = spec_of([dist])
    table = {k: jnp.asarray(v) for k, v in param_table([dist]).items()}
    keys = jax.random.split(key, count)
    zero = jnp.zeros(1, jnp.int32)
    return jax.vmap(lambda k: sample(k, spec, table, zero)[0])(keys)
