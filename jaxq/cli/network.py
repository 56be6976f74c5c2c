"""``jaxq network analyze|simulate|sde NETWORK.toml``: many-server parallel server networks (seeds 001, 003)."""

from __future__ import annotations

import math

import numpy as np

from jaxq.cli.output import progress
from jaxq.errors import InputError


def _labels(pairs) -> list[list[int]]:
    return [[int(i) + 1, int(j) + 1] for i, j in pairs]


def analyze(net, basis_pool: int | None = None) -> dict:
    """All analytic objects of a network: LP (2.3)/SPP, CRP, LAP, and (critical load) the diffusion data."""
    from jaxq.diffusion.network import b_matrices, choose_basis_pool, diffusion_limit, network_type
    from jaxq.planning.lap import lap_equilibrium
    from jaxq.planning.network_lp import resolve_scaling, solve_static_plan

    plan = solve_static_plan(net.lam, net.mu, net.nu)
    scaling = resolve_scaling(net.scaling, plan, net.has_second_order)
    tree = plan.basic
    num_j = tree.shape[1]
    if basis_pool is not None and not 1 <= basis_pool <= num_j:
        raise InputError("basis-pool", f"expected a pool label in 1..{num_j}")
    jhat = choose_basis_pool(net.mu, tree) if basis_pool is None else basis_pool - 1
    eq = lap_equilibrium(net.lam, net.mu, net.nu, tree, net.lap_order)
    out: dict = {
        "scaling": scaling,
        "rho": plan.rho,
        "xi_star": plan.xi,
        "x_star": plan.x_star,
        "z_star": plan.z_star,
        "tree": plan.graph_is_tree,
        "basic_activities": _labels(np.argwhere(tree)),
        "crp": plan.crp,
        "spp_routing": plan.routing,
        "spp_workload": plan.workload,
        "spp_alpha": plan.alpha,
        "network_type": network_type(net.mu, tree),
        "basis_pool": jhat + 1,
    }
    if scaling == "halfin-whitt":
        dl = diffusion_limit(net, plan, jhat)
        out.update(
            ell=dl.ell,
            B1=dl.B1,
            B2=dl.B2,
            b1_diagonal=dl.b1_diagonal,
            spare_capacity=dl.spare_capacity,
            phi_edges=_labels(dl.edges),
            phi_matrix=dl.phi_matrix,
        )
    else:
        b1, b2 = b_matrices(net.mu, tree, jhat)
        out.update(ell=None, B1=b1, B2=b2, spare_capacity=None)
    out.update(
        lap_class_order=[i + 1 for i in eq.class_order],
        lap_activity_order=_labels(eq.order),
        lap_psi_star=eq.psi,
        lap_routing=eq.routing,
        lap_unserved=eq.unserved,
        lap_assumption_holds=eq.assumption_holds,
    )
    return out


def _run_analyze(args) -> dict:
    from jaxq.model import load

    return analyze(_network(load(args.network)), args.basis_pool)


def _network(obj):
    from jaxq.model.network import Network

    if not isinstance(obj, Network):
        raise InputError("system.kind", "expected 'network'")
    return obj


def _run_simulate(args) -> dict:
    from jaxq.model import load
    from jaxq.sim import network_ctmc

    net = _network(load(args.network))
    if not (args.n > 0 and math.isfinite(args.n)):
        raise InputError("n", "must be positive")
    st = network_ctmc.setup(net)
    with progress(args.reps, "replications", enabled=args.reps >= 256) as tick:
        res = network_ctmc.run(
            st,
            args.n,
            args.policy,
            reps=args.reps,
            warmup=args.warmup,
            horizon=args.horizon,
            seed=args.seed,
            chunk=args.chunk,
            progress=tick,
            engine="uniformized" if args.engine == "auto" else args.engine,
        )
    keys = ["mean_in_system", "mean_queue", "mean_idle", "mean_busy", "p_wait", "p_wait_class", "mean_idle_total"]
    out = {k: res[k] for k in ("n", "reps", "policy", "scaling", "warmup", "horizon", "engine")}
    out["pool_sizes"] = res["pool_sizes"]
    for k in keys:
        out[k], out[k + "_stderr"] = res[k], res[k + "_stderr"]
    if st.scaling == "halfin-whitt":
        from jaxq.diffusion.network import diffusion_limit, spare_capacity_n

        dl = diffusion_limit(net, st.plan)
        out["spare_capacity"] = dl.spare_capacity
        out["spare_capacity_n"] = spare_capacity_n(net, st.plan, args.n, dl.basis_pool)
        for k in ("mean_idleness_hat", "weighted_idleness_hat"):
            out[k], out[k + "_stderr"] = res[k], res[k + "_stderr"]
    # Stationary histograms of the diffusion-scaled state: one row per class, then the total <e, X_hat>.
    out.update(hist_edges=res["hist_edges"], hist_density=res["hist_density"])
    out.update(events=res["events"], wall_s=res["wall_s"], events_per_s=res["events_per_s"])
    return out


