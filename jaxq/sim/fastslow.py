"""Simulating one fast and K slow servers under a threshold policy (the fast/slow-servers paper): discounted and average
cost.

The Markov statement of :mod:`jaxq.sim.models.fastslow` on the uniformised driver (through the front of the Markov
simulators, :func:`jaxq.sim.simulate_markov.run_chain`, its length in steps), started empty, both
functionals from the same paths (the holding times integrated out):

* discounted cost (6) from empty: ``sum_k rho^k c(S_k) / (alpha + Gamma)``, ``rho = Gamma/(alpha + Gamma)``,
  ``Gamma = lambda + mu1 + K mu2``, over all steps (choose ``rho^steps`` negligible);
* average cost: the mean of ``c(S_k)`` over the steps after the warm-up.

Checked against exact costs of the same threshold policy (:mod:`jaxq.mdp.exact`) in the tests.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError
from jaxq.model.validate import check_int, check_slower
from jaxq.options import grouped as options_grouped
from jaxq.policies.fastslow import population_thresholds
from jaxq.precision import float64
from jaxq.mc import replications
from jaxq.sim.markov import Functional, Horizon
from jaxq.sim.models import fastslow as model
from jaxq.sim.simulate_markov import Steps, run_chain
from jaxq.mc.result import Estimate, SimResult, add_observed, timed

BOTH = Functional(discounted=True, window=True)

Batching = replications.Batching  # jaxq.mc.replications: first replication, chunk, devices, progress


class StepWindow(NamedTuple):
    """The length of a run in uniformised steps (whole numbers, ``0 <= warmup < steps < 2^40``).

    Attributes:
        steps: Steps per replication, started empty.
        warmup: The steps discarded for the average cost, which is over exactly the steps ``warmup .. steps - 1``
            (the discounted sum is over all the steps, in the whole pages of 64 steps that hold them).
    """

    steps: int = 20_000
    warmup: int = 2_000


GROUPS = {"window": StepWindow, "batching": Batching}  # the typed arguments built from flat options


def grouped(options: dict) -> dict:
    """Flat keyword options as the typed arguments of :func:`simulate` (:func:`jaxq.options.grouped`).

    ``alpha``, ``reps``, ``seed``, ``cv`` and ``observers`` pass through, and a typed argument given whole
    (``window=StepWindow(...)``) is kept.

    Args:
        options: The flat options (those of ``jaxq.simulate_fastslow``: ``alpha``, ``steps``, ``warmup``, ``reps``,
            ``chunk``, ...).

    Returns:
        The keyword arguments of :func:`simulate`.

    Raises:
        InputError: Naming an unknown key.
    """
    return options_grouped(options, GROUPS, ("alpha", "reps", "seed", "cv", "observers"), "the fast/slow simulator")


def check_thresholds(q_thresholds) -> list[int | None]:
    """Queue thresholds ``q_1 <= ... <= q_K`` of a threshold policy (:mod:`jaxq.mdp.structure`), checked.

    Args:
        q_thresholds (list | tuple | numpy.ndarray): A non-empty list, each an integer >= 0 or None (never use that
            slow server, i.e. infinite: only after the finite ones).

    Returns:
        The thresholds, a list of ints and None.

    Raises:
        InputError: Naming ``q_thresholds`` or the entry: not such a list, or not nondecreasing.
    """
    listed = isinstance(q_thresholds, (list, tuple)) or isinstance(q_thresholds, np.ndarray) and q_thresholds.ndim == 1
    if not listed or len(q_thresholds) < 1:
        raise InputError("q_thresholds", f"must be a list of queue thresholds, one per slow server (integers >= 0 "
                                         f"or None for never), got {q_thresholds!r}")
    q = [None if v is None else check_int(v, f"q_thresholds[{i}]", lo=0) for i, v in enumerate(q_thresholds)]
    for i in range(1, len(q)):
        if q[i - 1] is None and q[i] is not None or None not in (q[i - 1], q[i]) and q[i] < q[i - 1]:
            raise InputError(f"q_thresholds[{i}]", f"thresholds must be nondecreasing (q_1 <= ... <= q_K, None = never "
                                                   f"last), got {q}")
    return q


def check_system(lam: float, mu1: float, mu2: float, q_thresholds) -> None:
    """Refuse what the model excludes and a threshold policy under which the queue grows without bound.

    The fast/slow-servers paper has slow servers slower than the fast one, ``mu2 < mu1``. With m slow servers that
    have a threshold the queue, once long, is served at rate ``mu1 + m mu2``, so a long-run average cost exists iff
    ``lam`` is below.

    Args:
        lam: The arrival rate.
        mu1: The fast server's rate.
        mu2: A slow server's rate.
        q_thresholds (Sequence[int | None]): The queue thresholds (:func:`check_thresholds`).

    Raises:
        InputError: Naming ``mu2`` (not slower) or ``lam`` (unstable).
    """
    check_slower(mu1, mu2)
    m = sum(q is not None for q in q_thresholds)
    if lam >= mu1 + m * mu2:
        raise InputError("lam", f"unstable: lam = {lam:g} >= mu1 + {m} mu2 = {mu1 + m * mu2:g} (the slow servers with "
                                f"a threshold): the queue grows without bound and the long-run average cost does not "
                                f"exist")


@float64
@timed
def simulate(lam: float, mu1: float, mu2: float, q_thresholds, *, alpha: float = 0.1, window: StepWindow = StepWindow(),
             reps: int = 64, seed: int = 0, cv: bool = True, batching: Batching = Batching(),
             observers=None) -> SimResult:
    """Monte Carlo discounted cost from empty and average cost of a threshold policy.

    Args:
        lam: The arrival rate.
        mu1: The fast server's rate.
        mu2: The rate of each of the K identical slow servers (K = ``len(q_thresholds)``).
        q_thresholds (Sequence[int | None]): Queue thresholds ``q_1 <= ... <= q_K`` (K = 2: ``[q_L, q_H]``), integers
            >= 0; None = never (:func:`check_thresholds`). The slow servers must be slower (``mu2 < mu1``) and the
            policy stable (``lam < mu1 + m mu2``, m the thresholds that are not None, :func:`check_system`).
        alpha: The discount rate of the discounted estimate.
        window: Uniformised steps per replication and the steps discarded for the average (:class:`StepWindow`).
        reps: Replications (>= 2).
        seed: Base seed (replication r uses ``fold_in(PRNGKey(seed), r)``).
        cv: Control variates (default): the Henderson-Glynn martingales of a quadratic basis in (x, y)
            (:data:`jaxq.sim.models.fastslow.MARKOV_CV`), weighted as each functional (discounted, window),
            cross-fitted by replication index; the plain means are reported beside.
        batching: How the replications are executed (:class:`jaxq.mc.replications.Batching`); any value gives the
            same numbers.
        observers (dict | None): Statistics of the path, a dict of name -> :class:`~jaxq.mc.observer.Observer` of
            the model's states (:class:`jaxq.sim.models.fastslow.State`: ``x``, ``y``) under the discounted weights
            (step k of the uniformised chain weighs ``rho^k / (alpha + Gamma)``, the mass ``int_0^T exp(-alpha t) dt``
            of its pages); each output is an estimate ``<name>`` or ``<name>_<key>`` (docs/guides/observers.md).

    Returns:
        A :class:`SimResult` with estimates ``value_empty`` (primary) and ``average_cost``; ``info`` has
            ``steps``, ``warmup`` and ``updates_per_s`` (replications x steps per second, compilation excluded).

    Raises:
        InputError: Naming the argument that breaks one of the conditions above.
    """
    steps, warmup = window
    for key, v in (("lam", lam), ("mu1", mu1), ("mu2", mu2), ("alpha", alpha)):
        if not (isinstance(v, (int, float, np.floating)) and math.isfinite(v) and v > 0):
            raise InputError(key, f"must be a positive number, got {v!r}")
    q_thresholds = check_thresholds(q_thresholds)
    check_system(lam, mu1, mu2, q_thresholds)
    if not (isinstance(steps, (int, np.integer)) and isinstance(warmup, (int, np.integer))
            and 0 <= warmup < steps < 2**40):
        raise InputError("steps", f"need whole numbers 0 <= warmup < steps < 2^40 (got {warmup}, {steps})")
    if not (isinstance(reps, (int, np.integer)) and reps >= 2):
        raise InputError("reps", f"need at least 2 replications, got {reps!r}")
    batching = batching.checked()
    p = model.Params(jnp.float64(lam), jnp.float64(mu1), jnp.float64(mu2),
                     jnp.asarray(population_thresholds(q_thresholds)))
    ran = run_chain(model.MARKOV_CV if cv else model.MARKOV, p, BOTH, reps, seed, times=Horizon(alpha, None, None),
                    engine="uniformized", steps=Steps(int(warmup), int(steps) - int(warmup)), observers=observers,
                    batching=batching)
    out, timing, info = ran.out, ran.timing, ran.info
    per = {"value_empty": out["discounted"]["cost"], "average_cost": out["window"]["cost"]}
    ctl = out["controls"] if cv else {"discounted": None, "window": None}
    index = batching.start + np.arange(reps)
    est = {"value_empty": Estimate.with_controls(per["value_empty"], ctl["discounted"], index),
           "average_cost": Estimate.with_controls(per["average_cost"], ctl["window"], index)}
    if cv:
        per.update(controls_discounted=ctl["discounted"], controls_window=ctl["window"])
    run_s = max(timing.wall_s - timing.compile_s, 1e-9)
    meta = {"steps": info["steps"], "warmup": info["warm_steps"], "updates_per_s": reps * info["steps"] / run_s}
    if observers:
        add_observed(out["observed"], est, per, meta)
    return SimResult("value_empty", est, int(reps), int(np.sum(out["events"])), timing.wall_s, timing.compile_s,
                     "uniformized", per, meta)
