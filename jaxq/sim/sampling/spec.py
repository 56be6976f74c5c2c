"""What a simulator's list of streams fixes: the static :class:`Spec` (the methods present, the words a variate
takes: :func:`words_needed`) and the traced table of numeric parameters per stream (:func:`param_table`), read by
selects (:func:`_lookup`), not gathers.

The words one variate takes (its own words a whole number of Threefry blocks; a compact normal adds one word):
exponential 2 (one used); erlang k rounded up to even; hyperexponential 2 (the phase, U); lognormal 0 and its normal
block; gammahalf k rounded up to even and the normal; deterministic 0; gamma ``4P`` (2 for P = 1) and the normal, or
2 in the step envelope's event form (:mod:`.step_envelope`). With a normal method each slot has a normal: a *normal
block* of two words at the end of its words when lognormal is present, else (*compact normals*,
:func:`_compact_normals`) ONE normal word after every slot's own words.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import jax.numpy as jnp
import numpy as np

from jaxq.model.distributions import Dist
from jaxq.sim.sampling.methods import (FAMILY_CODE, GAMMA_FIXED_MAX, METHOD_CODE, NORMAL_METHODS, _method, _phases,
                                       _shape)
from jaxq.sim.sampling.step_envelope import STEP_BITS, _NO_STEPS, _step_form, _step_spec, step_envelope

__all__ = ["DEFAULT_PROPOSALS", "Spec", "param_table", "capped_variance", "spec_of", "with_proposals", "words_needed"]


DEFAULT_PROPOSALS = 4  # Marsaglia-Tsang proposals per gamma variate before the exact fallback


class Spec(NamedTuple):
    """Static part of a list of distributions (hashable; part of the compiled program).

    Attributes:
        families: The families present.
        kmax: The largest Erlang k (as in the previous sampler).
        methods: The sampling methods present (``erlang`` for Erlang-k with k <= ERLANG_DIRECT_MAX, ``gamma`` for
            gamma and larger-k Erlang).
        kdirect: The largest k sampled as a product of uniforms.
        proposals: Marsaglia-Tsang proposals per gamma variate.
        boost: Some gamma-method stream has shape < 1 (the acceptance test then takes the log form with a 52-bit
            uniform, one word with P = 1, recycled as the boost: no more words).
        khalf: The largest integer part k of a "gammahalf" stream's shape k + 1/2.
        shared: Every stream has the same law, so a slot's parameters are the table's row 0 (no select on the
            stream; rows are per stream otherwise).
        steps: Every gamma shape in STEP_SHAPES: the event form (P = 1) takes a step envelope; the largest q
            (0: none).
        steps_log: Some stream's step envelope has c > 0: the test takes log y (:func:`.step_envelope.step_scale`).
        stream_methods: The sampling method of each stream, in order (:func:`jaxq.sim.sampling.mean_residual`
            evaluates only the methods of the streams a clock can run).
        large_gamma: Some gamma-method stream has a shape above ``GAMMA_FIXED_MAX``: its mean residual life takes
            the iterative incomplete gamma function.
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
    stream_methods: tuple[str, ...] = ()  # the sampling method of each stream, in order
    large_gamma: bool = False  # some gamma-method stream has a shape above GAMMA_FIXED_MAX (mean_residual)

    @property
    def uniforms(self) -> int:
        """Uniforms per variate of the key-based reference sampler (``benchmarks/reference_sampler.py``; the most any
        present family needs)."""
        need = {"exponential": 1, "erlang": self.kmax, "lognormal": 1, "hyperexponential": 2}
        return max([need.get(f, 0) for f in self.families] + [1])


def words_needed(spec: Spec) -> int:
    """32-bit words one variate takes (static): the most any method present needs, a whole number of
    Threefry blocks (two words each; the words of each method: the module docstring), and one more word for a
    compact normal (:func:`_compact_normals`).

    An event drawing ``r`` variates takes ``r * words_needed(spec)`` words: slot j the j-th run, except
    compact normals (every slot's own words first, then one normal word a slot).

    Args:
        spec: The spec.

    Returns:
        The words.
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


def spec_of(dists: Sequence[Dist], proposals: int = DEFAULT_PROPOSALS) -> Spec:
    """The static :class:`Spec` of a list of distributions.

    Args:
        dists: The distributions, one per stream.
        proposals: Marsaglia-Tsang proposals per gamma variate; the exact fallback is taken with probability at
            most ``(1 - 0.9516)^proposals`` per variate. One proposal only where a one-proposal form exists
            (:func:`with_proposals`).

    Returns:
        The spec.

    Raises:
        ValueError: ``proposals`` below 1.
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
    spec = Spec(fams, kmax, methods, kdirect, DEFAULT_PROPOSALS, boost, khalf, shared, *_step_spec(dists),
                tuple(_method(d) for d in dists),
                any(_method(d) == "gamma" and _shape(d) > GAMMA_FIXED_MAX for d in dists))
    return with_proposals(spec, int(proposals))


