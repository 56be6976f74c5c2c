"""Event-driven CTMC of the n-th parallel server network (seeds 001 and 003), on the generic driver.

State of one replication: queue length per class ``q[i]`` and busy servers per activity ``z[i, j]``
(idle servers ``y_j = N_j - sum_i z_ij``, jobs in system ``x_i = q_i + sum_j z_ij``). One event per step:
the holding time is exponential with the total rate ``sum_i lambda_i + sum_ij mu_ij z_ij`` and the event
is an arrival of class i or a service completion of activity (i, j), drawn in proportion to its rate.

Policies:

* ``priority`` (non-preemptive): an arriving class-i job takes an idle server in the lowest-index pool
  that can serve it; a freed pool-j server takes the queued job of the lowest-index class.
* ``lap`` (seed 003, non-preemptive): routing to the idle pool of highest activity priority, scheduling
  of the queued class of highest class priority, on the basic activity tree only.
* ``lqfs`` (longest queue, freest server, non-preemptive): routing to the pool with the largest idle
  fraction ``y_j / N_j``, scheduling of the longest queue ``q_i``; ties to the lowest index.
* ``swc`` (Definition 2.1 of seed 001): the Markov policy ``z = z(x)`` that maximises the number of busy
  servers (so minimises ``min(sum q, sum y)``) given the class counts x, computed after every event by
  greedy leaf elimination on the tree in LAP activity order (optimal on a tree). Jobs in service may be
  moved between pools (preemptive-resume; exact for exponential services).

Statistics are time averages over [warmup, horizon] accumulated in float64; the probability of wait is
the fraction of arrivals after the warm-up that join a queue (for ``swc``: that do not raise the number
of busy servers).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError
from jaxq.model.network import Network
from jaxq.planning.lap import lap_equilibrium
from jaxq.planning.network_lp import StaticPlan, resolve_scaling, solve_static_plan
from jaxq.sim.engine import Engine, simulate
from jaxq.stats import mean_stderr

POLICIES = ("priority", "lap", "lqfs", "swc")
ENGINES = ("event", "uniformized")
_NONE = 1e30  # score of a pool/class that cannot be chosen


# ----------------------------------------------------------------------------------------------- state
def _init(key, p):
    num_i, num_j = p["mu"].shape
    z0 = p["z0"]
    f64 = jnp.float64
    return {
        "key": key,
        "t": jnp.zeros((), f64),
        "q": jnp.zeros(num_i, jnp.int32),
        "z": z0,
        "events": jnp.zeros((), jnp.int64),
        "acc_x": jnp.zeros(num_i, f64),
        "acc_q": jnp.zeros(num_i, f64),
        "acc_y": jnp.zeros(num_j, f64),
        "acc_z": jnp.zeros((num_i, num_j), f64),
        "acc_absdev": jnp.zeros((num_i, num_j), f64),
        "acc_sqdev": jnp.zeros((num_i, num_j), f64),
        "acc_neg": jnp.zeros((), f64),  # time integral of <e, X_hat>^-
        "arrivals": jnp.zeros(num_i, f64),
        "waited": jnp.zeros(num_i, f64),
        "hist": jnp.zeros((num_i + 1, p["hist_edges"].shape[0] - 1), f64),
        "snap": jnp.zeros((p["snap_times"].shape[0], num_i), f64),
    }


def _done(s, p):
    return s["t"] >= p["horizon"]


def _draw(s, p):
    """Holding time and event index for the current state; returns (key, dt, idx)."""
    key, sub = jax.random.split(s["key"])
    u = jax.random.uniform(sub, (2,), dtype=jnp.float64)
    rates = jnp.concatenate([p["lam"], (p["mu"] * s["z"]).ravel()])
    cum = jnp.cumsum(rates)
    total = cum[-1]
    dt = -jnp.log1p(-u[0]) / total
    idx = jnp.minimum(jnp.sum(cum <= u[1] * total), rates.shape[0] - 1)
    return key, dt, idx


def add_statistics(s, p, w):
    """The state's statistics with weight ``w`` added (time-average sums); returns (new dict, x)."""
    z = s["z"].astype(jnp.float64)
    q = s["q"].astype(jnp.float64)
    x = q + z.sum(axis=1)
    y = p["N"].astype(jnp.float64) - z.sum(axis=0)
    xhat = (x - p["center"]) / p["scale"]
    dev = z - p["center_z"]
    edges = p["hist_edges"]
    nb = edges.shape[0] - 1
    width = edges[1] - edges[0]
    vals = jnp.concatenate([xhat, xhat.sum()[None]])
    bins = jnp.clip(jnp.floor((vals - edges[0]) / width).astype(jnp.int32), 0, nb - 1)
    hist = s["hist"] + w * jax.nn.one_hot(bins, nb, dtype=jnp.float64)
    out = dict(s)
    out.update(
        acc_x=s["acc_x"] + w * x,
        acc_q=s["acc_q"] + w * q,
        acc_y=s["acc_y"] + w * y,
        acc_z=s["acc_z"] + w * z,
        acc_absdev=s["acc_absdev"] + w * jnp.abs(dev),
        acc_sqdev=s["acc_sqdev"] + w * dev**2,
        acc_neg=s["acc_neg"] + w * jnp.maximum(-xhat.sum(), 0.0),
        hist=hist,
    )
    return out, x


