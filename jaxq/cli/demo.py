"""``jaxq demo``: the README's main job, a small default study of the bundled example systems."""

from __future__ import annotations

from jaxq.cli import add_common
from jaxq.diffusion.workload import analyze
from jaxq.examples import path
from jaxq.model import load

CASES = ("pss_P", "pss_T2", "pss_PP", "pss_T2T2", "pss_T1T2", "pss_T2T1")


def register(sub) -> None:
    p = sub.add_parser("demo", help="a small default study of the six cases of Theorem 2.11")
    add_common(p, seed=True)
    p.set_defaults(func=run)


def run(args) -> dict:
    rows = []
    for name in CASES:
        a = analyze(load(path(name)))
        rows.append(
            {"system": name, "policy": a.policy, "case": a.case, "switching": a.modes.switching, "hpc": a.p + 1,
             "z_star": a.z_star, "V0": a.V0}
        )
    return {"systems": rows}


def render(r: dict) -> str:
    head = f"{'system':<10} {'policy':<6} {'case':<6} {'modes':<7} {'hpc':>3} {'z*':>10} {'V0':>10}"
    lines = ["The six cases of Theorem 2.11 (seed 000) on the bundled systems:", head, "-" * len(head)]
    for row in r["systems"]:
        z = "-" if row["z_star"] is None else f"{row['z_star']:.6f}"
        lines.append(
            f"{row['system']:<10} {row['policy']:<6} {row['case']:<6} {row['switching']:<7} {row['hpc']:>3} {z:>10} "
            f"{row['V0']:>10.6f}"
        )
    return "\n".join(lines)
