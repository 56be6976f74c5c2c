"""Draw the documentation's two summary figures from committed result files (seconds, no simulation).

    python docs/figures/make_figures.py [--cv benchmarks/results/cv.json] [--bench benchmarks/results/pss2x2_families_cpu_avx512.json]
                                        [--machine "Intel Xeon, AVX-512, 2 cores"]

variance_reduction.png: (stderr_plain / stderr)^2 of the controlled J_n against n, one line per system and
driver (``python benchmarks/variance_reduction.py`` writes cv.json). performance.png: the 2x2 event engine's
events per second over the compiled numba loop's, measured in the same run, one bar per distribution family
(``jaxq bench`` / ``benchmarks/run_cpu.sh`` write the bench JSON); the machine is named in the title, since
the ratio depends on the CPU's vector width.
"""

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def variance_reduction(cv_file: Path, out: Path) -> None:
    rows = json.loads(cv_file.read_text())
    lines: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for r in rows:
        if r.get("n") is None or r.get("variance_reduction") is None:
            continue
        lines.setdefault((r["system"], r["policy"], r["engine"]), []).append((r["n"], r["variance_reduction"]))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (system, policy, engine), pts in sorted(lines.items()):
        pts.sort()
        style = "-" if engine == "event" else "--"
        ax.loglog([p[0] for p in pts], [p[1] for p in pts], style, marker="o", ms=4,
                  label=f"{system} ({policy}), {engine}")
    ax.set_xlabel("n")
    ax.set_ylabel("variance reduction (se_plain / se)$^2$")
    ax.set_title("Control variates from the diffusion limit: the reduction grows with n")
    ax.title.set_fontsize(10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def performance(bench_file: Path, machine: str, out: Path) -> None:
    rows = json.loads(bench_file.read_text())["sections"]["pss2x2"]["rows"]
    fam = [r for r in rows if r.get("part") == "families" and r.get("ratio") is not None]
    mixed = [r for r in rows if r.get("part") == "mixed" and r.get("ratio") is not None]
    labels = [r["dist"] for r in fam] + [r["dist"] + " (mixed)" for r in mixed]
    ratios = [r["ratio"] for r in fam] + [r["ratio"] for r in mixed]
    fig, ax = plt.subplots(figsize=(6.4, 0.32 * len(labels) + 1.4))
    ax.barh(range(len(labels)), ratios, color=["C0"] * len(fam) + ["C1"] * len(mixed))
    ax.axvline(1.0, color="k", lw=1, ls="--")
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("jaxq events/s over the numba loop's (same run, same model)")
    ax.set_title(f"2x2 event engine beside a compiled loop ({machine})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cv", type=Path, default=ROOT / "benchmarks/results/cv.json")
    p.add_argument("--bench", type=Path, default=ROOT / "benchmarks/results/pss2x2_families_cpu_avx512.json")
    p.add_argument("--machine", default="Intel Xeon, AVX-512, 2 cores; allocation-free baseline")
    a = p.parse_args()
    variance_reduction(a.cv, HERE / "variance_reduction.png")
    performance(a.bench, a.machine, HERE / "performance.png")
    print("wrote", HERE / "variance_reduction.png", HERE / "performance.png")


if __name__ == "__main__":
    main()