def with_proposals(spec: Spec, proposals: int) -> Spec:
    """``spec`` with ``proposals`` gamma proposals per variate (the event engines' void protocol asks for one).

    One proposal has a layout of its own only in a mixed spec (:func:`_slot_shared`: the step envelope, or
    Marsaglia-Tsang's mixed form off the step range) and in a gamma-only spec on the step range
    (:func:`_gamma_steps`); a gamma-only spec off the step range (:func:`_step_form`) keeps ``DEFAULT_PROPOSALS``
    (its Marsaglia-Tsang slots, voided only when all are rejected). Without gamma the number is irrelevant and
    stays the default.

    Args:
        spec: The spec.
        proposals: The proposals asked for.

    Returns:
        The spec with its proposals.
    """
    if "gamma" not in spec.methods or (proposals == 1 and spec.methods == ("gamma",) and not spec.steps):
        return spec._replace(proposals=DEFAULT_PROPOSALS)
    return spec._replace(proposals=int(proposals))


def _hyper_p1(d: Dist) -> float:
    """A balanced-means hyperexponential's phase-1 probability ``p_1 = (1 + sqrt((c - 1)/(c + 1)))/2``."""
    return 0.5 * (1.0 + math.sqrt((d.scv - 1.0) / (d.scv + 1.0)))


def _hyper_threshold(d: Dist) -> tuple[int, float]:
    """A hyperexponential's phase threshold ``T = round(p_1 2^32)`` and the phase-1 probability it samples, T 2^-32."""
    t = min(int(round(_hyper_p1(d) * 2.0**32)), 2**32 - 1)
    return t, t * 2.0**-32


def capped_variance(d: Dist, cap: float = math.inf) -> float:
    """``E[(min(v, cap) - 1)^2]`` for the mean-1 law as its method samples it (``cap = inf``: its variance).

    The law is the one sampled: an Erlang with its ``k`` phases, a gamma shape that the method takes as an integer or
    a half-integer that shape, a hyperexponential with its phase probabilities rounded to the 32-bit threshold (the
    means kept balanced). With ``T_j = E[v^j 1{v > cap}]`` (regularised incomplete gamma functions, normal tails),
    ``E[(min(v, cap) - 1)^2] = var - T_2 + 2 T_1 - T_0 + (cap - 1)^2 T_0``. What is left is the uniform grid's
    resolution (the module docstring: ``-log U <= 22.87``, ``|Z| <= 6.3-8.6``), a relative change below 1e-7 for the
    laws and SCVs of SPEC.md.

    Args:
        d: The distribution.
        cap: Where ``v`` is capped (> 0).

    Returns:
        The capped second moment about 1.
    """
    from scipy.special import gammaincc, ndtr

    m = _method(d)
    if m == "deterministic":
        return (min(1.0, cap) - 1.0) ** 2
    if m == "hyperexponential":
        p1 = _hyper_threshold(d)[1]
        phases = ((p1, 0.5 / p1), (1.0 - p1, 0.5 / (1.0 - p1)))  # (probability, mean): the means balanced
        var = sum(p * 2.0 * mean**2 for p, mean in phases) - 1.0

        def tail(j):
            return sum(p * math.factorial(j) * mean**j * float(gammaincc(j + 1, cap / mean)) for p, mean in phases)
    elif m == "lognormal":
        s2 = math.log1p(d.scv)  # the table's s^2; mu = -s^2/2
        var = math.expm1(s2)

        def tail(j):
            return math.exp(s2 * j * (j - 1) / 2) * float(ndtr(-(math.log(cap) + s2 / 2 - j * s2) / math.sqrt(s2)))
    else:  # gamma with shape a, mean 1 (exponential a = 1, Erlang a = k, gammahalf a = k + 1/2): E v^2 = 1 + 1/a
        a = {"exponential": 1.0, "erlang": float(_phases(d)), "gammahalf": _phases(d) + 0.5}.get(m, _shape(d))
        var = 1.0 / a

        def tail(j):
            return (1.0, 1.0, 1.0 + 1.0 / a)[j] * float(gammaincc(a + j, a * cap))
    if not math.isfinite(cap):
        return var
    t0, t1, t2 = (tail(j) for j in range(3))
    return var - t2 + 2.0 * t1 - t0 + (cap - 1.0) ** 2 * t0


def param_table(dists: Sequence[Dist]) -> dict[str, np.ndarray]:
    """Numeric parameters per stream (numpy arrays; pass them through ``jnp.asarray`` and trace them).

    ``code``: family code; ``a``: erlang k, gamma shape 1/c, lognormal ``s = sqrt(log(1+c))``,
    hyperexponential ``p_1`` (as before); ``method``: sampling method code; ``c0..c3`` and ``thr``:
    the constants of the method (see :func:`sample`); with the event form's gamma envelope, its steps ``sL``,
    ``sW``, ``sB`` and ``sq``, ``sc``, ``se``, ``sv``.

    Args:
        dists: The distributions, one per stream.

    Returns:
        Name -> array with one entry (row) per stream.
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
            a.append(_hyper_p1(d))
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
            t, p1 = _hyper_threshold(d)
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


def _step_gamma(spec: Spec) -> bool:
    """The event form (P = 1) of a spec whose gamma streams take the step envelope (:func:`step_envelope`)."""
    return "gamma" in spec.methods and spec.proposals == 1 and spec.steps > 0


def _event_gamma(spec: Spec) -> bool:
    """The event form of a gamma-only spec (P = 1): the step envelope, one block a slot (:func:`_gamma_steps`)."""
    return spec.methods == ("gamma",) and _step_gamma(spec)


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
