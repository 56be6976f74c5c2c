"""Tuning the policy of the n-th 2x2 system: switching level z and threshold Theta_n = ceil(c n^a_bar).

Two methods minimise J_n(z, c), the discounted cost of the prelimit policy that switches modes at
``sqrt(n) z`` and uses the threshold ``Theta_n = ceil(c n^a_bar)``:

* ``search`` (default): a sample-average search with common random numbers. Every candidate (z, Theta) is
  simulated on the same ``reps`` replications (one search seed), each replication's cost controlled by the
  diffusion limit's control variates (cross-fitted, :func:`jaxq.stats.controlled_values`), which cut the
  standard error about tenfold. The threshold is an integer, so it is searched on the integers directly:
  a geometric grid around the default Theta_n (ratios 1/2, 1, 2, 4, 8), widened while the best point lies
  on its edge, then refined at the geometric midpoints between the best point and its neighbours. For a
  dual-mode policy the switching level follows: z* (the limit's smooth-fit level, the warm start) times 0.6,
  1 and 1.6, widened and refined the same way, then the threshold's neighbours are checked again at the new
  level. About 13 candidates in all; the cost is flat near its minimum, so a coarse grid loses little.
* ``gradient``: Adam on antithetic Gaussian-smoothing gradients. J_n is piecewise constant along a sample
  path, so jaxq differentiates the smoothed cost ``J_tau(theta) = E J_n(theta + tau eps)``, whose gradient
  is ``E[J_n(theta + tau eps) eps] / tau``; each replication is run at ``theta + tau eps`` and
  ``theta - tau eps`` with common random numbers, ``(J+ - J-) eps / (2 tau)`` estimating the gradient; the
  tuned value of a chain is the average of its second half of iterates, independent chains give intervals.
  About 16 times the work of ``search``; kept as a second method to check it.

Either way the tuned policy is then evaluated honestly (:func:`evaluate`): J_n at the tuned (z, Theta) and at
the default policy (the simulator's default z and Theta_n) on fresh replications, whose seed differs from every
seed the search used, so the reported cost is an unbiased estimate of the tuned policy's J_n (the minimum of the
search's own estimates is biased low), with intervals, their paired difference, and V0.
"""

from __future__ import annotations

import math
import time
from typing import Callable, NamedTuple

import numpy as np
import optax

from jaxq.diffusion.workload import Analysis, analyze
from jaxq.errors import InputError
from jaxq.model.pss2x2 import PSS2x2
from jaxq.policies import pss2x2 as pol
from jaxq.policies import thresholds
from jaxq.policies.thresholds import THETA_MAX
from jaxq.sim.pss2x2 import (DEFAULT_THETA_EXPONENT, coarse_controls, Batching, Levels, Outputs, grouped, setup,
                              held_to, simulate, simulate_bounded)
from jaxq.mc.rng import EVALUATION, SEARCH, derived_seed  # noqa: F401  (the seeds of a tuning run)
from jaxq.mc.target import run_reps
from jaxq.stats import controlled_values, mean_stderr, t95, t_interval

METHODS = ("search", "gradient")
SEARCH_REPS = 128  # replications per candidate of the search (the control variates make them enough)
GRADIENT_REPS = 256  # antithetic pairs per gradient step
EVAL_FACTOR = 4  # the final evaluation's replications: EVAL_FACTOR times the search's (or the gradient's)
THETA_RATIOS = (0.5, 1.0, 2.0, 4.0, 8.0)  # the threshold's first grid: Theta_default x ...
Z_RATIOS = (0.6, 1.0, 1.6)  # the switching level's first grid: z* x ...
LOCAL_THETA_RATIOS = (2.0 ** -0.5, 1.0, 2.0 ** 0.5)  # span="local": around a warm start (the tuned c of a smaller n)
LOCAL_Z_RATIOS = (0.8, 1.0, 1.25)
SPANS = ("wide", "local")
EXPANSIONS = 3  # widenings of a grid whose best point lies on its edge


