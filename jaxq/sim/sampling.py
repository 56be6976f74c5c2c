"""Exact sampling of the mean-1 renewal primitives of SPEC.md from a fixed budget of random words.

A simulator has a fixed list of *streams* (e.g. two interarrival and four service distributions). What
is static (part of the compiled program) is a :class:`Spec`: the methods present, and the number of
32-bit words a variate takes (:func:`words_needed`); the numeric parameters are a small table of arrays
per stream (:func:`param_table`; traced, so another SCV does not recompile, except where it changes the
method). An event that needs ``r`` variates (``r = 2`` in the 2x2 engine) takes
``r * words_needed(spec)`` words from ONE counter-based generator call (:func:`jaxq.sim.rng.words`,
no key split per event) and :func:`sample` turns slot ``j``'s words into a draw of stream ``idx[j]``.
Only the methods present are evaluated, and with one method there is no select at all; in a
mixed spec every present method is evaluated for each slot (the stream is traced) but the expensive
functions are shared: one normal quantile, one logarithm and one exponential per slot whatever the
mix (:func:`_slot_shared`). All the arithmetic is on per-replication scalars (no small
per-replication arrays: under ``vmap`` those become the vector axis on a CPU and run several times
slower) and the parameters are looked up by selects, not gathers (but for the step envelope's tables of
512 steps, :func:`step_envelope`).

Cost model (XLA:CPU, measured in a vmapped scan at 10^3 replications): XLA's float64 ``log`` is a
scalar library call (8 ns an element), so :func:`log` is written out (fdlibm's, 1.9 ns); ``exp`` and
``sqrt`` are vectorised (2 ns, 0.5 ns); a Threefry block costs 2-4 ns. XLA compiles one loop per array
an event produces and fuses every cheap operation into each loop that needs it, so a uniform read by
two computations would be recomputed, Threefry block and all: an engine passes ``keep`` (a
materialisation, :func:`slot_values`) and each value that several computations read takes a Threefry
block of its own (the word layout below; a spare word is never computed).

Methods (all with mean 1 and SCV c) and the words one variate takes (its own words a whole number of
blocks; a compact normal adds one word):

* exponential (2 words, one used): ``-log U``;
* erlang, c = 1/k (k words rounded up to even, one log): ``-log(U_1 ... U_k) / k`` for
  k <= ``ERLANG_DIRECT_MAX``; a larger k is sampled as gamma with shape k (the same law, fewer words);
  a gamma with an integer shape k <= ``ERLANG_DIRECT_MAX`` is sampled this way too (the same law);
* hyperexponential with balanced means (2 words, one log): phase 1 iff ``W_1 < T``,
  ``T = round(p_1 2^32)``, so the phase probabilities are ``p~_1 = T 2^-32`` and ``1 - p~_1`` (within
  2^-33 of ``p_1 = (1 + sqrt((c-1)/(c+1)))/2``), then ``-log U_2`` times the phase mean ``1/(2 p~_j)``:
  the means stay exactly balanced and the mean exactly 1; the SCV moves by at most
  ``2.3e-10 (c + 2 + 1/c)`` relative (1.5e-9 at c = 4);
* the methods that take a standard normal Z (lognormal, gammahalf, and gamma's first proposal): slots
  come in pairs, and a pair's two normals are one Box-Muller pair. With lognormal in the spec each slot
  has a *normal block* at the end of its words (two more words): :func:`box_muller` takes the 52-bit
  uniform of the first slot's block and the angle from the second's (``|Z| <= 8.57``), and a slot
  without a partner the normal quantile (Wichura's AS241, relative error about 1e-15) of its block's
  52-bit uniform (``|Z| <= 8.2``). Without lognormal (*compact normals*, :func:`_compact_normals`) a slot
  takes ONE normal word after every slot's own words, a pair one block (:func:`_box_muller32`: radius and
  angle each from one word, ``|Z| <= 6.76``; an unpaired slot the quantile of its word, ``|Z| <= 6.34``);
* lognormal (0 words and its normal block): ``exp(s Z - s^2/2)``, ``s^2 = log(1 + c)``: lognormal moments
  are carried by the far tail (the SCV by Z near 2s), so Z gets the resolution of two words;
* gamma with a half-integer shape a = k + 1/2 <= ``ERLANG_DIRECT_MAX`` ("gammahalf", k words rounded up
  to even, and the normal): ``(-log(U_1 ... U_k) + Z^2/2) / a`` (``Z^2/2 ~ Gamma(1/2)``;
  independent gammas add): gamma:2 (a = 1/2) is ``Z^2``;
* deterministic (no word): 1;
* gamma, any other shape a = 1/c (``4P`` words, 2 for P = 1, and the normal): Marsaglia-Tsang with
  ``P = Spec.proposals`` proposals evaluated side by side, the first accepted one taken. Proposal: Z a
  standard normal (the slot's normal for the first proposal, the normal quantile of one word for the
  others), ``V = (1 + Z/sqrt(9d))^3``, ``d = a' - 1/3``; accepted iff ``V > 0`` and
  ``log U < Z^2/2 + d - dV + d log V``; then ``dV ~ Gamma(a')``. For a < 1, ``a' = a + 1`` and the draw
  is multiplied by ``U'^(1/a)`` (Stuart's theorem: ``Gamma(a) = Gamma(a+1) U^(1/a)``) with
  ``U' = U e^-A`` the recycled acceptance uniform (52 bits, one word in the event form P = 1; given
  acceptance it is uniform and independent of the proposal: :func:`_mt_proposal`); for a >= 1,
  ``a' = a``. No rejection loop of unbounded length runs per variate, and
  the result is **exact**: the accepted proposals of Marsaglia-Tsang are i.i.d. Gamma(a') whatever
  the stopping rule. One proposal is accepted with probability 0.952 at a' = 1 (the worst case),
  0.970 at a' = 1.4, 0.982 at a' = 2, 0.990 at a' = 3.3. Two ways to finish when all P are rejected:

  - :func:`sample` (self-contained): an exact fallback continues with further proposals drawn from
    the same event's counter after the budget (a ``lax.while_loop``; under ``vmap`` it iterates only
    in event steps where some replication needs it). With the default P = 4 it is needed by at most
    5.5e-6 of the gamma variates (1.1e-7 at a' = 2, 9e-9 at a' = 3.3). Its price is the loop itself:
    on a CPU a ``while_loop`` inside a vmapped ``scan`` costs 15-35 ns per event even when it never
    iterates (measured beside the same sampler without it), since XLA cannot fuse across it.
  - :func:`sample_or_void` / :func:`slot_values` (for event engines): no fallback, an ``ok`` flag (or
    NaN) instead; the engine voids the event and redoes it with the next counter (exact, see there).
    With P = 1 a gamma variate costs one proposal and 2-10% of the events of an all-gamma system are
    redone.

  A gamma-only spec with P = 1 (the event engines' form) does not use Marsaglia-Tsang: it takes the *step
  envelope* (:func:`step_envelope`, :func:`_gamma_steps`), rejection from ``STEP_PIECES`` = 512 rectangles of
  equal area over the density of ``y = X/a`` (shapes a >= 1) or ``y = X^(1/q)``, ``q = ceil(1/a)`` (bounded at 0):
  2 words a slot (one Threefry block, materialised once as a uint64); the high 9 bits of the first choose the
  step, the low 23 the position in it (no logarithm), and the test takes ``log u``, ``log y`` (one
  :func:`log_pair`; none for shapes 1/q, gamma:3, gamma:4, ...) and ``y^q`` by products. One proposal is accepted
  with probability 0.983-0.997 (0.993 at a = 1/3, 0.989 at a = 1.43). The steps cover the law but for
  ``STEP_TAIL`` = 2^-40 of mass on each side (the word grid's resolution is 2^-33). It needs every shape in
  ``STEP_SHAPES`` ([0.01, 10^4]); a gamma-only spec with another shape keeps Marsaglia-Tsang (its P proposals) in
  the event form. Rejected proposals void the event as above (the self-contained :func:`sample` completes them
  with Marsaglia-Tsang's fallback: still exact, as the value is then an independent Gamma(a)). A mixed spec with
  gamma and P = 1 takes the step envelope too when its gamma shapes are in ``STEP_SHAPES``: the acceptance
  uniform is the slot's first word, which the other methods read too (exponential's U, Erlang's U_1, the
  hyperexponential phase: a slot has one stream, so the method it uses reads its words once), and goes through
  the shared logarithm; the step word is the second, ``log y`` shares the logarithm's division
  (:func:`log_pair`), and gamma then takes no normal word. Off that range, the mixed form of Marsaglia-Tsang: the
  acceptance uniform as above, ``log t`` shares the division, and the test is ``log u < A``.

Resolution (stated, not hidden): a one-word uniform is ``U = (w + 1/2) 2^-32``, a midpoint grid of
2^32 points in (0, 1) (:func:`jaxq.sim.rng.uniform`). ``-log U`` is then at most ``33 log 2 = 22.87``
(the exponential tail beyond 22.18, of mass 2^-32 = 2.3e-10, is one atom) and its mean is
``1 - (log 2 / 2) 2^-32``: a relative error of -8.1e-11 in the mean and -2.0e-9 in the second moment;
an Erlang-k or hyperexponential phase inherits the same per-uniform errors. A normal from one-word
uniforms (the compact layout, gamma's later proposals) is at most 6.76 (Box-Muller) or 6.34 (quantile) in
absolute value, a normal mass of at most 2.3e-10 left out: the gamma mass never proposed is at most 1.2e-10
in each tail (4e-14 above 30.8 at a' = 1), and ``Z^2/2`` of gammahalf stops at 22.9 (20.1 for an unpaired
slot) as ``-log U`` does. The step envelope leaves out 2^-40 of the gamma mass in each tail (``STEP_TAIL``).
Float64 itself limits gamma with a tiny shape (an SCV above 100, Marsaglia-Tsang with the boost ``U^(1/a)``):
``P(X < 1e-300) ~ (1e-300)^a``, half the mass at a = 1/1000, and such variates are 0 (or subnormal); harmless
for a queue (zero-length times), but a test of the law there must compare on a log scale.
Logarithms are fdlibm's (:func:`log`, within 1 ulp), exponentials XLA's or :func:`exp` (within 2 ulp). These
effects are orders of magnitude below any Monte Carlo error (4 standard errors of 10^10 draws of a
unit-mean, unit-variance variate are 4e-5).

How an event engine uses this layer (r = 2 slots, replication key ``key``, event counter ``e`` in
the state)::

    spec = spec_of(dists, proposals=1)               # static; P = 1 with the void protocol
    table = param_table(dists)                       # traced
    W = 2 * words_needed(spec)                       # static
    v, ok = sample_or_void(rng.words(key, e, W), spec, table, jnp.stack([slot0, slot1]))
    # ok is a constant True unless gamma-method streams are present; when False, keep the old
    # state (as for a finished replication) but still advance e, so the event is redone with
    # fresh words at the next step.

(:mod:`jaxq.sim.models.pss2x2` uses :func:`slot_values` with its materialisation, and voids an event
only when a slot it uses was rejected.)

or, self-contained at a higher cost when gamma is present, ``v = sample(rng.words(key, e, W), spec,
table, idx, key, e)`` with ``spec_of(dists)`` (P = 4 and the exact fallback).

:func:`sample_with_key` keeps the previous sampler (one key per event, 53-bit uniforms, every family
of both slots evaluated, ``jax.random.gamma``) with the same outputs, for comparison.
"""

