"""The policy ``"tuned"`` of a 2x2 study's ``[grid] policies``: Theorem 2.11's policy with its switching level and
threshold tuned at each n (:func:`jaxq.tuning.prelimit.tune_prelimit`, search), on a seed derived from the point's
and never equal to it, so that the point's replications are fresh and share their seed with the ``auto`` point
(common random numbers). Used by :mod:`jaxq.studies.pss`."""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np

from jaxq.errors import InputError
from jaxq.studies import chunks

TUNED = "tuned"  # the policy of [grid] policies tuned at each n


def setup_policy(policy: str) -> str:
    """The policy whose setup a grid policy shares: ``tuned`` is Theorem 2.11's with other parameters.

    Args:
        policy: The grid policy.

    Returns:
        ``auto`` for ``tuned``, else ``policy``.
    """
    return "auto" if policy == TUNED else policy


def check_tunable(an, label) -> None:
    """Refuse (naming ``grid.policies``) a system whose policy has nothing to tune.

    Args:
        an (jaxq.diffusion.workload.Analysis): The system's analysis.
        label (str): The system's label.

    Raises:
        InputError: Naming ``grid.policies``.
    """
    from jaxq.tuning.prelimit import tunable

    try:
        tunable(an, "auto")
    except InputError as e:
        raise InputError("grid.policies", f"{label}: 'tuned': {e.reason}") from None


@lru_cache(maxsize=256)
def parameters(path: str, mtime: float, n: float, seed: int, exponent: float):
    """The tuned (z, Theta_n, c, info) of a grid point: the same for every chunk (a deterministic search on a seed
    derived from the point's), cached per process; a resumed run repeats the search.

    Args:
        path: The system file.
        mtime: The file's modification time (keys the cache on the file's version).
        n: The index of the system.
        seed: The seed of the search.
        exponent: The threshold exponent.

    Returns:
        (tuple): ``(z, Theta_n, c, info)``.
    """
    from jaxq.tuning.prelimit import Evaluation, Start, tune_prelimit, tuned_info

    system, an = chunks.system_and_analysis(Path(path))
    t = tune_prelimit(system, float(n), seed=seed, start=Start(theta_exponent=exponent),
                      evaluation=Evaluation(evaluate_result=False), analysis=an)
    return t.z, t.theta, t.c, tuned_info(t)


def chunk(exp, pt, start, count, devices, *, horizon, exponent):
    """The records of a ``tuned`` point (as :func:`jaxq.studies.chunks.pss_chunk`), with the tuned ``tuned_z``,
    ``tuned_theta`` and the search's seed and seconds as constant columns.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pt (dict): The grid point.
        start (int): The first replication.
        count (int): The replications.
        devices (typing.Any): The devices the chunk is cut over (None: all local devices).
        horizon (float | None): The event driver's truncation time (None: the default).
        exponent (float): The threshold exponent.

    Returns:
        (dict[str, numpy.ndarray]): The records.
    """
    from jaxq.sim import pss2x2 as sim

    g = exp.grid
    ref = exp.system(pt["system"])
    system, an = chunks.system_and_analysis(ref.path)
    z, theta, c, info = parameters(str(ref.path), ref.path.stat().st_mtime, float(pt["n"]), int(pt["seed"]), exponent)
    levels = sim.Levels.absolute(z, exponent, c)
    r = sim.simulate(system, float(pt["n"]), count, policy="auto", analysis=an, seed=pt["seed"], levels=levels,
                     truncation=sim.Truncation(engine=pt.get("driver", "event"), horizon=horizon, block=64),
                     outputs=sim.Outputs(record_times=g.times, cv=exp.cv),
                     batching=sim.Batching(start=start, chunk=max(pt["chunk"], count), devices=devices))
    rec = chunks.pss_records(r, g.times)
    const = {"tuned_z": np.nan if z is None else z, "tuned_theta": np.nan if theta is None else theta,
             "tuned_search_seed": info["search_seed"], "tuned_search_s": info["wall_s"]}
    rec.update({k: np.full(count, v, dtype=np.float64) for k, v in const.items()})
    return rec


def point_setup(system, an, pt, rec, *, horizon, times, exponent):
    """The setup of a ``tuned`` grid point from the tuned parameters its records carry, and the table's extra
    cells (``theta_constant``, the search's seed and seconds).

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The 2x2 system.
        an (jaxq.diffusion.workload.Analysis): Its analysis.
        pt (dict): The grid point.
        rec (dict): Its records.
        horizon (float | None): The event driver's truncation time (None: the default).
        times (typing.Sequence[float]): The times at which W_hat(t) is recorded.
        exponent (float): The threshold exponent.

    Returns:
        (tuple): ``(setup, extra cells)``.
    """
    from jaxq.sim import pss2x2 as sim
    from jaxq.tuning.prelimit import theta_constant

    z, theta = float(rec["tuned_z"][0]), float(rec["tuned_theta"][0])
    z, theta = (None if math.isnan(z) else z), (None if math.isnan(theta) else int(theta))
    c = theta_constant(theta, pt["n"], exponent)
    st = sim.setup(system, float(pt["n"]), policy="auto", horizon=horizon, record_times=times, analysis=an,
                   levels=sim.Levels.absolute(z, exponent, c))
    return st, {"theta_constant": c if theta is not None else None, "tuned_search_seed": int(rec["tuned_search_seed"][0]),
                "tuned_search_s": float(rec["tuned_search_s"][0])}