class Procedure(NamedTuple):
    """How :func:`tune_prelimit` searches.

    Attributes:
        method: ``search`` (one-dimensional searches on common random numbers, module docstring) or ``gradient``.
        span: The search's first grids, ``wide`` (Theta_n x 1/2 .. 8, z x 0.6 .. 1.6) or ``local`` (x 2^(-1/2) ..
            2^(1/2), x 0.8 .. 1.25; both widened while the best point is on an edge).
        reps: Replications per candidate (search, default :data:`SEARCH_REPS`) or antithetic pairs per gradient
            (default :data:`GRADIENT_REPS`).
        iterations: The gradient method's Adam steps per chain.
        chains: The gradient method's chains.
        tau: The gradient method's smoothing scales for z and c.
        learning_rate: The gradient method's step size.
    """

    method: str = "search"
    span: str = "wide"
    reps: int | None = None
    iterations: int = 20
    chains: int = 4
    tau: tuple[float, float] = (0.2, 0.3)
    learning_rate: float = 0.1


class Start(NamedTuple):
    """Where :func:`tune_prelimit` starts.

    Attributes:
        z_init: The start of z (default: z*, the theory's policy; for a warm start, e.g. the z tuned at a smaller n).
        c_init: The start of c (default: the simulator's default Theta_n, the theory's policy; for a warm start,
            e.g. the c tuned at a smaller n: the threshold constant carries over, Theta_n grows like n^a_bar).
        theta_exponent: a_bar of Theta_n = ceil(c n^a_bar) (default: the simulator's).
    """

    z_init: float | None = None
    c_init: float | None = None
    theta_exponent: float | None = None


class Evaluation(NamedTuple):
    """The final evaluation of :func:`tune_prelimit`.

    Attributes:
        evaluate_reps: Its replications (default :data:`EVAL_FACTOR` x the search's).
        eval_reps: Alias of ``evaluate_reps``.
        evaluate_result: False skips it (:func:`simulate_tuned` evaluates itself).
    """

    evaluate_reps: int | None = None
    eval_reps: int | None = None
    evaluate_result: bool = True


GROUPS = {"procedure": Procedure, "start": Start, "evaluation": Evaluation}


class PrelimitTune(NamedTuple):
    """Result of :func:`tune_prelimit` (``None`` for a parameter the policy does not have).

    Attributes:
        z: The tuned switching level.
        z_ci: Search: the range of the grid points whose cost the search cannot tell from the best's (paired
            difference within 1.96 standard errors); gradient: t intervals over the chains.
        c: The tuned threshold constant.
        c_ci: As ``z_ci``, for c.
        chains: Gradient: (chains, iterations + 1, 2), the iterates (z, c); search: None.
        smoothed_cost: Gradient: (chains, iterations), J_tau along the way; search: None.
        evaluation: The fresh-replication comparison of :func:`evaluate` (None with ``evaluate=False``).
        theta: The tuned Theta_n = ceil(c n^a).
        method: ``search`` or ``gradient``.
        trace: The search's candidates (dicts: z, theta, c, J, stderr) or the gradient's iterates.
        cost: Wall time (seconds), candidates or gradient steps, replications simulated (search, evaluation).
        seeds: The seeds of the search and of the evaluation.
    """

    z: float | None
    z_ci: tuple[float, float] | None
    c: float | None
    c_ci: tuple[float, float] | None
    chains: np.ndarray | None  # gradient: (chains, iterations + 1, 2), the iterates (z, c); search: None
    smoothed_cost: np.ndarray | None  # gradient: (chains, iterations), J_tau along the way; search: None
    evaluation: dict | None
    theta: int | None = None
    method: str = "search"
    trace: tuple = ()
    cost: dict | None = None
    seeds: dict | None = None


def tunable(a: Analysis, policy: str) -> tuple[str, bool, bool, float]:
    """``(policy name, tune z?, tune c?, z*)``; refuses a policy with nothing to tune.

    Args:
        a: The system's analysis.
        policy: ``auto`` or a policy name.

    Returns:
        ``(policy name, tune z?, tune c?, z*)``.

    Raises:
        InputError: Naming ``policy`` when it has neither a switching level nor a threshold.
    """
    res = pol.resolve(a, policy, None)
    name, rules, z_star = res.name, res.rules, res.z
    tune_z = rules.dual and a.case == "dual"
    tune_c = pol.uses_threshold(rules)
    if not (tune_z or tune_c):
        raise InputError("policy", f"{name} has neither a switching level nor a threshold to tune")
    return name, tune_z, tune_c, z_star