from __future__ import annotations

import math
from functools import lru_cache, partial
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxq.model.distributions import NAMES, Dist
from jaxq.sim import rng

FAMILY_CODE = {name: c for c, name in enumerate(NAMES)}
# A stream's sampling method is named after the family it samples, or "gammahalf" (gamma with a half-integer
# shape k + 1/2: an Erlang-k sum plus Z^2/2); a gamma with an integer shape k <= ERLANG_DIRECT_MAX is sampled
# by the "erlang" method and an Erlang with more phases by the "gamma" method (the same laws).
METHOD_CODE = {**FAMILY_CODE, "gammahalf": len(NAMES)}
NORMAL_METHODS = {"lognormal", "gammahalf", "gamma"}  # methods that take a standard normal (proposal 0's for gamma)
SHAPE_TOL = 1e-9  # a gamma shape within this (relative) of an integer or half-integer is that number (as Erlang k)
ERLANG_DIRECT_MAX = 12  # Erlang-k with larger k is sampled as gamma(k): fewer words
DEFAULT_PROPOSALS = 4  # Marsaglia-Tsang proposals per gamma variate before the exact fallback
MT_ACCEPTANCE_MIN = 0.9516  # one proposal's acceptance probability at shape 1, the smallest (a' >= 1)
_U32 = jnp.uint32