def _run_sde(args) -> dict:
    from jaxq.diffusion.network import diffusion_limit
    from jaxq.model import load
    from jaxq.sde.network_euler import simulate_diffusion
    from jaxq.sim import network_ctmc

    net = _network(load(args.network))
    if args.paths < 2 or not args.dt > 0:
        raise InputError("paths" if args.paths < 2 else "dt", "need paths >= 2 and dt > 0")
    st = network_ctmc.setup(net)
    if st.scaling != "halfin-whitt":
        raise InputError("system.lambda", "the diffusion limit (2.27) needs a critically loaded network")
    dl = diffusion_limit(net, st.plan)
    num_i, num_j = dl.tree.shape
    uc = np.full(num_i, 1.0 / num_i) if args.uc is None else np.array(args.uc, float)
    us = np.full(num_j, 1.0 / num_j) if args.us is None else np.array(args.us, float)
    res = simulate_diffusion(
        dl, uc, us, args.control, paths=args.paths, dt=args.dt, horizon=args.horizon, warmup=args.warmup, seed=args.seed
    )
    keep = ["mean_neg", "mean_pos", "mean_x", "identity_rhs"]
    out = {k: res[k] for k in ("control", "paths", "dt", "horizon", "warmup")}
    out.update(uc=uc, us=us, spare_capacity=dl.spare_capacity, idleness_weight=res["idleness_weight"])
    for k in keep:
        out[k], out[k + "_stderr"] = res[k], res[k + "_stderr"]
    return out


def register(subparsers) -> None:
    """Add ``network`` with its sub-subcommands ``analyze``, ``simulate`` and ``sde``."""
    from jaxq.cli import _Parser, add_common

    p = subparsers.add_parser("network", help="many-server networks: LP, spare capacity, LAP, CTMC (seeds 001, 003)")
    sub = p.add_subparsers(dest="network_command", metavar="ACTION", parser_class=_Parser)
    p.set_defaults(func=lambda args: p.error("choose an action: analyze, simulate or sde"))

    a = sub.add_parser("analyze", help="LP (2.3), CRP, xi*, l, Phi, B1, B2, spare capacity, SPP duals, LAP, psi*")
    a.add_argument("network", help="NETWORK.toml (kind = 'network')")
    a.add_argument("--basis-pool", type=int, default=None, help="pool jhat (1-based) of the basis for B1, B2")
    add_common(a)
    a.set_defaults(func=_run_analyze)

    s = sub.add_parser("simulate", help="CTMC of the n-th system: stationary averages with standard errors")
    s.add_argument("network", help="NETWORK.toml (kind = 'network')")
    s.add_argument("--n", type=float, required=True, help="scale n (Halfin-Whitt) or r (underloaded)")
    s.add_argument("--policy", choices=("priority", "lap", "lqfs", "swc"), default="priority")
    s.add_argument("--reps", type=int, default=64, help="replications (default 64)")
    s.add_argument("--warmup", type=float, default=20.0, help="warm-up time T0 (default 20)")
    s.add_argument("--horizon", type=float, default=200.0, help="horizon T (default 200)")
    s.add_argument("--chunk", type=int, default=None, help="replications per compiled call")
    s.add_argument("--engine", choices=("auto", "event", "uniformized"), default="auto",
                   help="event: one event per step with exact holding times; uniformized: the same chain "
                        "uniformised, replications in lockstep (several times faster); auto: uniformized")
    add_common(s, seed=True)
    s.set_defaults(func=_run_simulate)

    d = sub.add_parser("sde", help="Euler scheme for the diffusion (2.27): long-run averages, identity (3.6)")
    d.add_argument("network", help="NETWORK.toml (kind = 'network', critically loaded)")
    d.add_argument("--control", choices=("constant", "proportional"), default="constant")
    d.add_argument("--uc", type=float, nargs="+", default=None, help="u^c (queue shares), default uniform")
    d.add_argument("--us", type=float, nargs="+", default=None, help="u^s (idleness shares), default uniform")
    d.add_argument("--paths", type=int, default=256)
    d.add_argument("--dt", type=float, default=0.01)
    d.add_argument("--horizon", type=float, default=200.0)
    d.add_argument("--warmup", type=float, default=20.0)
    add_common(d, seed=True)
    d.set_defaults(func=_run_sde)


def render(r: dict) -> str:
    """The table view; the stationary histograms are long arrays, printed with --json only."""
    from jaxq.cli.output import table

    short = {k: v for k, v in r.items() if k not in ("hist_edges", "hist_density")}
    note = "\n(histograms of X_hat: hist_edges, hist_density with --json)" if "hist_density" in r else ""
    return table(short) + note