def default_theta(system: PSS2x2, n: float, policy: str, theta_exponent: float | None, analysis: Analysis) -> int | None:
    """The simulator's default threshold Theta_n of the policy (None: the policy has none).

    Args:
        system: The 2x2 system.
        n: The index of the system.
        policy: The policy name.
        theta_exponent: a_bar of Theta_n = ceil(c n^a_bar) (None: the simulator's).
        analysis: The system's analysis.

    Returns:
        Theta_n, or None.
    """
    levels = Levels(theta_exponent=DEFAULT_THETA_EXPONENT if theta_exponent is None else theta_exponent)
    return setup(system, n, policy=policy, analysis=analysis, levels=levels).theta


def theta_constant(theta: int | None, n: float, exponent: float) -> float:
    """The constant c with ``ceil(c n^a) = theta`` (1 for a policy without a threshold).

    Args:
        theta: Theta_n (None: no threshold).
        n: The index of the system.
        exponent: a.

    Returns:
        c.
    """
    return 1.0 if theta is None else theta / float(n) ** exponent


def _controlled(r) -> np.ndarray:
    """Per-replication costs, controlled (cross-fitted by replication index) when the run recorded controls."""
    J = np.asarray(r.samples["J"], dtype=np.float64)
    if "controls" not in r.samples:
        return J
    adjusted, _ = controlled_values(J, r.samples["controls"], np.arange(len(J)), coarse=coarse_controls)
    return np.asarray(adjusted, dtype=np.float64)


def smoothed_gradient(system, n, levels: Levels, reps, seed, tau, policy, analysis,
                      cv: bool = True) -> tuple[np.ndarray, np.ndarray, float]:
    """Antithetic Gaussian-smoothing gradient of J_n at (z, c) = ``(levels.switch_at, levels.theta_constant)``
    (the threshold's constant absolute: ``levels.theta_rule`` is ``paper``): (mean (2,), stderr (2,), J_tau
    estimate); ``tau = (tau_z, tau_c)``: the Gaussian smoothing's scales.

    With ``cv`` each run's costs are controlled by the diffusion limit's control variates, cross-fitted by
    replication index (:func:`jaxq.stats.controlled_values`): each control has mean zero given the
    replication's perturbation eps, and the coefficients come from other replications, so the gradient
    estimate stays unbiased while its variance falls.

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The 2x2 system.
        n (float): The index of the system.
        levels: The levels at which the gradient is taken.
        reps (int): Antithetic pairs.
        seed (int): The seed of both runs (common random numbers).
        tau (tuple[float, float]): ``(tau_z, tau_c)``.
        policy (str): The policy name.
        analysis (jaxq.diffusion.workload.Analysis): The system's analysis.
        cv: Control the costs by the control variates.

    Returns:
        ``(mean, stderr, J_tau)``.
    """
    kw = dict(policy=policy, seed=seed, analysis=analysis, outputs=Outputs(cv=cv))
    plus = simulate(system, n, reps, levels=levels._replace(perturb=(1, tau[0], tau[1])), **kw)
    minus = simulate(system, n, reps, levels=levels._replace(perturb=(-1, tau[0], tau[1])), **kw)
    jp, jm = (_controlled(r) for r in (plus, minus))
    half = 0.5 * (jp - jm)
    g = half[:, None] * plus.samples["eps"] / np.asarray(tau)
    return g.mean(axis=0), g.std(axis=0, ddof=1) / math.sqrt(reps), float(0.5 * (jp + jm).mean())