class Spec(NamedTuple):
    """Static part of a list of distributions (hashable; part of the compiled program).

    ``families``: the families present; ``kmax``: the largest Erlang k (as in the previous sampler);
    ``methods``: the sampling methods present (``erlang`` for Erlang-k with k <= ERLANG_DIRECT_MAX,
    ``gamma`` for gamma and larger-k Erlang); ``kdirect``: the largest k sampled as a product of
    uniforms; ``proposals``: Marsaglia-Tsang proposals per gamma variate; ``boost``: some
    gamma-method stream has shape < 1 (the acceptance test then takes the log form with a 52-bit
    uniform, one word with P = 1, recycled as the boost: no more words); ``shared``: every stream has the same
    law, so a slot's parameters are the table's row 0 (no select on the stream; rows are per stream otherwise).
    """

    families: tuple[str, ...]
    kmax: int
    methods: tuple[str, ...] = ()
    kdirect: int = 1
    proposals: int = DEFAULT_PROPOSALS
    boost: bool = False
    khalf: int = 0  # the largest integer part k of a "gammahalf" stream's shape k + 1/2
    shared: bool = False  # every stream has the same law: its parameters are read from row 0, no select
    steps: int = 0  # every gamma shape in STEP_SHAPES: the event form (P = 1) takes a step envelope; the largest q
    steps_log: bool = False  # some stream's step envelope has c > 0: the test takes log y (step_scale)

    @property
    def uniforms(self) -> int:
        """Uniforms per variate of :func:`sample_with_key` (the most any present family needs)."""
        need = {"exponential": 1, "erlang": self.kmax, "lognormal": 1, "hyperexponential": 2}
        return max([need.get(f, 0) for f in self.families] + [1])


def words_needed(spec: Spec) -> int:
    """32-bit words one variate takes (static): the most any method present needs, a whole number of
    Threefry blocks (two words each; see the word layout of the methods below), and one more word for a
    compact normal (:func:`_compact_normals`).

    An event drawing ``r`` variates takes ``r * words_needed(spec)`` words: slot j the j-th run, except
    compact normals (every slot's own words first, then one normal word a slot).
    """
    if _event_gamma(spec):
        return 2
    own = _own_words(spec)
    if not _normal_methods(spec):
        return own
    return own + (1 if _compact_normals(spec) else 2)


def _own_words(spec: Spec) -> int:
    """Words of a slot besides its normal: the most any present method needs, a whole number of blocks."""
    need = {
        "exponential": 2,  # U (one spare)
        "erlang": spec.kdirect + spec.kdirect % 2,  # U_1 .. U_k
        "hyperexponential": 2,  # phase, U
        "lognormal": 0,  # the normal only
        "deterministic": 0,
        # P = 1 (the void protocol): the acceptance uniform, word 0; else per proposal j >= 1: Z; every
        # proposal: U (52-bit with a boost: recycled)
        "gamma": 2 if spec.proposals == 1 else 4 * spec.proposals,
        "gammahalf": spec.khalf + spec.khalf % 2,  # U_1 .. U_k
    }
    return max([need[m] for m in spec.methods] + [0])


def _compact_normals(spec: Spec) -> bool:
    """A spec whose normals come from one-word uniforms: one block per PAIR of slots (after all the slots' own
    words), ``R = sqrt(-2 log U)`` and the angle each from one word (``|Z| <= 6.76``), an unpaired slot the
    quantile of one word (``|Z| <= 6.34``). Every spec with a normal method but lognormal, whose moments are
    carried by the far tail (it keeps a normal block per slot and the 52-bit radius)."""
    return bool(_normal_methods(spec)) and "lognormal" not in spec.methods


def _normal_methods(spec: Spec) -> set:
    """The methods present that take the slot's standard normal (gamma's step form takes none)."""
    return set(spec.methods) & (NORMAL_METHODS - ({"gamma"} if _step_gamma(spec) else set()))


def _method(d: Dist) -> str:
    if d.name == "erlang":
        return "gamma" if d.k > ERLANG_DIRECT_MAX else "erlang"
    if d.name == "gamma":
        a = 1.0 / d.scv
        if abs(a - round(a)) <= SHAPE_TOL * a and 1 <= round(a) <= ERLANG_DIRECT_MAX:
            return "erlang"
        if abs(2 * a - round(2 * a)) <= SHAPE_TOL * a and round(2 * a) % 2 == 1 and round(2 * a) <= 2 * ERLANG_DIRECT_MAX:
            return "gammahalf"
    return d.name


def _shape(d: Dist) -> float:
    return float(d.k) if d.name == "erlang" else 1.0 / d.scv


def _phases(d: Dist) -> int:
    """Erlang phases of a stream sampled by the "erlang" method, or the integer part of a "gammahalf" shape."""
    return int(round(_shape(d))) if _method(d) == "erlang" else int(round(2 * _shape(d))) // 2


def spec_of(dists: Sequence[Dist], proposals: int = DEFAULT_PROPOSALS) -> Spec:
    """The static :class:`Spec` of a list of distributions.

    ``proposals``: Marsaglia-Tsang proposals per gamma variate; the exact fallback is taken with
    probability at most ``(1 - 0.9516)^proposals`` per variate. One proposal only where a one-proposal form
    exists (:func:`with_proposals`).
    """
    if proposals < 1:
        raise ValueError(f"proposals must be at least 1, got {proposals}")
    fams = tuple(sorted({d.name for d in dists}, key=FAMILY_CODE.get))
    kmax = max([d.k for d in dists if d.name == "erlang"] + [1])
    methods = tuple(sorted({_method(d) for d in dists}, key=METHOD_CODE.get))
    kdirect = max([_phases(d) for d in dists if _method(d) == "erlang"] + [1])
    boost = any(_method(d) == "gamma" and _shape(d) < 1.0 for d in dists)
    khalf = max([_phases(d) for d in dists if _method(d) == "gammahalf"] + [0])
    shared = len({(d.name, float(d.scv)) for d in dists}) == 1
    spec = Spec(fams, kmax, methods, kdirect, DEFAULT_PROPOSALS, boost, khalf, shared, *_step_spec(dists))
    return with_proposals(spec, int(proposals))


