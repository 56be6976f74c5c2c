"""``jaxq fastslow``: optimal thresholds of one fast and K slow servers (the fast/slow-servers paper).

    jaxq fastslow --lam 1.2 --mu1 1 --mu2 0.3 --average [--slow-servers K] [--json]
    jaxq fastslow --lam 1.2 --mu1 1 --mu2 0.3 --discount 0.05
    jaxq fastslow --lam 1.2 --mu1 1 --mu2 0.2,0.35 --average      # heterogeneous slow servers
"""

from __future__ import annotations

import time

from jaxq.api import InputError


def register(subparsers) -> None:
    """Add the ``fastslow`` command to the subcommands.

    Args:
        subparsers (argparse._SubParsersAction): The subcommands of the ``jaxq`` parser.
    """
    from jaxq.cli import add_common

    p = subparsers.add_parser("fastslow",
                              help="optimal policy of one fast and K slow servers (the fast/slow-servers paper)",
                              description="Value iteration for one fast and K slow servers: thresholds q_L <= q_H, "
                                          "structure of the optimal policy, inequalities (K1)-(K6).")
    p.add_argument("--lam", type=float, required=True, help="arrival rate")
    p.add_argument("--mu1", type=float, required=True, help="fast service rate")
    p.add_argument("--mu2", type=str, required=True, help="slow service rate, or comma-separated rates (heterogeneous)")
    crit = p.add_mutually_exclusive_group(required=True)
    crit.add_argument("--discount", type=float, help="discount rate alpha > 0 (discounted cost (6))")
    crit.add_argument("--average", action="store_true", help="long-run average cost (needs lam < mu1 + sum mu2)")
    p.add_argument("--slow-servers", type=int, default=None, help="number K of identical slow servers (default 2)")
    p.add_argument("--truncation", type=int, default=None, help="first queue truncation N to try (default: automatic)")
    add_common(p, seed=False)
    p.set_defaults(func=run)


def _rates(text: str):
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        raise InputError("mu2", f"must be a number or comma-separated numbers, got {text!r}") from None
    return vals[0] if len(vals) == 1 else vals


def policy_rows(sol) -> list[list[int]]:
    """Rows x = 0..X_show of the policy table: jobs at the slow servers after the decision (identical
    servers; column y = jobs there before it) or the busy-set bitmask (heterogeneous; column = mask).

    Args:
        sol (jaxq.mdp.fastslow.Solution): The solve.

    Returns:
        The rows.
    """
    lay = sol.problem.layout
    fin = [int(n) for n in sol.population_thresholds if n < 1 << 60]
    last = min(sol.X, (max(fin) if fin else 0) + lay.K + 2)
    return [[int(lay.mask[c]) if lay.kind != "identical" else int(c) for c in row] for row in sol.policy[: last + 1]]


def result(sol, wall_s: float) -> dict:
    """The JSON object of one solve (keys of SPEC.md plus diagnostics).

    Args:
        sol (jaxq.mdp.fastslow.Solution): The solve.
        wall_s: The seconds it took.

    Returns:
        The JSON object.
    """
    p = sol.problem
    q = sol.queue_thresholds
    out = {
        "lam": p.lam, "mu1": p.mu1,
        "mu2": float(p.mu2[0]) if p.layout.kind == "identical" else p.mu2.tolist(),
        "slow_servers": p.K, "criterion": "average" if p.average else "discounted",
    }
    if not p.average:
        out["discount"] = p.alpha
    out.update({
        "q_L": q[0], "q_H": q[1] if len(q) > 1 else None, "thresholds": q,
        "policy": policy_rows(sol),
        "policy_layout": ("row x = queue + fast server before the decision, column y = jobs at slow servers before it;"
                          " entry = jobs at slow servers after it; rows past the table fill every slow server")
        if p.layout.kind == "identical" else
        "row x, column = busy-set bitmask before the decision; entry = busy-set bitmask after it",
    })
    if p.average:
        out["average_cost"] = sol.average_cost
        out["average_cost_bounds"] = list(sol.bounds)
    else:
        out["value_empty"] = sol.value_empty
        out["value_empty_bounds"] = list(sol.bounds)
    s = sol.structure
    out["threshold_structure"] = bool(s["threshold"] and s["matches_thresholds"])
    out["structure"] = {k: s[k] for k in ("monotone", "ordered", "threshold", "matches_thresholds", "violations")}
    if p.layout.kind == "identical":
        out["inequalities"] = sol.inequalities_hold
        out["inequality_margins"] = sol.margins
        out["inequality_tolerance"] = sol.ineq_tol
    else:
        out["inequalities"] = None
    out.update({"truncation": sol.N, "truncation_verified": sol.verified, "checked_up_to_x": sol.X,
                "iterations": sol.iterations, "converged": sol.converged, "wall_s": wall_s})
    return out


def run(args) -> dict:
    """Solve the fast/slow-servers problem of the command line by value iteration.

    Args:
        args (argparse.Namespace): The parsed command line.

    Returns:
        The JSON object of the solve (:func:`result`).

    Raises:
        InputError: Naming ``mu2`` when it is not a number or comma-separated numbers.
    """
    t0 = time.perf_counter()
    from jaxq.api import solve_fastslow
    from jaxq.cli.output import progress

    with progress(None, "fastslow: value iteration"):  # one compiled loop: a line a minute if it runs long
        sol = solve_fastslow(args.lam, args.mu1, _rates(args.mu2), discount=None if args.average else args.discount,
                             slow_servers=args.slow_servers, truncation=args.truncation)
    return result(sol, time.perf_counter() - t0)


def render(res: dict) -> str:
    """The result as text: its keys as a table, then the policy table.

    Args:
        res: The result of :func:`run`.

    Returns:
        The lines of text.
    """
    from jaxq.cli.output import table

    head = {k: v for k, v in res.items() if k not in ("policy", "policy_layout")}
    rows = "\n".join(f"  x={x:<4d} " + " ".join(f"{a:>3d}" for a in row) for x, row in enumerate(res["policy"]))
    return table(head) + "\npolicy (" + res["policy_layout"] + "):\n" + rows
