"""The event form's gamma sampler: rejection from a step envelope of ``STEP_PIECES`` = 512 rectangles of equal area.

A gamma-only spec with P = 1 (the event engines' form) does not use Marsaglia-Tsang: it takes the *step envelope*
(:func:`step_envelope`; the slots by :func:`jaxq.sim.sampling.slots._gamma_steps`), rejection from ``STEP_PIECES``
rectangles of equal area over the density of ``y = X/a`` (shapes a >= 1) or ``y = X^(1/q)``, ``q = ceil(1/a)``
(bounded at 0): 2 words a slot (one Threefry block, materialised once as a uint64); the high 9 bits of the first
choose the step, the low 23 the position in it (no logarithm), and the test takes ``log u``, ``log y`` (one
:func:`~jaxq.sim.sampling.kernels.log_pair`; none for shapes 1/q, gamma:3, gamma:4, ...) and ``y^q`` by products.
One proposal is accepted with probability 0.983-0.997 (0.993 at a = 1/3, 0.989 at a = 1.43). The steps cover the
law but for ``STEP_TAIL`` = 2^-40 of mass on each side (the word grid's resolution is 2^-33). It needs every shape
in ``STEP_SHAPES`` ([0.01, 10^4]); a gamma-only spec with another shape keeps Marsaglia-Tsang (its P proposals) in
the event form. Rejected proposals void the event (the self-contained :func:`jaxq.sim.sampling.sample` completes
them with Marsaglia-Tsang's fallback: still exact, as the value is then an independent Gamma(a)). A mixed spec with
gamma and P = 1 takes the step envelope too when its gamma shapes are in ``STEP_SHAPES``
(:func:`jaxq.sim.sampling.slots._slot_shared`): the acceptance uniform is the slot's first word, which the other
methods read too, and goes through the shared logarithm; the step word is the second, and ``log y`` shares the
logarithm's division.

Here: the envelope's construction (numpy and scipy, once per shape: :func:`step_envelope`, :func:`step_scale`),
whether a list of laws takes it (:func:`_step_form`, :func:`_step_spec`), and one proposal from its words
(:func:`_step_slot`, :func:`_step_position`, :func:`_step_bound`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxq.mc import rng
from jaxq.sim.sampling.kernels import _U32, log, log_pair
from jaxq.sim.sampling.methods import SHAPE_TOL, _method, _shape


__all__ = ["STEP_BITS", "STEP_PIECES", "STEP_SHAPES", "STEP_TAIL", "StepEnvelope", "step_envelope", "step_scale"]


STEP_BITS = 9  # 2^9 steps: a slot's first word chooses its step by its high 9 bits, the position by the low 23
STEP_PIECES = 1 << STEP_BITS
STEP_TAIL = 2.0**-40  # the law's mass left out beyond each end of the steps (the word grid's resolution: 2^-33)
STEP_SHAPES = (0.01, 1e4)  # shapes whose step envelope is built (a gamma-only spec outside keeps Marsaglia-Tsang)


class StepEnvelope(NamedTuple):
    """The event form's envelope of Gamma(a) (:func:`step_envelope`): ``STEP_PIECES`` steps of equal area.

    The variable is ``y = X / a`` (``q = 1``, shapes ``a >= 1``) or ``y = X^(1/q)`` (``q = ceil(1/a) > 1``), whose
    density is proportional to ``exp(c log y - e y^q)`` (:func:`step_scale`); the unit-mean value is ``v y^q``.
    Step k is ``[left_k, left_k + width_k)`` at the height ``area / width_k``, at least the density anywhere on it
    (relative to its maximum, 1 at the mode); a proposal in step k is accepted iff ``log u < c log y - e y^q +
    B_k``, ``B_k = log(width_k / area) - top`` (``top``: the log density at the mode).

    Attributes:
        q: The power of the variable y.
        c: The exponent of y in the log density.
        e: The factor of ``y^q`` in it.
        v: The unit-mean value is ``v y^q``.
        left: (STEP_PIECES,) the steps' left ends.
        width: (STEP_PIECES,) their widths.
        B: (STEP_PIECES,) their acceptance offsets ``B_k``.
        lo: The left end, the law's ``STEP_TAIL`` quantile (0 for q > 1, where the density is bounded at 0).
        hi: The right end, its upper ``STEP_TAIL`` quantile.
        acceptance: The probability that one proposal is accepted.
    """

    q: int
    c: float
    e: float
    v: float
    left: np.ndarray
    width: np.ndarray
    B: np.ndarray
    lo: float
    hi: float
    acceptance: float  # the probability that one proposal is accepted


def step_scale(a: float) -> tuple[int, float, float, float]:
    """``(q, c, e, v)`` of the step envelope's variable for Gamma(a) (see :class:`StepEnvelope`).

    ``q = 1`` for ``a >= 1``: ``y = X / a`` has the density ``y^(a-1) e^(-a y)`` (c = a - 1, e = a, v = 1).
    Otherwise ``q = ceil(1/a)``: ``y = X^(1/q)`` has the density ``q y^(aq - 1) e^(-y^q) / Gamma(a)`` (as
    ``x^(a-1) dx = q y^(aq-1) dy``; c = aq - 1 in [0, a), e = 1, v = 1/a), bounded at 0. A shape within
    ``SHAPE_TOL`` of 1/q is 1/q (c = 0: no logarithm of y in the test), as an integer shape is Erlang's.

    Args:
        a: The shape.

    Returns:
        ``(q, c, e, v)``.
    """
    a = float(a)
    if a >= 1.0:
        return 1, a - 1.0, a, 1.0
    q = max(2, math.ceil(1.0 / a))
    c = a * q - 1.0
    if abs(c) <= SHAPE_TOL:
        c = 0.0
    elif c < 0.0:  # 1/a rounded down to the integer below it
        q += 1
        c = a * q - 1.0
    return q, c, 1.0, 1.0 / a


def _step_ends(a: float, q: int) -> tuple[float, float]:
    """The variable's ``STEP_TAIL`` quantiles (0 on the left for q > 1)."""
    from scipy import special

    x_hi = float(special.gammainccinv(a, STEP_TAIL))
    if q > 1:
        return 0.0, x_hi ** (1.0 / q)
    return float(special.gammaincinv(a, STEP_TAIL)) / a, x_hi / a


