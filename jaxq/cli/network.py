"""``jaxq network analyze|simulate|sde NETWORK.toml``: many-server parallel server networks (the uniform-stability
and LAP-tightness papers)."""

from __future__ import annotations

import math

from jaxq.api import InputError
from jaxq.cli import add_target, target_of
from jaxq.cli.progress import progress


def _run_analyze(args) -> dict:
    from jaxq.api import analyze_network

    return analyze_network(_network(args.network), args.basis_pool).to_dict()


def _network(path):
    """Load a configuration and insist on ``kind = "network"``."""
    from jaxq.api import read_system

    obj = read_system(path)
    if type(obj).__name__ != "Network":
        raise InputError("system.kind", "expected 'network'")
    return obj


def _run_simulate(args) -> dict:
    from jaxq.api import run_reps, simulate_network

    net = _network(args.network)
    if not (args.n > 0 and math.isfinite(args.n)):
        raise InputError("n", "must be positive")
    if args.chunk is not None and args.chunk < 1:
        raise InputError("chunk", f"must be >= 1, got {args.chunk}")
    if args.reps is not None and args.reps < 2:
        raise InputError("reps", f"need at least 2 replications, got {args.reps}")
    target = target_of(args)
    with progress("network simulate") as tick:
        def go(reps, seed):
            return simulate_network(net, args.n, args.policy, reps=reps, warmup=args.warmup, horizon=args.horizon,
                                    seed=seed, chunk=args.chunk, progress=tick, engine=args.engine,
                                    cv=args.cv == "on")

        res = run_reps(go, 64 if args.reps is None else args.reps, args.seed, target, key="rel-se",
                       estimate="mean_queue")
    out = res.to_dict()
    for k in ("mean_busy", "mean_busy_stderr", "mean_abs_dev", "mean_abs_dev_stderr", "rms_dev", "rms_dev_stderr",
              "throughput", "throughput_stderr", "arrival_rates", "idleness_weights", "steps",
              *(f"{k}_{x}" for k in ("mean_abs_dev", "rms_dev", "throughput")
                for x in ("plain", "plain_stderr", "variance_reduction"))):
        out.pop(k, None)
    full = res.to_dict()
    for k in ("mean_busy", "mean_busy_stderr", "mean_busy_plain", "mean_busy_plain_stderr", "mean_busy_variance_reduction"):
        if k in full:
            out[k] = full[k]
    return out


def _run_sde(args) -> dict:
    from jaxq.api import analyze_network, network_diffusion, simulate_network_diffusion

    net = _network(args.network)
    if args.paths < 2 or not args.dt > 0:
        raise InputError("paths" if args.paths < 2 else "dt", "need paths >= 2 and dt > 0")
    dl = network_diffusion(analyze_network(net))  # long-run averages: critically loaded, spare capacity > 0
    with progress("network sde") as tick:  # uc, us default to uniform shares; info reports the ones used
        res = simulate_network_diffusion(dl, args.uc, args.us, args.control, paths=args.paths, dt=args.dt,
                                         horizon=args.horizon, warmup=args.warmup, seed=args.seed,
                                         cv=args.cv == "on", progress=tick)
    out = res.to_dict()
    for k in ("times", "mean_sum_path", "reps"):
        out.pop(k, None)
    out.update(spare_capacity=dl.spare_capacity)
    return out


def register(subparsers) -> None:
    """Add ``network`` with its sub-subcommands ``analyze``, ``simulate`` and ``sde``.

    Args:
        subparsers (argparse._SubParsersAction): The subcommands of the ``jaxq`` parser.
    """
    from jaxq.api import arg_type
    from jaxq.cli import _Parser, add_common, add_cv

    p = subparsers.add_parser("network", help="many-server networks: LP, spare capacity, LAP, CTMC (the "
                                              "uniform-stability and LAP-tightness papers)")
    sub = p.add_subparsers(dest="network_command", metavar="ACTION", parser_class=_Parser)
    p.set_defaults(func=lambda args: p.error("choose an action: analyze, simulate or sde"))

    a = sub.add_parser("analyze", help="LP (2.3), CRP, xi*, l, Phi, B1, B2, spare capacity, SPP duals, LAP, psi*")
    a.add_argument("network", help="NETWORK.toml (kind = 'network')")
    a.add_argument("--basis-pool", type=int, default=None, help="pool jhat (1-based) of the basis for B1, B2")
    add_common(a)
    a.set_defaults(func=_run_analyze)

    s = sub.add_parser("simulate", help="CTMC of the n-th system: time averages over [warmup, horizon] with standard errors (the stationary averages of a stable system)")
    s.add_argument("network", help="NETWORK.toml (kind = 'network')")
    s.add_argument("--n", type=arg_type("number"), required=True, help="scale n (Halfin-Whitt) or r (underloaded)")
    s.add_argument("--policy", choices=("priority", "lap", "lqfs", "swc"), default="priority")
    s.add_argument("--reps", type=int, default=None, help="replications (default 64)")
    s.add_argument("--warmup", type=float, default=20.0, help="warm-up time T0 (default 20)")
    s.add_argument("--horizon", type=float, default=200.0, help="horizon T (default 200)")
    s.add_argument("--chunk", type=int, default=None, help="replications per compiled call")
    s.add_argument("--engine", choices=("auto", "event", "uniformized"), default="auto",
                   help="event: one event per step with exact holding times; uniformized: the same chain "
                        "uniformised, replications in lockstep (several times faster); auto: uniformized")
    add_cv(s)
    add_target(s)
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
    add_cv(d)
    add_common(d, seed=True)
    d.set_defaults(func=_run_sde)


def render(r: dict) -> str:
    """The table view; the stationary histograms are long arrays, printed with --json only.

    Args:
        r: The result of the action.

    Returns:
        The lines of text.
    """
    from jaxq.cli.output import table

    short = {k: v for k, v in r.items() if k not in ("hist_edges", "hist_density")}
    note = "\n(histograms of X_hat: hist_edges, hist_density with --json)" if "hist_density" in r else ""
    return table(short) + note
