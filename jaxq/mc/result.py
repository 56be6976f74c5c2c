"""The one result type of every simulator: estimates with standard errors, work done, time spent, engine used.

Every simulator (2x2 system, networks, fast/slow servers, SDE schemes) returns a :class:`SimResult`. The
command line prints :meth:`SimResult.to_dict` as it is, the experiment runner stores its per-replication
``samples``, tuning reads its estimates and samples, and the benchmark its ``events_per_s``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaxq.errors import InputError
from jaxq.stats import controlled_mean, mean_stderr


@dataclass(frozen=True)
class Estimate:
    """A Monte Carlo mean (scalar or array) with its standard error over replications.

    Attributes:
        value: The mean (scalar or array).
        stderr: Its standard error over replications.
        plain: When a control variate was used (:func:`jaxq.stats.controlled_mean`), the uncontrolled mean of the same
            replications (None without one).
        plain_stderr: The uncontrolled standard error of the same replications (None without a control).
        coefficients: The fitted control coefficients (None without a control).
    """

    value: Any
    stderr: Any
    plain: Any = None
    plain_stderr: Any = None
    coefficients: Any = None

    @classmethod
    def of(cls, samples, axis: int = 0) -> "Estimate":
        """The mean of ``samples`` over replications (``axis``) and its standard error (nan for one).

        Args:
            samples (numpy.typing.ArrayLike): Per-replication values.
            axis: The axis of the replications.

        Returns:
            The estimate.
        """
        x = np.asarray(samples, dtype=np.float64)
        if x.shape[axis] < 2:
            m = x.mean(axis=axis)
            return cls(_plain(m), _plain(np.full_like(m, math.nan)))
        m, se = mean_stderr(x, axis=axis)
        return cls(_plain(m), _plain(se))

    @classmethod
    def with_controls(cls, samples, controls, index, coarse=None) -> "Estimate":
        """The mean over replications (axis 0) of a scalar or array statistic controlled by ``controls``.

        Cross-fitted by replication ``index`` (:func:`jaxq.stats.controlled_mean`, with its ``coarse`` fallback for few
        replications).

        Args:
            samples (numpy.typing.ArrayLike): Per-replication values, replications on axis 0.
            controls (numpy.typing.ArrayLike | None): (reps, C); without controls (None) the plain :meth:`of`.
            index (numpy.typing.ArrayLike): The global replication indices.
            coarse (tuple | None): The coarse groups of control columns (:func:`jaxq.stats.controlled_mean`).

        Returns:
            The estimate.
        """
        if controls is None:
            return cls.of(samples)
        c = controlled_mean(samples, controls, index, coarse=coarse)
        return cls(_plain(c.mean), _plain(c.stderr), _plain(c.plain), _plain(c.plain_stderr), c.coefficients)

    @property
    def ci95(self):
        """The normal 95% interval ``value -+ 1.96 stderr``."""
        v, s = np.asarray(self.value), np.asarray(self.stderr)
        return [_plain(v - 1.96 * s), _plain(v + 1.96 * s)]

    @property
    def controlled(self) -> bool:
        return self.plain is not None

    @property
    def variance_reduction(self):
        """``(plain_stderr / stderr)^2`` (None without a control). A statistic with no spread at all (a class
        that never waits) has nothing to reduce: 1. An entry that is undefined otherwise is NaN, which
        :meth:`SimResult.to_dict` prints as null."""
        if self.plain is None:
            return None
        s, p = np.asarray(self.stderr, dtype=float), np.asarray(self.plain_stderr, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(p > 0, np.where(s > 0, (p / np.where(s > 0, s, 1.0)) ** 2, math.nan), 1.0)
        return _plain(ratio)


@dataclass(frozen=True)
class TruncatedEstimate(Estimate):
    """A discounted cost over [0, T] as an estimate of the cost over [0, inf).

    The left-out tail is a one-sided bias in [0, ``tail``] (a cost is never negative), so the 95% interval is
    ``[value - 1.96 stderr, value + 1.96 stderr + tail]``. Both the SDE estimators
    (:func:`jaxq.sde.estimators.discounted_cost`) and the 2x2 system's J_n (:func:`jaxq.sim.pss2x2.simulate`)
    report their interval so.

    Attributes:
        tail: The simulator's ``truncation_bound``.
    """

    tail: float = 0.0

    @classmethod
    def of_estimate(cls, est: Estimate, tail: float) -> "TruncatedEstimate":
        """An :class:`Estimate` with the left-out tail ``tail``.

        Args:
            est: The estimate over [0, T].
            tail: The simulator's ``truncation_bound``.

        Returns:
            The truncated estimate.
        """
        return cls(**{f.name: getattr(est, f.name) for f in dataclasses.fields(Estimate)}, tail=tail)

    @property
    def ci95(self):
        lo, hi = Estimate.ci95.fget(self)
        return [lo, hi + self.tail]


def _finite_or_null(v):
    """NaN and infinities (an undefined standard error of one replication, an undefined ratio) as None."""
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, np.ndarray) and v.dtype.kind == "f" and not np.all(np.isfinite(v)):
        return _finite_or_null(v.tolist())
    if isinstance(v, list):
        return [_finite_or_null(x) for x in v]
    return v


def observer_estimates(observed: dict) -> tuple[dict[str, "Estimate"], dict[str, np.ndarray]]:
    """Estimates and per-replication samples of observers' outputs.

    Each leaf is named by its observer and its path in the pytree, joined by ``_`` (``"blocked"`` for an observer
    that returns one array, ``"blocked_rate"`` for the key ``"rate"`` of a dict it returns); its estimate is the
    plain mean over replications with its standard error (:meth:`Estimate.of`; an array leaf gives an array
    estimate), its samples are kept under the same name.

    Args:
        observed: Name -> the pytree that the observer's ``finish`` returned, leaves with replications on axis 0.

    Returns:
        ``(estimates, samples)``, by name.

    Raises:
        InputError: Naming ``observers`` when two observers' outputs get the same name.
    """
    import jax

    est: dict[str, Estimate] = {}
    samples: dict[str, np.ndarray] = {}
    for name, tree in observed.items():
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
            parts = [str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in path]
            key = "_".join([name, *parts])
            if key in est:  # e.g. an observer "a" returning {"b": ...} and another called "a_b"
                raise InputError("observers", f"two observers' outputs are both named {key!r}: rename one")
            x = np.asarray(leaf, np.float64)
            samples[key] = x
            est[key] = Estimate.of(x)
    return est, samples


def add_observed(observed: dict, estimates: dict, samples: dict, info: dict) -> None:
    """Add observers' outputs to a result in the making (in place).

    Their estimates and samples (:func:`observer_estimates`) and ``info["observed"]``, the names added.

    Args:
        observed: Name -> the pytree that the observer's ``finish`` returned.
        estimates: The result's estimates, updated.
        samples: The result's samples, updated.
        info: The result's ``info``, updated.

    Raises:
        InputError: Naming ``observers`` when a name is one the simulator's own result has.
    """
    user_est, user_samples = observer_estimates(observed)
    clash = sorted((set(user_est) & set(estimates)) | (set(user_samples) & set(samples)))
    if clash:
        raise InputError("observers", f"the name {clash[0]!r} is taken by the simulator's own estimates or samples")
    estimates.update(user_est)
    samples.update(user_samples)
    info["observed"] = list(user_est)


def _plain(x):
    """A 0-d array as a Python float; arrays stay arrays."""
    a = np.asarray(x)
    return float(a) if a.ndim == 0 else a


@dataclass(frozen=True)
class SimResult:
    """What a simulator returns.

    Attributes:
      primary: the JSON key of the main estimate (``"J_hat"``, ``"V_hat"``, ...), a key of ``estimates``, or
        None when no estimate is the main one (stationary averages of a network).
      estimates: named estimates (the JSON keys of :meth:`to_dict`).
      reps: replications (or paths).
      events: real events (or steps) simulated.
      wall_s: seconds in total (compilation included).
      compile_s: seconds spent compiling.
      engine: the driver that ran (``"event"``, ``"uniformized"``, or an SDE scheme).
      samples: per-replication values (numpy arrays, axis 0 = replication).
      info: further JSON-ready facts of the run (policy used, horizon, truncation bound, exact values, ...).
      warnings: sentences a reader of the result must see (the estimate may be far from its limit, the system
        is not stationary, a tie was broken); the command line prints each as one ``jaxq: note:`` line on
        stderr and every result's JSON carries them as ``warnings`` (empty when all is well).
    """

    primary: str | None
    estimates: dict[str, Estimate]
    reps: int
    events: int
    wall_s: float
    compile_s: float
    engine: str
    samples: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def main(self) -> Estimate:
        if self.primary is None:
            raise KeyError("this result has no primary estimate; index it by name")
        return self.estimates[self.primary]

    @property
    def value(self):
        return self.main.value

    @property
    def stderr(self):
        return self.main.stderr

    @property
    def ci95(self):
        return self.main.ci95

    @property
    def events_per_s(self) -> float:
        """Events per second of simulation (compilation excluded)."""
        return self.events / max(self.wall_s - self.compile_s, 1e-9)

    def __getitem__(self, key: str):
        """An estimate's value (``<key>_stderr``: its standard error), or an entry of ``info`` / ``samples``."""
        if key in self.estimates:
            return self.estimates[key].value
        if key.endswith("_stderr") and key[:-7] in self.estimates:
            return self.estimates[key[:-7]].stderr
        if key in self.info:
            return self.info[key]
        return self.samples[key]

    def to_dict(self) -> dict:
        """The JSON object of the command line (SPEC.md): every estimate with ``_stderr`` (the primary one also
        as ``stderr`` and ``ci95``), the plain estimate beside a controlled one (``<key>_plain``; primary:
        ``J_plain``-style, ``stderr_plain``, ``variance_reduction``, ``cv_coefficients``), then ``info`` and
        the work done."""
        out: dict = {}
        for key, est in self.estimates.items():
            out[key] = est.value
            out[key + "_stderr"] = est.stderr
            if key == self.primary:
                out["stderr"] = est.stderr
                out["ci95"] = est.ci95
            if est.controlled:
                stem = key[:-4] if key.endswith("_hat") else key
                if key == self.primary:
                    out[stem + "_plain"] = est.plain
                    out["stderr_plain"] = est.plain_stderr
                    out["variance_reduction"] = est.variance_reduction
                    out["cv_coefficients"] = est.coefficients
                else:
                    out[key + "_plain"] = est.plain
                    out[key + "_plain_stderr"] = est.plain_stderr
                    out[key + "_variance_reduction"] = est.variance_reduction
        out.update(self.info)
        out["warnings"] = list(self.warnings)
        out.update(reps=self.reps, events=self.events, wall_s=self.wall_s, compile_s=self.compile_s,
                   events_per_s=self.events_per_s, engine=self.engine)
        return {k: _finite_or_null(v) for k, v in out.items()}