def _accumulate(s, p, dt):
    """Add the current state's contribution over [t, t + dt] intersected with [warmup, horizon]."""
    t0, t1 = s["t"], s["t"] + dt
    w = jnp.maximum(0.0, jnp.minimum(t1, p["horizon"]) - jnp.maximum(t0, p["warmup"]))
    out, x = add_statistics(s, p, w)
    snap_now = (p["snap_times"] >= t0) & (p["snap_times"] < t1)
    out["snap"] = jnp.where(snap_now[:, None], x[None, :], s["snap"])
    return out


# ------------------------------------------------------------------------------ non-preemptive rules
def static_transition(q, z, idx, p):
    """Event ``idx`` (arrival of class idx < I, else completion of activity idx - I, row-major) under a
    non-preemptive rule; returns ``(q, z, is_arrival, i_a, served)`` (served: the arrival found a server)."""
    num_i, num_j = p["mu"].shape
    y = p["N"] - z.sum(axis=0)
    is_arrival = idx < num_i
    # Arrival of class i: route to the best idle pool, else queue.
    i_a = jnp.minimum(idx, num_i - 1)
    ok_pool = p["edge"][i_a] & (y > 0)
    score_pool = p["route_rank"][i_a] - p["route_dyn"] * y / p["N"]
    j_a = jnp.argmin(jnp.where(ok_pool, score_pool, _NONE))
    served = ok_pool.any()
    onehot_i = jax.nn.one_hot(i_a, num_i, dtype=jnp.int32)
    z_arr = z + (served * onehot_i)[:, None] * jax.nn.one_hot(j_a, num_j, dtype=jnp.int32)[None, :]
    q_arr = q + (1 - served) * onehot_i
    # Completion of activity (i, j): the freed server takes the best queued class it can serve.
    k = jnp.maximum(idx - num_i, 0)
    i_c, j_c = k // num_j, k % num_j
    z_c = z - jax.nn.one_hot(i_c, num_i, dtype=jnp.int32)[:, None] * jax.nn.one_hot(j_c, num_j, dtype=jnp.int32)
    ok_cls = p["edge"][:, j_c] & (q > 0)
    score_cls = p["sched_rank"][:, j_c] - p["sched_dyn"] * q
    i_n = jnp.argmin(jnp.where(ok_cls, score_cls, _NONE))
    take = ok_cls.any()
    onehot_n = jax.nn.one_hot(i_n, num_i, dtype=jnp.int32) * take
    z_c = z_c + onehot_n[:, None] * jax.nn.one_hot(j_c, num_j, dtype=jnp.int32)[None, :]
    q_c = q - onehot_n
    q = jnp.where(is_arrival, q_arr, q_c).astype(jnp.int32)
    z = jnp.where(is_arrival, z_arr, z_c).astype(jnp.int32)
    return q, z, is_arrival, i_a, served


# --------------------------------------------------------------------------------- swc (Def. 2.1)
def swc_allocation(x, p):
    """z(x): maximal busy servers by greedy leaf elimination on the tree (order ``p["elim"]``)."""
    num_i, num_j = p["mu"].shape
    cap = jnp.concatenate([x.astype(jnp.int32), p["N"]])
    z = jnp.zeros((num_i, num_j), jnp.int32)
    for e in range(p["elim"].shape[0]):  # static, one pass per tree edge
        i, j = p["elim"][e, 0], p["elim"][e, 1]
        f = jnp.minimum(cap[i], cap[num_i + j])
        cap = cap.at[i].add(-f).at[num_i + j].add(-f)
        z = z.at[i, j].set(f)
    return z


