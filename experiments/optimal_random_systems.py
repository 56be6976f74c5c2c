"""The random systems of experiments/optimal_random.toml: random 2x2 systems with laws that jaxq.optimal accepts.

Systems come from the random-systems study's draw (``jaxq.studies.random_draw.draw_system(0, case, j)``, draw_seed
0 as in experiments/random_systems*.toml: the systems of docs/results/random_systems.md). Their primitives are
lognormal, gamma, Erlang (up to 10 phases) or hyperexponential; jaxq.optimal needs phase-type laws and small
chains, so each law is replaced, keeping rates, second-order terms, h and gamma:

* ``_exp`` (single-mode cases P and T2): every primitive exponential, kept when jaxq.analyze still gives the
  drawn policy (case), otherwise the ``_pt`` replacement is written instead;
* ``_pt``: exponential stays; SCV < 1 -> Erlang with k = min(round(1 / SCV), 4) phases (k = 1: exponential);
  SCV > 1 -> ``hyperexponential:SCV`` (2 phases, as drawn); SCV == 1 -> exponential. Dual-mode cases keep the
  system only when jaxq.analyze gives the drawn policy (their modes need unequal service SCVs).

V0, z* and the thresholds are those of the replaced system, not of the drawn one.

    python experiments/optimal_random_systems.py            # writes experiments/systems/optimal_random/*.toml
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaxq.diffusion.workload import analyze
from jaxq.model.distributions import Dist
from jaxq.model.pss2x2 import PSS2x2
from jaxq.studies.random_draw import draw_system

DRAW_SEED = 0  # experiments/random_systems*.toml: draw_seed = 0
MAX_ERLANG = 4  # chain size: at most 4 phases per law
# The systems kept (indices j of each case). T2, T2T2: those that stay above 1.3 V0 at n = 10^4 under the
# excursion rule (experiments/results/family_best/: T2_001, T2_025; T2T2_015, T2T2_005, T2T2_001, T2T2_025,
# T2T2_037 tried in this order), then the first of the case; the others: the first of the case. Tried and left
# out (n = 16 on 2 busy cores; jaxq.optimal with Theorem 2.11's exact J_n beside it):
#   T2T2_005 (the replaced laws make it single mode, T2), T2T2_015 (the optimum needs queue cap 128: 8.4 million
#   states, over max_states), T2T2_001 (over 150 s);
#   PP_000 (the replaced laws make it P), PP_001 (over 150 s), PP_002 (cap 128: 3.6 million states), PP_003
#   (133 s), PP_006 and PP_013 (over 100 s);
#   T1T2_000, T1T2_002 (over 150 s), T1T2_003 (over 100 s), T1T2_005 (cap 256: 4.0 million states), T1T2_011
#   (over 100 s);
#   T2T1_000 (over 150 s), T2T1_001 (cap 128: 6.5 million states), T2T1_002 (over 150 s, the linear solver met
#   NaN), T2T1_004 and T2T1_009 (over 100 s).
# Past the first three of a case, candidates were timed in index order, skipping without a try those whose chain at
# queue cap 128 has over 1.2 million states (PP_004, PP_005, PP_007 ... PP_011, T1T2_004, T1T2_006, T1T2_007,
# T1T2_009, T1T2_010, T2T1_005, T2T1_006; T2T1_007 the replaced laws make P): the dual-mode systems kept lean to
# the smaller chains and shorter queues, i.e. to the less variable laws.
SYSTEMS = {"P": [0, 1, 2], "T2": [1, 25, 0], "PP": [12], "T2T2": [0, 25, 37], "T1T2": [1, 8], "T2T1": [3, 8]}
SINGLE = ("P", "T2")


def phase_type_law(d: Dist) -> Dist:
    """The accepted law nearest in SCV (module docstring)."""
    if d.name == "exponential" or d.scv == 1.0:
        return Dist("exponential", 1.0)
    if d.scv > 1.0:
        return Dist("hyperexponential", d.scv)
    k = min(max(round(1.0 / d.scv), 1), MAX_ERLANG)
    return Dist("exponential", 1.0) if k == 1 else Dist("erlang", 1.0 / k)


def replaced(s: PSS2x2, law) -> PSS2x2:
    return PSS2x2(lam=s.lam, mu=s.mu, lambda_hat=s.lambda_hat, mu_hat=s.mu_hat,
                  interarrival=tuple(law(d) for d in s.interarrival),
                  service=tuple(tuple(law(d) for d in row) for row in s.service), h=s.h, gamma=s.gamma)


def _law_text(d: Dist) -> str:
    return "exponential" if d.name == "exponential" else f"{d.name}:{d.scv!r}"


def _vec(a) -> str:
    return "[" + ", ".join(repr(float(x)) for x in a) + "]"


def toml_text(label: str, kind: str, drawn, s: PSS2x2, an) -> str:
    how = ("every primitive made exponential" if kind == "exp" else
           f"each law replaced by an accepted one of the nearest SCV (SCV < 1: Erlang, k = min(round(1/SCV), "
           f"{MAX_ERLANG}); SCV > 1: hyperexponential:SCV; exponential kept)")
    drawn_laws = " ".join(str(d) for d in drawn.system.interarrival) + " | " + " ".join(
        str(d) for row in drawn.system.service for d in row)
    lines = [
        f"# {label}: jaxq.studies.random_draw.draw_system({DRAW_SEED}, \"{drawn.case}\", {drawn.index}) (draw_seed "
        f"{DRAW_SEED}, docs/results/random_systems.md) with {how}; rates, h, gamma as drawn "
        f"(experiments/optimal_random_systems.py).",
        f"# Drawn laws (interarrival | service 11 12 21 22): {drawn_laws}. Drawn V0 {drawn.analysis.V0:.6g}; "
        f"here V0 {an.V0:.6g}, policy {an.policy} ({an.case} mode, {an.modes.switching}-switched).",
        "[system]",
        'kind = "pss2x2"',
        f"lambda = {_vec(s.lam)}",
        f"mu = [{_vec(s.mu[0])}, {_vec(s.mu[1])}]",
        f"lambda_hat = {_vec(s.lambda_hat)}",
        f"mu_hat = [{_vec(s.mu_hat[0])}, {_vec(s.mu_hat[1])}]",
        "interarrival = [" + ", ".join(f'"{_law_text(d)}"' for d in s.interarrival) + "]",
        "service = [" + ", ".join("[" + ", ".join(f'"{_law_text(d)}"' for d in row) + "]" for row in s.service)
        + "]",
        "",
        "[cost]",
        f"h = {_vec(s.h)}",
        f"gamma = {float(s.gamma)!r}",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "systems" / "optimal_random")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for case, indices in SYSTEMS.items():
        for j in indices:
            d = draw_system(DRAW_SEED, case, j)
            tries = [("exp", lambda _: Dist("exponential", 1.0)), ("pt", phase_type_law)] if case in SINGLE else \
                [("pt", phase_type_law)]
            for kind, law in tries:
                s = replaced(d.system, law)
                an = analyze(s)
                if an.policy == case:
                    label = f"{d.label}_{kind}"
                    (args.out / f"{label}.toml").write_text(toml_text(label, kind, d, s, an), encoding="utf-8")
                    print(f"{label}: {an.policy}, V0 {an.V0:.4g} (drawn {d.analysis.V0:.4g})")
                    break
                print(f"{d.label}_{kind}: policy {an.policy} ({an.case}), not {case}")
            else:
                raise RuntimeError(f"{d.label}: no replacement keeps its case")

if __name__ == "__main__":
    main()