def _step_edges(log_f, mode: float, lo: float, hi: float, area: float, limit: int) -> list[float]:
    """Edges of steps of ``area`` under a unimodal density (``log_f``: its log, 0 at ``mode``), from the mode's
    step (height 1, centred on the mode) outwards, each step as wide as its area allows at the density's maximum
    on it (its inner end); the outermost steps are cut at lo and hi (higher, still of that area). Stops once
    there are more than ``limit`` steps."""
    def width(b):  # the area over the density at b (finite: a step beyond exp(700) is cut at the end anyway)
        return area * math.exp(min(-log_f(b), 700.0))

    first = max(mode - 0.5 * area, lo)
    left, right = [first], [min(first + area, hi)]
    while left[-1] > lo and len(left) + len(right) <= limit + 1:
        left.append(max(left[-1] - width(left[-1]), lo))
    while right[-1] < hi and len(left) + len(right) <= limit + 1:
        right.append(min(right[-1] + width(right[-1]), hi))
    return left[::-1] + right


@lru_cache(maxsize=256)
def step_envelope(a: float) -> StepEnvelope:
    """The event form's exact gamma sampler for shape ``a`` (in ``STEP_SHAPES``): rejection from a step function.

    The envelope is ``STEP_PIECES`` steps of *equal area* (Marsaglia and Tsang's ziggurat idea without its layers:
    each step is one rectangle) over ``[lo, hi]``, so the step is chosen by the high ``STEP_BITS`` bits of one
    32-bit word with no table of thresholds, and the position within it by the remaining bits, uniform: no
    logarithm, no exponential for the proposal. The test needs ``log u`` and, when c > 0, ``log y`` (one
    :func:`log_pair`), and ``y^q`` (q - 1 multiplications at most). The steps are built from the mode outwards,
    each as wide as the area allows at the density's maximum on it (its inner end: the density is unimodal), the
    area the smallest for which ``STEP_PIECES`` steps reach both ends (bisection). The density is the law's
    (:func:`step_scale`), so an accepted proposal is exactly Gamma(a) restricted to ``[lo, hi]`` (``STEP_TAIL`` =
    2^-40 of mass left out each side, beyond the word grid's resolution of 2^-33) on the position grid (2^23
    points a step: the same 2^32 points in all as a one-word uniform). Acceptance 0.983-0.997 over shapes
    0.01-10^4 (0.993 at a = 1/3, 0.989 at a = 1.43).

    Args:
        a: The shape (in ``STEP_SHAPES``).

    Returns:
        The envelope (its arrays read-only).

    Raises:
        ValueError: The bisection found no area with exactly ``STEP_PIECES`` steps.
    """
    a = float(a)
    q, c, e, v = step_scale(a)
    mode = (c / (e * q)) ** (1.0 / q) if c > 0.0 else 0.0  # where c / y = e q y^(q-1)
    top = c * math.log(mode) - e * mode**q if mode > 0.0 else 0.0  # the log density there

    def log_f(y):  # the log density relative to its maximum (<= 0)
        if y <= 0.0:
            return 0.0 if c == 0.0 else -math.inf
        return (c * math.log(y) if c else 0.0) - e * y**q - top

    lo, hi = _step_ends(a, q)
    N = STEP_PIECES
    count = lambda area: len(_step_edges(log_f, mode, lo, hi, area, N)) - 1  # noqa: E731  (non-increasing)
    big = 1.0
    while count(big) > N:
        big *= 2.0
    small = 0.5 * big
    while count(small) <= N:
        small, big = 0.5 * small, small
    while True:  # bisection to the last bit: the smallest area whose N steps reach both ends
        mid = 0.5 * (small + big)
        if mid in (small, big):
            break
        small, big = (mid, big) if count(mid) > N else (small, mid)
    edges = np.array(_step_edges(log_f, mode, lo, hi, big, N))
    if len(edges) != N + 1:  # both sides lost a step at the same area: never seen, but say so rather than skew
        raise ValueError(f"the step envelope of Gamma({a!r}) has {len(edges) - 1} steps, not {N}")
    width = np.diff(edges)
    lI = math.lgamma(a) - (a * math.log(a) if q == 1 else math.log(q))  # log of the integral of exp(logf)
    kept = 1.0 - STEP_TAIL * (2.0 if q == 1 else 1.0)
    arrays = [edges[:-1].copy(), width, np.log(width / big) - top]
    for x in arrays:
        x.setflags(write=False)
    return StepEnvelope(q, c, e, v, *arrays, lo, hi, kept * math.exp(lI - top) / (N * big))