def timed(fn):
    """A simulator whose result's ``wall_s`` is the whole call.

    The setup, the checks and the fit of the control variates after the compiled program, not only the program
    (``events_per_s`` is then what a user gets). ``wall_s`` only grows (a result that already counts earlier runs keeps
    them). The share of a pilot's batch that went to replications run ahead for the run
    (:func:`jaxq.mc.replications.ahead`) counts in the run that takes them, not in the pilot.

    Args:
        fn (typing.Callable): The simulator.

    Returns:
        (typing.Callable): The simulator, timed.
    """
    @functools.wraps(fn)
    def call(*args, **kwargs):
        from jaxq.mc.replications import ahead_seconds

        t0, shared = time.perf_counter(), ahead_seconds()
        res = fn(*args, **kwargs)
        elapsed = time.perf_counter() - t0 - (ahead_seconds() - shared)
        if isinstance(res, SimResult) and elapsed > res.wall_s:
            res = dataclasses.replace(res, wall_s=elapsed)
        return res

    return call


def with_work_of(res: SimResult, *earlier: SimResult, **info) -> SimResult:
    """``res`` with the seconds, compile seconds and events of ``earlier`` runs added, and ``info`` entries set.

    What a command did, not only its last run.

    Args:
        res: The result.
        *earlier: Earlier runs (a pilot, the shorter truncations a run repeated).
        **info (typing.Any): Entries set in ``info``.

    Returns:
        The result with the work added.
    """
    return dataclasses.replace(res, wall_s=res.wall_s + sum(e.wall_s for e in earlier),
                               compile_s=res.compile_s + sum(e.compile_s for e in earlier),
                               events=res.events + sum(e.events for e in earlier), info={**res.info, **info})
