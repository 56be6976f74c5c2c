"""``jaxq demo``: the README's main job, a small default study of the six cases of Theorem 2.11.

1. The analysis of the six bundled systems (policy, case, switching point z*, lower bound V0).
2. A small convergence study (``jaxq run`` with a built-in experiment): J_n against n for three cases
   (single mode P, server-switched PP, class-switched T2T1) with 95% intervals, the V0 line, and a
   fitted rate of |J_n - V0|. Writes tables, figures and the experiment file under ``--out``: a new or empty
   folder, or an earlier demo's (replaced).
About a minute on a 2-core laptop CPU; ``--small`` is a seconds-long smoke run.
"""

from __future__ import annotations

from pathlib import Path

from jaxq.api import InputError
from jaxq.cli import add_common
from jaxq.cli.output import to_jsonable

CASES = ("pss_P", "pss_T2", "pss_PP", "pss_T2T2", "pss_T1T2", "pss_T2T1")
DEMO_SYSTEMS = ("pss_P", "pss_PP", "pss_T2T1")


def demo_experiment(seed: int, small: bool) -> str:
    """The built-in experiment file (TOML text) of the demo study.

    Args:
        seed: The seed of the study.
        small: A seconds-long smoke run (tiny n and replications).

    Returns:
        The TOML text.
    """
    n, reps, chunk, horizon = ([25, 49], 4, 4, "horizon = 2.0") if small else ([25, 100, 400, 1600], 64, 32, "")
    systems = ", ".join(f'"{s}"' for s in DEMO_SYSTEMS)
    return (
        "# The study of `jaxq demo`: rerun it with `jaxq run <this file>`.\n"
        "[experiment]\n"
        'study = "convergence"\nname = "demo"\n'
        f"systems = [{systems}]\nreplications = {reps}\nchunk = {chunk}\nseeds = [{seed}]\n\n"
        f"[grid]\nn = {n}\npolicies = [\"auto\"]\n{horizon}\n"
    )


def register(sub) -> None:
    """Add the ``demo`` command to the subcommands.

    Args:
        sub (argparse._SubParsersAction): The subcommands of the ``jaxq`` parser.
    """
    p = sub.add_parser("demo", help="the six cases of Theorem 2.11 analysed, then a small convergence study of "
                                    "three (P, PP, T2T1; about a minute)")
    p.add_argument("--out", default="jaxq-demo", help="output directory (default: ./jaxq-demo)")
    p.add_argument("--small", action="store_true", help="a seconds-long smoke run (tiny n and replications)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_common(p, seed=True)
    p.set_defaults(func=run)


def analysis_rows() -> list[dict]:
    """One row per bundled case: policy, case, switching, HPC, z*, V0."""
    from jaxq.api import analyze, example_path, read_system

    rows = []
    for name in CASES:
        a = analyze(read_system(example_path(name)))
        rows.append(
            {"system": name, "policy": a.policy, "case": a.case, "switching": a.modes.switching, "hpc": a.p + 1,
             "z_star": a.z_star, "V0": a.V0}
        )
    return rows


def check_demo_folder(out: Path) -> None:
    """Refuse, before any work, an ``--out`` the demo must not write into (one line naming ``--out``): a path
    that cannot be a folder (:func:`jaxq.api.check_output_file`), or a folder that is neither empty
    nor an earlier demo's (whose files, always the same names, the demo replaces).

    Args:
        out: The output folder.

    Raises:
        InputError: Naming ``--out``.
    """
    from jaxq.api import check_output_file, is_empty_folder, read_manifest

    check_output_file(out, "--out", folder=True)
    if is_empty_folder(out):
        return
    exp = (read_manifest(out) or {}).get("experiment", {})
    if not (exp.get("name") == "demo" and exp.get("study") == "convergence"
            and Path(str(exp.get("file", ""))).name == "demo.toml"):
        raise InputError("--out", f"{out} is not empty and holds no earlier jaxq demo; choose another folder "
                                  "(the demo replaces only an earlier demo's files)")


def run(args) -> dict:
    """The analysis of the six bundled cases, then the small convergence study written under ``args.out``.

    Args:
        args (argparse.Namespace): The parsed command line.

    Returns:
        ``{"systems", "study"}``: the analysis rows, and the study's folder, files, tables and totals.

    Raises:
        InputError: Naming ``--out`` when it is empty or a folder the demo must not write into.
    """
    from jaxq.api import atomic_write, parse_experiment, run_study

    if not args.out.strip():
        raise InputError("--out", f"is empty ({args.out!r}); name an output folder (default: ./jaxq-demo)")
    out = Path(args.out)
    check_demo_folder(out)
    rows = analysis_rows()
    text = demo_experiment(args.seed, args.small)
    exp = parse_experiment(text, out.resolve() / "demo.toml")  # validated before anything is written
    rec = run_study(exp, out, progress=False if args.no_progress else None)
    atomic_write(out / "demo.toml", text.encode())
    keep = ("system", "policy_used", "n", "reps", "J_hat", "J_hat_stderr", "ci95_lo", "ci95_hi", "V0", "gap",
            "threshold_term", "residual", "truncation_bound")
    fit_keys = ("system", "policy_used", "rate", "rate_stderr", "residual_rate", "residual_rate_stderr")
    return {
        "systems": rows,
        "study": {
            "out": str(out),
            "experiment": str(out / "demo.toml"),
            "figures": [f for f in rec["files"] if f.endswith(".png")],
            "files": rec["files"] + [str(out / "demo.toml")],
            "summary": [{k: r[k] for k in keep} for r in rec["tables"]["summary"]],
            "fits": [{k: r.get(k) for k in fit_keys} for r in rec["tables"]["fits"]],
            "replications": rec["replications"],
            "events": rec["events"],
            "wall_s": rec["wall_s"],
        },
    }


def render(r: dict) -> str:
    """The result as text: the six cases, the study's table of J_n against n, the fitted rates and the files written.

    Args:
        r: The result of :func:`run`.

    Returns:
        The lines of text.
    """
    from jaxq.cli.output import format_table

    r = to_jsonable(r)
    head = f"{'system':<10} {'policy':<6} {'case':<6} {'modes':<7} {'hpc':>3} {'z*':>10} {'V0':>10}"
    lines = ["The six cases of Theorem 2.11 (the switched-policies paper) on the bundled systems:", head,
             "-" * len(head)]
    for row in r["systems"]:
        z = "-" if row["z_star"] is None else f"{row['z_star']:.6f}"
        lines.append(
            f"{row['system']:<10} {row['policy']:<6} {row['case']:<6} {row['switching']:<7} {row['hpc']:>3} {z:>10} "
            f"{row['V0']:>10.6f}"
        )
    s = r["study"]
    lines += [
        "",
        f"J_n against n (discounted cost, systems start empty; {s['replications']} replications, "
        f"{s['events']} events, {s['wall_s']:.1f} s):",
        format_table(s["summary"], ["system", "policy_used", "n", "reps", "J_hat", "J_hat_stderr", "V0", "gap",
                                    "threshold_term", "residual"]),
        "(threshold_term: the limit's exact cost of T2T1's threshold Theta_n at z*; residual = gap - threshold_term,",
        " what the diffusion approximation leaves; '-' where the default rule moves the switching level off z* or",
        " Theta_n / sqrt(n) >= z*)",
        "",
        "fitted |J_n - V0| ~ C n^rate (and |residual| ~ n^residual_rate):",
        format_table(s["fits"]),
        "",
        f"wrote the tables, figures and experiment file under {s['out']}/:",
    ]
    lines += [f"  {f}" for f in s["files"]]
    return "\n".join(lines)