def with_proposals(spec: Spec, proposals: int) -> Spec:
    """``spec`` with ``proposals`` gamma proposals per variate (the event engines' void protocol asks for one).

    One proposal has a layout of its own only in a mixed spec (:func:`_slot_shared`: the step envelope, or
    Marsaglia-Tsang's mixed form off the step range) and in a gamma-only spec on the step range
    (:func:`_gamma_steps`); a gamma-only spec off the step range (:func:`_step_form`) keeps ``DEFAULT_PROPOSALS``
    (its Marsaglia-Tsang slots, voided only when all are rejected). Without gamma the number is irrelevant and
    stays the default."""
    if "gamma" not in spec.methods or (proposals == 1 and spec.methods == ("gamma",) and not spec.steps):
        return spec._replace(proposals=DEFAULT_PROPOSALS)
    return spec._replace(proposals=int(proposals))


def param_table(dists: Sequence[Dist]) -> dict[str, np.ndarray]:
    """Numeric parameters per stream (numpy arrays; pass them through ``jnp.asarray`` and trace them).

    ``code``: family code; ``a``: erlang k, gamma shape 1/c, lognormal ``s = sqrt(log(1+c))``,
    hyperexponential ``p_1`` (as before); ``method``: sampling method code; ``c0..c3`` and ``thr``:
    the constants of the method (see :func:`sample`).
    """
    code, a, method, thr = [], [], [], []
    cs = [[], [], [], []]
    for d in dists:
        code.append(FAMILY_CODE[d.name])
        m = _method(d)
        method.append(METHOD_CODE[m])
        c = [0.0, 0.0, 0.0, 0.0]
        t = 0
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
        if m == "erlang":
            c[0] = float(_phases(d))
            c[1] = 1.0 / _phases(d)
        elif m == "gammahalf":
            c[0] = float(_phases(d))
            c[1] = 1.0 / (_phases(d) + 0.5)
        elif m == "gamma":
            shape = _shape(d)
            ap = shape + 1.0 if shape < 1.0 else shape
            dd = ap - 1.0 / 3.0
            c = [dd, 1.0 / math.sqrt(9.0 * dd), 1.0 / shape if shape < 1.0 else 0.0, 1.0 / shape]
        elif m == "lognormal":
            s = a[-1]
            c[0], c[1] = s, -0.5 * s * s
        elif m == "hyperexponential":
            t = min(int(round(a[-1] * 2.0**32)), 2**32 - 1)
            p1 = t * 2.0**-32
            c[0], c[1] = 0.5 / p1, 0.5 / (1.0 - p1)
        thr.append(t)
        for j in range(4):
            cs[j].append(c[j])
    out = {
        "code": np.array(code, dtype=np.int32),
        "a": np.array(a, dtype=np.float64),
        "method": np.array(method, dtype=np.int32),
        "thr": np.array(thr, dtype=np.uint32),
    }
    for j in range(4):
        out[f"c{j}"] = np.array(cs[j], dtype=np.float64)
    if _step_form(dists):  # the event form's gamma envelope (step_envelope): steps (S, STEP_PIECES), scale (S,)
        # a stream of another method gets y = 1 and zeros (a valid input of the shared logarithm pair, never used)
        envs = [step_envelope(_shape(d)) if _method(d) == "gamma" else _NO_STEPS for d in dists]
        out["sL"] = np.stack([e.left for e in envs])
        out["sW"] = np.stack([e.width for e in envs]) * 2.0 ** (STEP_BITS - 32)  # per unit of the position's grid
        out["sB"] = np.stack([e.B for e in envs])
        for name in ("q", "c", "e", "v"):
            out[f"s{name}"] = np.array([getattr(e, name) for e in envs], dtype=np.int32 if name == "q" else np.float64)
    return out


# ---------------------------------------------------------------------- gamma: the step envelope
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
    B_k``, ``B_k = log(width_k / area) - top`` (``top``: the log density at the mode). ``lo``, ``hi``: the ends, the
    law's ``STEP_TAIL`` quantiles (``lo = 0`` for q > 1, where the density is bounded at 0).
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


# ------------------------------------------------------------------------------------ elementary
_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01, 2.222219843214978396e-01,
       1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01)
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_U64 = jnp.uint64


def _log_split(x):
    """fdlibm's reduction of a positive normal x: ``(f, dk, mant)`` with ``x = 2^k (1 + f)``, ``1 + f`` in
    [sqrt(2)/2, sqrt(2)), dk = k as a float64 (integer operations only)."""
    b = lax.bitcast_convert_type(jnp.asarray(x, jnp.float64), _U64)
    mant = b & _U64(0x000FFFFFFFFFFFFF)
    i = (mant + _U64(0x95F64 << 32)) & _U64(1 << 52)  # m >= sqrt(2): halve it, k + 1
    m = lax.bitcast_convert_type(mant | (i ^ _U64(0x3FF0000000000000)), jnp.float64)  # in [sqrt(2)/2, sqrt(2))
    e = (b >> _U64(52)) + (i >> _U64(52))  # k + 1023, as a float64 below
    dk = lax.bitcast_convert_type(_U64(0x4330000000000000) | e, jnp.float64) - (4503599627370496.0 + 1023.0)
    return m - 1.0, dk, mant


def _log_finish(f, dk, mant, s):
    """fdlibm's log from the reduction and ``s = f / (2 + f)``."""
    z = s * s
    w = z * z
    R = z * (_LG[0] + w * (_LG[2] + w * (_LG[4] + w * _LG[6]))) + w * (_LG[1] + w * (_LG[3] + w * _LG[5]))
    hx = mant >> _U64(32)
    hfsq = 0.5 * f * f
    big = (hx >= _U64(0x6147A)) & (hx <= _U64(0x6B851))
    a = dk * _LN2_HI - ((hfsq - (s * (hfsq + R) + dk * _LN2_LO)) - f)
    c = dk * _LN2_HI - ((s * (f - R) - dk * _LN2_LO) - f)
    return jnp.where(big, a, c)


