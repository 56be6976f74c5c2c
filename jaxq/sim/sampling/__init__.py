"""Exact sampling of the mean-1 renewal primitives of SPEC.md from a fixed budget of random words.

A simulator has a fixed list of *streams* (e.g. two interarrival and four service distributions). What
is static (part of the compiled program) is a :class:`Spec`: the methods present, and the number of
32-bit words a variate takes (:func:`words_needed`); the numeric parameters are a small table of arrays
per stream (:func:`param_table`; traced, so another SCV does not recompile, except where it changes the
method). An event that needs ``r`` variates (``r = 2`` in the 2x2 engine) takes
``r * words_needed(spec)`` words from ONE counter-based generator call (:func:`jaxq.mc.rng.words`,
no key split per event) and :func:`sample` turns slot ``j``'s words into a draw of stream ``idx[j]``.
Only the methods present are evaluated, and with one method there is no select at all; in a
mixed spec every present method is evaluated for each slot (the stream is traced) but the expensive
functions are shared: one normal quantile, one logarithm and one exponential per slot whatever the
mix (:func:`jaxq.sim.sampling.slots._slot_shared`). All the arithmetic is on per-replication scalars (no small
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
  ``P = Spec.proposals`` proposals evaluated side by side, the first accepted one taken, and an exact end when all
  are rejected: a fallback loop (:func:`sample`) or a voided event (:func:`sample_or_void`, :func:`slot_values`)
  (:mod:`jaxq.sim.sampling.marsaglia_tsang`). The event form (P = 1) of a spec whose gamma shapes lie in
  ``STEP_SHAPES`` takes the *step envelope* instead: rejection from 512 rectangles of equal area, 2 words a slot
  (:mod:`jaxq.sim.sampling.step_envelope`).

Resolution (stated, not hidden): a one-word uniform is ``U = (w + 1/2) 2^-32``, a midpoint grid of
2^32 points in (0, 1) (:func:`jaxq.mc.rng.uniform`). ``-log U`` is then at most ``33 log 2 = 22.87``
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
Logarithms are fdlibm's (:func:`log`, within 1 ulp), exponentials XLA's. These
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

The previous sampler (one key per event, 53-bit uniforms, every family of both slots evaluated,
``jax.random.gamma``) is kept outside the package as an independent reference: ``benchmarks/reference_sampler.py``.

The modules, in the order they build on each other: :mod:`~jaxq.sim.sampling.methods` (which method samples a law),
:mod:`~jaxq.sim.sampling.kernels` (logarithm, normal quantile, sine and cosine, Box-Muller, the materialisation of a
block), :mod:`~jaxq.sim.sampling.step_envelope` (the event form's gamma envelope), :mod:`~jaxq.sim.sampling.spec`
(:class:`Spec`, :func:`words_needed`, :func:`param_table`, :func:`capped_variance`: a law's capped second moment as
sampled), :mod:`~jaxq.sim.sampling.transforms` (exponential,
Erlang, hyperexponential, lognormal, gammahalf), :mod:`~jaxq.sim.sampling.marsaglia_tsang` (gamma's proposals and
fallback), :mod:`~jaxq.sim.sampling.slots` (the words of one call laid out over its slots),
and :mod:`~jaxq.sim.sampling.draws` (:func:`sample`, the void protocol, :func:`sample_dist`); :mod:`~jaxq.sim.sampling.residual`
(the mean residual life of a law as sampled, for the controls). This package gives every name its callers use.
"""

# Every name the callers (the engines, tests, benchmarks) take from jaxq.sim.sampling; the private ones are the tests'.
from jaxq.sim.sampling.methods import ERLANG_DIRECT_MAX, FAMILY_CODE, METHOD_CODE, NORMAL_METHODS, SHAPE_TOL, _method
from jaxq.sim.sampling.kernels import _identity, box_muller, log, log_pair, ndtri, sincos2pi
from jaxq.sim.sampling.step_envelope import (
    STEP_BITS,
    STEP_PIECES,
    STEP_SHAPES,
    STEP_TAIL,
    StepEnvelope,
    _step_slot,
    step_envelope,
    step_scale,
)
from jaxq.sim.sampling.spec import (
    DEFAULT_PROPOSALS,
    Spec,
    _compact_normals,
    _event_gamma,
    _own_words,
    _step_gamma,
    param_table,
    capped_variance,
    spec_of,
    with_proposals,
    words_needed,
)
from jaxq.sim.sampling.draws import draw, sample, sample_dist, sample_or_void, slot_values
from jaxq.sim.sampling.residual import mean_residual, memoryless, random_stream
