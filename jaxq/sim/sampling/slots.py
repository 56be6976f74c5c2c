"""The slots of one call: ``r`` variates from ``r * words_needed(spec)`` words, slot j a draw of stream ``idx[j]``.

:func:`_slots` lays the words out (slot j the j-th run of ``words_needed(spec)`` words, but compact normals: every
slot's own words first, then one normal word a slot), computes the slots' normals (Box-Muller pairs), and gives each
slot to its method: with one method there is no select at all (:func:`_slot_single`); in a mixed spec every present
method is evaluated for each slot (the stream is traced) but the expensive functions are shared: one normal, one
logarithm and one exponential per slot whatever the mix (:func:`_slot_shared`). A gamma-only spec in the event form
takes the step envelope, one block a slot (:func:`_gamma_steps`). ``keep`` (an engine's materialisation) is applied to
every value that several computations read, each of which takes a Threefry block of its own, so that XLA computes
the block once.
"""

from __future__ import annotations

from functools import partial

import jax.numpy as jnp
import numpy as np

from jaxq.mc import rng
from jaxq.sim.sampling.kernels import _box_muller32, _identity, _keep_block, box_muller, log, log_pair, ndtri
from jaxq.sim.sampling.marsaglia_tsang import _gamma, _mt_cube, _mt_log_acceptance
from jaxq.sim.sampling.methods import METHOD_CODE
from jaxq.sim.sampling.spec import (Spec, _compact_normals, _constants, _event_gamma, _lookup, _normal_methods,
                                    _own_words, _step_gamma, _stream_eq, words_needed)
from jaxq.sim.sampling.step_envelope import _step_bound, _step_position, _step_slot
from jaxq.sim.sampling.transforms import _erlang, _exponential, _gammahalf, _hyperexponential, _lognormal


def _slots(words, spec: Spec, table: dict, idx, keep=_identity):
    """Per slot: ``(value, gamma parts)``; the parts are ``(y, ok, factor, c, is_gamma)`` or None.

    ``keep``: applied to every intermediate value that several later computations read (see the word
    layout of :mod:`jaxq.sim.sampling.transforms`) and to each slot's value; an identity (the default) or an
    engine's materialisation.
    """
    W = words_needed(spec)
    r = int(np.shape(idx)[0])
    n_streams = int(np.shape(table["c0"])[0])
    if len(words) < r * W:  # e.g. the previous call sample(key, ...): fail loudly, never index past the end
        raise ValueError(f"{r} slots of this spec need {r * W} words, got {len(words)} "
                         "(sample takes rng.words(key, counter, ...); the key-based reference sampler is benchmarks/reference_sampler.py)")
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
    if event and step is None:  # proposal 0 in log form (_mt_proposal): accepted iff log u < A; boost (u e^-A)^c2
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