def log(x):
    """Natural logarithm of a positive normal float64 (fdlibm's ``__ieee754_log``: error below 1 ulp).

    Written out in ``jax.numpy`` because XLA:CPU's float64 ``log`` is a scalar library call: in a vmapped
    scan at 10^3 replications it costs 8 ns an element against 1.9 ns for this one (the exponent and
    mantissa split with integer operations, ``s = f / (2 + f)`` and a degree-14 polynomial in s, no
    branch). Only positive normal numbers reach it here (uniforms on the midpoint grid, their products,
    ``1 + cZ > 0``); zero, negative, subnormal, infinite or NaN inputs give meaningless results.
    """
    f, dk, mant = _log_split(x)
    return _log_finish(f, dk, mant, f / (2.0 + f))


def log_pair(x, y):
    """``(log x, log y)`` as :func:`log`, with ONE division for both: ``q = 1/((2 + f_x)(2 + f_y))``,
    ``s_x = f_x (2 + f_y) q`` and ``s_y = f_y (2 + f_x) q``.

    Two effects on XLA:CPU, both measured in the event engine: a division is one instruction fewer, and the
    division's only user is a multiplication, so XLA fuses it into the consumer (``f / (2 + f)`` has three
    users, and XLA then computes it in a loop of its own and recomputes its inputs in the consumer). s gets
    two more roundings (relative error below 4 ulp instead of 1/2); s enters the result only through
    ``s (hfsq + R)`` with ``|s| <= 0.172`` and ``hfsq + R <= 0.09``, so the result stays within 1 ulp
    (tested against numpy beside :func:`log`).
    """
    fx, kx, mx = _log_split(x)
    fy, ky, my = _log_split(y)
    px, py = 2.0 + fx, 2.0 + fy
    q = 1.0 / (px * py)
    return _log_finish(fx, kx, mx, fx * py * q), _log_finish(fy, ky, my, fy * px * q)


_EXP_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(14))


def exp(x):
    """``e^x`` for float64 x, written out (no library call): ``x = k ln2 + r`` with ``k = round(x / ln2)`` and
    ``|r| <= ln2/2`` (fdlibm's two-part ln2, exact products for the k that occur), ``e^r`` by its Taylor
    polynomial of degree 13 (truncation below 5e-18 relative), times ``2^k`` built from the exponent bits
    (in two factors, so that results down to 2^-2044 underflow gracefully as a product would). Within 2 ulp
    of numpy's for ``-1400 <= x <= 709`` (tested); x is clamped to that range.

    XLA:CPU's float64 ``exp`` is a scalar library call per element (about 2 ns in the event engine's loops);
    this is straight-line vector code.
    """
    x = jnp.asarray(x, jnp.float64)
    x = jnp.where(x > -1400.0, jnp.where(x < 709.0, x, 709.0), -1400.0)  # selects: cheaper than clip's NaN rules
    k = jnp.round(x * (1.0 / math.log(2.0)))
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _EXP_TAYLOR[13]
    for c in _EXP_TAYLOR[12::-1]:
        p = p * r + c
    ki = k.astype(jnp.int64)
    k1 = ki >> 1
    k2 = ki - k1
    two = lambda e: lax.bitcast_convert_type(((e + 1023) << 52).astype(_U64), jnp.float64)  # noqa: E731
    return p * two(k1) * two(k2)


def _identity(x):
    return x


# Wichura (1988), algorithm AS241 (PPND16): the standard normal quantile, relative error about 1e-16.
_A = (3.3871328727963666080e0, 1.3314166789178437745e2, 1.9715909503065514427e3, 1.3731693765509461125e4,
      4.5921953931549871457e4, 6.7265770927008700853e4, 3.3430575583588128105e4, 2.5090809287301226727e3)
_B = (1.0, 4.2313330701600911252e1, 6.8718700749205790830e2, 5.3941960214247511077e3,
      2.1213794301586595867e4, 3.9307895800092710610e4, 2.8729085735721942674e4, 5.2264952788528545610e3)
_C = (1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0, 3.64784832476320460504e0,
      1.27045825245236838258e0, 2.41780725177450611770e-1, 2.27238449892691845833e-2, 7.74545014278341407640e-4)
_D = (1.0, 2.05319162663775882187e0, 1.67638483018380384940e0, 6.89767334985100004550e-1,
      1.48103976427480074590e-1, 1.51986665636164571966e-2, 5.47593808499534494600e-4, 1.05075007164441684324e-9)
_E = (6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0, 2.96560571828504891230e-1,
      2.65321895265761230930e-2, 1.24266094738807843860e-3, 2.71155556874348757815e-5, 2.01033439929228813265e-7)
_F = (1.0, 5.99832206555887937690e-1, 1.36929880922735805310e-1, 1.48753612908506148525e-2,
      7.86869131145613259100e-4, 1.84631831751005468180e-5, 1.42151175831644588870e-7, 2.04426310338993978564e-15)


def _poly(c, x):
    y = c[-1]
    for k in c[-2::-1]:
        y = y * x + k
    return y


def ndtri(p, far: bool = True):
    """Standard normal quantile of ``p`` in (0, 1) (AS241); ``far=False`` drops the branch for
    ``min(p, 1-p) < exp(-25)``, which one-word uniforms (``p >= 2^-33``) never reach."""
    q = p - 0.5
    central = jnp.abs(q) <= 0.425
    r2 = 0.180625 - q * q
    t = jnp.where(q < 0.0, p, 1.0 - p)  # min(p, 1 - p), exactly (1 - p is exact for p >= 1/2)
    r = jnp.sqrt(-log(jnp.where(central, 0.5, t)))
    rm = r - 1.6
    num = jnp.where(central, q * _poly(_A, r2), jnp.sign(q) * _poly(_C, rm))
    den = jnp.where(central, _poly(_B, r2), _poly(_D, rm))
    if far:
        rf = r - 5.0
        use_far = ~central & (r > 5.0)
        num = jnp.where(use_far, jnp.sign(q) * _poly(_E, rf), num)
        den = jnp.where(use_far, _poly(_F, rf), den)
    return num / den


# fdlibm's __kernel_sin / __kernel_cos minimax polynomials on [-pi/4, pi/4]
_SIN = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
      2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_COS = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
      -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