def evaluate(system: PSS2x2, n: float, z: float | None, theta: int | None, *, policy: str = "auto",
             theta_exponent: float | None = None, reps: int = EVAL_FACTOR * SEARCH_REPS, seed: int = 0,
             analysis: Analysis | None = None, chunk: int | None = None) -> dict:
    """J_n of the policy at (z, Theta) and of the default policy (its default z and Theta_n) on the same ``reps``
    replications of ``seed`` (common random numbers; use a seed no search has seen), controlled by the
    control variates, with 95% intervals, their paired difference and V0.

    Keys: ``J_tuned``, ``J_tuned_stderr``, ``J_tuned_ci95``, ``J_default`` (also ``J_theory``), its stderr and
    interval, ``difference`` (tuned - default) and its stderr and interval, ``ratio_tuned`` and ``ratio_default``
    (J / V0), ``V0``, ``theta_tuned``, ``theta_default`` (also ``theta_theory``), ``z_tuned``, ``z_default``,
    ``reps``, ``seed``.

    Args:
        system: The 2x2 system.
        n: The index of the system.
        z: The tuned switching level (None: the policy has none).
        theta: The tuned Theta_n (None: the policy has none).
        policy: ``auto`` or a policy name.
        theta_exponent: a_bar of Theta_n = ceil(c n^a_bar) (None: the simulator's).
        reps: The replications of each policy.
        seed: Their seed.
        analysis: The system's analysis (computed if None).
        chunk: Replications per compiled batch (None: the simulator's default).

    Returns:
        The keys above, and ``wall_s``.
    """
    a = analysis if analysis is not None else analyze(system)
    exponent = DEFAULT_THETA_EXPONENT if theta_exponent is None else theta_exponent
    kw = dict(policy=policy, seed=seed, analysis=a, batching=Batching(chunk=chunk))
    tuned = simulate_bounded(system, n, reps, levels=Levels.absolute(z, exponent, theta_constant(theta, n, exponent)),
                             **kw)
    default = simulate_bounded(system, n, reps, levels=Levels(theta_exponent=exponent), **kw)
    d_mean, d_se = mean_stderr(_controlled(tuned) - _controlled(default))

    q = t95(reps)  # Student's t: a few replications give a wide interval, not the normal 1.96

    def ci(m, s):
        return [m - q * s, m + q * s]

    return {
        "J_tuned": tuned.value, "J_tuned_stderr": tuned.stderr, "J_tuned_ci95": ci(tuned.value, tuned.stderr),
        "J_default": default.value, "J_default_stderr": default.stderr,
        "J_default_ci95": ci(default.value, default.stderr),
        "J_theory": default.value, "J_theory_stderr": default.stderr,
        "difference": d_mean, "difference_stderr": d_se, "difference_ci95": ci(d_mean, d_se),
        "V0": a.V0, "ratio_tuned": tuned.value / a.V0, "ratio_default": default.value / a.V0,
        "theta_tuned": tuned.info["theta"], "theta_default": default.info["theta"],
        "theta_theory": default.info["theta"], "z_tuned": tuned.info["switch_at"], "z_default": default.info["switch_at"],
        "reps": int(reps), "seed": int(seed),
        "wall_s": tuned.wall_s + default.wall_s,
    }


class _Candidates:
    """The search's sample-average objective: J_n at (z, Theta) on ``reps`` fixed replications (common random
    numbers), controlled; every candidate is simulated once."""

    def __init__(self, system, n, policy, exponent, reps, seed, analysis, progress):
        self.system, self.n, self.policy, self.exponent = system, n, policy, exponent
        self.reps, self.seed, self.analysis, self.progress = reps, seed, analysis, progress
        self.values: dict[tuple, np.ndarray] = {}

    @staticmethod
    def key(z, theta):
        return (None if z is None else round(float(z), 12), None if theta is None else int(theta))

    def __call__(self, z, theta) -> float:
        k = self.key(z, theta)
        if k not in self.values:
            levels = Levels.absolute(z, self.exponent, theta_constant(theta, self.n, self.exponent))
            r = simulate(self.system, self.n, self.reps, policy=self.policy, seed=self.seed, levels=levels,
                         analysis=self.analysis, batching=Batching(chunk=self.reps))
            self.values[k] = _controlled(r)
            if self.progress is not None:
                self.progress(1)
        return float(self.values[k].mean())

    def best(self, where=lambda k: True) -> tuple:
        keys = [k for k in self.values if where(k)]
        return min(keys, key=lambda k: self.values[k].mean())

    def tied(self, best) -> list[tuple]:
        """The candidates whose paired difference from ``best`` is within a 95% Student-t interval (1.96 standard
        errors for many replications)."""
        out = []
        for k, v in self.values.items():
            m, s = mean_stderr(v - self.values[best])
            if k == best or not (m > t95(v.shape[0]) * s):
                out.append(k)
        return out


