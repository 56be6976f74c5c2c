"""Draws: the self-contained sampler (:func:`sample`, Marsaglia-Tsang's exact fallback included), the event engines'
void protocol (:func:`sample_or_void`, :func:`slot_values`: no fallback, the event redone instead), and the draws of
one distribution for tests and diagnostics (:func:`draw`, :func:`sample_dist`).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.model.distributions import Dist
from jaxq.mc import rng
from jaxq.sim.sampling.kernels import _identity
from jaxq.sim.sampling.marsaglia_tsang import _gamma_fallback
from jaxq.sim.sampling.slots import _slots
from jaxq.sim.sampling.spec import DEFAULT_PROPOSALS, Spec, param_table, spec_of, words_needed

__all__ = ["draw", "sample", "sample_dist", "sample_or_void", "slot_values"]


def sample(words, spec: Spec, table: dict, idx, key=None, counter=None) -> jax.Array:
    """Unit-mean variates of the streams ``idx`` (int array of shape (r,)) from a budget of words.

    Args:
        words (jax.Array | Sequence): ``r * words_needed(spec)`` uint32 words (array or sequence), e.g.
            ``rng.words(key, counter, r * words_needed(spec))``; slot j uses the j-th run of
            ``words_needed(spec)`` words (see :func:`words_needed` for the two layouts that interleave).
        spec: The static methods present (:func:`spec_of`).
        table: The per-stream parameters (:func:`param_table`), as arrays.
        idx (jax.Array | Sequence[int]): Stream indices, shape (r,), static length.
        key (jax.Array | None): The replication key the words came from; needed only when the spec has gamma-method
            streams, whose exact fallback continues the same draw after the budget.
        counter (jax.Array | int | None): The draw the words came from (the same condition).

    Returns:
        float64 array of shape (r,): entry j is a draw of stream ``idx[j]``, entries independent.

    Raises:
        ValueError: A spec with gamma-method streams and no key or counter.
    """
    if "gamma" in spec.methods and (key is None or counter is None):
        raise ValueError("a spec with gamma-method streams needs key and counter for the exact fallback")
    slots = _slots(words, spec, table, idx)
    out = [v for v, _ in slots]
    if "gamma" in spec.methods:
        r = len(slots)
        first_block = (r * words_needed(spec) + 1) // 2
        ys = _gamma_fallback([g[0] for _, g in slots], [g[1] for _, g in slots], [g[3] for _, g in slots],
                             key, counter, first_block, spec.boost)
        for j, (_, g) in enumerate(slots):
            out[j] = jnp.where(g[4], ys[j] * g[2], out[j])
    return jnp.stack(out)


def sample_or_void(words, spec: Spec, table: dict, idx) -> tuple[jax.Array, jax.Array]:
    """:func:`sample` without the fallback: ``(values, ok)``.

    ``ok`` is False when a gamma slot had all of its ``spec.proposals`` proposals rejected, and then the values must
    not be used.

    The contract for exactness: an event engine that gets ``ok = False`` voids the event (keeps the
    state as it was, discards every value of the call) and redoes it with the next draw counter. The
    kept values are then exactly distributed and independent: whether a call is voided depends only on
    the words of the rejected gamma slots; a gamma slot's value is the first accepted of a sequence of
    independent Marsaglia-Tsang proposals (its law given acceptance is Gamma(a') exactly), and every
    other slot's value is independent of the voiding. With ``spec_of(dists, proposals=1)`` a gamma
    variate costs one proposal and an event is voided with probability at most 1 - 0.9516^r (0.094
    for r = 2 gamma slots at shape 1, 0.036 at shape 2, 0.020 at shape 3.3; other families never);
    no control flow at all, so nothing runs at a cost per replication batch under ``vmap``. (An engine
    may also void only when a slot it uses was rejected: :func:`slot_values`.)

    Args:
        words (jax.Array | Sequence): ``r * words_needed(spec)`` uint32 words (as :func:`sample`).
        spec: The static methods present (:func:`spec_of`).
        table: The per-stream parameters (:func:`param_table`), as arrays.
        idx (jax.Array | Sequence[int]): Stream indices, shape (r,), static length.

    Returns:
        ``(values, ok)``: the (r,) float64 values and whether they may be used.
    """
    slots = _slots(words, spec, table, idx)
    ok = jnp.ones((), bool)
    for _, g in slots:
        if g is not None:
            ok = ok & g[1]
    return jnp.stack([v for v, _ in slots]), ok


def slot_values(words, spec: Spec, table: dict, idx, keep=_identity) -> list:
    """The void protocol slot by slot, for event engines.

    An engine voids an event when a slot it *uses* is NaN: whether a slot is used depends on the state only, so the
    kept values are exact as in :func:`sample_or_void`.

    Args:
        words (jax.Array | Sequence): ``r * words_needed(spec)`` uint32 words (as :func:`sample`).
        spec: The static methods present (:func:`spec_of`).
        table: The per-stream parameters (:func:`param_table`), as arrays.
        idx (jax.Array | Sequence[int]): Stream indices, shape (r,), static length.
        keep (Callable): Materialises the shared intermediate values and each slot's value (see ``_slots``).

    Returns:
        A list of r float64 values, NaN for a gamma slot whose proposals were all rejected (each value then carries
            its own flag, so an engine that materialises it reads one array).
    """
    out = []
    for v, g in _slots(words, spec, table, idx, keep):
        out.append(keep(v if g is None else jnp.where(g[1], v, jnp.nan)))
    return out


def draw(key, counter, spec: Spec, table: dict, idx) -> jax.Array:
    """:func:`sample` of draw ``counter`` of the replication ``key``: one generator call for all slots.

    Args:
        key (jax.Array): The replication key.
        counter (jax.Array | int): The draw counter.
        spec: The static methods present (:func:`spec_of`).
        table: The per-stream parameters (:func:`param_table`), as arrays.
        idx (jax.Array | Sequence[int]): Stream indices, shape (r,), static length.

    Returns:
        float64 array of shape (r,) (as :func:`sample`).
    """
    r = int(np.shape(idx)[0])
    w = rng.word_list(key, counter, r * words_needed(spec))
    return sample(w, spec, table, idx, key, counter)


@partial(jax.jit, static_argnames=("spec", "count"))
def _draws(key, table, spec: Spec, count: int):
    zero = jnp.zeros(1, jnp.int32)
    counters = jnp.arange(count, dtype=jnp.uint32)
    return jax.vmap(lambda c: draw(key, c, spec, table, zero)[0])(counters)


def sample_dist(key: jax.Array, dist: Dist, count: int, proposals: int = DEFAULT_PROPOSALS) -> jax.Array:
    """``count`` independent unit-mean draws of one distribution (for tests and diagnostics).

    Draw ``i`` is :func:`draw` of counter ``i`` of ``key``: the way an event engine draws. Compiled
    once per :class:`Spec` (the parameters are traced).

    Args:
        key: The key.
        dist: The distribution.
        count: The number of draws.
        proposals: Marsaglia-Tsang proposals per gamma variate in the budget.

    Returns:
        The draws, (count,) float64.
    """
    spec = spec_of([dist], proposals)._replace(families=(), kmax=1)  # fields the new sampler ignores
    table = {k: jnp.asarray(v) for k, v in param_table([dist]).items()}
    return _draws(key, table, spec, int(count))
