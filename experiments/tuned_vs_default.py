"""The tuned policy against the theory's default policy and the lower bound V0, system by system.

For every system and every n: the switching level z and threshold Theta_n = ceil(c n^a_bar) of Theorem 2.11's
policy are tuned by the search of :func:`jaxq.tuning.prelimit.tune_prelimit` (at the first n from the limit's
z* and the default Theta_n, at the next n locally around the z and c tuned at the previous one), then J_n of the
tuned and of the default policy is estimated on fresh replications (a seed the search never used; common random
numbers between the two) with 95% intervals, beside V0.

    python experiments/tuned_vs_default.py                       # bundled dual-mode examples + hand-written systems
    python experiments/tuned_vs_default.py --systems a.toml b.toml --n 1000 10000 --out DIR
    python experiments/tuned_vs_default.py --small               # a quick check (n = 100, few replications)

From Python, any iterable of systems (bundled names, TOML paths, loaded systems or ``(label, system)`` pairs):

    import importlib.util ...; rows = mod.compare(["pss_T2T2", "my.toml"], ns=(1000, 10000), out="results/x")

Writes ``tuned_vs_default.csv`` (one row per system and n), ``tuned_vs_default.md`` (the table) and
``tuned_vs_default.png`` (J_n / V0 with intervals), after every system, so a stopped run keeps what it did.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import jaxq
from jaxq.diffusion.workload import analyze
from jaxq.precision import float64
from jaxq.studies.storage import write_table
from jaxq.tuning import prelimit as TP
from jaxq.tuning.prelimit import tune_prelimit

HERE = os.path.dirname(os.path.abspath(__file__))
HAND_WRITTEN = sorted(str(p) for p in Path(HERE, "tuned_vs_default").glob("*.toml"))


def default_systems() -> list[str]:
    """The bundled dual-mode 2x2 examples and the hand-written systems of experiments/tuned_vs_default/."""
    duals = [n for n in jaxq.example_names() if n.startswith("pss_") and analyze(jaxq.load(n)).case == "dual"]
    return duals + HAND_WRITTEN


def _labelled(systems):
    for i, s in enumerate(systems):
        if isinstance(s, tuple):
            yield s
        elif isinstance(s, (str, os.PathLike)):
            yield Path(s).stem if str(s).endswith(".toml") else str(s), jaxq.load(s)
        else:
            yield f"system{i}", s


@float64  # jaxq's internals below the API are called here: float64, as the API computes
def compare(systems, ns=(1000, 10000), *, reps=64, eval_reps=None, seed: int = 0,
            out: str | None = None, log=print) -> list[dict]:
    """Rows of J_n(tuned), J_n(default) and V0 with intervals for every system (an iterable: names, TOML paths,
    loaded systems or ``(label, system)`` pairs) and every n; tables written to ``out`` after every system.
    ``reps`` (per search candidate) and ``eval_reps`` (per policy in the evaluation): a number, or one per n
    (in increasing n); default ``eval_reps``: 256 up to n = 1000, 128 beyond (the control variates reduce the
    variance more at larger n)."""
    ns = sorted(ns)
    if eval_reps is None:
        eval_reps = [256 if n <= 1000 else 128 for n in ns]
    per_n = {k: dict(zip(ns, v if isinstance(v, (list, tuple)) else [v] * len(ns)))
             for k, v in (("reps", reps), ("eval", eval_reps))}
    rows: list[dict] = []
    for label, system in _labelled(systems):
        a = analyze(system)
        warm = None
        for n in ns:
            t0 = time.perf_counter()
            start = TP.Start() if warm is None else TP.Start(z_init=warm.z, c_init=warm.c)
            span = "wide" if warm is None else "local"
            t = tune_prelimit(system, n, seed=seed, analysis=a, start=start,
                              procedure=TP.Procedure(span=span, reps=per_n["reps"][n]),
                              evaluation=TP.Evaluation(evaluate_reps=per_n["eval"][n]))
            warm = t
            ev = t.evaluation
            row = {
                "system": label, "policy": a.policy, "n": n, "V0": a.V0, "z_star": a.z_star, "z_tuned": t.z,
                "theta_default": ev["theta_default"], "theta_tuned": ev["theta_tuned"], "c_tuned": t.c,
                "J_tuned": ev["J_tuned"], "J_tuned_stderr": ev["J_tuned_stderr"],
                "J_tuned_lo": ev["J_tuned_ci95"][0], "J_tuned_hi": ev["J_tuned_ci95"][1],
                "J_default": ev["J_default"], "J_default_stderr": ev["J_default_stderr"],
                "J_default_lo": ev["J_default_ci95"][0], "J_default_hi": ev["J_default_ci95"][1],
                "difference": ev["difference"], "difference_stderr": ev["difference_stderr"],
                "ratio_tuned": ev["ratio_tuned"], "ratio_default": ev["ratio_default"],
                "search": span, "candidates": t.cost["steps"],
                "search_reps": per_n["reps"][n], "eval_reps": ev["reps"], "search_seed": t.seeds["search"],
                "eval_seed": ev["seed"], "tune_s": t.cost["search_s"], "total_s": time.perf_counter() - t0,
            }
            rows.append(row)
            log(f"{label} n={n:g}: J/V0 tuned {row['ratio_tuned']:.3f} (Theta {row['theta_tuned']}, z "
                f"{_fmt(row['z_tuned'])}) default {row['ratio_default']:.3f} (Theta {row['theta_default']}); "
                f"difference {row['difference']:.4f} +- {row['difference_stderr']:.4f}; {row['total_s']:.0f} s")
        if out is not None:
            write(rows, out)
    return rows


def _fmt(x, digits=3):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def markdown(rows) -> str:
    """The table: J_n(tuned), J_n(default) with 95% intervals, V0, the ratios and the tuned parameters."""
    head = ("| system | policy | n | V0 | J_n tuned (95% CI) | J_n default (95% CI) | tuned - default (95% CI) | "
            "J/V0 tuned | J/V0 default | Theta tuned / default | z tuned / z* | tuning s |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        d, ds = r["difference"], r["difference_stderr"]
        lines.append(
            f"| {r['system']} | {r['policy']} | {r['n']:g} | {r['V0']:.4f} | {r['J_tuned']:.4f} "
            f"({r['J_tuned_lo']:.4f}, {r['J_tuned_hi']:.4f}) | {r['J_default']:.4f} ({r['J_default_lo']:.4f}, "
            f"{r['J_default_hi']:.4f}) | {d:+.4f} ({d - 1.96 * ds:+.4f}, {d + 1.96 * ds:+.4f}) | "
            f"{r['ratio_tuned']:.3f} | {r['ratio_default']:.3f} | {_fmt(r['theta_tuned'])} / {_fmt(r['theta_default'])} | "
            f"{_fmt(r['z_tuned'])} / {_fmt(r['z_star'])} | {r['tune_s']:.0f} |")
    return head + "\n".join(lines) + "\n"


def write(rows, out) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_table(out, "tuned_vs_default", rows)
    (out / "tuned_vs_default.md").write_text(markdown(rows), encoding="utf-8")
    figure(rows, out / "tuned_vs_default.png")


def figure(rows, file) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ns = sorted({r["n"] for r in rows})
    fig, axes = plt.subplots(1, len(ns), figsize=(4.8 * len(ns), 0.32 * len(rows) / len(ns) + 1.6), dpi=100,
                             squeeze=False)
    for ax, n in zip(axes[0], ns):
        rs = [r for r in rows if r["n"] == n]
        y = np.arange(len(rs))
        for dy, key, label in ((-0.15, "default", "default (theory)"), (0.15, "tuned", "tuned")):
            x = [r[f"J_{key}"] / r["V0"] for r in rs]
            err = [1.96 * r[f"J_{key}_stderr"] / r["V0"] for r in rs]
            ax.errorbar(x, y + dy, xerr=err, fmt="o", ms=4, capsize=2, label=label)
        ax.axvline(1.0, color="k", ls="--", lw=1, label="V0")
        ax.set_yticks(y, [r["system"] for r in rs], fontsize=7)
        ax.invert_yaxis()
        ax.set(xlabel="J_n / V0 (95% CI)", title=f"n = {n:g}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(file)
    plt.close(fig)


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--systems", nargs="+", default=None, help="bundled names or TOML files (default: the bundled "
                                                              "dual-mode examples and experiments/tuned_vs_default/)")
    p.add_argument("--n", nargs="+", type=float, default=[1000.0, 10000.0])
    p.add_argument("--reps", type=int, nargs="+", default=[64], help="replications per search candidate (one, or one "
                                                                      "per n)")
    p.add_argument("--eval-reps", type=int, nargs="+", default=None,
                   help="fresh replications per policy in the evaluation (one, or one per n; default 256 up to "
                        "n = 1000, 128 beyond)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--small", action="store_true", help="n = 100, 32 replications per candidate, 64 per evaluation")
    p.add_argument("--out", default=os.path.join(HERE, "results", "tuned_vs_default"))
    args = p.parse_args(argv)
    if args.small:
        args.n, args.reps, args.eval_reps = [100.0], [32], [64]
    ns = [int(n) if float(n).is_integer() else n for n in args.n]
    def one_or_per_n(v, key):
        if v is None:
            return None
        if len(v) not in (1, len(ns)):
            p.error(f"{key}: give one value or one per n ({len(ns)})")
        return v if len(v) > 1 else v[0]

    rows = compare(args.systems or default_systems(), ns, reps=one_or_per_n(args.reps, "--reps"),
                   eval_reps=one_or_per_n(args.eval_reps, "--eval-reps"), seed=args.seed, out=args.out)
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