def sincos2pi(u):
    """``(sin 2 pi u, cos 2 pi u)`` for a uniform ``u`` of :func:`jaxq.sim.rng.uniform` (a multiple of 2^-33).

    ``u = n/4 + y`` with ``n = round(4u)`` and ``|y| <= 1/8`` exactly (u has 33 significant bits), then
    fdlibm's kernels at ``a = 2 pi y`` and the quadrant's symmetry: within about 1 ulp, no library call.
    """
    n = jnp.round(4.0 * u)
    a = (u - 0.25 * n) * (2.0 * math.pi)
    z = a * a
    s = a + a * z * (_SIN[0] + z * (_SIN[1] + z * (_SIN[2] + z * (_SIN[3] + z * (_SIN[4] + z * _SIN[5])))))
    c = 1.0 - 0.5 * z + z * z * (_COS[0] + z * (_COS[1] + z * (_COS[2] + z * (_COS[3] + z * (_COS[4] + z * _COS[5])))))
    q = n.astype(jnp.int32) & 3
    sin = jnp.where(q == 0, s, jnp.where(q == 1, c, jnp.where(q == 2, -s, -c)))
    cos = jnp.where(q == 0, c, jnp.where(q == 1, -s, jnp.where(q == 2, -c, s)))
    return sin, cos


def box_muller(wa, wb, keep=_identity):
    """Two independent standard normals from a 52-bit uniform (words ``wa``) and an angle (word ``wb``).

    ``R = sqrt(-2 log U_1)``, ``(R cos 2 pi U_2, R sin 2 pi U_2)``: one logarithm, one square root and two
    short polynomials for two normals (a normal quantile costs two logarithms' worth and rational functions of
    degree 7 in three regions). U_1 has 52 random bits, so ``R <= 8.57``: the normal tail beyond it has mass
    below 2^-53 (more resolution than :func:`ndtri` of a 52-bit uniform, |Z| <= 8.2).
    """
    r = jnp.sqrt(-2.0 * log(keep(rng.uniform52(wa[0], wa[1]))))
    s, c = sincos2pi(keep(rng.uniform(wb)))
    return r * c, r * s


# --------------------------------------------------------------------------------------- methods
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


# ------------------------------------------------------------------------------------------ sample
def _stream_eq(idx_j, n_streams: int) -> list:
    """The selects' conditions of a slot whose stream is ``idx_j`` (one stream: no select at all)."""
    return [idx_j == s for s in range(n_streams)] if n_streams > 1 else [True]


def _constants(table, eq) -> list:
    """The method constants ``c0 .. c3`` of a slot's stream (:func:`param_table`), by selects."""
    return [_lookup(table, f"c{i}", eq) for i in range(4)]


def _lookup(table, name, eq):
    col = table[name]
    if len(eq) == 1:
        return col[0]
    v = col[0]
    for j in range(1, len(eq)):
        v = jnp.where(eq[j], col[j], v)
    return v


def _slots(words, spec: Spec, table: dict, idx, keep=_identity):
    """Per slot: ``(value, gamma parts)``; the parts are ``(y, ok, factor, c, is_gamma)`` or None.

    ``keep``: applied to every intermediate value that several later computations read (see the word
    layout above) and to each slot's value; an identity (the default) or an engine's materialisation.
    """
    W = words_needed(spec)
    r = int(np.shape(idx)[0])
    n_streams = int(np.shape(table["c0"])[0])
    if len(words) < r * W:  # e.g. the previous call sample(key, ...): fail loudly, never index past the end
        raise ValueError(f"{r} slots of this spec need {r * W} words, got {len(words)} "
                         "(sample takes rng.words(key, counter, ...); the key-based sampler is sample_with_key)")
    words = [words[i] for i in range(r * W)]
    if _event_gamma(spec):
        return _gamma_steps(words, spec, table, idx, keep, n_streams)
    normals = [None] * r
    compact = _compact_normals(spec)
    own = _own_words(spec) if compact else W  # compact: the slots' own words first, then their normal words
    if compact:  # one block per pair of slots (_compact_normals)
        base = r * own
        for j in range(0, r - 1, 2):
            normals[j], normals[j + 1] = _box_muller32(words[base + j], words[base + j + 1], keep)
        if r % 2:  # a slot without a partner: the normal quantile of one word
            normals[r - 1] = ndtri(keep(rng.uniform(words[base + r - 1])), far=False)
    elif _normal_methods(spec):  # every slot's last block: its normal, from a Box-Muller pair
        nb = W - 2
        for j in range(0, r - 1, 2):  # the pair's 52-bit uniform from slot j's block, its angle from slot j+1's
            normals[j], normals[j + 1] = box_muller(words[j * W + nb : j * W + nb + 2], words[(j + 1) * W + nb], keep)
        if r % 2:  # a slot without a partner: the normal quantile of its 52-bit uniform
            normals[r - 1] = ndtri(keep(rng.uniform52(words[(r - 1) * W + nb], words[(r - 1) * W + nb + 1])))
    out = []
    for j in range(r):
        w = words[j * own : (j + 1) * own]
        eq = [True] if spec.shared else _stream_eq(idx[j], n_streams)
        c = _constants(table, eq)
        thr = _lookup(table, "thr", eq) if "hyperexponential" in spec.methods else None
        if len(spec.methods) > 1:
            method = _lookup(table, "method", eq)
            step = None
            if _step_gamma(spec):  # the gamma proposal: y from word 1 (word 0 is the shared uniform), block kept once
                w = list(w)
                w[0], w[1] = _keep_block(w[0], w[1], keep)
                y, k = _step_position(w[1], table, idx[j])
                scalar = partial(_lookup, table, eq=eq)
                step = (y, partial(_step_bound, y, k=k, table=table, row=idx[j], spec=spec, scalar=scalar),
                        _lookup(table, "a", eq))
            v, g = _slot_shared(w, c, thr, method, spec, keep, normals[j], step)
        else:
            v, g = _slot_single(w, c, thr, spec, keep, normals[j])
        out.append((v, g))
    return out


def _step_gamma(spec: Spec) -> bool:
    """The event form (P = 1) of a spec whose gamma streams take the step envelope (:func:`step_envelope`)."""
    return "gamma" in spec.methods and spec.proposals == 1 and spec.steps > 0


def _event_gamma(spec: Spec) -> bool:
    """The event form of a gamma-only spec (P = 1): the step envelope, one block a slot (:func:`_gamma_steps`)."""
    return spec.methods == ("gamma",) and _step_gamma(spec)


