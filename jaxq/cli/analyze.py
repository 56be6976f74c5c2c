"""``jaxq analyze SYSTEM.toml``: the exact limit objects of a 2x2 system."""

from __future__ import annotations

from jaxq.api import InputError
from jaxq.cli import add_common
from jaxq.cli.output import to_jsonable

# Command modules import the numerical code inside run(): building the parser stays cheap.


def load_pss2x2(path):
    """Load a configuration and insist on ``kind = "pss2x2"``.

    Args:
        path (str | pathlib.Path): The system configuration (TOML).

    Returns:
        (jaxq.model.pss2x2.PSS2x2): The system.

    Raises:
        InputError: Naming ``system.kind`` when the system is not a 2x2 one.
    """
    from jaxq.api import read_system

    system = read_system(path)
    if type(system).__name__ != "PSS2x2":
        raise InputError("system.kind", "this command needs a 'pss2x2' system (use 'jaxq network ...' for networks)")
    return system


def register(sub) -> None:
    """Add the ``analyze`` command to the subcommands.

    Args:
        sub (argparse._SubParsersAction): The subcommands of the ``jaxq`` parser.
    """
    p = sub.add_parser("analyze", help="LP, modes, workload diffusion, HJB, switching point and lower bound")
    p.add_argument("system", help="system configuration (TOML, kind = 'pss2x2')")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> dict:
    """Analyze the 2x2 system of ``args.system``.

    Args:
        args (argparse.Namespace): The parsed command line.

    Returns:
        The analysis, as a dict.
    """
    from jaxq.api import analyze

    return analyze(load_pss2x2(args.system)).to_dict()


def render(r: dict) -> str:
    """The analysis as text: the LP, the modes, the case, the bound and the policy.

    Args:
        r: The result of :func:`run`.

    Returns:
        The lines of text.
    """
    r = to_jsonable(r)
    lines = [
        f"LP (2.7): rho* = {r['rho_star']:.10g}   alpha = {r['alpha']}   beta = {r['beta']}",
        f"modes are {r['switching']}-switched",
    ]
    for m, xi in enumerate(r["modes"]):
        lines.append(
            f"  mode {m + 1}: xi = {xi}   b = {r['b'][m]:.6g}   sigma = {r['sigma'][m]:.6g}   "
            f"single-activity class {r['single_activity_class'][m]}, server {r['single_activity_server'][m]}"
        )
    lines.append(f"high-priority class p = {r['hpc']}")
    if r["case"] == "single":
        lines.append(f"single-mode case (2.19): active mode {r['active_mode']}")
    else:
        lines.append(
            f"dual-mode case (2.20): lower mode {r['lower_mode']}, higher mode {r['higher_mode']}, "
            f"switching point z* = {r['z_star']:.10g}"
        )
    lines.append(f"V_WCP(0) = {r['V_wcp0']:.10g}   lower bound V0 = {r['V0']:.10g}")
    lines.append(f"policy (Theorem 2.11): {r['policy']}")
    return "\n".join(lines)