def swc_transition(q, z, idx, p):
    """Event ``idx`` under the SWC Markov policy; returns ``(q, z, is_arrival, i_a, served)``."""
    num_i, num_j = p["mu"].shape
    x = q + z.sum(axis=1)
    is_arrival = idx < num_i
    i_a = jnp.minimum(idx, num_i - 1)
    i_c = jnp.maximum(idx - num_i, 0) // num_j
    cls = jnp.where(is_arrival, i_a, i_c)
    sign = jnp.where(is_arrival, 1, -1).astype(jnp.int32)
    x = (x + sign * jax.nn.one_hot(cls, num_i, dtype=jnp.int32)).astype(jnp.int32)
    z_new = swc_allocation(x, p)
    served = z_new.sum() > z.sum()
    return (x - z_new.sum(axis=1)).astype(jnp.int32), z_new, is_arrival, i_a, served


def _step(s, p, transition):
    """One event: exact holding time, statistics over it, then ``transition`` (static or swc)."""
    key, dt, idx = _draw(s, p)
    s = _accumulate(s, p, dt)
    num_i = p["mu"].shape[0]
    q, z, is_arrival, i_a, served = transition(s["q"], s["z"], idx, p)
    after = s["t"] >= p["warmup"]
    arr_vec = (is_arrival & after) * jax.nn.one_hot(i_a, num_i, dtype=jnp.float64)
    s.update(
        key=key,
        t=s["t"] + dt,
        q=q,
        z=z,
        events=s["events"] + 1,
        arrivals=s["arrivals"] + arr_vec,
        waited=s["waited"] + arr_vec * (1.0 - served),
    )
    return s


STATIC_ENGINE = Engine(_init, partial(_step, transition=static_transition), _done)  # priority, lap, lqfs
SWC_ENGINE = Engine(_init, partial(_step, transition=swc_transition), _done)


# ------------------------------------------------------------------------------------------- setup
@dataclass(frozen=True, eq=False)
class NetworkSetup:
    """Everything the simulator needs that is not random: the plan, scaling, LAP order, centering."""

    net: Network
    plan: StaticPlan
    scaling: str
    lap_order: list[tuple[int, int]]
    class_order: list[int]
    fluid_z: np.ndarray  # fluid occupancy per unit of n: z* (Halfin-Whitt) or psi* (underloaded)


def setup(net: Network) -> NetworkSetup:
    """Solve LP (2.3), check CRP, fix the scaling and the LAP priorities."""
    plan = solve_static_plan(net.lam, net.mu, net.nu)
    scaling = resolve_scaling(net.scaling, plan, net.has_second_order)
    eq = lap_equilibrium(net.lam, net.mu, net.nu, plan.basic, net.lap_order)
    fluid = plan.z_star if scaling == "halfin-whitt" else eq.psi
    return NetworkSetup(net, plan, scaling, eq.order, eq.class_order, fluid)


