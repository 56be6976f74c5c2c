"""Simulating the n-th parallel server network (the uniform-stability and LAP-tightness papers): stationary averages
with standard errors.

:func:`simulate` builds the model's parameters from the network's analysis
(:mod:`jaxq.diffusion.network_analysis`: scaling, LAP priorities, fluid centre), runs the Markov statement
of :mod:`jaxq.sim.models.network` on one of the two drivers, and summarises per-replication time averages
over [warmup, horizon] into a :class:`~jaxq.mc.result.SimResult`:

* ``event``: exact exponential holding times (also records snapshots at fixed times, for transience);
* ``uniformized``: the chain uniformised and run in lockstep, step averages for time averages (several
  times faster); ``auto`` picks it unless snapshots are asked for (the one rule of the Markov simulators,
  :func:`jaxq.sim.simulate_markov.choose_engine`, whose :func:`~jaxq.sim.simulate_markov.run_chain` runs both).

M/M/c is the network with one class and one pool (:func:`simulate_mmc`), checked against Erlang C.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxq.diffusion.network import b_matrices, spare_capacity_n
from jaxq.diffusion.network_analysis import NetworkAnalysis, analyze
from jaxq.errors import InputError
from jaxq.model.network import Network, ScaledNetwork
from jaxq.model.validate import check_path_times
from jaxq.options import grouped as options_grouped
from jaxq.policies import network as pol
from jaxq.precision import float64
from jaxq.mc import replications
from jaxq.sim import ENGINES
from jaxq.sim.markov import Functional, Horizon
from jaxq.sim.models import mmc
from jaxq.sim.models import network as model
from jaxq.sim.simulate_markov import run_chain, window_steps
from jaxq.mc.result import Estimate, SimResult, add_observed, timed

POLICIES = pol.POLICIES
WINDOW = Functional(window=True)

Batching = replications.Batching  # jaxq.mc.replications: first replication, chunk, devices, progress


class Window(NamedTuple):
    """The averaging window: every replication starts at time 0 and its time averages are over ``[warmup, horizon]``.

    Attributes:
        warmup: The start of the window (units of time, finite, ``0 <= warmup < horizon``).
        horizon: Its end, where every replication stops.
    """

    warmup: float = 20.0
    horizon: float = 200.0


class NetworkOutputs(NamedTuple):
    """What a run records besides the window averages of the counts.

    Attributes:
        snap_times: Times in [0, horizon] at which the class counts are recorded, in any order (event engine;
            transience studies; None: none).
        hist_range: Histograms of X_hat are on [-hist_range, hist_range].
        hist_bins: Their bins (0: none, a faster run).
        cv: Control variates: approximating martingales with a quadratic basis in X_hat
            (:func:`jaxq.sim.models.network.controls`), every reported mean cross-fitted by replication index
            (:func:`jaxq.stats.controlled_mean`); the plain means are reported beside (``<key>_plain``).
    """

    snap_times: Any = None
    hist_range: float = 6.0
    hist_bins: int = 60
    cv: bool = True


GROUPS = {"window": Window, "outputs": NetworkOutputs, "batching": Batching}  # the typed arguments built from flat options


def grouped(options: dict) -> dict:
    """Flat keyword options as the typed arguments of :func:`simulate` (:func:`jaxq.options.grouped`).

    ``reps``, ``seed``, ``engine`` and ``observers`` pass through, and a typed argument given whole
    (``window=Window(...)``) is kept.

    Args:
        options: The flat options (those of ``jaxq.simulate`` for a network: ``warmup``, ``horizon``,
            ``snap_times``, ``cv``, ``chunk``, ...).

    Returns:
        The keyword arguments of :func:`simulate`.

    Raises:
        InputError: Naming an unknown key.
    """
    return options_grouped(options, GROUPS, ("reps", "seed", "engine", "observers"), "the network simulator")


def make_params(an: NetworkAnalysis, n: float | ScaledNetwork, policy: str, hist_range: float = 6.0,
                hist_bins: int = 60) -> tuple[pol.Layout, model.Params]:
    """Layout and parameters of the n-th system under ``policy``.

    Start: queues empty, servers at the fluid allocation, rounded down so that every pool is feasible.

    Args:
        an: The analysed network.
        n: The scale n, or the n-th system itself (``an.network.at(n, an.scaling)``,
            :class:`~jaxq.model.network.ScaledNetwork`: its rates are then read, not computed again).
        policy: One of :data:`POLICIES`.
        hist_range: Histograms of X_hat are on [-hist_range, hist_range].
        hist_bins: Their bins.

    Returns:
        ``(layout, params)``.

    Raises:
        InputError: Naming ``policy``: an unknown policy, or ``swc`` on an activity graph that is not a tree.
    """
    net = an.network
    if policy == "swc" and not an.plan.graph_is_tree:
        raise InputError("policy", "swc needs the activity graph to be a tree")
    lay, rule = pol.make(policy, net.edges, an.plan.basic, an.lap.order, an.lap.class_order)
    nth = n.at(n.n, an.scaling) if isinstance(n, ScaledNetwork) else net.at(n, an.scaling)
    n, lam_n, mu_n, big_n = nth.n, nth.lam_n, nth.mu_n, nth.N
    edge = np.zeros_like(net.edges)
    for i, j in lay.edges:
        edge[i, j] = True
    # n zbar^n = xi* N^n of (2.8) (Halfin-Whitt); r psi* (underloaded, the LAP-tightness paper)
    center_z = an.plan.xi * big_n if an.scaling == "halfin-whitt" else n * an.fluid_z
    z0 = np.minimum(np.floor(center_z).astype(np.int64) * edge, big_n[None, :])
    for j in range(z0.shape[1]):  # keep the initial state feasible
        while z0[:, j].sum() > big_n[j]:
            z0[int(np.argmax(z0[:, j])), j] -= 1
    if lay.swc:
        x0 = z0.sum(axis=1)
        z = pol.swc_allocation([int(v) for v in x0], [int(v) for v in big_n], lay)
        z0 = np.zeros_like(z0)
        for e, v in z.items():
            z0[e] = int(v)
    width = 2.0 * hist_range / max(hist_bins, 1)
    p = model.Params(
        lam=jnp.asarray(lam_n, jnp.float64), mu=jnp.asarray(np.where(edge, mu_n, 0.0), jnp.float64),
        N=jnp.asarray(big_n, jnp.int32), rule=rule, center=jnp.asarray(center_z.sum(axis=1), jnp.float64),
        center_z=jnp.asarray(center_z, jnp.float64), scale=jnp.float64(nth.sqrt_n),
        hist_lo=jnp.float64(-hist_range), hist_width=jnp.float64(width), z0=jnp.asarray(z0, jnp.int32))
    return lay, p


def _check(reps, window: Window, engine, snap_times, batching: Batching) -> Batching:
    """The checks of a network run's inputs; returns the batching checked."""
    warmup, horizon = window
    if not (isinstance(reps, (int, np.integer)) and reps >= 2):
        raise InputError("reps", f"need at least 2 replications for a standard error, got {reps!r}")
    batching = batching.checked()
    if not (math.isfinite(warmup) and math.isfinite(horizon) and 0 <= warmup < horizon):
        raise InputError("horizon", f"need 0 <= warmup < horizon (finite), got warmup={warmup}, horizon={horizon}")
    if engine not in ENGINES:
        raise InputError("engine", f"expected one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "uniformized" and snap_times is not None:
        raise InputError("snap_times", "snapshots at fixed times need the event engine (engine = 'event')")
    if snap_times is not None:  # a time the path never reaches (before 0, past the horizon, NaN) read 0
        check_path_times(snap_times, "snap_times", horizon)
    return batching


def run_model(lay: pol.Layout, p: model.Params, reps: int, *, window: Window, outputs: NetworkOutputs, seed: int = 0,
              engine: str = "auto", deviations: bool = True, batching: Batching = Batching(), observers=None):
    """Run the network model through the front of the Markov simulators (:func:`jaxq.sim.simulate_markov.run_chain`).

    Per-replication window averages in the units of time.

    Args:
        lay: The layout of :func:`make_params`.
        p: Its parameters (the histogram's range is in ``p``).
        reps: Replications (>= 2).
        window: The window of the averages (:class:`Window`).
        outputs: Snapshots, histogram bins and control variates (:class:`NetworkOutputs`; its ``hist_range`` is not
            read).
        seed: Base seed.
        engine: ``auto``, ``event`` or ``uniformized`` (:func:`jaxq.sim.simulate_markov.choose_engine`: ``auto`` is
            uniformised unless snapshots are asked for).
        deviations: The absolute and squared deviations from the fluid centre.
        batching: How the replications are executed (:class:`Batching`).
        observers (dict | None): Name -> :class:`~jaxq.mc.observer.Observer` of the model's states
            (:class:`jaxq.sim.models.network.State`) under the window's weights.

    Returns:
        (tuple): ``(per_rep, records, snaps, events, timing, engine, steps, controls, observed)`` (controls: (reps, C)
            or None; observed: the observers' outputs, None without observers).

    Raises:
        InputError: Naming the argument: too few replications, a window, engine or snapshot times out of range.
    """
    warmup, horizon = window
    snap_times, _, hist_bins, cv = outputs
    batching = _check(reps, window, engine, snap_times, batching)
    mk = model.markov(lay, int(hist_bins), bool(deviations), bool(cv))
    ran = run_chain(mk, p, WINDOW, reps, seed, times=Horizon(0.0, warmup, horizon), engine=engine,
                    steps=window_steps(mk.bound(p), warmup, horizon), snap_times=snap_times, observers=observers,
                    batching=batching)
    out = ran.out
    snaps = out["snap"] if snap_times is not None else None
    return (out["window"], out["records"], snaps, int(np.sum(out["events"])), ran.timing, ran.engine,
            ran.info.get("steps"), out["controls"]["window"] if cv else None, out.get("observed"))


def summarize(lay: pol.Layout, p: model.Params, win: dict, rec: dict, hist_range: float) -> dict[str, np.ndarray]:
    """Per-replication statistics (time averages over the window) from the model's window averages.

    Args:
        lay: The layout.
        p: The parameters.
        win: The model's window averages.
        rec: Its window records (arrivals, waited).
        hist_range: The histograms' range (unused here: the bins are in ``win``).

    Returns:
        Name -> per-replication array (axis 0 replications).
    """
    I, J = lay.num_i, lay.num_j
    reps = np.shape(win["q"][0])[0]
    q = np.stack(win["q"], axis=1)
    z = np.zeros((reps, I, J))
    absdev = np.broadcast_to(np.abs(np.asarray(p.center_z)), (reps, I, J)).copy()
    sqdev = absdev**2
    for k, (i, j) in enumerate(lay.edges):
        z[:, i, j] = win["z"][k]
        if "absdev" in win:
            absdev[:, i, j] = win["absdev"][k]
            sqdev[:, i, j] = win["sqdev"][k]
    per = {
        "mean_in_system": q + z.sum(axis=2),
        "mean_queue": q,
        "mean_idle": np.asarray(p.N, np.float64)[None] - z.sum(axis=1),
        "mean_busy": z,
        "mean_idleness_hat": np.asarray(win["neg"]),
        # completion rate per class sum_j mu_ij zbar_ij: equals lambda_i in steady state for a stable policy
        "throughput": (np.asarray(p.mu)[None] * z).sum(axis=2),
    }
    if "absdev" in win:
        per["mean_abs_dev"] = absdev
        per["rms_dev"] = np.sqrt(sqdev)
    arrivals, waited = np.stack(rec["arrivals"], axis=1), np.stack(rec["waited"], axis=1)
    per["p_wait"] = waited.sum(axis=1) / np.maximum(arrivals.sum(axis=1), 1.0)
    per["p_wait_class"] = waited / np.maximum(arrivals, 1.0)
    per["mean_idle_total"] = per["mean_idle"].sum(axis=1)
    if "hist" in win:
        per["hist"] = np.stack(win["hist"], axis=1)  # (reps, I + 1, bins): classes, then the total
    return per


@float64
@timed
def simulate(system: Network | NetworkAnalysis, n: float, policy: str = "priority", *, reps: int = 64,
             window: Window = Window(), seed: int = 0, engine: str = "auto", outputs: NetworkOutputs = NetworkOutputs(),
             batching: Batching = Batching(), observers=None) -> SimResult:
    """Stationary averages of the n-th network under a policy, over [warmup, horizon], with standard errors.

    Args:
        system: The network (or its analysis).
        n: The scale (n of the uniform-stability paper, r of the LAP-tightness paper).
        policy: One of :data:`POLICIES`.
        reps: Replications (>= 2).
        window: The window [warmup, horizon] of the time averages (:class:`Window`).
        seed: Base seed.
        engine: ``auto``, ``event`` or ``uniformized`` (see the module docstring).
        outputs: Snapshots, histograms of X_hat and control variates (on by default) (:class:`NetworkOutputs`).
        batching: How the replications are executed (:class:`jaxq.mc.replications.Batching`); any value gives the
            same numbers.
        observers (dict | None): Statistics of the path, a dict of name -> :class:`~jaxq.mc.observer.Observer` of the
            model's states (:class:`jaxq.sim.models.network.State`: ``q``, the queue of each class, ``z``, the servers
            of each activity) under the window's weights (1 over [warmup, horizon], the mass its length); each output
            is an estimate ``<name>`` or ``<name>_<key>`` (docs/guides/observers.md).

    Returns:
        A :class:`SimResult` whose estimates are ``mean_in_system``, ``mean_queue`` (per class),
            ``mean_idle`` (per pool), ``mean_busy`` (class x pool), ``p_wait``, ``p_wait_class``, ``throughput``,
            ``mean_idleness_hat``, ``mean_idle_total``, ``mean_abs_dev``, ``rms_dev`` and, in the Halfin-Whitt
            regime, ``weighted_idleness_hat`` (the prelimit identity (3.6)); ``info`` holds the histograms
            (``hist_edges``, ``hist_density``), snapshots, pool sizes, rates and the spare capacity.

    Raises:
        InputError: Naming the argument: n not positive, an unknown policy, or a run setting out of range.
    """
    warmup, horizon = window
    _, hist_range, hist_bins, _ = outputs
    an = system if isinstance(system, NetworkAnalysis) else analyze(system)
    if not (isinstance(n, (int, float, np.integer, np.floating)) and math.isfinite(n) and n > 0):
        raise InputError("n", f"must be a positive number, got {n!r}")
    nth = an.network.at(n, an.scaling)  # the n-th system, once for the run
    lay, p = make_params(an, nth, policy, hist_range, hist_bins)
    win, rec, snaps, events, timing, used, steps, ctl, observed = run_model(
        lay, p, reps, window=window, outputs=outputs, seed=seed, engine=engine, batching=batching, observers=observers)
    per = summarize(lay, p, win, rec, hist_range)
    index = batching.start + np.arange(reps)
    est = {k: Estimate.with_controls(v, ctl, index) for k, v in per.items() if k != "hist"}
    if ctl is not None:
        per["controls"] = ctl
    info: dict = {"n": n, "policy": policy, "scaling": an.scaling, "warmup": warmup, "horizon": horizon,
                  "pool_sizes": np.asarray(p.N), "arrival_rates": np.asarray(p.lam)}
    if steps is not None:
        info["steps"] = steps
    if "hist" in per:
        width = float(p.hist_width)
        info["hist_edges"] = np.linspace(-hist_range, hist_range, hist_bins + 1)
        info["hist_density"] = per["hist"].mean(axis=0) / width
    if snaps is not None:
        info["snapshots"] = snaps.mean(axis=0)
        per["snapshots"] = snaps
    if an.scaling == "halfin-whitt":
        b1n, b2n = b_matrices(nth.mu_n, an.plan.basic, an.basis_pool)  # nth is Halfin-Whitt's here
        w = 1.0 + np.linalg.solve(b1n, b2n).sum(axis=0)
        per["weighted_idleness_hat"] = per["mean_idle"] @ w / nth.sqrt_n
        est["weighted_idleness_hat"] = Estimate.with_controls(per["weighted_idleness_hat"], ctl, index)
        info.update(idleness_weights=w, spare_capacity=an.spare_capacity,
                    spare_capacity_n=spare_capacity_n(nth, an.plan, n, an.basis_pool))
    if observed is not None:  # after the simulator's own estimates: a clash with their names is refused
        add_observed(observed, est, per, info)
    notes = ()
    rho_n = info.get("spare_capacity_n")
    if rho_n is not None and not rho_n > 0:  # no policy is stationary: say so, with the growth measured
        mid = 0.5 * (warmup + horizon)
        first, *_ = run_model(lay, p, reps, window=Window(warmup, mid), outputs=NetworkOutputs(hist_bins=0, cv=False),
                              seed=seed, engine=used, deviations=False, batching=batching._replace(progress=None))
        growth = _halves(per["mean_in_system"].sum(axis=1), first["q"], first["z"], warmup, mid, horizon)
        info["growth"] = growth
        notes = (f"not stationary: the spare capacity of the n-th system rho_n = {rho_n:.4g} is not positive (rho = "
                 f"{an.spare_capacity:.4g}; (2.35), (3.6)), so no policy has long-run averages and these grow with "
                 f"the horizon: the mean number in system is {growth['first_half']:.4g} over [{warmup:g}, {mid:g}] and "
                 f"{growth['second_half']:.4g} over [{mid:g}, {horizon:g}] (about {growth['per_time']:.3g} +- "
                 f"{growth['per_time_stderr']:.2g} more a unit of time); the averages describe this window only",)
    return SimResult(None, est, reps, events, timing.wall_s, timing.compile_s, used, per, info, warnings=notes)


def _halves(total: np.ndarray, q_first, z_first, warmup: float, mid: float, horizon: float) -> dict:
    """The mean number in system over the two halves of the window [warmup, horizon] (the second half from the
    whole window's average and the first half's), averaged over replications, and its growth a unit of time."""
    first = (np.sum(np.stack(q_first, axis=1), axis=1) + np.sum(np.stack(z_first, axis=1), axis=1))
    second = (total * (horizon - warmup) - first * (mid - warmup)) / (horizon - mid)
    rate = (second - first) / (0.5 * (horizon - warmup))
    return {"first_half": float(np.mean(first)), "second_half": float(np.mean(second)),
            "per_time": float(np.mean(rate)), "per_time_stderr": float(np.std(rate, ddof=1) / math.sqrt(rate.size))}


@float64
@timed
def simulate_mmc(lam: float, mu: float, c: int, *, reps: int = 64, window: Window = Window(), seed: int = 0,
                 engine: str = "auto", cv: bool = True, batching: Batching = Batching(), observers=None) -> SimResult:
    """M/M/c (arrival rate ``lam``, ``c`` servers of rate ``mu``): stationary averages over [warmup, horizon].

    The birth-death statement of :mod:`jaxq.sim.models.mmc` (the network with one class and one pool, without
    its per-activity bookkeeping). Estimates ``mean_in_system``, ``mean_queue``, ``mean_idle``, ``p_wait``;
    with ``cv`` (default) each is controlled by the model's Halfin-Whitt quadratic martingales
    (:data:`jaxq.sim.models.mmc.MARKOV_CV`), cross-fitted by replication index, the plain mean beside it.

    Args:
        lam: The arrival rate.
        mu: The service rate.
        c: The number of servers.
        reps: Replications (>= 2).
        window: The window [warmup, horizon] of the time averages (:class:`Window`; the queue starts empty).
        seed: Base seed.
        engine: ``auto`` (default: uniformised, the rule of :func:`jaxq.sim.simulate_markov.choose_engine`),
            ``uniformized`` or ``event``.
        cv: Control variates (default on).
        batching: How the replications are executed (:class:`jaxq.mc.replications.Batching`).
        observers (dict | None): Statistics of the path, a dict of name -> :class:`~jaxq.mc.observer.Observer` of
            the model's state (the number in system, an int32 scalar) under the window's weights; each output is an
            estimate ``<name>`` or ``<name>_<key>`` (docs/guides/observers.md).

    Returns:
        A :class:`SimResult` (``info``: ``servers``, ``warmup``, ``horizon``, ``steps`` on the uniformised driver).

    Raises:
        InputError: Naming ``mmc`` (rates not positive, c not an integer >= 1) or a run setting out of range.
    """
    if not (lam > 0 and mu > 0 and isinstance(c, (int, np.integer)) and c >= 1):
        raise InputError("mmc", f"need lambda > 0, mu > 0 and an integer c >= 1 (got {lam}, {mu}, {c})")
    warmup, horizon = window
    batching = _check(reps, window, engine, None, batching)
    p = mmc.Params(jnp.float64(lam), jnp.float64(mu), jnp.int32(c))
    mk = mmc.MARKOV_CV if cv else mmc.MARKOV
    ran = run_chain(mk, p, WINDOW, reps, seed, times=Horizon(0.0, warmup, horizon), engine=engine,
                    steps=window_steps(mk.bound(p), warmup, horizon), observers=observers, batching=batching)
    out, timing, engine, steps = ran.out, ran.timing, ran.engine, ran.info.get("steps")
    win, rec = out["window"], out["records"]
    per = {"mean_in_system": win["x"], "mean_queue": win["q"], "mean_idle": c - (win["x"] - win["q"]),
           "p_wait": rec["waited"] / np.maximum(rec["arrivals"], 1.0)}
    ctl = out["controls"]["window"] if cv else None
    index = batching.start + np.arange(reps)
    est = {k: Estimate.with_controls(v, ctl, index) for k, v in per.items()}
    if ctl is not None:
        per["controls"] = ctl
    info = {"servers": int(c), "warmup": warmup, "horizon": horizon}
    if steps is not None:
        info["steps"] = steps
    if observers:
        add_observed(out["observed"], est, per, info)
    return SimResult(None, est, reps, int(np.sum(out["events"])), timing.wall_s, timing.compile_s, engine,
                     per, info)


def erlang_c(lam: float, mu: float, c: int) -> dict:
    """Exact stationary M/M/c: probability of wait (Erlang C), mean queue, mean in system, mean idle.

    Args:
        lam: The arrival rate.
        mu: The service rate.
        c: The number of servers.

    Returns:
        dict with ``p_wait``, ``mean_queue``, ``mean_in_system`` and ``mean_idle``.

    Raises:
        InputError: Naming ``mmc``: ``lambda / (c mu) >= 1`` (unstable).
    """
    a = lam / mu
    rho = a / c
    if rho >= 1:
        raise InputError("mmc", f"unstable: lambda/(c mu) = {rho:.4g} >= 1")
    b = 1.0
    for k in range(1, c + 1):  # Erlang B by its stable recursion
        b = a * b / (k + a * b)
    pw = b / (1 - rho * (1 - b))
    lq = pw * rho / (1 - rho)
    return {"p_wait": pw, "mean_queue": lq, "mean_in_system": lq + a, "mean_idle": c - a}
