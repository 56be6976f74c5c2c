"""The uniformised driver: a :class:`~jaxq.sim.markov.Markov` chain stepped in lockstep from pages of 32-bit words.

The chain is uniformised at ``Lambda = markov.bound(p)``: every step draws one 32-bit word ``u`` and the
event types own consecutive segments of ``[0, 2^32)``, event e a segment of ``counts(s)[e] * W_e`` words
with ``W_e = floor(rates[e] / Lambda * 2^32)``; a word past the last segment is a self-loop. Event e
thus fires with probability ``counts[e] W_e / 2^32``, the uniformised probability ``counts[e] rates[e] /
Lambda`` rounded down to a multiple of ``counts[e] 2^-32`` (below 1e-9 per step here); the segments
never exceed ``2^32`` because ``Lambda`` bounds the total rate.

The time between jumps is integrated out: every step stands for a mean time ``1/Lambda`` and the jump
times of the uniformised chain form a Poisson process independent of its jump chain, so

* a time average over [T0, T] is the average over the ``round(Lambda (T - T0))`` steps after
  ``round(Lambda T0)`` warm-up steps (exactly those steps: the window's first and last pages are masked),
  unbiased for the same stationary means;
* a discounted integral ``E int exp(-gamma t) c(X_t) dt`` is ``E sum_k r^k c(X_k) / (Lambda + gamma)``,
  ``r = Lambda/(Lambda + gamma)``: Rao-Blackwellised (no time draws), truncated after K steps.

Why it is fast: one 32-bit word per step compared with exact integer thresholds, no data-dependent
control flow, a small state; all replications advance in lockstep as vector operations (the model's
state is a handful of scalars per replication). Replication r draws the ``PAGE`` words of page b as draw b of
its stream (:func:`jaxq.mc.rng.block`), so results do not depend on batching, slices or devices.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError
from jaxq.mc import replications, rng
from jaxq.sim.functionals import groups, results
from jaxq.sim.markov import Functional, Markov, invalid_rates, wraps
from jaxq.mc.observer import Observer, Segment

PAGE = 64  # words per page (part of the definition of the random stream)
TWO32 = 2.0**32
MAX_STEPS = PAGE * 2**32  # 2^38 steps: no run gets near it (pages are draws, counted below 2^48)


class Args(NamedTuple):
    """Traced arguments of a uniformised run.

    Attributes:
        params: The model's parameters.
        words: (E,) uint32: W_e, words per unit of multiplicity.
        r: The discount factor per step Lambda / (Lambda + gamma).
        warm: int64: warm-up steps (window).
        end: int64: warm-up steps + window steps (the window is the steps warm .. end - 1).
        pages: int64: pages to run (whole run).
        big: float64: the uniformisation rate Lambda (a step's mean time 1 / Lambda).
    """

    params: object  # the model's parameters
    words: jax.Array  # (E,) uint32: W_e, words per unit of multiplicity
    r: jax.Array  # discount factor per step Lambda / (Lambda + gamma)
    warm: jax.Array  # int64: warm-up steps (window)
    end: jax.Array  # int64: warm-up steps + window steps (the window is the steps warm .. end - 1)
    pages: jax.Array  # int64: pages to run (whole run)
    big: jax.Array  # float64: the uniformisation rate Lambda (a step's mean time 1 / Lambda)


def unit_words(rates, big: float) -> np.ndarray:
    """``W_e = floor(rates[e] / Lambda * (2^32 - 1))`` (uint32).

    The segments of any state then add up to at most ``2^32 - 1``, so the integer arithmetic of
    :func:`fired_events` never wraps.

    Args:
        rates (array_like): The unit rates, (E,).
        big: The uniformisation rate Lambda.

    Returns:
        The words per unit of multiplicity, (E,) uint32.
    """
    return np.floor(np.asarray(rates, dtype=np.float64) / big * (TWO32 - 1.0)).astype(np.uint32)


def segment(m, w):
    """The words ``floor(m W)`` of an event of rate ``m``.

    A float ``m``: a model in the plain form, unit rate 1, so ``W`` words per unit of rate; an integer multiplicity
    ``m`` owns exactly ``m W`` words.

    Args:
        m (jax.Array): The event's rate (or multiplicity).
        w (jax.Array): Its words per unit, uint32.

    Returns:
        (jax.Array): The words, uint32.
    """
    return jnp.floor(m * w.astype(jnp.float64)).astype(jnp.uint32)


def lengths(counts, words):
    """The words each event owns in a state, uint32: ``counts[e] W_e`` (``floor(m W_e)`` for a rate ``m`` of the plain
    form); event e fires with probability ``lengths[e] / 2^32``.

    Args:
        counts (tuple): The events' multiplicities (or rates) in the state.
        words (jax.Array): W_e, (E,) uint32.

    Returns:
        (list[jax.Array]): The words of each event, a list.
    """
    return [words[e] if isinstance(m, int) and m == 1 else segment(m, words[e]) if _is_rate(m)
            else jnp.asarray(m).astype(jnp.uint32) * words[e] for e, m in enumerate(counts)]


def fired_events(u, owned):
    """Which event the word ``u`` selects, given the words each owns (:func:`lengths`).

    Event e owns the words ``[lo_e, lo_e + owned[e])`` with ``lo_e`` the sum of the earlier segments
    (exact uint32 arithmetic: every sum stays below 2^32); ``u - lo_e < len_e`` tests membership with one
    subtraction (it wraps for ``u < lo_e`` to a large number).

    Args:
        u (jax.Array): The step's 32-bit word.
        owned (Sequence[jax.Array]): The words each event owns (uint32).

    Returns:
        (tuple): ``(fired, any)``: a tuple of bools, one per event (all False: a self-loop), and whether any fired.
    """
    lo = jnp.uint32(0)
    out = []
    for length in owned:
        out.append((u - lo) < length)
        lo = lo + length
    return tuple(out), u < lo


def exact_lengths(counts, words):
    """The words of every event in a state, in float64 before any uint32 conversion.

    (:func:`lengths` wraps for a length of 2^32 or more.) Their sum exceeds ``2^32 - 1`` exactly when the rates
    exceed the uniformisation rate.

    Args:
        counts (tuple): The events' multiplicities (or rates) in the state.
        words (jax.Array): W_e, (E,) uint32.

    Returns:
        (list[jax.Array]): The words of each event, float64, a list.
    """
    return [jnp.floor(m * words[e].astype(jnp.float64)) if _is_rate(m)
            else jnp.asarray(m).astype(jnp.float64) * words[e].astype(jnp.float64) for e, m in enumerate(counts)]


def _plain(counts) -> bool:
    """Whether a model states its rates in the plain form (float rates, unit rate 1)."""
    return any(_is_rate(m) for m in counts)


def _is_rate(m) -> bool:
    return not isinstance(m, int) and jnp.issubdtype(jnp.asarray(m).dtype, jnp.floating)


@lru_cache(maxsize=replications.PROGRAMS_KEPT)
def program(markov: Markov, functional: Functional, pages_per_call: int,
            observer: Observer | None = None) -> replications.Program:
    """The :class:`~jaxq.mc.replications.Program` of a Markov model under a functional (cached).

    What is estimated are observers (:mod:`jaxq.sim.functionals`). Step k is a :class:`~jaxq.mc.observer.Segment` of
    the model's states with each functional's weights, the Poisson times integrated out: discounted,
    ``r^(k+1) / Lambda = E int_{T_k}^{T_{k+1}} exp(-gamma t) dt`` for the state held and
    ``r^(k+1) = E exp(-gamma T_{k+1})`` for a real jump (mass ``(1 - r^K) / gamma`` over the K steps run); window,
    ``1 / Lambda`` (the step's mean time) and 1 for the steps ``Args.warm .. Args.end - 1`` (mass: the window's steps
    over Lambda). Event e's compensator is the jump's weight times its exact probability ``counts[e] W_e / 2^32``.

    A page is warm-up (the window's observers not run), recorded or, for the window's first and last pages,
    recorded with a mask (weights zero outside the window's steps, so the window is exactly the steps asked for).

    Args:
        markov: The model.
        functional: What to estimate.
        pages_per_call: Pages per ``advance`` call.
        observer: A user's observer, under the discounted functional, else the window's, output ``observed``
            (None: none).

    Returns:
        The program (its arguments an :class:`Args`).
    """
    disc, win, _ = groups(markov, functional, observer)

    def checked(s, p):  # rates in the state, or a user's model: every step checked (the flags "over")
        return _plain(markov.counts(s, p)) or markov.wrap_check

    def init_one(key, a: Args):
        s = markov.init(a.params)
        ints = markov.wrap_check and wraps(s, s) is not None  # integers in the state: checked at every step
        return {"key": key, "state": s, "w": jnp.float64(1.0), "events": jnp.int64(0),
                "disc": disc.init(a.params) if disc else (), "win": win.init(a.params) if win else (),
                **({"over": jnp.uint8(0)} if checked(s, a.params) else {}), **({"before": s} if ints else {})}

    def step(c, xs, a: Args, record: bool, masked: bool = False):
        u, k = xs if masked else (xs, None)
        p = a.params
        s = c["state"]
        counts = markov.counts(s, p)
        owned = lengths(counts, a.words)
        fired, real = fired_events(u, owned)
        s_new, rec = markov.transition(s, fired, p)
        if "before" in c:  # an integer that wrapped around its dtype at the last step stops the replication: the
            # states after and before it kept (refused after the run); checked on the carried states
            stuck = wraps(c["before"], s)
            s_new = jax.tree_util.tree_map(lambda a, b: jnp.where(stuck, b, a), s_new, s)
        if "over" in c:  # bit 1: rates above the uniformisation rate (the words would wrap); bit 2: a rate that is
            # not a finite number >= 0 or a multiplicity below 0 (its state kept: the event is named after the run)
            total = sum(exact_lengths(counts, a.words))
            over = (total > TWO32 - 1.0).astype(jnp.uint8)
            bad = invalid_rates(counts, markov.wrap_check)
            if bad is not None:
                over = over | (bad.astype(jnp.uint8) << 1)
                s_new = jax.tree_util.tree_map(lambda a, b: jnp.where(bad, b, a), s_new, s)
        # the step's exact event probabilities (computed only where a control uses them)
        prob = [n.astype(jnp.float64) * (1.0 / TWO32) for n in owned]
        seg = Segment(s, 0.0, s_new, 0.0, fired=fired, record=rec)

        def weighted(w_jump):  # w_jump: the jump's weight; the held state's is w_jump / Lambda
            return seg._replace(weight=w_jump / a.big, jump=jnp.where(real, w_jump, 0.0),
                                compensator=tuple(w_jump * q for q in prob))

        out = dict(c, state=s_new, pe=c["pe"] + real.astype(jnp.int32))
        if "before" in c:
            out["before"] = jax.tree_util.tree_map(lambda a, b: jnp.where(stuck, a, b), c["before"], s)
        if disc:
            wr = c["w"] * a.r  # r^(k+1)
            out["disc"] = disc.update(c["disc"], weighted(wr), p)
            out["w"] = wr
        if record:
            one = jnp.float64(1.0) if not masked else ((k >= a.warm) & (k < a.end)).astype(jnp.float64)
            out["win"] = win.update(c["win"], weighted(one), p)
        if "over" in c:  # both refused after the run
            out["over"] = c["over"] | over
        return out, None

    def run_page(c, b, a: Args, record: bool, masked: bool = False):
        words = rng.block(c["key"], b.astype(jnp.uint64), PAGE)  # draw b of the replication's stream
        # only what a step changes is carried through the page
        carried = (["state"] + ["disc", "w"] * bool(disc) + ["win"] * record + ["over"] * ("over" in c)
                   + ["before"] * ("before" in c))
        inner = {"pe": jnp.int32(0), **{k: c[k] for k in carried}}
        xs = (words, b.astype(jnp.int64) * PAGE + jnp.arange(PAGE, dtype=jnp.int64)) if masked else words
        inner, _ = jax.lax.scan(lambda cc, x: step(cc, x, a, record, masked), inner, xs)
        return dict(c, events=c["events"] + inner["pe"].astype(jnp.int64), **{k: inner[k] for k in carried})

    def advance_one(c, b0, b1, a: Args):
        if not win:
            return jax.lax.fori_loop(b0, b1, lambda b, cc: run_page(cc, b, a, False), c)
        first, last = a.warm // PAGE, (a.end - 1) // PAGE  # the window's first and last pages (masked)

        def pages(lo, hi, record, masked, c):  # pages lo .. hi - 1 of this call's b0 .. b1 - 1
            lo, hi = jnp.maximum(b0, lo), jnp.minimum(b1, hi)
            return jax.lax.fori_loop(lo, jnp.maximum(lo, hi), lambda b, cc: run_page(cc, b, a, record, masked), c)

        c = pages(b0, first, False, False, c)
        c = pages(first, first + 1, True, True, c)
        c = pages(first + 1, last, True, False, c)
        return pages(jnp.maximum(last, first + 1), last + 1, True, True, c)

    @jax.jit
    def start(keys, a: Args):
        return {"rep": jax.vmap(lambda k: init_one(k, a))(keys), "page": jnp.int64(0)}

    @jax.jit
    def advance(carry, a: Args):
        b0 = carry["page"]
        b1 = jnp.minimum(b0 + pages_per_call, a.pages)
        rep = jax.vmap(lambda c: advance_one(c, b0, b1, a))(carry["rep"])
        work = (b1 - b0) * PAGE * carry["rep"]["events"].shape[0]
        return {"rep": rep, "page": b1}, b1 >= a.pages, work

    @jax.jit
    def finish(carry, a: Args):
        c = carry["rep"]
        out = {"state": c["state"], "events": c["events"], "over": c.get("over", ()), "before": c.get("before", ())}
        if "before" in c:
            out["wrapped"] = jax.vmap(wraps)(c["before"], c["state"])
        if disc:  # the mass over the K steps run: sum_k r^(k+1) / Lambda = (1 - r^K) / gamma, r^K the final w
            mass = lambda w: (1.0 - w) / (1.0 - a.r) * (a.r / a.big)  # noqa: E731  (r / Lambda = 1 / (Lambda + gamma))
            out["disc"] = jax.vmap(lambda o, w: disc.finish(o, mass(w), a.params))(c["disc"], c["w"])
        if win:
            steps = (a.end - a.warm).astype(jnp.float64)
            out["win"] = jax.vmap(lambda o: win.finish(o, steps / a.big, a.params))(c["win"])
        return out

    return replications.Program(start, advance, finish, unit="steps", same=("uniformized", markov, functional, observer))


def pages_per_call(size: int) -> int:
    """Pages per ``advance`` call for a batch of ``size`` replications: about 2^24 steps a call.

    Args:
        size: The replications of a batch.

    Returns:
        The pages per call (1 to 16384).
    """
    return int(max(1, min(1 << 14, (1 << 24) // (PAGE * max(size, 1)))))


def run(markov: Markov, params, functional: Functional, reps: int, seed: int, *, gamma: float = 0.0,
        warm_steps: int = 0, steps: int, batching: replications.Batching = replications.Batching(),
        observer: Observer | None = None):
    """Simulate ``reps`` replications of the uniformised chain for ``warm_steps + steps`` steps.

    Rounded up to whole pages; the window is exactly the ``steps`` steps after ``warm_steps``.

    Args:
        markov: The model.
        params (typing.Any): Its parameters.
        functional: What to estimate.
        reps: The replications.
        seed: Replication r is keyed by ``fold_in(PRNGKey(seed), r)``.
        gamma: Discount rate (``functional.discounted``).
        warm_steps: Steps before the window starts (``functional.window``).
        steps: Steps in the window (at least 1). The discounted sum runs over every step of the whole pages.
        batching: How the replications are executed (:class:`jaxq.mc.replications.Batching`).
        observer: An :class:`~jaxq.mc.observer.Observer` of the model's states (under the discounted functional,
            else the window's, see :func:`program`); its per-replication ``finish`` outputs are ``out["observed"]``.

    Returns:
        (tuple[dict, typing.Any, dict]): ``(out, timing, info)``: ``out`` has per-replication numpy arrays ``state``
            (final state), ``discounted`` (the discounted estimate of ``observe``), ``window`` (its average over the
            window), ``records`` (the window's event records summed), ``events`` (real jumps), ``controls`` (when the
            model states martingale controls: per functional a (reps, C) array in the units of its estimate, the
            discrete form of the event driver's, :func:`program`), ``wrapped`` and ``before`` (with
            ``markov.wrap_check`` and integers in the state: the flags of :func:`~jaxq.sim.markov.wraps`, such a
            replication stopped there, and the state before its last step); ``info`` has ``Lambda``, ``steps`` (total,
            rounded), ``window_steps``, ``warm_steps``, ``r``.

    Raises:
        InputError: Naming ``engine`` (no rate bound), ``rates`` (a uniformisation rate that is not a positive
            finite number) or ``horizon`` (steps out of range).
    """
    if markov.bound is None:
        raise InputError("engine", f"the model {markov.name!r} has no rate_bound: only the event driver runs it")
    big = float(markov.bound(params))
    if not (math.isfinite(big) and big > 0):
        raise InputError("rates", f"the uniformisation rate {big!r} is not a positive finite number")
    warm_steps, window_steps = int(warm_steps), int(steps)
    total = warm_steps + window_steps
    if not (warm_steps >= 0 and window_steps >= 1 and total <= MAX_STEPS):
        raise InputError("horizon", f"{warm_steps:.3g} warm-up and {window_steps:.3g} window steps per replication "
                                    "are out of range (window at least 1 step, in all at most 2^38)")
    pages = -(-total // PAGE)
    words = unit_words(markov.rates(params), big)
    r = big / (big + gamma) if functional.discounted else 1.0
    a = Args(params, jnp.asarray(words, jnp.uint32), jnp.float64(r), jnp.int64(warm_steps), jnp.int64(total),
             jnp.int64(pages), jnp.float64(big))
    work = float(reps) * pages * PAGE
    replications.announce(batching.progress, work, "steps")
    p = replications.plan(reps, batching.chunk, batching.devices, work=work)
    prog = program(markov, functional, pages_per_call(p.size), observer)
    out, timing = replications.run(prog, a, reps, seed, batching=batching, work=work)
    res = {"state": out["state"], "events": out["events"], **results(markov, functional, out)}
    if np.size(out["over"]):
        flags = np.asarray(out["over"])
        res["over_bound"] = (flags & 1) != 0
        res["invalid_rates"] = (flags & 2) != 0
    if "wrapped" in out:
        res["wrapped"], res["before"] = np.asarray(out["wrapped"]), out["before"]
    info = {"Lambda": big, "steps": pages * PAGE, "warm_steps": int(warm_steps), "window_steps": window_steps, "r": r}
    return res, timing, info