def _step_form(dists) -> bool:
    """Whether a list's event form of gamma is a step envelope: some stream is gamma-method and every such stream
    has a shape in STEP_SHAPES. Outside it (a SCV above 100, an Erlang with more than 10^4 phases) the event form
    keeps Marsaglia-Tsang: a gamma-only spec with its P proposals, a mixed spec its mixed form (y^q would take
    over 100 products below; the quantiles of the ends lose their precision above)."""
    shapes = [_shape(d) for d in dists if _method(d) == "gamma"]
    return bool(shapes) and all(STEP_SHAPES[0] <= a <= STEP_SHAPES[1] for a in shapes)


_NO_STEPS = StepEnvelope(1, 0.0, 0.0, 0.0, np.ones(STEP_PIECES), np.zeros(STEP_PIECES), np.zeros(STEP_PIECES),
                         1.0, 1.0, 0.0)  # the table rows of a stream of another method in a mixed step-form spec


def _step_spec(dists) -> tuple[int, bool]:
    """``(largest q, some c > 0)`` of a step-form list (:func:`step_scale`), ``(0, False)`` otherwise."""
    if not _step_form(dists):
        return 0, False
    scales = [step_scale(_shape(d)) for d in dists if _method(d) == "gamma"]
    return max(s[0] for s in scales), any(s[1] > 0.0 for s in scales)


def _power(y, q: int, qs=None):
    """``y^q`` by squarings and products: q static, or per stream ``qs`` (traced, at most q: masked products)."""
    out, p, bit = None, y, 1
    while bit <= q:
        f = (p if q & bit else None) if qs is None else jnp.where((qs & bit) != 0, p, 1.0)
        if f is not None:
            out = f if out is None else out * f
        bit <<= 1
        if bit <= q:
            p = p * p
    return out


def _step_column(table, name, row, k):
    """Entry k of a stream's step table (row None: every stream has the same law, row 0)."""
    return table[name][0][k] if row is None else table[name][row, k]


def _step_position(wv, table, row):
    """``(y, k)``: a step envelope's proposal from its word: step k from the high ``STEP_BITS`` bits, y uniform in
    it from the low bits (:func:`step_envelope`)."""
    k = (wv >> _U32(32 - STEP_BITS)).astype(jnp.int32)
    return _step_column(table, "sL", row, k) + _step_column(table, "sW", row, k) * rng.low_bits(wv, 32 - STEP_BITS), k


def _step_bound(y, ly, k, table, row, spec: "jaxq.sim.sampling.spec.Spec", scalar):
    """``(unit-mean value, bound)`` of a step proposal y in step k: accepted iff ``log u < bound``, ``bound = c log y
    - e y^q + B_k`` (``ly = log y``, unused without ``spec.steps_log``); ``scalar(name)``: the stream's constant."""
    w = _power(y, spec.steps, None if row is None else scalar("sq"))
    bound = _step_column(table, "sB", row, k) - scalar("se") * w
    if spec.steps_log:
        bound = bound + scalar("sc") * ly
    return w * scalar("sv"), bound


def _step_slot(wv, wu, table, row, spec: "jaxq.sim.sampling.spec.Spec", scalar):
    """One gamma variate of the event form by a step envelope (:func:`step_envelope`): ``(value, accepted)``.

    ``wv``'s high ``STEP_BITS`` bits choose the step, its low bits the position in it; ``wu`` is the acceptance
    uniform. ``row``: the stream (None: every stream has the same law, row 0, no gather on the stream);
    ``scalar(name)``: the stream's constant (:func:`_lookup`). The value has mean 1 and is exactly Gamma(a)/a when
    accepted."""
    y, k = _step_position(wv, table, row)
    if spec.steps_log:
        ly, lu = log_pair(y, rng.uniform(wu))
    else:  # every shape 1/q: c = 0
        ly, lu = None, log(rng.uniform(wu))
    value, bound = _step_bound(y, ly, k, table, row, spec, scalar)
    return value, lu < bound
