"""Gamma of any shape a = 1/c by Marsaglia and Tsang's method, with P proposals side by side and an exact end.

``4P`` words (2 for P = 1) and the slot's normal. Proposal: Z a standard normal (the slot's normal for the first
proposal, the normal quantile of one word for the others), ``V = (1 + Z/sqrt(9d))^3``, ``d = a' - 1/3``; accepted
iff ``V > 0`` and ``log U < Z^2/2 + d - dV + d log V``; then ``dV ~ Gamma(a')``. For a < 1, ``a' = a + 1`` and the
draw is multiplied by ``U'^(1/a)`` (Stuart's theorem: ``Gamma(a) = Gamma(a+1) U^(1/a)``) with ``U' = U e^-A`` the
recycled acceptance uniform (52 bits, one word in the event form P = 1; given acceptance it is uniform and
independent of the proposal: :func:`_mt_proposal`); for a >= 1, ``a' = a``. No rejection loop of unbounded length
runs per variate, and the result is **exact**: the accepted proposals of Marsaglia-Tsang are i.i.d. Gamma(a')
whatever the stopping rule. One proposal is accepted with probability 0.952 at a' = 1 (the worst case), 0.970 at
a' = 1.4, 0.982 at a' = 2, 0.990 at a' = 3.3. Two ways to finish when all P are rejected:

- :func:`jaxq.sim.sampling.sample` (self-contained): an exact fallback (:func:`_gamma_fallback`) continues with
  further proposals drawn from the same event's counter after the budget (a ``lax.while_loop``; under ``vmap`` it
  iterates only in event steps where some replication needs it). With the default P = 4 it is needed by at most
  5.5e-6 of the gamma variates (1.1e-7 at a' = 2, 9e-9 at a' = 3.3). Its price is the loop itself: on a CPU a
  ``while_loop`` inside a vmapped ``scan`` costs 15-35 ns per event even when it never iterates (measured beside
  the same sampler without it), since XLA cannot fuse across it.
- :func:`jaxq.sim.sampling.sample_or_void` / :func:`jaxq.sim.sampling.slot_values` (for event engines): no
  fallback, an ``ok`` flag (or NaN) instead; the engine voids the event and redoes it with the next counter
  (exact). With P = 1 a gamma variate costs one proposal and 2-10% of the events of an all-gamma system are redone.

A gamma-only spec with P = 1 whose shapes lie in ``STEP_SHAPES`` takes the step envelope instead
(:mod:`.step_envelope`); a mixed spec with P = 1 off that range takes the mixed form of Marsaglia-Tsang
(:func:`jaxq.sim.sampling.slots._slot_shared`: the acceptance uniform is the slot's first word, ``log t`` shares the
shared logarithm's division, and the test is ``log u < A``).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from jaxq.mc import rng
from jaxq.sim.sampling.kernels import _U32, _identity, log, ndtri


def _mt_cube(t):
    """``(t > 0, ts, V = ts^3)`` of a Marsaglia-Tsang proposal ``t = 1 + cz`` (ts: t, or 1 where t <= 0, rejected)."""
    pos = t > 0.0
    ts = jnp.where(pos, t, 1.0)
    return pos, ts, ts * ts * ts


def _mt_log_acceptance(ts, v, log_ts, d):
    """``A = z^2/2 + d - dV + d log V``, the log of the acceptance probability, from t alone (``z^2/2 =
    4.5 d (t - 1)^2`` as ``cc^2 = 1/(9d)``) and ``log t``."""
    h = ts - 1.0
    return 4.5 * d * (h * h) + d - d * v + 3.0 * d * log_ts


def _mt_proposal(t, u, d, cc, c2=None):
    """One Marsaglia-Tsang proposal from ``t = 1 + cc z`` (z a standard normal) and its acceptance uniform u:
    ``(value, accepted)``.

    ``A = z^2/2 + d - dV + d log V <= 0`` (``V = t^3``) is the log of the acceptance probability, evaluated
    from t alone (``z^2/2 = 4.5 d (t - 1)^2``, as ``cc^2 = 1/(9d)``), so that an engine materialises one value
    per proposal (t) and not both z and t. Without a boost (``c2`` None) the proposal is accepted iff
    ``u < exp(A)`` (one log and one exp) and the value is ``dV ~ Gamma(a')``. With a boost (``c2 = 1/a``
    for a shape a < 1, 0 for a >= 1 in a mixed spec) the test is ``log u < A`` and the value is
    ``dV (u e^-A)^c2`` (one log more, no other uniform): given acceptance and z, u is uniform on (0, e^A), so
    ``u e^-A`` is a uniform independent of dV (the acceptance uniform recycled) and
    ``dV (u e^-A)^(1/a) ~ Gamma(a + 1) Beta(a, 1) = Gamma(a)``.
    """
    pos, ts, v = _mt_cube(t)
    A = _mt_log_acceptance(ts, v, log(ts), d)
    if c2 is None:
        return d * v, pos & (u < jnp.exp(A))
    L = log(u)
    return d * v * jnp.exp((L - A) * c2), pos & (L < A)


def _gamma_z(wz, keep):
    """The proposal's normal: the quantile of a one-word uniform (|Z| <= 6.34)."""
    return ndtri(keep(rng.uniform(wz)), far=False)


