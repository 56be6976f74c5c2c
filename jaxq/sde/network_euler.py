"""Euler-Maruyama for the controlled network diffusion (2.27) with drift (2.29)-(2.30).

``dX = b(X, U) dt + sigma dW``, ``sigma = diag(sqrt(2 lambda_i))``,
``b(x, u) = l - sum_j mu_ij Phi_ij(x - (e.x)^+ u^c, -(e.x)^- u^s)``: the drift is evaluated through the
map Phi (2.28), not through B1/B2, so that the identity (3.6) checks B1, B2 and the spare capacity.

Controls: ``constant`` (u^c, u^s fixed) and ``proportional`` feedback (u^c_i = x_i^+ / sum_k x_k^+ when
some x_i > 0, else the given u^c; u^s fixed). Euler's scheme has weak order 1 for the time averages;
the linear statistic <e, B1^{-1} X> has drift -rho + w(u^s) <e, x>^- exactly, so the identity
rho = E[w(u^s) <e, X>^-] holds for the Euler chain's own stationary law at every step size.

Control variates (``cv``, on by default): Ito sums ``sum_k grad g(X_k) . sigma dW_k`` over the window's
steps, for g in the quadratic basis of the network model's controls (``x_a``, ``x_a x_b`` for a <= b,
``s^+`` and ``(s^+)^2`` of ``s = <e, x>``): each increment has mean zero exactly (dW_k is independent of
X_k), so these are exact martingales of the Euler chain, and with g near the solution of Poisson's equation
they absorb most of the noise of the time averages (cross-fitted by path index).

The scheme is a :class:`jaxq.sde.driver.Scheme` (:func:`scheme`, ``order`` 1.0) run by the SDE driver
(:func:`jaxq.sde.driver.program`, blocks of one step) with the window's step weights
(:data:`jaxq.sde.driver.WINDOW`: each step the state held over dt, weighing dt from the warm-up on): paths are
independent, path r uses ``fold_in(PRNGKey(seed), r)`` and step k draw k of its stream (the normal quantiles of its
uniforms, :func:`jaxq.mc.rng.normals`, one normal a coordinate); they are the replications of the one replication
layer (:mod:`jaxq.mc.replications`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.diffusion.network import NetworkDiffusion, drift
from jaxq.errors import InputError
from jaxq.model.validate import check_path_times
from jaxq.sde import driver
from jaxq.mc.observer import Observer, Segment, combine, per_mass, snapshots, with_params
from jaxq.mc.replications import Batching
from jaxq.mc.result import Estimate, SimResult, timed

CONTROLS = ("constant", "proportional")
WEAK_ORDER = 1.0


class Control(NamedTuple):
    """A control of the diffusion (2.27).

    Attributes:
        kind: One of :data:`CONTROLS`.
        uc: u^c in its simplex (2.20) (None: uniform shares); the proportional feedback uses it where no x_i is
            positive.
        us: u^s in its simplex (2.20) (None: uniform shares).
    """

    kind: str = "constant"
    uc: np.ndarray | None = None
    us: np.ndarray | None = None


class EulerGrid(NamedTuple):
    """The Euler scheme's time grid (each time rounded to a whole number of steps).

    Attributes:
        dt: The step.
        horizon: The time the paths run to.
        warmup: The start of the averaging window ``[warmup, horizon]``.
    """

    dt: float = 0.01
    horizon: float = 200.0
    warmup: float = 20.0


GROUPS = {"window": EulerGrid, "batching": Batching}  # the typed arguments the API builds from flat options


def _control(x, uc, feedback):
    pos = jnp.maximum(x, 0.0)
    tot = pos.sum()
    prop = jnp.where(tot > 0, pos / jnp.where(tot > 0, tot, 1.0), uc)
    return jnp.where(feedback, prop, uc)


def basis_gradients(x):
    """The gradients at x of the control basis ``x_a``; ``x_a x_b`` (a <= b); ``s^+``; ``(s^+)^2``.

    Args:
        x (jax.Array): The state, (I,).

    Returns:
        (jax.Array): The gradients, (C, I) (:func:`num_controls` rows).
    """
    num_i = x.shape[0]
    eye = jnp.eye(num_i)
    rows = [eye[a] for a in range(num_i)]
    rows += [x[b] * eye[a] + x[a] * eye[b] for a in range(num_i) for b in range(a, num_i)]
    s = x.sum()
    ones = jnp.ones(num_i)
    rows += [(s > 0).astype(jnp.float64) * ones, 2.0 * jnp.maximum(s, 0.0) * ones]
    return jnp.stack(rows)


def num_controls(num_i: int) -> int:
    """The number C of control-basis functions of an I-class network: I linear, I (I + 1) / 2 quadratic and 2 in s.

    Args:
        num_i: The number of classes I.

    Returns:
        C.
    """
    return num_i + num_i * (num_i + 1) // 2 + 2


def _averages_init(p):
    zero = jnp.zeros((), jnp.float64)
    return {"x": jnp.zeros(p["ell"].shape, jnp.float64), "neg": zero, "pos": zero}


def _averages_update(acc, seg: Segment, p):
    x, w = seg.held, seg.weight
    s = x.sum()
    return {"x": acc["x"] + w * x, "neg": acc["neg"] + w * jnp.maximum(-s, 0.0),
            "pos": acc["pos"] + w * jnp.maximum(s, 0.0)}


# the time averages over the window: X, <e, X>^- and <e, X>^+ (each step the Euler state held over dt)
AVERAGES = Observer(_averages_init, _averages_update, per_mass)


def _ito_update(acc, seg: Segment, p):
    return acc + basis_gradients(seg.held) @ seg.martingale


# the control variates: Ito sums of grad g(X_k) . sigma dW_k over the window, per unit time
ITO_SUMS = Observer(lambda p: jnp.zeros(num_controls(p["ell"].shape[0]), jnp.float64), _ito_update, per_mass)


def _sum(x, p):
    return x.sum()


def _start_state(p):
    return p["x0"]


def _snapshot_params(o: driver.Observed):
    return (o.params, o.times)


# <e, X_t> at the recorded times (the driver's snapshot times, Observed.times)
SUM_PATH = with_params(snapshots(_sum, _start_state), _snapshot_params)


@lru_cache(maxsize=None)
def observer(cv: bool) -> Observer:
    """What a run folds, on the driver's :class:`~jaxq.sde.driver.Observed` (its ``params`` the scheme's).

    The window's averages (``avg``), with ``cv`` the control variates (``ctl``) and <e, X> at the recorded times
    (``path``). Cached: the same flag gives the same program.

    Args:
        cv: Also the control variates' Ito sums.

    Returns:
        The observer.
    """
    return combine({"avg": driver.on_scheme_params(AVERAGES),
                    **({"ctl": driver.on_scheme_params(ITO_SUMS)} if cv else {}), "path": SUM_PATH})


def _identity(p, x):
    return x


def _euler(p, x, h, normal):
    """One Euler step of one path from x (I,): ``(x + b(x, u) h + sigma dW, sigma dW)``, dW = sqrt(h) normal."""
    uc = _control(x, p["uc"], p["feedback"])
    b = drift(x, uc, p["us"], p["ell"], p["K"])
    dm = p["sigma"] * (normal * jnp.sqrt(h))
    return x + b * h + dm, dm


def _step(p, x, h, normal, uniform):
    """One Euler step of every path (x: (paths, I); normal: (paths, I)) and its martingale increment sigma dW."""
    return jax.vmap(lambda xi, ni: _euler(p, xi, h, ni))(x, normal)


@lru_cache(maxsize=None)
def scheme(num_i: int) -> driver.Scheme:
    """The Euler scheme of an I-class network diffusion as a :class:`~jaxq.sde.driver.Scheme`.

    I normals a step, the state X itself (``init`` the identity, no ``observe``), weak order 1 for the time averages
    (cached: one scheme, one program, per I).

    Args:
        num_i: The number of classes I.

    Returns:
        The scheme.
    """
    return driver.Scheme("network_euler", int(num_i), 0, _identity, _step, None, WEAK_ORDER)


def check_settings(dl, uc, us, control: str, dt: float, horizon: float, warmup: float,
                   paths: int = 2) -> tuple[int, int]:
    """The preconditions of :func:`simulate_diffusion`.

    The control and its vectors, finite times with ``0 <= warmup < horizon``, the work estimate, a step the explicit
    Euler scheme is stable with (the drift's fastest rate times dt at most 1/2) and at least one step in the averaging
    window. (Studies call it before any work: :mod:`jaxq.studies.network`.)

    Args:
        dl (jaxq.diffusion.network.NetworkDiffusion): The diffusion limit.
        uc (array_like): u^c, a probability vector of length I.
        us (array_like): u^s, a probability vector of length J.
        control: One of :data:`CONTROLS`.
        dt: The step.
        horizon: The time the paths run to.
        warmup: The start of the averaging window.
        paths: The number of paths (the work estimate).

    Returns:
        ``(steps, warm)``: the steps of a path and those before the window.

    Raises:
        InputError: Naming the argument: one of the above fails.
    """
    if control not in CONTROLS:
        raise InputError("control", f"expected one of {CONTROLS}, got {control!r}")
    num_i, num_j = dl.tree.shape
    uc, us = np.asarray(uc, float), np.asarray(us, float)
    for name, u, d in (("uc", uc, num_i), ("us", us, num_j)):
        if u.shape != (d,) or not np.all(np.isfinite(u)) or np.any(u < 0) or abs(u.sum() - 1) > 1e-9:
            raise InputError(name, f"must be a probability vector of length {d}")
    for name, v in (("dt", dt), ("horizon", horizon), ("warmup", warmup)):
        if not (isinstance(v, (int, float, np.floating)) and math.isfinite(v) and v >= 0):
            raise InputError(name, f"must be a finite number >= 0, got {v!r}")
    if not dt > 0:
        raise InputError("dt", "must be positive")
    if not 0 <= warmup < horizon:
        raise InputError("horizon", f"need 0 <= warmup < horizon, got warmup={warmup}, horizon={horizon}")
    from jaxq.model.validate import check_work, sde_steps_per_path

    check_work("horizon", paths, sde_steps_per_path(horizon, dt), unit="steps", reps_key="paths")
    # explicit Euler: the linear drift's fastest rate (an eigenvalue of the drift matrix) times dt must stay
    # small, or the scheme is unstable (it explodes instead of approximating the diffusion)
    rate = float(np.max(np.abs(np.linalg.eigvals(np.asarray(dl.drift_matrix)[:, :num_i])))) if num_i else 0.0
    if rate * dt > 0.5:
        raise InputError("dt", f"dt = {dt:g} is too large for the drift's rate {rate:.3g}: the explicit Euler "
                               f"scheme is unstable; use dt <= {0.5 / rate:.3g}")
    steps, warm = int(round(horizon / dt)), int(round(warmup / dt))
    if not 0 <= warm < steps:  # warmup < horizon holds: the window [warmup, horizon] is shorter than a step
        raise InputError("dt", f"dt = {dt:g} is longer than the averaging window [warmup, horizon] = "
                               f"[{warmup:g}, {horizon:g}], so no Euler step falls in it; use dt <= "
                               f"{0.5 * (horizon - warmup):.3g}")
    return steps, warm


@timed
def simulate_diffusion(
    dl: NetworkDiffusion,
    control: Control = Control(),
    paths: int = 256,
    window: EulerGrid = EulerGrid(),
    seed: int = 0,
    x0: np.ndarray | None = None,
    snaps: int = 50,
    cv: bool = True,
    batching: Batching = Batching(),
    times=None,
) -> SimResult:
    """Long-run averages of the diffusion (2.27) under a control, with standard errors over paths.

    Args:
        dl: The diffusion limit.
        control: The control and its values (:class:`Control`; default: constant, uniform shares).
        paths: The number of Monte Carlo paths.
        window: The step and the averaging window [warmup, horizon] (:class:`EulerGrid`).
        seed: The random seed.
        x0: The initial state (default 0).
        snaps: The number of recorded values of <e, X_t> along each path.
        cv: Control variates (see the module docstring); the plain means are reported beside.
        batching: First path, paths per compiled call, devices, progress (:class:`~jaxq.mc.replications.Batching`;
            paths are the replications).
        times (array_like | None): Record <e, X_t> at these times instead of ``snaps`` equally spaced ones (each
            rounded to a step).

    Returns:
        A :class:`~jaxq.mc.result.SimResult` with estimates ``mean_neg`` (E<e,X>^-), ``mean_pos`` (E<e,X>^+),
            ``mean_x`` and ``identity_rhs`` (E[w(u^s) <e,X>^-], (3.6)); ``info``: ``identity_lhs`` (rho of (2.35)),
            ``idleness_weight``, ``times``/``mean_sum_path`` (the average of <e, X_t> over paths at the recorded
            times), ``uc``/``us`` (the controls used); ``samples``: the per-path values (``sum_path``: <e, X_t> at the
            recorded times).

    Raises:
        InputError: Naming the argument: the settings fail :func:`check_settings`, or ``times`` outside
            [0, horizon].
    """
    num_i, num_j = dl.tree.shape
    uc = np.full(num_i, 1.0 / num_i) if control.uc is None else control.uc
    us = np.full(num_j, 1.0 / num_j) if control.us is None else control.us
    dt, horizon, warmup = window
    steps, warm = check_settings(dl, uc, us, control.kind, dt, horizon, warmup, paths)
    batching = batching.checked()
    uc, us = np.asarray(uc, float), np.asarray(us, float)
    p = {
        "ell": jnp.asarray(dl.ell),
        "K": jnp.asarray(dl.drift_matrix),
        "sigma": jnp.asarray(dl.sigma),
        "uc": jnp.asarray(uc),
        "us": jnp.asarray(us),
        "feedback": jnp.asarray(control.kind == "proportional"),
        "x0": jnp.asarray(np.zeros(num_i) if x0 is None else np.asarray(x0, float)),
    }
    if times is None:
        every = max(1, steps // snaps)
        snap_steps = np.arange(0, steps, every)[:snaps]
    else:  # times in [0, horizon] (checked: one past it was clipped to the last step, NaN gave a garbage index)
        times = check_path_times(times, "times", float(horizon))
        snap_steps = np.clip(np.rint(times / dt).astype(np.int64), 0, steps - 1)
    a = driver.PathArgs(p, p["x0"], None, jnp.float64(dt), jnp.int64(steps), jnp.asarray(snap_steps, jnp.int64),
                        n_steps=jnp.float64(steps), warm=jnp.int64(warm))
    per_call = int(max(1, min(steps, (1 << 22) // max(paths, 1))))
    prog = driver.program(scheme(num_i), 1, per_call, observer(bool(cv)), driver.WINDOW)
    out, timing = driver.run_loop(prog, a, paths, seed, batching, float(paths) * steps)
    avg, sums = out["avg"], out["path"]
    w = dl.idleness_weight(us)
    per = {"mean_neg": np.asarray(avg["neg"]), "mean_pos": np.asarray(avg["pos"]), "mean_x": np.asarray(avg["x"])}
    per["identity_rhs"] = w * per["mean_neg"]
    per["sum_path"] = np.asarray(sums)
    ctl = np.asarray(out["ctl"]) if cv else None
    index = batching.start + np.arange(paths)
    est = {k: Estimate.with_controls(per[k], ctl, index) for k in ("mean_neg", "mean_pos", "mean_x", "identity_rhs")}
    if ctl is not None:
        per["controls"] = ctl
    info = {"identity_lhs": dl.spare_capacity, "idleness_weight": w, "times": snap_steps * dt,
            "mean_sum_path": per["sum_path"].mean(axis=0), "dt": dt, "paths": paths, "horizon": horizon,
            "warmup": warmup, "control": control.kind, "uc": uc, "us": us}
    return SimResult(None, est, paths, paths * steps, timing.wall_s, timing.compile_s, "euler", per, info)