def _line(f, grid: list, fixed, integer: bool, lo: float) -> None:
    """A one-dimensional search of ``f(x)`` (``fixed(x)`` -> the candidate's (z, theta)) on a geometric grid:
    evaluate it, widen it while the best point is on its edge, then try the geometric midpoints between the best
    point and its neighbours."""
    snap = (lambda x: max(int(lo), int(round(x)))) if integer else (lambda x: max(lo, float(x)))
    pts = sorted({snap(x) for x in grid})
    vals = {x: f(*fixed(x)) for x in pts}
    for _ in range(EXPANSIONS):
        best = min(vals, key=vals.get)
        if best == max(vals):
            new = snap(best * (pts[-1] / pts[-2] if len(pts) > 1 else 2.0) ** 2)
        elif best == min(vals) and best > lo:
            new = snap(best / (pts[1] / pts[0] if len(pts) > 1 else 2.0) ** 2)
        else:
            break
        if new in vals:
            break
        vals[new] = f(*fixed(new))
        pts = sorted(vals)
    best = min(vals, key=vals.get)
    i = pts.index(best)
    for j in (i - 1, i + 1):
        if 0 <= j < len(pts):
            mid = snap(math.sqrt(best * pts[j]) if best > 0 and pts[j] > 0 else 0.5 * (best + pts[j]))
            if mid not in vals:
                vals[mid] = f(*fixed(mid))


def _search(cands: _Candidates, tune_z: bool, tune_c: bool, z0, theta0, span: str = "wide"):
    z, theta = z0, theta0
    local = span == "local"
    if tune_c:
        _line(cands, [theta0 * r for r in (LOCAL_THETA_RATIOS if local else THETA_RATIOS)], lambda t: (z, t), True, 1)
        theta = cands.best(lambda k: k[0] == cands.key(z, None)[0])[1]
    if tune_z:
        _line(cands, [z0 * r for r in (LOCAL_Z_RATIOS if local else Z_RATIOS)], lambda x: (x, theta), False, 1e-3 * z0)
        z = cands.best(lambda k: k[1] == theta)[0]
        if tune_c and cands.key(z, None)[0] != cands.key(z0, None)[0]:  # the threshold again, at the new level
            ts = sorted({k[1] for k in cands.values})
            i = ts.index(theta)
            for t in ts[max(i - 1, 0): i + 2]:
                cands(z, t)
    return cands.best()