def _gamma(w, c, proposals, boost, keep=_identity, z=None):
    """First accepted of ``proposals`` Marsaglia-Tsang proposals: ``(value part, accepted, factor)``.

    Proposal j takes words ``4j`` (its normal, for j >= 1: proposal 0's is ``z``, the slot's normal) and
    ``4j + 2`` (its acceptance uniform: one word; with a boost the 52-bit uniform of words ``4j + 2, 4j + 3``,
    whose recycled part is the boost, see :func:`_mt_proposal`), each the first word of a block. The value is
    ``part * factor`` (``factor = 1/a``, the unit mean), final when accepted; otherwise
    :func:`_gamma_fallback` replaces the part.
    """
    d, cc = c[0], c[1]

    def proposal_t(j):  # t = 1 + cc z of proposal j, materialised (read by log t and by the test)
        return keep(1.0 + cc * (z if j == 0 and z is not None else _gamma_z(w[4 * j], keep)))

    def acc(j):
        # with a boost the uniform feeds a logarithm: materialised, so that its block is computed once
        return keep(rng.uniform52(w[4 * j + 2], w[4 * j + 3])) if boost else rng.uniform(w[4 * j + 2])

    c2 = c[2] if boost else None
    y, ok = _mt_proposal(proposal_t(proposals - 1), acc(proposals - 1), d, cc, c2)
    for j in range(proposals - 2, -1, -1):  # the earliest accepted proposal wins
        yj, okj = _mt_proposal(proposal_t(j), acc(j), d, cc, c2)
        y = jnp.where(okj, yj, y)
        ok = okj | ok
    return y, ok, c[3]


def _gamma_fallback(ys, oks, cs, key, counter, first_block, boost=False):
    """Exact completion: further proposals, one block (two words) per pending slot per round.

    Round m gives slot j block ``first_block + m r + j`` of the same draw (its two words: the normal and
    the acceptance uniform); under ``vmap`` the loop runs while any replication has a pending slot
    (probability at most 5.5e-6 per variate with P = 4).
    """
    r = len(ys)
    k0, k1 = rng.key_words(key)
    c0, chi = rng.counter_words(counter)
    rounds = (rng.MAX_WORD // 2 - first_block) // r  # 2^15 rounds: never reached (0.05^32768)

    def cond(carry):
        m, _, ok = carry
        return jnp.logical_not(jnp.all(jnp.stack(ok))) & (m < rounds)

    def body(carry):
        m, y, ok = carry
        y, ok = list(y), list(ok)
        for j in range(r):
            b = (first_block + j + m * r).astype(_U32)
            wz, wu = rng.threefry2x32(k0, k1, c0, chi + b)
            tj = 1.0 + cs[j][1] * ndtri(rng.uniform(wz), far=False)
            yj, okj = _mt_proposal(tj, rng.uniform(wu), cs[j][0], cs[j][1], cs[j][2] if boost else None)
            take = jnp.logical_not(ok[j]) & okj
            y[j] = jnp.where(take, yj, y[j])
            ok[j] = ok[j] | okj
        return m + 1, tuple(y), tuple(ok)

    _, ys, _ = lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), tuple(ys), tuple(oks)))
    return list(ys)
