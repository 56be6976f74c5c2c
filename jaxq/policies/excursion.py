"""The levels (z_n, Theta_n) of Theorem 2.11's policy that minimise an excursion model of the n-th system's cost.

The limit (V0, z*) cannot see what a threshold costs at a finite n. Under a T1 or T2 rule the held class p sits
near Theta_n jobs with excursions on both sides whose depths do not depend on n; under the T2 rule an excursion
deeper than Theta_n empties p's queue and idles the server dedicated to p (Proposition 5.5 fails at that n), which
the limit's workload never pays for. This module writes both effects into the workload diffusion and minimises the
result over the switching level z and the threshold Theta (a grid, evaluated in one batch by :func:`model_costs`,
then a local refinement):

* **The held queue** of a mode m (:func:`held_queue`). With rates per unit time divided by n (first order), p's
  queue below Theta is pushed up at ``d_- > 0`` with variance rate ``v_-``, above it pulled down at ``d_+ > 0``
  with ``v_+`` (T2 in m: p = i2(m) served by k1(m) below Theta and by both servers above, ``d_- = lambda_p -
  mu_{p k1}``, ``d_+ = mu_{p k1} + mu_{p k2} - lambda_p``; T1 in m: p = i1(m) served by k2(m) above Theta only,
  ``d_- = lambda_p``, ``d_+ = mu_{p k2} - lambda_p``). Its stationary law is two-sided exponential around Theta
  with mean depths ``D_- = v_- / (2 d_-)`` (:func:`jaxq.policies.thresholds.excursion_depth` under T2) and
  ``D_+ = v_+ / (2 d_+)``, reflected at a floor f: with ``s = Theta - f``, mean ``E x_p = f + (D_-(s - D_-) +
  D_-^2 e^{-s/D_-} + D_+(s + D_+)) / N`` and, under T2, the dedicated server's lost service (the regulator at the
  floor) ``d_- D_- e^{-s/D_-} / N`` jobs per unit time per n, ``N = D_-(1 - e^{-s/D_-}) + D_+``. Under T1 the floor
  is 0. Under T2 the queue is an integer and its dedicated server idles as soon as no job of p *waits*: at one job
  in the system while the other server holds it (that server took it when p's queue was above Theta, and does
  not give it back); and an integer queue's first step below Theta is a whole job whatever the primitives'
  variability (a completion before the next arrival), where the diffusion's excursion of depth D_- < 1 would
  hardly move. So the law is reflected two jobs up (:data:`BARRIER`: the job the other server holds and that
  first step) with the diffusion's depth D_-. A threshold below that floor is the floor to the model: where
  every mode uses T2 the search starts at Theta = 2 (a T1 mode still tells Theta = 1 apart). The lost service is
  that of the excursions in the bulk of the workload (the other class waits and the other server serves it);
  near the workload's bottom the dedicated server idles more, which the limit's reflection at 0 largely pays
  (measured by an observer of the path: experiments/excursion_idle_check.py, docs/results/random_systems.md).
* **The workload** (Definition 2.10, (2.24)): the reflected diffusion of mode m, with drift ``b_m`` raised by the
  lost service ``sqrt(n) loss_m / alpha_p`` (scaled workload per unit time) and cost ``h_q alpha_q W +
  (h_p - h_q alpha_q / alpha_p) min(E x_p / sqrt(n), alpha_p W)`` -- the threshold term of
  :mod:`jaxq.diffusion.threshold` with ``Theta_hat`` replaced by the held queue's mean, mode by mode. A T1 rule in the
  lower mode (T1T2) lets the workload reflect at the held jobs' workload instead of 0, as there.

The model's cost tends to V0 at its minimiser (at ``(z*, Theta_n)`` of any rule of (2.28) the lost service and the
held jobs vanish, so the minimum does too). At finite n it moves the levels where the tuned policy moves them
(docs/results/random_systems.md): where one mode uses T2 and the other T1 (T1T2, T2T1), z moves so that the T2 mode,
whose dedicated server idles, is used less, and Theta_n shrinks; where T2 rules hold everywhere (T2, T2T2) Theta_n
balances idling against held jobs. The cost is that of the model, not of the n-th system: the random-systems study
measures how close the levels come.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize_scalar

from jaxq.diffusion.threshold import discounted_cost, discounted_costs, exps
from jaxq.errors import InputError
from jaxq.policies import pss2x2 as pol

BARRIER = 2.0  # T2: the floor of the held queue's law: the job the other server holds and the first whole step
Z_SPAN = 64.0  # z is searched in [z* / Z_SPAN, z* Z_SPAN] (log grid) when the policy switches modes
Z_POINTS = 73
THETA_POINTS = 40  # Theta is searched on a log grid of integers in [1, 4 sqrt(n)], then its neighbours


class HeldQueue(NamedTuple):
    """The held class of a mode under its rule.

    Attributes:
        mean: The held class's mean number of jobs.
        lost: The lost service of its dedicated server (jobs per unit time divided by n; 0 under T1).
        p: The held class (0-based).
    """

    mean: float
    lost: float
    p: int


def held_queue(system, modes, m: int, rule: int, theta: float) -> HeldQueue | None:
    """The held queue of mode ``m`` under ``rule`` at threshold ``theta`` (module docstring).

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The system (first-order rates ``lam``, ``mu`` and SCVs ``ca2``, ``cs2``).
        modes (jaxq.planning.modes.Modes): The LP modes (roles ``i1``, ``i2``, ``k1`` of each mode).
        m: The mode (0-based).
        rule: ``RULE_P``, ``RULE_T1`` or ``RULE_T2``.
        theta: The threshold Theta.

    Returns:
        The held queue's mean and lost service; None for the P rule, which holds nothing.

    Raises:
        InputError: Naming ``theta_rule``: the held class's queue is not pushed back to the threshold from both
            sides in mode ``m`` (roles that are not Theorem 2.11's).
    """
    law = _held_law(system, modes, m, rule)
    if law is None:
        return None
    p, d_lo, lo, hi, base = law
    span = max(theta - base, 0.0)
    e = math.exp(-span / lo)
    norm = lo * (1.0 - e) + hi
    mean = base + (lo * (span - lo) + lo * lo * e + hi * (span + hi)) / norm
    lost = float(d_lo) * lo * e / norm if rule == pol.RULE_T2 else 0.0
    return HeldQueue(mean, lost, p)


def _held_law(system, modes, m: int, rule: int):
    """``(p, d_-, D_-, D_+, floor)`` of the held queue of mode ``m`` under ``rule`` (None for the P rule)."""
    if rule not in (pol.RULE_T1, pol.RULE_T2):
        return None
    lam, mu, ca2, cs2 = system.lam, system.mu, system.ca2, system.cs2
    k1 = int(modes.k1[m])
    k2 = 1 - k1
    if rule == pol.RULE_T2:
        p = int(modes.i2[m])
        d_lo, v_lo = lam[p] - mu[p, k1], lam[p] * ca2[p] + mu[p, k1] * cs2[p, k1]
        d_hi, v_hi = mu[p, k1] + mu[p, k2] - lam[p], v_lo + mu[p, k2] * cs2[p, k2]
    else:
        p = int(modes.i1[m])
        d_lo, v_lo = lam[p], lam[p] * ca2[p]
        d_hi, v_hi = mu[p, k2] - lam[p], v_lo + mu[p, k2] * cs2[p, k2]
    if not (d_lo > 0 and d_hi > 0):
        raise InputError("theta_rule", f"the excursion rule needs class {p + 1}'s queue pushed back to the threshold "
                                       f"from both sides in mode {m + 1} (rates {d_lo:.3g}, {d_hi:.3g}): these roles "
                                       "are not Theorem 2.11's; choose another rule")
    lo, hi = float(v_lo / (2.0 * d_lo)), float(v_hi / (2.0 * d_hi))
    base = 0.0
    if rule == pol.RULE_T2:  # the integer queue (module docstring): its law is reflected two jobs up
        base = BARRIER
    return p, d_lo, lo, hi, base


def _held_queues(system, modes, m: int, rule: int, thetas: np.ndarray) -> HeldQueue | None:
    """:func:`held_queue` at each of ``thetas`` (``mean`` and ``lost`` arrays), the same numbers bit for bit."""
    law = _held_law(system, modes, m, rule)
    if law is None:
        return None
    p, d_lo, lo, hi, base = law
    if lo == 0.0:  # held_queue divides by these Python floats: a ZeroDivisionError there
        raise ZeroDivisionError("float division by zero")
    span = np.maximum(thetas - base, 0.0)
    e = exps(-span / lo)
    norm = lo * (1.0 - e) + hi
    if np.any(norm == 0.0):
        raise ZeroDivisionError("float division by zero")
    mean = base + (lo * (span - lo) + lo * lo * e + hi * (span + hi)) / norm
    lost = float(d_lo) * lo * e / norm if rule == pol.RULE_T2 else np.zeros_like(thetas)
    return HeldQueue(mean, lost, p)


def model_cost(analysis, resolved, n: float, theta: float, z: float | None) -> float:
    """The excursion model's J_n (units of J_n and V0) of the resolved policy.

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The system's analysis (system, modes, drifts ``b``, ``sigma``).
        resolved (jaxq.policies.pss2x2.Resolved): The resolved policy.
        n: The scale n.
        theta: The threshold Theta.
        z: The switching level in scaled workload (ignored by a policy that does not switch).

    Returns:
        The model's cost; inf where the held jobs' workload reaches z (the model does not describe it).
    """
    return _cost_held(analysis, resolved, n, *_held_pair(analysis, resolved, theta), z)


def _held_pair(analysis, resolved, theta: float) -> tuple[HeldQueue, HeldQueue]:
    """The held queues of the lower and the higher mode at ``theta`` (the lower one twice without a switch)."""
    s, md, rules = analysis.system, analysis.modes, resolved.rules
    lower = held_queue(s, md, resolved.lower, rules.lower, theta)
    return lower, held_queue(s, md, resolved.higher, rules.higher, theta) if _switches(resolved) else lower


def _cost_held(analysis, resolved, n: float, lower: HeldQueue, upper: HeldQueue, z: float | None) -> float:
    """:func:`model_cost` given the held queues at its threshold (:func:`_held_pair`)."""
    w = _held_workload(analysis, n, lower)
    if _switches(resolved) and z <= w:
        return math.inf
    return float(_workload_cost(analysis, resolved, n, lower, upper, w, z, discounted_cost))


def _held_workload(analysis, n: float, lower: HeldQueue):
    """The held jobs' workload ``w = E x_p / sqrt(n) / alpha_p`` of the lower mode's held queue (a number, or an array
    of the held queue's shape)."""
    return lower.mean / math.sqrt(n) / np.asarray(analysis.modes.alpha, float)[lower.p]


def _workload_cost(analysis, resolved, n: float, lower: HeldQueue, upper: HeldQueue, w, z, cost):
    """The model's cost given the held queues of the lower and the higher mode, their held jobs' workload w
    (:func:`_held_workload`) and, for a policy that switches, a level z above w: on numbers with ``cost``
    :func:`~jaxq.diffusion.threshold.discounted_cost`, or on arrays (the pairs of a batch, by the same operations) with
    :func:`~jaxq.diffusion.threshold.discounted_costs`."""
    an, rules = analysis, resolved.rules
    s, md, g = an.system, an.modes, float(an.system.gamma)
    h, alpha = np.asarray(s.h, float), np.asarray(md.alpha, float)
    rn = math.sqrt(n)
    p = lower.p
    q = 1 - p
    drift = [float(an.b[m]) + rn * held.lost / alpha[p] for m, held in ((resolved.lower, lower),
                                                                        (resolved.higher, upper))]
    sd = [float(an.sigma[resolved.lower]), float(an.sigma[resolved.higher])]
    excess = h[p] - h[q] * alpha[q] / alpha[p]  # a held job of p instead of its workload in q
    if not _switches(resolved):
        return (h[q] * alpha[q] * cost([1.0], [], g, drift[:1], sd[:1])
                + excess * cost([alpha[p], 0.0], [w], g, drift[:1], sd[:1]))
    step = excess * (upper.mean - lower.mean) / rn  # the cost rate of the higher mode's further held jobs
    if rules.lower == pol.RULE_T1:  # (T1T2) the workload reflects at w; the held jobs cost h_p each, and the upper
        # mode's further (upper.mean - lower.mean) held jobs are part of the workload above w
        return (h[q] * alpha[q] * cost([1.0], [], g, drift, sd, (z - w,))
                + cost([0.0], [], g, drift, sd, (z - w,), offsets=(0.0, step))
                + h[p] * lower.mean / rn / g)
    return (h[q] * alpha[q] * cost([1.0], [], g, drift, sd, (z,))
            + cost([excess * alpha[p], 0.0], [w], g, drift, sd, (z,), offsets=(0.0, step)))


def model_costs(analysis, resolved, n: float, thetas, zs=None) -> np.ndarray:
    """:func:`model_cost` at each pair ``(thetas[i], zs[i])``, the same numbers bit for bit.

    The same floating-point operations on arrays (:func:`jaxq.diffusion.threshold.discounted_costs`); a pair the
    batch does not take (a held workload that is not positive) by :func:`model_cost` itself, and every pair so where
    one of them would raise (a division by zero, ...), so that the first of them raises as it would alone.

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The system's analysis (system, modes, drifts ``b``, ``sigma``).
        resolved (jaxq.policies.pss2x2.Resolved): The resolved policy.
        n: The scale n.
        thetas (array_like): The thresholds Theta.
        zs (array_like | None): The switching levels, broadcast against ``thetas`` (None for a policy that does not
            switch).

    Returns:
        The model's costs, one per pair (flattened).
    """
    thetas = np.asarray(thetas, np.float64).ravel()
    dual = _switches(resolved)
    zs = np.broadcast_to(np.asarray(zs if dual else math.nan, np.float64), thetas.shape).ravel()

    def alone(mask):
        return [model_cost(analysis, resolved, n, float(thetas[i]), float(zs[i]) if dual else None)
                for i in np.flatnonzero(mask)]

    out = np.empty(thetas.shape)
    if not thetas.size:
        return out
    try:
        inf, batch = _batch_costs(analysis, resolved, n, thetas, zs, out)
    except (ArithmeticError, ValueError, np.linalg.LinAlgError):  # raised by some pair: each alone, in order
        return np.array(alone(np.ones(thetas.shape, bool)), np.float64)
    rest = ~(inf | batch)
    out[rest] = alone(rest)
    return out


def _batch_costs(analysis, resolved, n, thetas, zs, out):
    """:func:`model_costs`' arrays: writes the pairs it takes into ``out``; returns the masks of the pairs at inf (the
    held jobs' workload reaches z) and of those computed. Raises where some pair would raise in :func:`model_cost`."""
    rules = resolved.rules
    dual = _switches(resolved)
    distinct, back = np.unique(thetas, return_inverse=True)  # the held queues depend on Theta alone

    def held_at(m, rule):
        queue = _held_queues(analysis.system, analysis.modes, m, rule, distinct)
        return HeldQueue(queue.mean[back], queue.lost[back], queue.p)

    lower = held_at(resolved.lower, rules.lower)
    upper = held_at(resolved.higher, rules.higher) if dual else lower
    with np.errstate(all="ignore"):  # numpy scalars in model_cost too: inf and nan rather than errors
        w = _held_workload(analysis, n, lower)
    inf = zs <= w if dual else np.zeros(thetas.shape, bool)
    batch = (zs > w) & (w > 0) if dual else w > 0
    out[inf] = math.inf
    if not np.any(batch):
        return inf, batch

    def taken(held):
        return HeldQueue(held.mean[batch], held.lost[batch], held.p)

    with np.errstate(all="ignore"):
        out[batch] = _workload_cost(analysis, resolved, n, taken(lower), taken(upper), w[batch], zs[batch],
                                    discounted_costs)
    return inf, batch


class ModelLevels(NamedTuple):
    """The minimiser of the excursion model.

    Attributes:
        theta: Theta_n.
        z: The switching level (None for a policy that does not switch).
        cost: The model's cost there.
    """

    theta: int
    z: float | None
    cost: float


def levels(analysis, resolved, n: float, switch_at: float | None = None) -> ModelLevels | None:
    """``(Theta_n, z_n)`` minimising :func:`model_cost` for Theorem 2.11's threshold policy (T2, T2T2, T1T2, T2T1).

    Costs within a relative 1e-9 of the minimum count as ties, broken toward the smaller Theta_n (with h_p alpha_p =
    h_q alpha_q holding costs nothing and the cost is flat in Theta_n). Deterministic; cached per (the numbers the
    model reads, policy, n, switch_at).

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The system's analysis (system, modes, drifts, ``z_star``).
        resolved (jaxq.policies.pss2x2.Resolved): The resolved policy.
        n: The scale n.
        switch_at: The switching level z, fixed when given (None: searched).

    Returns:
        The minimiser and its cost; None where the held jobs alone reach every level tried (``switch_at``, or the
            whole search when z* is close to 0 at a small n) at every threshold: the model does not describe that n.
    """
    s, an = analysis.system, analysis
    numbers = np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in (
        s.lam, s.mu, s.ca2, s.cs2, s.h, [s.gamma], an.b, an.sigma, an.modes.alpha, [an.z_star or 0.0])])
    key = (numbers.tobytes(), resolved, float(n), None if switch_at is None else float(switch_at))
    if key not in _DONE:
        if len(_DONE) >= CACHE_SIZE:
            _DONE.pop(next(iter(_DONE)))  # the oldest
        _DONE[key] = _levels(analysis, resolved, float(n), switch_at)
    return _DONE[key]


