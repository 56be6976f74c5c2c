"""``jaxq optimal SYSTEM --n N``: the optimal discounted cost J*_n of the n-th 2x2 system by dynamic programming."""

from __future__ import annotations

from jaxq.cli import add_common
from jaxq.cli.analyze import load_pss2x2
from jaxq.cli.output import progress, to_jsonable


def register(sub) -> None:
    """Add the ``optimal`` command to the subcommands.

    Args:
        sub (argparse._SubParsersAction): The subcommands of the ``jaxq`` parser.
    """
    from jaxq.api import arg_type

    p = sub.add_parser("optimal", help="the optimum J*_n of the n-th 2x2 system (policy iteration), beside V0 "
                                       "and the exact J_n of Theorem 2.11's policy")
    p.add_argument("system", help="system configuration (TOML, kind = 'pss2x2') or a bundled example name")
    p.add_argument("--n", type=arg_type("number"), required=True, help="index n of the system")
    p.add_argument("--queue-cap", type=arg_type("int"), default=None,
                   help="first cap Q of both queues, each class's doubling then tested once (default: max(6, "
                        "2 sqrt(n)), each class's cap doubled until doubling it moves J*_n by at most 5e-7 relative)")
    p.add_argument("--bracket", action="store_true",
                   help="a proven bracket instead: one cap of both queues, doubled from max(6, 4 sqrt(n)) until the "
                        "truncations that charge arrivals to a full queue the floor of their cost and the cost of a "
                        "job never served agree to 1e-6 relative (closes at small n)")
    p.add_argument("--no-exact-policy", action="store_true",
                   help="skip the exact J_n of Theorem 2.11's policy")
    p.add_argument("--max-states", type=arg_type("int"), default=3_000_000,
                   help="refuse a truncated chain with more states (default 3000000)")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> dict:
    """The optimal discounted cost J*_n of the n-th system of ``args.system`` by policy iteration.

    Args:
        args (argparse.Namespace): The parsed command line.

    Returns:
        The result, as a dict.
    """
    from jaxq.api import optimal

    system = load_pss2x2(args.system)
    with progress(None, "optimal: policy iteration"):
        res = optimal(system, args.n, args.queue_cap, exact_policy=not args.no_exact_policy,
                      max_states=args.max_states, bracket=args.bracket)
    return res.to_dict()


def render(r: dict) -> str:
    """The result as text: J*_n with its bounds, the exact J_n of Theorem 2.11's policy, the ratios to V0 and the
    optimal policy's shares of time.

    Args:
        r: The result of :func:`run`.

    Returns:
        The lines of text.
    """
    r = to_jsonable(r)
    g = (lambda x, f=".6g": "-" if x is None else format(x, f))  # noqa: E731
    q1, q2 = r["queue_cap"]
    lines = [f"n = {r['n']:g}: J*_n = {r['J_star']:.8g}   (queue caps {q1}, {q2}, {r['states']:,} states, "
             f"truncation change {r['truncation_change']:.1e}, {r['iterations']} improvements, {r['wall_s']:.1f} s)"]
    if r["J_star_lower"] is None:
        lines.append("J*_n is at most this (a policy's cost: arrivals to a full queue never served); doubling either "
                     "cap moves it by the truncation change")
    else:
        lines.append(f"J*_n lies in [{r['J_star_lower']:.8g}, {r['J_star']:.8g}] (the truncations that charge "
                     f"arrivals to a full queue the floor of their cost and the cost of a job never served)")
    if r["exact_cost"] is not None:
        lines.append(f"Theorem 2.11's policy {r['policy']}: exact J_n = {r['exact_cost']:.8g}")
    lines.append(f"V0 = {r['V0']:.8g}   J*_n / V0 = {g(r['J_star_over_V0'], '.4f')}   "
                 f"J_n / V0 = {g(r['exact_cost_over_V0'], '.4f')}   "
                 f"J*_n / J_n = {g(r['J_star_over_exact_cost'], '.4f')}")
    sv = r["serving"]
    lines.append("optimal policy, share of discounted time: " + "   ".join(
        f"server {k + 1}: class 1 {sv[0][k]:.3f}, class 2 {sv[1][k]:.3f}, idle while a job waits "
        f"{r['idle_waiting'][k]:.3f}" for k in (0, 1)))
    if r["phases_observed"]:
        lines.append(f"phase-blind table policy: exact J = {r['J_table']:.8g}")
        lines.append("note: " + r["note"])
    return "\n".join(lines)
