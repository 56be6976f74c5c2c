"""The one random-stream layer of every driver: counter-based words of a replication's key, no key split.

A replication owns a key, the ``uint32[2]`` of ``fold_in(PRNGKey(seed), r)`` (that stays the
definition of replication r's stream). Its random words form a two-dimensional array: *draw* ``c``
(an event number, uint32 or uint64, ``c < 2^48``) has an unbounded sequence of 32-bit words, and
word ``i`` of draw ``c`` is output ``i mod 2`` of the Threefry-2x32 block function (20 rounds, as in
Random123 and ``jax.extend.random.threefry_2x32``) keyed by the replication key and applied to the
counter block::

    (x0, x1) = (lo32(c), floor(i / 2) + 2^16 hi32(c))        (floor(i / 2) < 2^16)

:func:`words` returns words ``offset .. offset+count-1`` of draw ``c``: an event takes the words it
needs from one call, without any ``fold_in``; a rare extra need (the exact fallback of the gamma
sampler) continues the same draw at a larger offset, so it never reuses a word. Distinct
``(key, c, i)`` give distinct Threefry inputs, hence independent words (Threefry is a
pseudo-random function of its counter).

The block function is written out here in ``jax.numpy`` (20 rounds unrolled, bit-identical to
``jax.extend.random.threefry_2x32``: ``tests/sim/test_sampling.py`` checks both that and Random123's
known answers): JAX's own primitive is emitted on the CPU as a rolled loop in an out-of-line function,
which XLA cannot fuse with the rest of an event step; measured in the event driver's vmapped scan over events
at 10^4 replications, the inline version costs about 4 ns per block against about 30 ns
(``benchmarks/profile_sampling.py``).

Measured and rejected: Philox-4x32-10 written the same way (4 words per call, ``lax.mulhi``) ran at
the speed of Threefry per event (15.1 against 14.8 ns for an event drawing two exponentials; with
the 32x32->64 products done in uint64 it was slower, 20 ns), far from the 1.5x that would justify a
second generator, so Threefry stays.

Every simulator draws through this layout, from the replication key ``fold_in(PRNGKey(seed), r)``
(:func:`jaxq.mc.rng.keys`), with its own meaning of the draw counter ``c``:

* the 2x2 event engine: ``c`` the event number (draw 0 the initial interarrival times), each event the words its
  samplers need (:mod:`jaxq.sim.sampling`); the perturbation of a perturbed run (the smoothed-gradient tuner) is
  draw :data:`PERTURB_DRAW`, beyond every event's;
* the Markov event driver (:mod:`jaxq.sim.event`): ``c`` the event number, two 52-bit uniforms (four words: the
  holding time and the event);
* the uniformised driver (:mod:`jaxq.sim.uniformized`): ``c`` the page number, ``PAGE`` words (one a step);
* the workload SDE (:mod:`jaxq.sde.driver`): ``c`` the block number, the block's normals and uniforms
  (:func:`normals`, :func:`uniforms`, two words each);
* the network diffusion's Euler scheme (:mod:`jaxq.sde.network_euler`): ``c`` the step number, one normal a
  coordinate.

:func:`block` computes many words of one draw as one vectorised Threefry call (the same words as :func:`words`).

Uniforms: :func:`uniform` maps a word ``w`` to ``(w + 1/2) 2^-32`` in the open interval (0, 1), built
from the mantissa bits (exact, no integer to float conversion); :func:`uniform52` maps two words to
``(b + 1/2) 2^-52`` with 52 random bits ``b`` (also exact; smallest value ``2^-53``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special  # noqa: F401  (ndtri)
import numpy as np
from jax import lax

U32 = jnp.uint32
U64 = jnp.uint64
_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA
MAX_WORD = 1 << 17  # words per draw addressable by the counter layout (2^16 blocks)


def keys(seed: int, start: int, count: int) -> jax.Array:
    """Keys of replications ``start .. start+count-1``: ``fold_in(PRNGKey(seed), r)``.

    Args:
        seed: The base seed.
        start: The first replication.
        count: The number of replications.

    Returns:
        The keys, one per replication.
    """
    base = jax.random.PRNGKey(seed)
    idx = jnp.arange(start, start + count, dtype=jnp.uint32)
    return jax.vmap(lambda r: jax.random.fold_in(base, r))(idx)


def seed_of(*entropy: int) -> int:
    """A 32-bit seed drawn from a tuple of integers (``numpy.random.SeedSequence``).

    Distinct tuples give independent seeds. Every seed jaxq derives from a user's seed is one of these.

    Args:
        *entropy: The integers.

    Returns:
        The seed.
    """
    return int(np.random.SeedSequence(tuple(int(e) for e in entropy)).generate_state(1)[0])


def generator(*entropy: int) -> np.random.Generator:
    """A NumPy generator seeded by a tuple of integers (``numpy.random.default_rng``, a ``SeedSequence`` of the tuple).

    The host-side stream of what is drawn before any simulation (random systems, orders of systems).

    Args:
        *entropy: The integers.

    Returns:
        The generator.
    """
    return np.random.default_rng(tuple(int(e) for e in entropy))


SEARCH, EVALUATION, PILOT = 1, 2, 3  # purposes of derived seeds: a tuner's search and evaluation, a pilot run


def derived_seed(seed: int, purpose: int, *index: int) -> int:
    """A seed for one purpose, and optionally one index within it, drawn from ``(seed, purpose, *index)``.

    It is never equal to ``seed`` itself: a result simulated with ``seed`` shares no replication with the search that
    chose its parameters (``simulate(policy="tuned")``) or with the pilot that chose its number of replications
    (``simulate(rel_se=...)``).

    Args:
        seed: The user's seed.
        purpose: :data:`SEARCH`, :data:`EVALUATION`, :data:`PILOT`.
        *index: An index within the purpose (a chain, a step).

    Returns:
        The seed.
    """
    s = seed_of(seed, 0x6A617871, purpose, *index)
    return s if s != seed else (s + 1) % 2**32


def _rotl(x, d):
    return (x << U32(d)) | (x >> U32(32 - d))


def threefry2x32(k0, k1, x0, x1):
    """The Threefry-2x32 block function (20 rounds) on uint32 arrays (broadcast).

    Same outputs as ``jax.extend.random.threefry_2x32`` and Random123's ``threefry2x32``; written out
    so that XLA fuses it with the code that consumes the words.

    Args:
        k0 (jax.Array): The first key word, uint32.
        k1 (jax.Array): The second key word, uint32.
        x0 (jax.Array): The first counter word, uint32.
        x1 (jax.Array): The second counter word, uint32.

    Returns:
        (tuple): ``(y0, y1)``.
    """
    k0, k1, x0, x1 = (jnp.asarray(v, U32) for v in (k0, k1, x0, x1))
    ks = (k0, k1, k0 ^ k1 ^ U32(_PARITY))
    x0 = x0 + ks[0]
    x1 = x1 + ks[1]
    for i in range(5):
        for r in _ROT[i % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + U32(i + 1)
    return x0, x1


def key_words(key):
    """The two uint32 words of a replication key.

    Args:
        key (jax.Array): Raw ``uint32[2]`` or a typed JAX key.

    Returns:
        (tuple): The two words.
    """
    if jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    key = jnp.asarray(key)
    return key[..., 0].astype(U32), key[..., 1].astype(U32)


def counter_words(counter):
    """``(lo32(c), 2^16 hi32(c))`` of a uint32 or uint64 draw counter.

    Args:
        counter (jax.Array): The draw counter, uint32 or uint64.

    Returns:
        (tuple): ``(lo32(c), 2^16 hi32(c))``.
    """
    c = jnp.asarray(counter)
    if c.dtype in (jnp.uint64, jnp.int64):
        c = c.astype(U64)
        return c.astype(U32), (c >> U64(32)).astype(U32) << U32(16)
    return c.astype(U32), jnp.zeros_like(c, dtype=U32)


def word_list(key, counter, count: int, offset: int = 0) -> list:
    """Words ``offset .. offset+count-1`` of draw ``counter`` as a list of uint32 scalars (arrays).

    What :func:`words` stacks; engines that consume the words one by one can use the list directly.

    Args:
        key (jax.Array): The replication key (as :func:`words`).
        counter (jax.Array): The draw (event) number (as :func:`words`).
        count: A static Python int.
        offset: A static Python int.

    Returns:
        The words.
    """
    if count < 0 or offset < 0 or offset + count > MAX_WORD:
        raise ValueError(f"words {offset}..{offset + count - 1} outside 0..{MAX_WORD - 1}")
    k0, k1 = key_words(key)
    c0, chi = counter_words(counter)
    out = []
    for b in range(offset // 2, (offset + count + 1) // 2):
        y0, y1 = threefry2x32(k0, k1, c0, chi + U32(b))
        out += [y0, y1]
    start = offset - 2 * (offset // 2)
    return out[start : start + count]


def words(key, counter, count: int, offset: int = 0) -> jax.Array:
    """``uint32[count]``: words ``offset .. offset+count-1`` of draw ``counter`` of the replication ``key``.

    Args:
        key (jax.Array): The replication key, ``uint32[2]`` (e.g. ``fold_in(PRNGKey(seed), r)``) or a typed key.
        counter (jax.Array): The draw (event) number, uint32 or uint64 below 2^48, traced.
        count: Static; ``offset + count <= 2^17``.
        offset: Static; ``offset + count <= 2^17``.

    Returns:
        The words; one Threefry block per two words, no key derivation. ``words(k, c, n)[:m]`` equals
            ``words(k, c, m)``, and ``words(k, c, n, m)`` continues where ``words(k, c, m)`` stops.
    """
    return jnp.stack(word_list(key, counter, count, offset)) if count else jnp.zeros((0,), U32)


def uniform(w) -> jax.Array:
    """``(w + 1/2) 2^-32`` (float64, in the open interval (0, 1)) of a uint32 word, exactly.

    Args:
        w (jax.Array): A uint32 word.

    Returns:
        The uniform.
    """
    b = (jnp.asarray(w, U32).astype(U64) << U64(20)) | U64(0x3FF0000000000000 | (1 << 19))
    return lax.bitcast_convert_type(b, jnp.float64) - 1.0  # 1 + (w + 1/2) 2^-32 is exact; so is the difference


def low_bits(w, bits: int) -> jax.Array:
    """``(w mod 2^bits) + 1/2`` (float64, exactly) of a uint32 word.

    The position on a grid of ``2^bits`` midpoints in units of the grid's spacing.

    Args:
        w (jax.Array): A uint32 word.
        bits: Static, at most 32.

    Returns:
        The position.
    """
    return _u32_to_f64(jnp.asarray(w, U32) & U32((1 << bits) - 1 if bits < 32 else 0xFFFFFFFF)) + 0.5


def _u32_to_f64(w):
    """A uint32 word as a float64 integer (exact, via the bits of 2^52 + w)."""
    b = jnp.asarray(w, U32).astype(U64) | U64(0x4330000000000000)
    return lax.bitcast_convert_type(b, jnp.float64) - 4503599627370496.0


def uniform52(w_hi, w_lo) -> jax.Array:
    """``(b + 1/2) 2^-52`` with ``b = 2^20 w_hi + floor(w_lo / 2^12)`` (52 random bits), exactly.

    In the open interval (0, 1); the smallest value is ``2^-53`` and ``1 - u`` is exact as well.

    Args:
        w_hi (jax.Array): The uint32 word of the high bits.
        w_lo (jax.Array): The uint32 word of the low bits.

    Returns:
        The uniform.
    """
    frac = _u32_to_f64(jnp.asarray(w_lo, U32) >> U32(12)) + 0.5  # < 2^20, 21 significant bits
    return (_u32_to_f64(w_hi) + frac * 2.0**-20) * 2.0**-32  # 53 significant bits at most: exact


PERTURB_DRAW = 1 << 47  # the draw of a perturbed 2x2 run's perturbation: beyond every event's (events are uint32)


def block(key, counter, count: int) -> jax.Array:
    """``uint32[count]``: words ``0 .. count-1`` of draw ``counter`` (the values of :func:`words`).

    Computed as one vectorised Threefry call over the ``ceil(count / 2)`` counter blocks: the form for many words of
    one draw (a page of the uniformised driver, a block of SDE steps).

    Args:
        key (jax.Array): The replication key.
        counter (jax.Array): The draw (event) number.
        count: Static, at most ``2^17``.

    Returns:
        The words.
    """
    if not 0 < count <= MAX_WORD:
        raise ValueError(f"count {count} outside 1..{MAX_WORD}")
    k0, k1 = key_words(key)
    c0, chi = counter_words(counter)
    y0, y1 = threefry2x32(k0, k1, c0, chi + jnp.arange((count + 1) // 2, dtype=U32))
    return jnp.stack([y0, y1], axis=-1).reshape(-1)[:count]


def uniforms(key, counter, count: int) -> jax.Array:
    """``float64[count]``: 52-bit uniforms in (0, 1) (:func:`uniform52`) from the ``2 count`` words of draw ``counter``.

    Word ``2i`` the high and ``2i + 1`` the low bits of uniform i.

    Args:
        key (jax.Array): The replication key.
        counter (jax.Array): The draw (event) number.
        count: The number of uniforms.

    Returns:
        The uniforms.
    """
    w = block(key, counter, 2 * count).reshape(count, 2)
    return uniform52(w[:, 0], w[:, 1])


def normals(key, counter, count: int) -> jax.Array:
    """``float64[count]``: standard normals, the normal quantiles of :func:`uniforms` of the same draw (|Z| <= 8.2).

    Args:
        key (jax.Array): The replication key.
        counter (jax.Array): The draw (event) number.
        count: The number of normals.

    Returns:
        The normals.
    """
    return jax.scipy.special.ndtri(uniforms(key, counter, count))
