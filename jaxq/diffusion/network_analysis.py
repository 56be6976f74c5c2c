"""Everything analytic about a parallel server network, in one object (the uniform-stability and LAP-tightness papers).

:func:`analyze` solves LP (2.3) (the static planning problem of the LAP-tightness paper), checks complete resource
pooling, fixes the scaling (Halfin-Whitt when the LP is critical, underloaded otherwise), computes the LAP
priorities and equilibrium point psi* (the LAP-tightness paper) and, for a critically loaded tree, the diffusion limit
of the uniform-stability paper (l, Phi, B1, B2, spare capacity). ``jaxq network analyze`` prints
:meth:`NetworkAnalysis.to_dict`; the network simulator takes its plan, scaling, priorities and fluid centre from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxq.diffusion.network import NetworkDiffusion, b_matrices, choose_basis_pool, diffusion_limit, network_type
from jaxq.errors import InputError
from jaxq.model.network import Network
from jaxq.planning.lap import LapEquilibrium, lap_equilibrium
from jaxq.planning.network_lp import StaticPlan, resolve_scaling, solve_static_plan


@dataclass(frozen=True, eq=False)
class NetworkAnalysis:
    """The analysis of a network.

    Attributes:
        network: The configuration.
        plan: LP (2.3).
        scaling: ``"halfin-whitt"`` or ``"underloaded"``.
        lap: The LAP priorities and equilibrium (the LAP-tightness paper).
        basis_pool: jhat of B1, B2 (0-based).
        diffusion: The diffusion limit (Halfin-Whitt only, else None).
        fluid_z: The fluid occupancy per unit of n: z* (Halfin-Whitt) or psi* (underloaded), shape (I, J).
    """

    network: Network
    plan: StaticPlan
    scaling: str
    lap: LapEquilibrium
    basis_pool: int
    diffusion: NetworkDiffusion | None

    @property
    def fluid_z(self) -> np.ndarray:
        return self.plan.z_star if self.scaling == "halfin-whitt" else self.lap.psi

    @property
    def spare_capacity(self) -> float | None:
        """rho of (2.35) (Halfin-Whitt), None otherwise."""
        return None if self.diffusion is None else self.diffusion.spare_capacity

    def to_dict(self) -> dict:
        """The JSON of ``jaxq network analyze`` (SPEC.md); labels 1-based."""
        plan, eq = self.plan, self.lap
        tree = plan.basic
        out: dict = {
            "scaling": self.scaling,
            "rho": plan.rho,
            "xi_star": plan.xi,
            "x_star": plan.x_star,
            "z_star": plan.z_star,
            "tree": plan.graph_is_tree,
            "basic_activities": _labels(np.argwhere(tree)),
            "crp": plan.crp,
            "spp_routing": plan.routing,
            "spp_workload": plan.workload,
            "spp_alpha": plan.alpha,
            "network_type": network_type(self.network.mu, tree),
            "basis_pool": self.basis_pool + 1,
        }
        if self.diffusion is not None:
            dl = self.diffusion
            out.update(ell=dl.ell, B1=dl.B1, B2=dl.B2, b1_diagonal=dl.b1_diagonal, spare_capacity=dl.spare_capacity,
                       phi_edges=_labels(dl.edges), phi_matrix=dl.phi_matrix)
        else:
            b1, b2 = b_matrices(self.network.mu, tree, self.basis_pool)
            out.update(ell=None, B1=b1, B2=b2, spare_capacity=None)
        out.update(
            lap_class_order=[i + 1 for i in eq.class_order],
            lap_activity_order=_labels(eq.order),
            lap_psi_star=eq.psi,
            lap_routing=eq.routing,
            lap_unserved=eq.unserved,
            lap_assumption_holds=eq.assumption_holds,
        )
        return out


def stationary_diffusion(an: NetworkAnalysis) -> NetworkDiffusion:
    """The diffusion limit (2.27) of a network whose long-run averages exist, or an InputError saying why not.

    The limit needs a critically loaded network (rho* = 1); its long-run averages, and identity (3.6)
    ``rho = E[w(u^s) <e, X>^-]``, need a positive spare capacity rho (2.35): with rho < 0 the diffusion is
    transient, ``<e, X_t>`` growing linearly under any SWC control (the uniform-stability paper, Propositions 3.1-3.2),
    and with rho = 0 the identity would force ``E<e, X>^- = 0``: no stationary law either.

    Args:
        an: The analysis of the network.

    Returns:
        Its diffusion limit.

    Raises:
        InputError: Naming ``system.lambda`` when the network is not critically loaded, or ``system`` when the spare
            capacity rho is not positive.
    """
    if an.diffusion is None:
        raise InputError("system.lambda", "the diffusion limit (2.27) needs a critically loaded network")
    rho = an.diffusion.spare_capacity
    if not rho > 0:
        why = ("transient (the uniform-stability paper, Propositions 3.1-3.2)" if rho < 0
               else "without a stationary law (3.6)")
        raise InputError("system", f"spare capacity rho = {rho:.6g} <= 0 (2.35): the diffusion (2.27) is {why}, so "
                                   f"its long-run averages and identity (3.6) do not exist; they need more safety "
                                   f"staffing (pool_size_hat) or fewer arrivals (lambda_hat)")
    return an.diffusion


def _labels(pairs) -> list[list[int]]:
    return [[int(i) + 1, int(j) + 1] for i, j in pairs]


def analyze(net: Network, basis_pool: int | None = None) -> NetworkAnalysis:
    """LP (2.3), CRP, scaling, LAP and (critical load) the diffusion limit of a network.

    Args:
        net: The network.
        basis_pool: jhat of B1, B2 as a 1-based label (default: :func:`choose_basis_pool`).

    Returns:
        The analysis.

    Raises:
        InputError: Naming ``basis-pool`` for a label outside 1..J.
    """
    plan = solve_static_plan(net.lam, net.mu, net.nu)
    scaling = resolve_scaling(net.scaling, plan, net.has_second_order)
    tree = plan.basic
    num_j = tree.shape[1]
    if basis_pool is not None and not (isinstance(basis_pool, int) and 1 <= basis_pool <= num_j):
        raise InputError("basis-pool", f"expected a pool label in 1..{num_j}, got {basis_pool!r}")
    jhat = choose_basis_pool(net.mu, tree) if basis_pool is None else basis_pool - 1
    eq = lap_equilibrium(net.lam, net.mu, net.nu, tree, net.lap_order)
    dl = diffusion_limit(net, plan, jhat) if scaling == "halfin-whitt" else None
    return NetworkAnalysis(net, plan, scaling, eq, jhat, dl)
