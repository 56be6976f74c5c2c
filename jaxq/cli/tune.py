"""``jaxq tune SYSTEM.toml``: tune the switching level by gradient descent and compare with z* and V0."""

from __future__ import annotations

from jaxq.cli import add_common
from jaxq.cli.analyze import load_pss2x2
from jaxq.diffusion.workload import analyze
from jaxq.errors import InputError

TARGETS = ("exact",)


def register(sub) -> None:
    p = sub.add_parser("tune", help="tune the switching level z by gradient descent (optax)")
    p.add_argument("system", help="system configuration (TOML, kind = 'pss2x2', dual-mode case)")
    p.add_argument("--target", choices=TARGETS, default="exact", help="cost to minimise (default: exact)")
    p.add_argument("--z-init", type=float, default=None, help="starting switching level (workload units)")
    p.add_argument("--max-iter", type=int, default=200, help="iteration cap")
    p.add_argument("--figure", default=None, help="write the optimisation trajectory to this PNG file")
    add_common(p, seed=True)
    p.set_defaults(func=run)


def dual_analysis(path):
    """The analysis of a dual-mode system; a single-mode one has no switching level to tune."""
    a = analyze(load_pss2x2(path))
    if a.case != "dual":
        raise InputError("system", "single-mode case (2.19): the optimal policy never switches, so there is no z to tune")
    return a


def check_z_init(z):
    if z is not None and not z > 0:
        raise InputError("--z-init", f"must be positive, got {z}")


def trajectory_figure(path: str, trajectory, z_star: float, v0: float, scale: float, title: str) -> None:
    """Plot z and the cost (units of V0) against the iteration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    it = range(1, len(trajectory) + 1)
    fig, ax = plt.subplots(1, 2, figsize=(8, 3), dpi=100)
    ax[0].plot(it, [z for z, _ in trajectory], "o-", ms=3)
    ax[0].axhline(z_star, color="k", ls="--", label="z* (smooth fit)")
    ax[0].set(xlabel="iteration", ylabel="z", title=title)
    ax[0].legend()
    ax[1].semilogy(it, [max(c * scale - v0, 1e-16) for _, c in trajectory], "o-", ms=3)
    ax[1].set(xlabel="iteration", ylabel="cost - V0")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(args) -> dict:
    from jaxq.tuning.exact import tune_exact

    a = dual_analysis(args.system)
    check_z_init(args.z_init)
    res = tune_exact(*a.mode_coefficients(), a.system.gamma, z_init=args.z_init, max_iter=args.max_iter)
    scale = a.cost_scale()
    out = {
        "target": args.target,
        "z_tuned": res.z,
        "z_star": a.z_star,
        "z_rel_error": abs(res.z / a.z_star - 1),
        "cost_tuned": res.cost * scale,
        "V0": a.V0,
        "iterations": res.iterations,
        "trajectory": [[z, c * scale] for z, c in res.trajectory],
    }
    if args.figure:
        trajectory_figure(args.figure, res.trajectory, a.z_star, a.V0, scale, f"L-BFGS on J(0; z), {args.target}")
        out["figure"] = args.figure
    return out


def render(r: dict) -> str:
    return (
        f"target {r['target']}: z_tuned = {r['z_tuned']:.10g}  (z* = {r['z_star']:.10g}, rel. error {r['z_rel_error']:.2e})\n"
        f"cost_tuned = {r['cost_tuned']:.10g}  V0 = {r['V0']:.10g}  after {r['iterations']} iterations"
    )