CACHE_SIZE = 4096
_DONE: dict = {}  # levels already computed (the study and the API set up the same n-th system repeatedly)
TIE = 1e-9


def _switches(resolved) -> bool:
    """Whether the resolved policy switches modes (a dual-mode policy on a dual-mode system)."""
    return resolved.rules.dual and math.isfinite(resolved.z)


def _levels(analysis, resolved, n, switch_at) -> ModelLevels | None:
    dual = _switches(resolved)
    thetas = sorted({int(t) for t in np.round(np.geomspace(1.0, max(2.0, 4.0 * math.sqrt(n)), THETA_POINTS))})
    used = (resolved.rules.lower, resolved.rules.higher) if dual else (resolved.rules.lower,)
    if all(rule == pol.RULE_T2 for rule in used):  # a T2 law cannot tell thresholds below its floor apart
        thetas = [t for t in thetas if t >= BARRIER]
    if not dual:
        zs = [None]
    elif switch_at is not None:
        zs = [float(switch_at)]
    else:
        zs = list(analysis.z_star * np.geomspace(1.0 / Z_SPAN, Z_SPAN, Z_POINTS))

    def costs(ts, zz):  # model_cost of the pairs of ts and zz, in one batch (model_costs); 1e300 for inf
        c = model_costs(analysis, resolved, n, np.array(ts, np.float64), np.array(zz, np.float64) if dual else None)
        return np.where(np.isfinite(c), c, 1e300).tolist()

    def from_z_star(z):  # how far z is from z*: in log z where both are positive (a given switch_at may be 0)
        if z is None:
            return 0.0
        if z > 0 and analysis.z_star > 0:
            return abs(math.log(z / analysis.z_star))
        return abs(z - analysis.z_star)

    def smallest(cands):  # the least cost; ties (TIE) to the smaller Theta, then z nearer z*
        low = min(c[0] for c in cands)
        return min((c for c in cands if c[0] <= low + TIE * abs(low)), key=lambda c: (c[1], from_z_star(c[2])))

    pairs_t, pairs_z = [t for t in thetas for _ in zs], [z for _ in thetas for z in zs]
    grid = costs(pairs_t, pairs_z)
    low = min(grid)  # smallest() of every pair, from those within TIE of the least cost (in their order)
    ties = np.flatnonzero(np.asarray(grid) <= low + TIE * abs(low))
    best = smallest([(grid[i], pairs_t[i], pairs_z[i]) for i in ties])
    if best[0] >= 1e300:  # the held jobs alone reach every level tried: the model does not describe this n
        return None
    # refine: every integer Theta between the grid neighbours of the best, then z by a bounded search in log z
    i = thetas.index(best[1])
    lo_t, hi_t = thetas[max(i - 1, 0)], thetas[min(i + 1, len(thetas) - 1)]
    z = best[2]
    column = next(j for j, zj in enumerate(zs) if zj is z)  # the grid's costs at this z: the same numbers
    known = {t: grid[k * len(zs) + column] for k, t in enumerate(thetas)}
    new = [t for t in range(lo_t, hi_t + 1) if t not in known]
    known.update(zip(new, costs(new, [z] * len(new)) if new else []))
    best = smallest([best] + [(known[t], t, z) for t in range(lo_t, hi_t + 1)])
    if dual and switch_at is None:
        j = min(range(len(zs)), key=lambda k: abs(math.log(zs[k] / best[2])))
        a, b = math.log(zs[max(j - 1, 0)]), math.log(zs[min(j + 1, len(zs) - 1)])
        if b > a:
            held = _held_pair(analysis, resolved, float(best[1]))  # Theta is fixed: its held queues once

            def cost_at(u):  # cost(best[1], e^u)
                c = _cost_held(analysis, resolved, n, *held, math.exp(u))
                return c if math.isfinite(c) else 1e300

            r = minimize_scalar(cost_at, bounds=(a, b), method="bounded", options={"xatol": 1e-4})
            if r.fun < best[0] - TIE * abs(best[0]):
                best = (float(r.fun), best[1], float(math.exp(r.x)))
    return ModelLevels(int(best[1]), None if best[2] is None else float(best[2]), float(best[0]))