def _keep_block(w0, w1, keep):
    """A Threefry block's two words, materialised as ONE array (a uint64 divided by an opaque 1) when ``keep``
    materialises: every consumer then reads the block instead of recomputing it (XLA:CPU makes one loop per
    array, and a float materialisation of each word would compute the block in both loops)."""
    if keep is _identity:
        return w0, w1
    one = jnp.where(keep(jnp.ones((), jnp.float64)) > 0.0, _U64(1), _U64(3))  # 1, opaque to the compiler
    p = ((jnp.asarray(w0, _U32).astype(_U64) << _U64(32)) | jnp.asarray(w1, _U32).astype(_U64)) // one
    return (p >> _U64(32)).astype(_U32), p.astype(_U32)


def _box_muller32(w0, w1, keep):
    """The Box-Muller pair of one block: ``R = sqrt(-2 log U)`` from word ``w0``, the angle from ``w1`` (one-word
    uniforms: ``R <= 6.76``), the block materialised once (:func:`_keep_block`): ``(R cos, R sin)``."""
    wr, wt = _keep_block(w0, w1, keep)
    fr, kr, mr = _log_split(rng.uniform(wr))
    rad = jnp.sqrt(-2.0 * _log_finish(fr, kr, mr, fr * (1.0 / (2.0 + fr))))  # the division's one user: fused
    sn, cs = sincos2pi(rng.uniform(wt))
    return rad * cs, rad * sn


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


def _step_bound(y, ly, k, table, row, spec: Spec, scalar):
    """``(unit-mean value, bound)`` of a step proposal y in step k: accepted iff ``log u < bound``, ``bound = c log y
    - e y^q + B_k`` (``ly = log y``, unused without ``spec.steps_log``); ``scalar(name)``: the stream's constant."""
    w = _power(y, spec.steps, None if row is None else scalar("sq"))
    bound = _step_column(table, "sB", row, k) - scalar("se") * w
    if spec.steps_log:
        bound = bound + scalar("sc") * ly
    return w * scalar("sv"), bound


def _step_slot(wv, wu, table, row, spec: Spec, scalar):
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


def _gamma_steps(words, spec: Spec, table: dict, idx, keep, n_streams: int):
    """Gamma-only slots with one proposal each (the event engines' void protocol): one Threefry block a slot.

    Slot j takes words ``2j`` (the step and the position, :func:`step_envelope`) and ``2j + 1`` (the acceptance
    uniform), its block materialised once (:func:`_keep_block`); the slots are independent.
    """
    out = []
    for j in range(int(np.shape(idx)[0])):
        wv, wu = _keep_block(words[2 * j], words[2 * j + 1], keep)
        eq = [True] if spec.shared else _stream_eq(idx[j], n_streams)
        y, ok = _step_slot(wv, wu, table, None if spec.shared else idx[j], spec, partial(_lookup, table, eq=eq))
        c = _constants(table, eq)  # the fallback of sample continues with Marsaglia-Tsang: Gamma(a) parts, factor 1/a
        out.append((y, [y * _lookup(table, "a", eq), ok, c[3], c, jnp.ones((), bool)]))  # part a y ~ Gamma(a)
    return out


def _slot_single(w, c, thr, spec: Spec, keep, z=None):
    """One slot of a single-method spec: that method's transform, no select (``z``: its Box-Muller normal)."""
    m = spec.methods[0]
    if m == "exponential":
        return _exponential(w, c, keep), None
    if m == "erlang":
        return _erlang(w, c, spec.kdirect, keep), None
    if m == "hyperexponential":
        return _hyperexponential(w, c, thr, keep), None
    if m == "lognormal":
        return _lognormal(w, c, keep, z), None
    if m == "gammahalf":
        return _gammahalf(w, c, spec.khalf, keep, z), None
    if m == "deterministic":
        return jnp.ones((), jnp.float64), None
    y, ok, fac = _gamma(w, c, spec.proposals, spec.boost, keep, z)
    return y * fac, [y, ok, fac, c, jnp.ones((), bool)]