def tune_prelimit(system: PSS2x2, n: float, *, policy: str = "auto", seed: int = 0,
                  procedure: Procedure = Procedure(), start: Start = Start(), evaluation: Evaluation = Evaluation(),
                  progress: Callable[[int], None] | None = None, analysis: Analysis | None = None) -> PrelimitTune:
    """Tune (z, c) of the n-th system's policy, then evaluate the tuned policy on fresh replications.

    Args:
        system: The 2x2 system.
        n: The index of the prelimit system.
        policy: ``auto`` (Theorem 2.11) or a policy name; z is tuned for dual-mode policies, c (Theta_n) for
            policies with a threshold (T1/T2 rules); a policy with neither is refused.
        seed: Base seed; the search uses ``derived_seed(seed, SEARCH)`` (the gradient one seed per chain and step),
            the evaluation ``derived_seed(seed, EVALUATION)``, none of them ``seed`` itself.
        procedure: The method and its settings (:class:`Procedure`).
        start: The start point and the threshold's exponent (:class:`Start`).
        evaluation: The final evaluation (:class:`Evaluation`).
        progress: Called with 1 after every candidate or gradient step.
        analysis: The system's (computed if None).

    Returns:
        A :class:`PrelimitTune`.

    Raises:
        InputError: Naming ``method`` or ``span`` when not one of the choices, ``policy`` when it has nothing to
            tune, ``reps`` when fewer than 2, ``c_init`` when its Theta_n is beyond ``THETA_MAX``, ``tune`` when the
            gradient method has fewer than 2 chains or iterations.
    """
    method, span, reps, iterations, chains, tau, learning_rate = procedure
    z_init, c_init, theta_exponent = start
    evaluate_reps, eval_reps, evaluate_result = evaluation
    t0 = time.perf_counter()
    if method not in METHODS:
        raise InputError("method", f"expected one of {', '.join(METHODS)}, got {method!r}")
    if span not in SPANS:
        raise InputError("span", f"expected one of {', '.join(SPANS)}, got {span!r}")
    a = analysis if analysis is not None else analyze(system)
    name, tune_z, tune_c, z_star = tunable(a, policy)
    exponent = DEFAULT_THETA_EXPONENT if theta_exponent is None else float(theta_exponent)
    reps = reps if reps is not None else (SEARCH_REPS if method == "search" else GRADIENT_REPS)
    if reps < 2:
        raise InputError("reps", f"need at least 2 replications, got {reps}")
    theta_d = default_theta(system, n, name, exponent, a)
    z0 = (z_star if z_init is None else float(z_init)) if tune_z else None  # the limit's, not the default rule's
    if tune_c and c_init is not None and float(c_init) * n**exponent > THETA_MAX:
        raise InputError("c_init", f"Theta_n = c n^a = {float(c_init) * n**exponent:.3g} at n = {n:g} is beyond the "
                                   f"threshold's range (at most {THETA_MAX}); take a smaller c_init")
    theta0 = (theta_d if c_init is None else thresholds.theta_level(n, exponent, c_init)) if tune_c else theta_d
    ev_reps = evaluate_reps or eval_reps or EVAL_FACTOR * reps
    eval_seed = derived_seed(seed, EVALUATION)
    simulated = 0
    if method == "search":
        search_seed = derived_seed(seed, SEARCH)
        cands = _Candidates(system, n, name, exponent, reps, search_seed, a, progress)
        zb, tb = _search(cands, tune_z, tune_c, z0, theta0, span)
        tied = cands.tied((zb, tb))
        zs = [k[0] for k in tied]
        ts = [k[1] for k in tied]
        z_t, theta_t = zb, tb
        z_ci = (min(zs), max(zs)) if tune_z else None
        c_ci = (theta_constant(min(ts), n, exponent), theta_constant(max(ts), n, exponent)) if tune_c else None
        trace = tuple({"z": k[0], "theta": k[1], "c": theta_constant(k[1], n, exponent) if k[1] else None,
                       "J": float(v.mean()), "stderr": mean_stderr(v)[1]} for k, v in cands.values.items())
        paths = smoothed = None
        simulated = len(cands.values) * reps
        seeds = {"search": search_seed, "evaluation": eval_seed}
        steps = len(cands.values)
    else:
        if chains < 2 or iterations < 2:
            raise InputError("tune", "need at least 2 chains, 2 replications and 2 iterations")
        mask = np.array([tune_z, tune_c], dtype=float)
        opt = optax.adam(learning_rate)
        paths = np.zeros((chains, iterations + 1, 2))
        smoothed = np.zeros((chains, iterations))
        c0 = theta_constant(theta0, n, exponent) if tune_c else 1.0
        used = set()
        for m in range(chains):  # a few sequential chains of optimiser steps; each step is vectorised
            th = np.array([z0 if tune_z else 0.0, c0], dtype=float)
            state = opt.init(th)
            paths[m, 0] = th
            for k in range(iterations):
                s = derived_seed(seed, SEARCH, m, k)  # distinct for every (chain, step)
                used.add(s)
                levels = Levels.absolute(th[0] if tune_z else None, exponent, th[1])
                g, _, j = smoothed_gradient(system, n, levels, reps, s, tau, name, a)
                updates, state = opt.update(g * mask, state, th)
                th = np.maximum(np.asarray(optax.apply_updates(th, updates)), [0.0, 0.05])  # z >= 0, c > 0
                paths[m, k + 1] = th
                smoothed[m, k] = j
                if progress is not None:
                    progress(1)
        retry = 0
        while eval_seed in used:  # a collision with a search seed (about 1 in 10^6 per run): the next derived one
            retry += 1
            eval_seed = derived_seed(seed, EVALUATION, retry)
        tail = paths[:, iterations // 2 + 1:, :].mean(axis=1)  # Polyak-Ruppert average per chain
        z_t = float(tail[:, 0].mean()) if tune_z else None
        theta_t = thresholds.theta_level(n, exponent, float(tail[:, 1].mean())) if tune_c else theta_d
        z_ci = t_interval(tail[:, 0]) if tune_z else None
        c_ci = t_interval(tail[:, 1]) if tune_c else None
        trace = ()
        simulated = 2 * reps * chains * iterations
        seeds = {"search": sorted(used), "evaluation": eval_seed}
        steps = chains * iterations
    search_s = time.perf_counter() - t0
    evaluation = None
    if evaluate_result:
        evaluation = evaluate(system, n, z_t, theta_t if tune_c else None, policy=name, theta_exponent=exponent,
                              reps=ev_reps, seed=eval_seed, analysis=a, chunk=min(reps, ev_reps))
        simulated += 2 * ev_reps
    cost = {"wall_s": time.perf_counter() - t0, "search_s": search_s, "steps": steps,
            "replications_search": simulated - (2 * ev_reps if evaluate_result else 0),
            "replications_evaluation": 2 * ev_reps if evaluate_result else 0}
    return PrelimitTune(
        z=z_t if tune_z else None, z_ci=z_ci, c=theta_constant(theta_t, n, exponent) if tune_c else None,
        c_ci=c_ci, chains=paths, smoothed_cost=smoothed, evaluation=evaluation,
        theta=theta_t if tune_c else None, method=method, trace=trace, cost=cost, seeds=seeds,
    )


def simulate_tuned(system: PSS2x2, n: float, reps: int, *, policy: str = "auto", seed: int = 0,
                   tune_reps: int | None = None, theta_exponent: float | None = None, analysis: Analysis | None = None,
                   target=None, **options):
    """J_n under the tuned policy, in one call: :func:`tune_prelimit` (search, seed ``derived_seed(seed, SEARCH)``),
    then :func:`jaxq.sim.pss2x2.simulate_bounded` of the tuned (z, Theta_n) on replications ``fold_in(PRNGKey(seed),
    r)``, which the search never saw (so the estimate is unbiased for the tuned policy's J_n) and which the default
    policy's run with the same ``seed`` shares (common random numbers).

    ``target`` (a :class:`jaxq.mc.target.Target`): the tuned policy's run stops at that precision instead of
    ``reps`` (:func:`jaxq.mc.target.run_to_target`; the search runs once, before the pilot).

    Returns the :class:`jaxq.mc.result.SimResult` of the tuned policy; ``info["tuned"]`` holds the tuned ``z``,
    ``theta``, ``c``, their near-optimal ranges, the search's seed, candidates, replications and seconds.

    Args:
        system: The 2x2 system.
        n: The index of the system.
        reps: The replications of the tuned policy's run.
        policy: ``auto`` or a policy name.
        seed: The seed.
        tune_reps: Replications per candidate of the search (None: :data:`SEARCH_REPS`).
        theta_exponent: a_bar of Theta_n = ceil(c n^a_bar) (None: the simulator's).
        analysis: The system's analysis (computed if None).
        target (jaxq.mc.target.Target | None): A precision target (None: ``reps`` replications).
        **options (typing.Any): The flat options of :func:`jaxq.simulate` (engine, horizon, chunk, ...), except the
            levels.

    Returns:
        (jaxq.mc.result.SimResult): The tuned policy's result.

    Raises:
        InputError: Naming ``switch_at``, ``theta_constant``, ``theta_rule``, ``perturb`` or ``levels`` when given,
            ``tune_reps`` when fewer than 2; as :func:`tune_prelimit`.
    """
    for key in ("switch_at", "theta_constant", "theta_rule", "perturb", "levels"):
        if options.get(key) is not None:
            raise InputError(key, "the tuned policy sets its own switching level and threshold; pass it to a policy "
                                  "other than 'tuned'")
    if tune_reps is not None and tune_reps < 2:  # named as the caller named it (tune_prelimit would say reps)
        raise InputError("tune_reps", f"need at least 2 replications, got {tune_reps}")
    a = analysis if analysis is not None else analyze(system)
    t = tune_prelimit(system, n, policy=policy, seed=seed, procedure=Procedure(reps=tune_reps),
                      start=Start(theta_exponent=theta_exponent), evaluation=Evaluation(evaluate_result=False),
                      analysis=a)
    exponent = DEFAULT_THETA_EXPONENT if theta_exponent is None else theta_exponent
    args = grouped(held_to(target, options))  # the flat options of jaxq.simulate (engine, horizon, ...), typed
    levels = Levels.absolute(t.z, exponent, t.c)

    def go(r, s):
        return simulate_bounded(system, n, r, policy=policy, seed=s, analysis=a, **{**args, "levels": levels})

    res = run_reps(go, reps, seed, target)
    res.info["tuned"] = tuned_info(t)
    return res


def tuned_info(t: PrelimitTune) -> dict:
    """The JSON-ready record of a tuning run: parameters, near-optimal ranges, seeds and cost.

    Args:
        t: The tuning run.

    Returns:
        The record.
    """
    return {"z": t.z, "z_range": None if t.z_ci is None else list(t.z_ci), "theta": t.theta, "c": t.c,
            "c_range": None if t.c_ci is None else list(t.c_ci), "method": t.method,
            "search_seed": t.seeds["search"] if t.method == "search" else None,
            "candidates": t.cost["steps"], "replications": t.cost["replications_search"],
            "wall_s": t.cost["search_s"]}