def make_params(
    st: NetworkSetup,
    n: float,
    policy: str,
    warmup: float,
    horizon: float,
    hist_range: float = 6.0,
    hist_bins: int = 60,
    snap_times: np.ndarray | None = None,
) -> dict:
    """Parameters (a pytree of arrays) of the n-th system under a policy.

    Args:
      st: the setup; n: scale (n or r); policy: one of :data:`POLICIES`.
      warmup, horizon: statistics are time averages over [warmup, horizon].
      hist_range, hist_bins: histograms of X_hat on [-hist_range, hist_range].
      snap_times: times at which the class counts are recorded (transience studies).
    """
    if policy not in POLICIES:
        raise InputError("policy", f"expected one of {', '.join(POLICIES)}, got {policy!r}")
    if not (0 <= warmup < horizon and math.isfinite(horizon)):
        raise InputError("horizon", f"need 0 <= warmup < horizon, got warmup={warmup}, horizon={horizon}")
    net = st.net
    lam_n, mu_n, big_n = net.rates(n, st.scaling)
    num_i, num_j = net.mu.shape
    tree = st.plan.basic
    edge = tree if policy in ("lap", "swc") else net.edges
    if policy == "swc" and not st.plan.graph_is_tree:
        raise InputError("policy", "swc needs the activity graph to be a tree")
    ii, jj = np.meshgrid(np.arange(num_i), np.arange(num_j), indexing="ij")
    act_rank = np.full((num_i, num_j), _NONE)
    for r, (i, j) in enumerate(st.lap_order):
        act_rank[i, j] = r
    cls_rank = np.zeros(num_i)
    for r, i in enumerate(st.class_order):
        cls_rank[i] = r
    if policy == "lap":
        route_rank, sched_rank, dyn = act_rank, np.broadcast_to(cls_rank[:, None], (num_i, num_j)), 0.0
    elif policy == "lqfs":
        route_rank, sched_rank, dyn = 1e-9 * jj, 1e-9 * ii, 1.0
    else:
        route_rank, sched_rank, dyn = jj.astype(float), ii.astype(float), 0.0
    # n zbar^n = xi* N^n of (2.8) (Halfin-Whitt); r psi* (underloaded, seed 003)
    center_z = st.plan.xi * big_n if st.scaling == "halfin-whitt" else n * st.fluid_z
    z0 = np.floor(center_z).astype(np.int32) * edge
    z0 = np.minimum(z0, big_n[None, :])
    over = z0.sum(axis=0) - big_n
    for j in range(num_j):  # keep the initial state feasible
        while over[j] > 0:
            i = int(np.argmax(z0[:, j]))
            z0[i, j] -= 1
            over[j] -= 1
    snaps = np.array([horizon + 1.0]) if snap_times is None else np.asarray(snap_times, dtype=float)
    p = {
        "lam": jnp.asarray(lam_n, jnp.float64),
        "mu": jnp.asarray(np.where(edge, mu_n, 0.0), jnp.float64),
        "N": jnp.asarray(big_n, jnp.int32),
        "edge": jnp.asarray(edge),
        "route_rank": jnp.asarray(route_rank, jnp.float64),
        "sched_rank": jnp.asarray(sched_rank, jnp.float64),
        "route_dyn": jnp.asarray(dyn, jnp.float64),
        "sched_dyn": jnp.asarray(dyn, jnp.float64),
        "warmup": jnp.asarray(warmup, jnp.float64),
        "horizon": jnp.asarray(horizon, jnp.float64),
        "center": jnp.asarray(center_z.sum(axis=1), jnp.float64),
        "center_z": jnp.asarray(center_z, jnp.float64),
        "scale": jnp.asarray(math.sqrt(n), jnp.float64),
        "hist_edges": jnp.linspace(-hist_range, hist_range, hist_bins + 1),
        "snap_times": jnp.asarray(snaps, jnp.float64),
        "elim": jnp.asarray(np.array(st.lap_order, dtype=np.int32).reshape(-1, 2)),
        "z0": jnp.asarray(z0, jnp.int32),
    }
    if policy == "swc":
        p["z0"] = swc_allocation(jnp.asarray(z0.sum(axis=1), jnp.int32), p)
    return p


def summarize(final: dict, p: dict, wall_s: float) -> dict:
    """Per-replication time averages, then their means and standard errors over replications."""
    span = float(p["horizon"] - p["warmup"])
    out: dict = {}
    per_rep = {
        "mean_in_system": final["acc_x"] / span,
        "mean_queue": final["acc_q"] / span,
        "mean_idle": final["acc_y"] / span,
        "mean_busy": final["acc_z"] / span,
        "mean_abs_dev": final["acc_absdev"] / span,
        "rms_dev": np.sqrt(final["acc_sqdev"] / span),
        "mean_idleness_hat": final["acc_neg"] / span,
    }
    # completion rate per class sum_j mu_ij zbar_ij: equals lambda_i in steady state for a stable policy
    per_rep["throughput"] = (np.asarray(p["mu"])[None] * per_rep["mean_busy"]).sum(axis=2)
    arrivals = final["arrivals"].sum(axis=1)
    per_rep["p_wait"] = final["waited"].sum(axis=1) / np.maximum(arrivals, 1.0)
    per_rep["p_wait_class"] = final["waited"] / np.maximum(final["arrivals"], 1.0)
    for k, v in per_rep.items():
        m, se = mean_stderr(np.asarray(v, dtype=float))
        out[k], out[k + "_stderr"] = m, se
    out["mean_idle_total"], out["mean_idle_total_stderr"] = mean_stderr(per_rep["mean_idle"].sum(axis=1))
    edges = np.asarray(p["hist_edges"])
    width = edges[1] - edges[0]
    out["hist_edges"] = edges
    out["hist_density"] = (final["hist"] / span / width).mean(axis=0)  # (I + 1, B): classes, then total
    if "snap" in final:  # the event engine records snapshots at fixed times; the uniformised one cannot
        out["snapshots"] = final["snap"].mean(axis=0)
        out["snapshots_all"] = final["snap"]
    events = int(final["events"].sum())
    out["events"] = events
    out["wall_s"] = wall_s
    out["events_per_s"] = events / max(wall_s, 1e-9)
    return out