def _slot_shared(w, c, thr, method, spec: Spec, keep, zbm=None, step=None):
    """One slot of a mixed spec, the transcendental functions shared between the methods.

    Every method present is evaluated (the stream is traced) and the slot's is selected; but the
    transcendental work is done once on selected arguments: the slot's normal ``zbm`` (its Box-Muller
    pair's: lognormal's, gammahalf's or the first gamma proposal's), one logarithm (exponential ``-log U``,
    Erlang ``-log(U_1...U_k)``, hyperexponential ``-log U_2``, gammahalf's Erlang part or the gamma proposal's
    ``log(1 + cZ)``; in the event form P = 1 the gamma acceptance uniform's ``log u``, with ``log(1 + cZ)``
    sharing its division, :func:`log_pair`) and one exponential (lognormal's, or the gamma acceptance test's
    or boost's). Each method sees exactly what it sees alone, except that in the event form with gamma the
    shared logarithm is :func:`log_pair`'s (within 1 ulp of :func:`log`, so the other methods' values may
    differ from their single-family values in the last bit).

    ``step``: the gamma streams' step envelope (:func:`_step_gamma`), ``(y, bound_of, a)``: the proposal y (from
    word 1), ``bound_of(log y) -> (unit-mean value, bound)`` (:func:`_step_bound`) and the stream's shape a. Then
    the gamma proposal takes no normal and no exponential: its acceptance uniform (word 0) goes through the shared
    logarithm, ``log y`` shares its division (:func:`log_pair`), and the test is ``log u < bound``.
    """
    M = spec.methods
    is_m = {m: method == METHOD_CODE[m] for m in M}

    def sel(cands):
        items = list(cands.items())
        v = items[0][1]
        for m, x in items[1:]:
            v = jnp.where(is_m[m], x, v)
        return v

    vals = {}
    z = None if zbm is None else keep(zbm)  # the slot's normal (Box-Muller), for every method that takes one
    logc = {}
    if "exponential" in M:
        logc["exponential"] = rng.uniform(w[0])
    if "erlang" in M:
        p = rng.uniform(w[0])
        for j in range(1, spec.kdirect):
            p = p * jnp.where(j < c[0], rng.uniform(w[j]), 1.0)
        logc["erlang"] = p
    if "hyperexponential" in M:  # the phase travels with the uniform as its sign (as in _hyperexponential): the
        # slot's block is then read by the one materialised value only, not computed again for the phase
        logc["hyperexponential"] = jnp.where(w[0] < thr, rng.uniform(w[1]), -rng.uniform(w[1]))
    if "gammahalf" in M and spec.khalf:
        p = jnp.where(c[0] > 0, rng.uniform(w[0]), 1.0)
        for j in range(1, spec.khalf):
            p = p * jnp.where(j < c[0], rng.uniform(w[j]), 1.0)
        logc["gammahalf"] = p
    event = "gamma" in M and spec.proposals == 1  # the void protocol: one proposal, its uniform in the shared log
    if step is not None:
        logc["gamma"] = rng.uniform(w[0])
    elif "gamma" in M:
        d, cc = c[0], c[1]
        pos, ts, v = _mt_cube(1.0 + cc * z)
        logc["gamma"] = rng.uniform(w[0]) if event else ts
    signed = keep(sel(logc)) if logc else None  # hyperexponential: the phase is its sign
    S = None if signed is None else (jnp.abs(signed) if "hyperexponential" in M else signed)
    if step is not None:  # log u (the shared one) and log y with one division (log_pair), or log u alone
        L, Ly = log_pair(S, step[0]) if spec.steps_log else (log(S), None)
    elif event:  # log u (the shared one) and log t with one division (log_pair)
        L, Lt = log_pair(S, ts)
    else:
        L = None if S is None else log(S)
    expc = {}
    if "lognormal" in M:
        expc["lognormal"] = c[0] * z + c[1]
    if event and step is None:  # proposal 0 in log form (_mt_pair_proposal): accepted iff log u < A; boost (u e^-A)^c2
        A = _mt_log_acceptance(ts, v, Lt, d)
        if spec.boost:
            expc["gamma"] = (L - A) * c[2]
    elif "gamma" in M and step is None:
        # proposal 0's log acceptance probability, as in _mt_proposal
        A = _mt_log_acceptance(ts, v, L, d)
        if spec.boost:  # log-form test with the 52-bit acceptance uniform, recycled as the boost (_mt_proposal)
            Lu = log(keep(rng.uniform52(w[2], w[3])))
            expc["gamma"] = (Lu - A) * c[2]
        else:
            expc["gamma"] = A
    E = jnp.exp(sel(expc)) if expc else None
    g = None
    for m in M:
        if m == "exponential":
            vals[m] = -L
        elif m == "erlang":
            vals[m] = -L * c[1]
        elif m == "hyperexponential":
            vals[m] = -L * jnp.where(signed > 0.0, c[0], c[1])
        elif m == "lognormal":
            vals[m] = E
        elif m == "gammahalf":
            vals[m] = (0.5 * z * z - (L if spec.khalf else 0.0)) * c[1]
        elif m == "deterministic":
            vals[m] = jnp.ones((), jnp.float64)
        elif m == "gamma" and step is not None:  # the step envelope: the value itself; a y ~ Gamma(a) for the fallback
            value, bound = step[1](Ly)
            ok = L < bound
            vals[m] = value
            g = [value * step[2], ok | jnp.logical_not(is_m["gamma"]), c[3], c, is_m["gamma"]]
        elif m == "gamma":
            if event:
                y, ok = (d * v * E if spec.boost else d * v), pos & (L < A)
            elif spec.boost:  # proposal 0, as in _mt_proposal
                y, ok = d * v * E, pos & (Lu < A)
            else:
                y, ok = d * v, pos & (rng.uniform(w[2]) < E)
            if spec.proposals > 1:
                y1, ok1, _ = _gamma(w[4:], c, spec.proposals - 1, spec.boost, keep)  # proposals 1 .. P-1
                y = jnp.where(ok, y, y1)
                ok = ok | ok1
            fac = c[3]
            vals[m] = y * fac
            g = [y, ok | jnp.logical_not(is_m["gamma"]), fac, c, is_m["gamma"]]  # other families never pend
    return sel(vals), g


def sample(words, spec: Spec, table: dict, idx, key=None, counter=None) -> jax.Array:
    """Unit-mean variates of the streams ``idx`` (int array of shape (r,)) from a budget of words.

    Args:
      words: ``r * words_needed(spec)`` uint32 words (array or sequence), e.g.
        ``rng.words(key, counter, r * words_needed(spec))``; slot j uses the j-th run of
        ``words_needed(spec)`` words (see :func:`words_needed` for the two layouts that interleave).
      spec: the static methods present (:func:`spec_of`).
      table: the per-stream parameters (:func:`param_table`), as arrays.
      idx: stream indices, shape (r,), static length.
      key, counter: the replication key and the draw the words came from; needed only when the spec
        has gamma-method streams, whose exact fallback continues the same draw after the budget.

    Returns:
      float64 array of shape (r,): entry j is a draw of stream ``idx[j]``, entries independent.
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
    """:func:`sample` without the fallback: ``(values, ok)``; ``ok`` is False when a gamma slot had all
    of its ``spec.proposals`` proposals rejected, and then the values must not be used.

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
    """
    slots = _slots(words, spec, table, idx)
    ok = jnp.ones((), bool)
    for _, g in slots:
        if g is not None:
            ok = ok & g[1]
    return jnp.stack([v for v, _ in slots]), ok


def slot_values(words, spec: Spec, table: dict, idx, keep=_identity) -> list:
    """The void protocol slot by slot, for event engines: a list of r float64 values, NaN for a gamma slot
    whose proposals were all rejected (each value then carries its own flag, so an engine that
    materialises it reads one array).

    ``keep`` materialises the shared intermediate values and each slot's value (see ``_slots``). An
    engine voids an event when a slot it *uses* is NaN: whether a slot is used depends on the state
    only, so the kept values are exact as in :func:`sample_or_void`.
    """
    out = []
    for v, g in _slots(words, spec, table, idx, keep):
        out.append(keep(v if g is None else jnp.where(g[1], v, jnp.nan)))
    return out


def draw(key, counter, spec: Spec, table: dict, idx) -> jax.Array:
    """:func:`sample` of draw ``counter`` of the replication ``key``: one generator call for all slots."""
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
    """
    spec = spec_of([dist], proposals)._replace(families=(), kmax=1)  # fields the new sampler ignores
    table = {k: jnp.asarray(v) for k, v in param_table([dist]).items()}
    return _draws(key, table, spec, int(count))


# ------------------------------------------------------------------------- the previous sampler
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
    selected, gamma by ``jax.random.gamma``. Same outputs as before; kept for comparisons
    (``benchmarks/profile_sampling.py``) and for the engine that still calls it.
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
