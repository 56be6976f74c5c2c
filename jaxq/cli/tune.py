"""``jaxq tune SYSTEM.toml``: tune the switching level (and, for the prelimit, the threshold) and compare with z*
and V0; the prelimit target evaluates the tuned policy against the default on fresh replications."""

from __future__ import annotations

from jaxq.api import InputError
from jaxq.cli import add_common
from jaxq.cli.analyze import load_pss2x2
from jaxq.cli.output import progress

TARGETS = ("exact", "sde", "prelimit")


def register(sub) -> None:
    """Add the ``tune`` command to the subcommands.

    Args:
        sub (argparse._SubParsersAction): The subcommands of the ``jaxq`` parser.
    """
    from jaxq.api import MAX_MAGNITUDE, arg_type

    p = sub.add_parser(
        "tune",
        help="tune the switching level z (by default L-BFGS on the limit's exact cost) or, on the n-th system, "
             "z and the threshold constant c (by default a search)",
        description="Tune the switching level z of Theorem 2.11's policy and compare it with z* and V0. By default "
                    "(--target exact) L-BFGS (optax) minimises the limit's closed-form cost J(0; z); --target sde "
                    "minimises the workload SDE's Monte Carlo cost by L-BFGS on pathwise gradients; --target "
                    "prelimit tunes z and, for a policy with a threshold, the constant c of Theta_n = ceil(c n^a) "
                    "on J_n of the n-th system, by one-dimensional searches on common random numbers (--method "
                    "search, the default) or Adam on smoothed gradients (--method gradient).",
    )
    p.add_argument("system", help="system configuration (TOML, kind = 'pss2x2', dual-mode case)")
    p.add_argument("--target", choices=TARGETS, default="exact", help="cost to minimise: exact (default: the limit's closed-form cost, L-BFGS), "
                        "sde (the workload SDE's Monte Carlo cost, pathwise gradients) or prelimit (J_n, --method)")
    p.add_argument("--z-init", type=arg_type("float", gt=0, le=MAX_MAGNITUDE), default=None,
                   help="starting switching level (workload units)")
    p.add_argument("--max-iter", type=arg_type("int", lo=1, hi=100_000), default=200,
                   help="iteration cap (exact target)")
    p.add_argument("--n", type=arg_type("float", ge=1, le=MAX_MAGNITUDE), default=100.0,
                   help="index of the prelimit system (prelimit target)")
    p.add_argument("--policy", default="auto", help="policy whose parameters are tuned (prelimit target)")
    p.add_argument("--method", choices=("search", "gradient"), default="search",
                   help="prelimit target: one-dimensional searches on common random numbers (default, about a "
                        "minute at n = 1000) or Adam on smoothed gradients (about 15x the work)")
    p.add_argument("--span", choices=("wide", "local"), default="wide",
                   help="prelimit search: first grids wide (Theta_n x 1/2..8, z x 0.6..1.6) or local around "
                        "--z-init/--c-init (e.g. the values tuned at a smaller n)")
    p.add_argument("--c-init", type=arg_type("float", gt=0, le=MAX_MAGNITUDE), default=None,
                   help="prelimit target: starting threshold constant c of Theta_n = ceil(c n^a) (default: the "
                        "simulator's default Theta_n)")
    p.add_argument("--eval-reps", type=arg_type("int", lo=2, hi=2**20), default=None,
                   help="prelimit target: fresh replications of the final evaluation (default 4 x --reps)")
    p.add_argument("--chains", type=arg_type("int", lo=2, hi=1024), default=4,
                   help="independent chains for the confidence interval")
    p.add_argument("--iterations", type=arg_type("int", lo=2, hi=100_000), default=None,
                   help="optimiser iterations (per stage for sde)")
    p.add_argument("--reps", type=arg_type("int", lo=2, hi=2**20), default=None,
                   help="prelimit target: replications per candidate (search, default 128) or antithetic pairs "
                        "per gradient (gradient, default 256)")
    p.add_argument("--paths", type=arg_type("int", lo=2, hi=2**24), default=2000,
                   help="paths per evaluation (sde target)")
    p.add_argument("--dt", type=arg_type("float", gt=0, lt=1), default=None,
                   help="time step (sde target; default min(0.02, 0.01/gamma), at most 0.1/gamma)")
    p.add_argument("--figure", default=None, help="write the optimisation trajectory to this image file (PNG, ...)")
    add_common(p, seed=True)
    p.set_defaults(func=run)


