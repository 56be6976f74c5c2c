"""``jaxq sde SYSTEM.toml``: Monte Carlo of the reflected SDE (2.23)/(2.24) and its discounted cost V_WCP(z0)."""

from __future__ import annotations

from jaxq.api import InputError
from jaxq.cli import add_common, add_cv, add_target, target_of
from jaxq.cli.analyze import load_pss2x2
from jaxq.cli.output import to_jsonable
from jaxq.cli.progress import progress

SCHEME_NAMES = "skew, exact, euler"  # jaxq.api.SDE_SCHEMES (which imports the SDE schemes: not for the parser)


def register(sub) -> None:
    """Add the ``sde`` command to the subcommands.

    Args:
        sub (argparse._SubParsersAction): The subcommands of the ``jaxq`` parser.
    """
    p = sub.add_parser("sde", help="simulate the reflected workload SDE and estimate V_WCP(z0)")
    p.add_argument("system", help="system configuration (TOML, kind = 'pss2x2')")
    p.add_argument("--paths", type=int, default=None, help="number of paths (default 20000)")
    p.add_argument("--dt", type=float, default=None,
                   help="time step (default 0.001, 0.001/gamma when gamma > 1, and at most 0.01 sigma^2/b^2; "
                        "at most 0.1/gamma and 0.1 sigma^2/b^2)")
    p.add_argument("--scheme", default=None, help=f"one of {SCHEME_NAMES} (default skew)")
    p.add_argument("--z0", type=float, default=0.0, help="initial workload (default 0)")
    p.add_argument("--switch-at", type=float, default=None, help="switching level (default z*; single mode: none)")
    p.add_argument("--horizon", type=float, default=None,
                   help="truncation time T, run as ceil(T/dt) steps (default: truncation bound <= 1e-4 of the "
                        "exact value)")
    add_cv(p)
    add_target(p, "paths")
    add_common(p, seed=True)
    p.set_defaults(func=run)


def run(args) -> dict:
    """Monte Carlo of the reflected SDE of ``args.system`` and its discounted cost, beside the exact value.

    Args:
        args (argparse.Namespace): The parsed command line.

    Returns:
        The result, as a dict, with the error against the exact value.

    Raises:
        InputError: Naming ``paths`` (fewer than 2) or ``scheme`` (an unknown one).
    """
    if args.paths is not None and args.paths < 2:
        raise InputError("paths", "need at least 2 paths")
    target = target_of(args, "paths")
    from jaxq.api import DEFAULT_SDE_SCHEME, SDE_SCHEMES, analyze, run_reps, wcp_value

    args.scheme = DEFAULT_SDE_SCHEME if args.scheme is None else args.scheme
    if args.scheme not in SDE_SCHEMES:
        raise InputError("scheme", f"expected one of {', '.join(SDE_SCHEMES)}, got {args.scheme!r}")
    a = analyze(load_pss2x2(args.system))
    with progress("sde") as tick:  # the driver announces its path-steps (start) before the first one
        def go(paths, seed):
            return wcp_value(a, args.z0, args.switch_at, dt=args.dt, horizon=args.horizon, paths=paths, seed=seed,
                             scheme_name=args.scheme, cv=args.cv == "on", progress=tick)

        r = run_reps(go, 20000 if args.paths is None else args.paths, args.seed, target, key="rel-se")
    out = r.to_dict()
    err = r.value - r.info["V_exact"]
    # no standard error (paths that agree to the last bit, as from a huge z0): no error in units of it (null)
    out.update(error_in_stderr=err / r.stderr if r.stderr > 0 else None, relative_error=err / r.info["V_exact"],
               paths=r.reps, z_star=a.z_star, case=a.case, policy=a.policy, seed=args.seed)
    return out


def render(r: dict) -> str:
    """The result as text: the estimate beside the exact value, its interval, the paths and the time.

    Args:
        r: The result of :func:`run`.

    Returns:
        The lines of text.
    """
    r = to_jsonable(r)
    sw = "none (single mode)" if r["switch_at"] is None else f"{r['switch_at']:.6g}"
    in_se = "n/a" if r["error_in_stderr"] is None else f"{r['error_in_stderr']:+.2f}"
    lo, hi = r["ci95"]
    return "\n".join([
        f"reflected SDE ({r['case']} mode, policy {r['policy']}), scheme {r['scheme']}, switching at {sw}",
        f"  V_hat = {r['V_hat']:.6g} +/- {r['stderr']:.2g} (stderr)   V_exact = {r['V_exact']:.6g}   "
        f"error = {r['relative_error']:+.3%} ({in_se} stderr)",
        f"  95% CI [{lo:.10g}, {hi:.10g}]: V_hat -/+ 1.96 stderr, and up to the truncation bound above "
        f"(the tail beyond T only adds)",
        *([f"  plain V = {r['V_plain']:.6g} +/- {r['stderr_plain']:.2g}: the Ito-sum control reduces the variance "
           f"{r['variance_reduction']:.3g}x"] if "V_plain" in r else []),
        f"  {r['paths']} paths, dt = {r['dt']:g}, horizon T = {r['horizon']:g} (truncation bound {r['truncation_bound']:.2g})",
        f"  {r['wall_s']:.1f} s, {r['path_steps_per_s']:.3g} path-steps/s",
    ])
