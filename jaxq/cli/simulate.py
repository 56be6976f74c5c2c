"""``jaxq simulate SYSTEM.toml --n N``: Monte Carlo of the discounted cost J_n of the n-th 2x2 system."""

from __future__ import annotations

import math

from jaxq.api import InputError
from jaxq.cli import add_common, add_cv, add_target, target_of
from jaxq.cli.analyze import load_pss2x2
from jaxq.cli.progress import progress


def register(sub) -> None:
    """Add the ``simulate`` command to the subcommands.

    Args:
        sub (argparse._SubParsersAction): The subcommands of the ``jaxq`` parser.
    """
    from jaxq.api import DEFAULT_THETA_EXPONENT, DEFAULT_THETA_RULE, ENGINES, POLICY_CHOICES, THETA_RULES, arg_type

    p = sub.add_parser("simulate", help="simulate the n-th 2x2 system under a policy (discounted cost J_n)")
    p.add_argument("system", help="system configuration (TOML, kind = 'pss2x2') or a bundled example name")
    p.add_argument("--n", type=arg_type("number"), required=True, help="index n of the system (rates n lambda + sqrt(n) ...)")
    p.add_argument("--reps", type=int, default=None,
                   help="replications (default: stop at a relative standard error of 0.001, at most 1000 "
                        "replications; see --rel-se)")
    p.add_argument(
        "--policy",
        default="auto",
        choices=POLICY_CHOICES,
        help="auto = Theorem 2.11's policy; RULE@m = fixed rule w.r.t. mode m",
    )
    p.add_argument(
        "--theta-exponent",
        type=float,
        default=DEFAULT_THETA_EXPONENT,
        help="a_bar in Theta_n = ceil(c n^a_bar) (2.29); (2.28) asks for (1/3, 1/2); default 0.34 (the "
             "excursion rule picks Theta_n itself: the exponent does not change it)",
    )
    p.add_argument(
        "--theta-rule",
        choices=THETA_RULES,
        default=DEFAULT_THETA_RULE,
        help="the threshold Theta_n = ceil(c n^a_bar): excursion (default) = Theta_n and the switching level "
             "that minimise a model of J_n adding the protected queue's excursions and the idling they cause to "
             "the workload diffusion (jaxq.policies.excursion); root = sqrt(D)/3, D the expected depth of "
             "the protected queue's excursions below the threshold; paper = 1 (2.29); scv = the rate-weighted "
             "SCV of the protected class's arrivals and dedicated service (1 for exponential primitives); "
             "depth = D; lean = D/8; case = root x 0.4 for T1T2/T2T1, x 1.3 for T2 "
             "(docs/results/random_systems.md)",
    )
    p.add_argument("--switch-at", type=float, default=None,
                   help="switching level z (scaled workload), default the rule's: z* for every rule but excursion")
    p.add_argument("--horizon", type=float, default=None,
                   help="truncation time T (default: tail bound ~1e-4 of min(V0, no-departure cost), extended until "
                        "it is at most 1e-3 of J_hat)")
    p.add_argument("--chunk", type=int, default=None, help="replications per compiled call (default min(reps, 16384))")
    add_target(p)
    p.add_argument("--check-invariants", action="store_true", help="count Definition 2.7 violations on the paths")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="event-driven (any primitives) or uniformised lockstep (exponential only, faster); "
        "auto = uniformized for exponential primitives without --horizon/--check-invariants, unless fewer than 256 "
        "replications of more than 5e6 steps each (large n)",
    )
    add_cv(p)
    add_common(p, seed=True)
    p.set_defaults(func=run)


DEFAULT_REL_SE = 0.001  # without --reps or --rel-se: this target, at most DEFAULT_MAX_REPS replications
DEFAULT_MAX_REPS = 1000