def check_figure(path: str | None) -> None:
    """Refuse, before any work, a figure path that cannot be written (:func:`jaxq.api.check_output_file`: empty,
    a directory, a missing or unwritable folder) or whose format matplotlib cannot write.

    Args:
        path: The figure's path (None: no figure).

    Raises:
        InputError: Naming ``--figure``.
    """
    if path is None:
        return
    from jaxq.api import check_output_file

    p = check_output_file(path, "--figure")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    formats = Figure().canvas.get_supported_filetypes()
    if p.suffix.lower().lstrip(".") not in formats:
        raise InputError("--figure", f"unsupported image format {p.suffix or '(none)'!r}; use one of "
                                     f"{', '.join('.' + f for f in sorted(formats))}")


def _save(fig, path: str) -> None:
    """Render the figure in memory and write it atomically: no half-written image on any failure."""
    import io
    from pathlib import Path

    from jaxq.cli.output import write_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lower().lstrip("."))
    write_atomic(path, buf.getvalue())


def dual_analysis(path):
    """The analysis of a dual-mode system; a single-mode one has no switching level to tune.

    Args:
        path (str | pathlib.Path): The system configuration (TOML, kind = 'pss2x2').

    Returns:
        (jaxq.diffusion.workload.Analysis): The analysis.

    Raises:
        InputError: Naming ``system`` for a single-mode system.
    """
    from jaxq.api import analyze

    a = analyze(load_pss2x2(path))
    if a.case != "dual":
        raise InputError("system", "single-mode case (2.19): the optimal policy never switches, so there is no z to tune")
    return a


def check_z_init(z):
    """Refuse a starting switching level that is not positive.

    Args:
        z (float | None): The starting level (None: the default).

    Raises:
        InputError: Naming ``--z-init``.
    """
    if z is not None and not z > 0:
        raise InputError("--z-init", f"must be positive, got {z}")


