"""Per-chunk adapters from the studies to the simulators: replications ``start .. start+count-1``.

Both adapters always run a full, padded batch of ``pad_to`` replications (rounded up to a multiple
of the device count) and keep the first ``count``: every chunk of a grid point has one compiled shape,
and replication r's numbers depend only on its key ``fold_in(PRNGKey(seed), r)``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.diffusion.workload import Analysis, analyze
from jaxq.errors import InputError
from jaxq.model.pss2x2 import PSS2x2
from jaxq.sde import driver, skew
from jaxq.sde.estimators import wcp_coefficients
from jaxq.sim import pss2x2 as sim
from jaxq.sim.engine import replication_sharding, simulate


@lru_cache(maxsize=None)
def analysis_of(path: Path, mtime: float) -> tuple[PSS2x2, Analysis]:
    """The (cached) system and its analysis (``mtime`` keys the cache on the file's version)."""
    from jaxq.model import load

    system = load(path)
    return system, analyze(system)


def system_and_analysis(path: Path) -> tuple[PSS2x2, Analysis]:
    """The system in ``path`` and its analysis (cached per file version)."""
    return analysis_of(Path(path), Path(path).stat().st_mtime)


def parse_policy(spec: str, z_star: float | None = None) -> tuple[str, float | None]:
    """A policy of the grid: ``NAME``, ``NAME:LEVEL`` (switch at workload LEVEL) or ``NAME:xF`` (at F z*).

    ``"PP"`` -> ("PP", None); ``"PP:0.8"`` -> ("PP", 0.8); ``"auto:x2"`` -> ("auto", 2 z*).
    """
    name, _, level = spec.partition(":")
    if not level:
        return name, None
    try:
        if level.startswith("x"):
            if z_star is None:
                raise InputError("policy", f"{spec!r}: a level relative to z* needs a dual-mode system")
            return name, float(level[1:]) * z_star
        return name, float(level)
    except ValueError:
        raise InputError("policy", f"bad policy {spec!r}: use NAME, NAME:LEVEL or NAME:xFACTOR") from None


def pss_params(system, an, n, policy, horizon=None, record_times=(), theta_exponent=sim.DEFAULT_THETA_EXPONENT):
    """Parameters, sampler spec and policy description (``jaxq.sim.pss2x2.build_params``) of a grid point."""
    name, z = parse_policy(policy, an.z_star)
    return sim.build_params(system, float(n), policy=name, switch_at=z, horizon=horizon, record_times=record_times,
                            theta_exponent=theta_exponent, analysis=an)


LANES = 8  # per-device batches are whole multiples of this: every path takes XLA's vectorised code path


def _padded(pad_to: int, devices) -> int:
    """Batch size: ``pad_to`` rounded up so that each device gets a whole number of ``LANES``.

    XLA:CPU may compute the last few elements of a loop that is not a multiple of its vector width
    with scalar code, whose rounding can differ in the last bit; whole multiples keep every replication
    on one code path whatever the number of devices.
    """
    sh = replication_sharding(devices)
    nd = 1 if sh is None else sh.mesh.size
    unit = nd * LANES
    return -(-pad_to // unit) * unit


def pss_chunk(path, n, policy, seed, start, count, pad_to, *, horizon=None, record_times=(),
              theta_exponent=sim.DEFAULT_THETA_EXPONENT, devices=None) -> dict[str, np.ndarray]:
    """Per-replication records of the n-th 2x2 system under ``policy`` for replications ``start..start+count-1``.

    Returns:
      dict of (count,) arrays: ``J`` (discounted cost up to the horizon), ``tail_bound`` (bound on the
      neglected tail), ``sup_X_hat_1``, ``sup_X_hat_2`` (sup over [0, T] of X_i / sqrt(n)),
      ``W_hat@t`` for each record time t (scaled workload), ``events``.
    """
    system, an = system_and_analysis(path)
    params, spec, info, _ = pss_params(system, an, n, policy, horizon, record_times, theta_exponent)
    eng = sim.engine_for(spec, False)
    size = _padded(max(pad_to, count), devices)
    out = simulate(eng, params, size, seed, chunk=size, block=64, start=start, devices=devices)
    out = {k: np.asarray(v)[:count] for k, v in out.items()}
    rn = math.sqrt(n)
    x_T = out["x_T"].astype(np.float64)
    rec = {
        "J": out["cost"],
        "tail_bound": sim.tail_bound(system, n, info["horizon"], x_T),
        "sup_X_hat_1": out["sup_x"][:, 0] / rn,
        "sup_X_hat_2": out["sup_x"][:, 1] / rn,
    }
    for j, t in enumerate(np.atleast_1d(np.asarray(record_times, dtype=np.float64))):
        rec[f"W_hat@{t:g}"] = out["w_rec"][:, j]
    rec["events"] = out["events"]
    return rec


_run_paths = jax.jit(driver.run_paths, static_argnames=("scheme", "n_blocks", "block", "remat"))


def sde_chunk(path, dt, horizon, seed, start, count, pad_to, *, times=(), devices=None) -> dict[str, np.ndarray]:
    """Per-path records of the WCP's reflected SDE Z (skew-exact scheme) started at 0.

    Returns:
      dict of (count,) arrays: ``V`` (``int_0^T exp(-gamma t) Z dt``, workload units), ``Z@t`` for each
      time t, ``events`` (steps per path).
    """
    system, an = system_and_analysis(path)
    params, _ = wcp_coefficients(an)  # (2.25): lower mode below z*, higher above
    n_blocks, block = driver.step_counts(dt, horizon)
    times = np.atleast_1d(np.asarray(times, dtype=np.float64))
    snap = jnp.asarray(np.rint(times / dt).astype(np.int64))
    size = _padded(max(pad_to, count), devices)
    keys = driver.path_keys(seed, start, size)
    sh = replication_sharding(devices)
    if sh is not None:
        keys = jax.device_put(keys, sh)
    cost, snaps = _run_paths(skew.SCHEME, params, 0.0, system.gamma, dt, keys, n_blocks, block, snap)
    cost, snaps = np.asarray(cost)[:count], np.asarray(snaps)[:count]
    rec = {"V": cost}
    for j, t in enumerate(times):
        rec[f"Z@{t:g}"] = snaps[:, j]
    rec["events"] = np.full(count, n_blocks * block, dtype=np.int64)
    return rec