def run(args) -> dict:
    """Simulate the n-th system of ``args.system`` under ``args.policy`` (default: a target of :data:`DEFAULT_REL_SE`,
    at most :data:`DEFAULT_MAX_REPS` replications).

    Args:
        args (argparse.Namespace): The parsed command line.

    Returns:
        The result, as a dict.

    Raises:
        InputError: Naming ``n``, ``reps`` or ``chunk`` when it is out of range.
    """
    from jaxq.api import simulate_2x2
    from jaxq.api import Target, run_reps

    system = load_pss2x2(args.system)
    if not (math.isfinite(args.n) and args.n >= 1):
        raise InputError("n", f"must be a number >= 1, got {args.n:g}")
    if args.reps is not None and args.reps < 2:
        raise InputError("reps", f"need at least 2 replications, got {args.reps}")
    if args.chunk is not None and args.chunk < 1:
        raise InputError("chunk", f"must be >= 1, got {args.chunk}")
    target = target_of(args, default=Target(DEFAULT_REL_SE, DEFAULT_MAX_REPS, strict=False))
    n = int(args.n) if float(args.n).is_integer() else args.n
    with progress("simulate") as tick:
        def go(reps, seed):
            chunk = args.chunk if args.chunk is not None else min(reps, 16384)
            return simulate_2x2(system, n, reps, policy=args.policy, seed=seed, engine=args.engine,
                                horizon=args.horizon, theta_exponent=args.theta_exponent, switch_at=args.switch_at,
                                theta_rule=args.theta_rule, chunk=chunk, debug=args.check_invariants, progress=tick,
                                cv=args.cv == "on", se_floor=target.rel_se if target is not None else None)

        res = run_reps(go, args.reps, args.seed, target, key="rel-se")
    out = res.to_dict()
    out.pop("hpc", None)
    return out


def render(r: dict) -> str:
    """The result as text: the estimate, its interval, the bound V0, the horizon, the speed and the diagnostics.

    Args:
        r: The result of :func:`run`.

    Returns:
        The lines of text.
    """
    theta = "none" if r["theta"] is None else str(r["theta"])
    sw = "" if r["switch_at"] is None else f"   switching level z = {r['switch_at']:.6g}"
    lines = [
        f"n = {r['n']:g}   policy {r['policy']}   threshold Theta_n = {theta}{sw}",
        f"J_hat = {r['J_hat']:.6g} +- {r['stderr']:.3g} (stderr, {r['reps']} replications{_stop(r)})   "
        f"95% CI [{r['ci95'][0]:.6g}, {r['ci95'][1]:.6g}]",
        *([f"plain estimate {r['J_plain']:.6g} +- {r['stderr_plain']:.3g}: control variates reduce the variance "
           f"{r['variance_reduction']:.3g}x"] if "J_plain" in r else []),
        f"lower bound V0 = {r['V0']:.6g}",
        f"horizon T = {r['horizon']:.4g}   neglected tail <= {r['truncation_bound']:.3g}   ({r['engine']} engine)",
        f"{r['events']} events in {r['wall_s']:.3g} s (compile {r['compile_s']:.3g} s): "
        f"{r['events_per_s']:.3g} events/s",
    ]
    if r.get("diagnostics"):
        lines.extend(diagnostics_lines(r["diagnostics"]))
    if "violations" in r:
        lines.append("invariant violations: " + ", ".join(f"{k} {v}" for k, v in r["violations"].items()))
    return "\n".join(lines)


def _stop(r: dict) -> str:
    """How a run with a precision target ended, for the estimate's line."""
    if "stopped_by" not in r:
        return ""
    stages = r["pilot"].get("stages", [r["pilot"]["reps"]])
    return (f"; target {r['rel_se_target']:g} of J_hat, stopped by {r['stopped_by']}, pilot "
            f"{' then '.join(str(m) for m in stages)} replications")


def diagnostics_lines(d: dict) -> list[str]:
    """The diagnostics (jaxq.sim.diagnostics) in two lines: idling while jobs wait per server (and the class that
    waited), X_hat_p, and for dual-mode policies the time in each mode and the switch rate.

    Args:
        d: The result's ``diagnostics``.

    Returns:
        The lines.
    """
    idle = d["idle_waiting"]
    per = []
    for k in (0, 1):
        i = max((0, 1), key=lambda c: idle[k][c])
        per.append(f"server {k + 1} {100.0 * d['idle_while_waiting'][k]:.2g}%"
                   + (f" (class {i + 1} waiting)" if idle[k][i] > 0 else ""))
    p = f" (class {d['hpc']})" if "hpc" in d else ""
    lines = [f"diagnostics (discounted time shares): idle while jobs wait: {', '.join(per)};   "
             f"mean X_hat_p{p} = {d['X_hat_p']:.3g} +- {d['X_hat_p_stderr']:.2g}"]
    if "mode_fraction" in d:
        mf = d["mode_fraction"]
        lines.append(f"time in mode 1 / mode 2: {100.0 * mf[0]:.3g}% / {100.0 * mf[1]:.3g}%   "
                     f"mode switches per unit time {d['switch_rate']:.3g} +- {d['switch_rate_stderr']:.2g}")
    return lines