def trajectory_figure(path: str, trajectory, z_star: float, v0: float, scale: float, title: str) -> None:
    """Plot z and the cost (units of V0) against the iteration.

    Args:
        path: The figure's path.
        trajectory (list[tuple[float, float]]): ``(z, cost)`` per iteration, the cost in the limit's own units.
        z_star: The switching point z*.
        v0: The lower bound V0.
        scale: The factor from the trajectory's costs to those of V0.
        title: The title of the first panel.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    it = range(1, len(trajectory) + 1)
    fig, ax = plt.subplots(1, 2, figsize=(8, 3), dpi=100)
    ax[0].plot(it, [z for z, _ in trajectory], "o-", ms=3)
    ax[0].axhline(z_star, color="k", ls="--", label="z* (smooth fit)")
    ax[0].set(xlabel="iteration", ylabel="z", title=title)
    ax[0].legend()
    ax[1].semilogy(it, [max(c * scale - v0, 1e-16) for _, c in trajectory], "o-", ms=3)
    ax[1].set(xlabel="iteration", ylabel="cost - V0")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def _positive_ints(args, names):
    for name in names:
        v = getattr(args, name)
        if v is not None and v < 2:
            raise InputError(f"--{name}", f"must be at least 2, got {v}")


def run(args) -> dict:
    """Tune the switching level of ``args.system`` for ``args.target`` and compare it with z* and V0 (the
    prelimit target: :func:`run_prelimit`).

    Args:
        args (argparse.Namespace): The parsed command line.

    Returns:
        The result, as a dict.

    Raises:
        InputError: Naming the option at fault, or ``system`` for a single-mode system.
    """
    _positive_ints(args, ("chains", "iterations", "reps", "paths", "eval_reps"))
    check_z_init(args.z_init)
    check_figure(args.figure)
    if args.target == "prelimit":
        return run_prelimit(args)
    a = dual_analysis(args.system)
    scale = a.cost_scale()
    out = {"target": args.target, "z_star": a.z_star, "V0": a.V0}
    from jaxq.api import tune

    if args.target == "exact":
        res = tune(a.system, target="exact", z_init=args.z_init, max_iter=args.max_iter)
        traj = res.trajectory
        out.update(z_tuned=res.z, z_ci=None, cost_tuned=res.cost * scale, iterations=res.iterations)
    else:
        from jaxq.api import sde_tuning_step

        if args.dt is not None and not (0 < args.dt < 1):
            raise InputError("--dt", f"must lie in (0, 1), got {args.dt}")
        its = args.iterations or 12
        dt = sde_tuning_step(a, args.dt, paths=args.paths, chains=args.chains, iterations=its, dt_key="--dt",
                             paths_key="--paths")
        with progress(args.chains * 3 * its, "tune sde") as tick:
            res = tune(a.system, target="sde", paths=args.paths, dt=dt, chains=args.chains, seed=args.seed,
                       z_init=args.z_init, iterations=its, progress=tick)
        cost = a.wcp_cost(0.0, switch_at=res.z) * scale  # the exact cost of the hard policy at the tuned level
        traj = [(float(z), a.wcp_cost(0.0, switch_at=float(z))) for z in res.chains[0, 1:]]
        out.update(z_tuned=res.z, z_ci=list(res.z_ci), cost_tuned=cost, iterations=int(res.chains.shape[1] - 1),
                   chains=res.chains, smoothing_bias_at_z_star=res.smoothing_bias_at_z_star * scale,
                   smoothing_bias_stderr=res.smoothing_bias_stderr * scale, paths=args.paths, dt=dt)
    out["z_rel_error"] = abs(out["z_tuned"] / a.z_star - 1)
    out["trajectory"] = [[z, c * scale] for z, c in traj]
    if args.figure:
        trajectory_figure(args.figure, traj, a.z_star, a.V0, scale, f"tuning z, target {args.target}")
        out["figure"] = args.figure
    return out


def run_prelimit(args) -> dict:
    """Tune z (and the threshold constant c) on J_n of the n-th system, then evaluate the tuned policy against
    the default on fresh replications.

    Args:
        args (argparse.Namespace): The parsed command line (``--target prelimit``).

    Returns:
        The result, as a dict.
    """
    from jaxq.api import (TUNE_GRADIENT_REPS, TUNE_SEARCH_REPS, analyze, check_rates, check_tunable, check_work,
                          pss_default_horizon, pss_events_per_replication, tune)

    system = load_pss2x2(args.system)
    a = analyze(system)
    check_tunable(a, args.policy)  # refuse before any output
    check_rates(system, args.n, "--n")
    its = args.iterations or 20
    search = args.method == "search"
    reps = args.reps or (TUNE_SEARCH_REPS if search else TUNE_GRADIENT_REPS)
    per_rep = pss_events_per_replication(system, args.n, pss_default_horizon(system, args.n, a.V0))
    runs = 40 if search else 2 * args.chains * its  # the search stops after at most ~30 candidates
    check_work("--n", 2 * reps, per_rep)
    check_work("--reps", reps * runs, per_rep, per_replication_limit=float("inf"))
    with progress(16 if search else args.chains * its, f"tune prelimit n={args.n:g}") as tick:
        res = tune(system, target="prelimit", n=args.n, policy=args.policy, method=args.method, iterations=its,
                   reps=reps, chains=args.chains, seed=args.seed, z_init=args.z_init, c_init=args.c_init,
                   span=args.span, evaluate_reps=args.eval_reps, progress=tick, analysis=a)
    ev = res.evaluation
    out = {
        "target": "prelimit", "method": res.method, "n": args.n, "z_tuned": res.z, "z_ci": res.z_ci and list(res.z_ci),
        "z_star": a.z_star, "c_tuned": res.c, "c_ci": res.c_ci and list(res.c_ci),
        "cost_tuned": ev["J_tuned"], "cost_tuned_stderr": ev["J_tuned_stderr"], "cost_tuned_ci95": ev["J_tuned_ci95"],
        "cost_theory": ev["J_default"], "cost_theory_stderr": ev["J_default_stderr"],
        "cost_theory_ci95": ev["J_default_ci95"], "difference": ev["difference"],
        "difference_stderr": ev["difference_stderr"], "difference_ci95": ev["difference_ci95"],
        "theta_tuned": ev["theta_tuned"], "theta_theory": ev["theta_default"], "V0": a.V0,
        "ratio_tuned": ev["ratio_tuned"], "ratio_theory": ev["ratio_default"], "eval_reps": ev["reps"],
        "eval_seed": ev["seed"], "seeds": res.seeds, "tuning_cost": res.cost,
    }
    if search:
        out["candidates"] = list(res.trace)
    else:
        out.update(iterations=its, chains=res.chains)
    if args.figure:
        prelimit_figure(args.figure, res, a, args.n)
        out["figure"] = args.figure
    return out


def prelimit_figure(path: str, res, a, n: float) -> None:
    """Search: the candidates' costs against Theta_n and z; gradient: the chains of (z, c) against the iteration.

    Args:
        path: The figure's path.
        res (typing.Any): The tuning result of :func:`jaxq.api.tune` with ``target="prelimit"``.
        a (jaxq.diffusion.workload.Analysis): The system's analysis.
        n: The scale n.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(8, 3), dpi=100)
    if res.method == "search":
        rows = list(res.trace)
        at_z = [r for r in rows if r["z"] == res.z and r["theta"] is not None]
        at_t = [r for r in rows if r["theta"] == res.theta and r["z"] is not None]
        for axis, pts, key, label in ((ax[0], at_z, "theta", r"$\Theta_n$"), (ax[1], at_t, "z", "z")):
            pts = sorted(pts, key=lambda r: r[key])
            axis.errorbar([r[key] for r in pts], [r["J"] for r in pts], yerr=[1.96 * r["stderr"] for r in pts],
                          fmt="o-", ms=3, capsize=2, label="search (common random numbers)")
            axis.axhline(a.V0, color="k", ls="--", lw=1, label="V0")
            axis.set(xlabel=label, ylabel="J_n (search replications)")
        if at_z:
            ax[0].set_xscale("log")
        ev = res.evaluation
        if ev is not None and ev["theta_default"] is not None:
            ax[0].axvline(ev["theta_default"], color="gray", ls=":", lw=1, label="default")
        if a.z_star is not None:
            ax[1].axvline(a.z_star, color="gray", ls=":", lw=1, label="z*")
        ax[0].set_title(f"prelimit n = {n:g}")
        ax[0].legend(fontsize=7)
    else:
        for m in range(res.chains.shape[0]):
            ax[0].plot(res.chains[m, :, 0], lw=1)
            ax[1].plot(res.chains[m, :, 1], lw=1)
        if a.z_star is not None:
            ax[0].axhline(a.z_star, color="k", ls="--", label="z*")
            ax[0].legend()
        ax[0].set(xlabel="iteration", ylabel="z", title=f"prelimit n = {n:g}")
        ax[1].set(xlabel="iteration", ylabel="c in ceil(c n^a)")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def render(r: dict) -> str:
    """The result as text: the tuned level beside z*, and the costs beside V0.

    Args:
        r: The result of :func:`run`.

    Returns:
        The lines of text.
    """
    what = "near-optimal range" if r.get("method") == "search" else "95% CI"  # search: the grid points tied with the best
    ci = f" ({what} {r['z_ci'][0]:.6g} .. {r['z_ci'][1]:.6g})" if r.get("z_ci") else ""
    z = "-" if r["z_tuned"] is None else f"{r['z_tuned']:.10g}"
    zs = "-" if r["z_star"] is None else f"{r['z_star']:.10g}"
    lines = [f"target {r['target']}: z_tuned = {z}{ci}  (z* = {zs})"]
    if r["target"] == "prelimit":
        if r["c_tuned"] is not None:
            lines.append(f"c_tuned = {r['c_tuned']:.6g} ({what} {r['c_ci'][0]:.6g} .. {r['c_ci'][1]:.6g}), "
                         f"Theta_n {r['theta_theory']} -> {r['theta_tuned']}")
        lines.append(f"J_n tuned = {r['cost_tuned']:.6g} +- {r['cost_tuned_stderr']:.2g}, default = {r['cost_theory']:.6g} "
                     f"+- {r['cost_theory_stderr']:.2g}, difference {r['difference']:.4g} +- {r['difference_stderr']:.2g}, "
                     f"V0 = {r['V0']:.6g}  (J/V0 {r['ratio_tuned']:.4g} tuned, {r['ratio_theory']:.4g} default; "
                     f"{r['eval_reps']} fresh replications each, seed {r['eval_seed']})")
        lines.append(f"tuning ({r['method']}): {r['tuning_cost']['wall_s']:.1f} s, {r['tuning_cost']['steps']} "
                     f"{'candidates' if r['method'] == 'search' else 'gradient steps'}")
    else:
        lines.append(f"cost_tuned = {r['cost_tuned']:.10g}  V0 = {r['V0']:.10g}  after {r['iterations']} iterations")
    return "\n".join(lines)