def _weighted_idleness(st: NetworkSetup, n: float, final: dict, p: dict) -> dict:
    """Prelimit form of (3.6): sum_j w_j E[Y_j] / sqrt(n) with w = e + (B1^n)^{-1} B2^n summed over classes.

    Stationarity of the drift (2.16) gives ``E b^n = 0``, hence ``rho_n = sum_j w_j E[Y_hat_j]`` exactly for
    every stable policy of the n-th system (2.25), (2.35).
    """
    from jaxq.diffusion.network import b_matrices, choose_basis_pool, spare_capacity_n

    jhat = choose_basis_pool(st.net.mu, st.plan.basic)
    _, mu_n, _ = st.net.rates(n, "halfin-whitt")
    b1n, b2n = b_matrices(mu_n, st.plan.basic, jhat)
    w = 1.0 + np.linalg.solve(b1n, b2n).sum(axis=0)
    span = float(p["horizon"] - p["warmup"])
    per = (final["acc_y"] / span) @ w / math.sqrt(n)
    m, se = mean_stderr(per)
    return {
        "weighted_idleness_hat": m,
        "weighted_idleness_hat_stderr": se,
        "idleness_weights": w,
        "spare_capacity_n": spare_capacity_n(st.net, st.plan, n, jhat),
    }


def run(
    st: NetworkSetup,
    n: float,
    policy: str,
    reps: int = 32,
    warmup: float = 20.0,
    horizon: float = 200.0,
    seed: int = 0,
    chunk: int | None = None,
    block: int = 512,
    progress=None,
    engine: str = "event",
    **kw,
) -> dict:
    """Simulate ``reps`` replications of the n-th system and summarise them (see :func:`summarize`).

    ``engine``: ``"event"`` (this module: one event per step, exact holding times, snapshots at fixed
    times) or ``"uniformized"`` (:mod:`jaxq.sim.network_lockstep`: the same chain uniformised and run in
    lockstep, step averages for time averages, several times faster; no snapshots).

    Returns a dict with ``mean_in_system``, ``mean_queue``, ``mean_idle``, ``mean_busy``, ``p_wait``
    (each with ``_stderr``), histograms, ``events``, ``wall_s`` and ``events_per_s``.
    """
    if reps < 2:
        raise InputError("reps", "need at least 2 replications for a standard error")
    if engine not in ENGINES:
        raise InputError("engine", f"expected one of {', '.join(ENGINES)}, got {engine!r}")
    p = make_params(st, n, policy, warmup, horizon, **kw)
    t0 = time.perf_counter()
    if engine == "uniformized":
        from jaxq.sim.network_lockstep import simulate_final

        final, compile_s = simulate_final(p, policy, reps, seed, chunk, progress, kw.get("snap_times"))
        wall = time.perf_counter() - t0
        out = summarize(final, p, max(wall - compile_s, 1e-9))
        out.update(wall_s=wall, compile_s=compile_s, steps=final["steps"])
    else:
        final = simulate(SWC_ENGINE if policy == "swc" else STATIC_ENGINE, p, reps, seed, chunk=chunk, block=block,
                         progress=progress)
        wall = time.perf_counter() - t0
        out = summarize(final, p, wall)
    if st.scaling == "halfin-whitt":
        out.update(_weighted_idleness(st, n, final, p))
    out.update(n=n, reps=reps, policy=policy, warmup=warmup, horizon=horizon, scaling=st.scaling, engine=engine)
    out["pool_sizes"] = np.asarray(p["N"])
    out["arrival_rates"] = np.asarray(p["lam"])
    return out
