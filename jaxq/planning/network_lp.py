"""LP (2.3) of the uniform-stability paper, which is the static planning problem (SPP) (1) of the LAP-tightness paper,
and CRP.

The uniform-stability paper's LP (2.3) minimises ``max_j sum_i xi_ij`` subject to ``sum_j mu_ij nu_j xi_ij = lambda_i``.
The LAP-tightness paper's SPP minimises rho subject to ``sum_j lambda_ij = lambda_i`` (1c) and
``sum_i lambda_ij / (beta_j mu_ij) <= rho`` (1d). With ``lambda_ij = mu_ij beta_j xi_ij`` (and
``beta = nu``) the two are the same LP, with the same constraints, so one HiGHS solve gives both the
primal solution xi* and the SPP duals: nu_i >= 0 of (1c) (workload of one class-i job) and
alpha_j >= 0 of (1d) (share of pool j), which satisfy ``nu_i mu_ij beta_j = alpha_j`` on basic
activities, ``sum_j alpha_j = 1`` and ``rho = sum_i nu_i lambda_i``.

Complete resource pooling (CRP, (2.4)): the solution is unique, every activity used by the solution is
basic (``xi* > 0``) and every pool is loaded at rho. Under CRP the basic activities form a spanning tree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from jaxq.errors import InputError

TOL = 1e-8  # tolerance for the exact conditions (criticality, basic activities, uniqueness)


@dataclass(frozen=True, eq=False)
class StaticPlan:
    """Solution of LP (2.3) / SPP (1) and the CRP diagnostics.

    Attributes:
      rho: optimal value (rho* of (2.3), rho of the SPP); 1 means critically loaded.
      xi: xi*_ij, fraction of pool j allocated to class i, shape (I, J).
      x_star: x*_i = sum_j xi*_ij nu_j (2.5).
      z_star: z*_ij = xi*_ij nu_j (2.5).
      routing: lambda_ij = mu_ij nu_j xi*_ij, the SPP routing rates.
      workload: SPP dual nu_i of (1c).
      alpha: SPP dual alpha_j of (1d), summing to 1.
      unique: True when the LP solution is unique.
      basic: boolean (I, J), activities with xi* > 0.
      pool_load: sum_i xi*_ij per pool.
      graph_is_tree: whether the activity graph (mu > 0) is a tree.
      basic_is_tree: whether the basic activities form a spanning tree.
      edges: boolean (I, J) activity graph (mu > 0).
    """

    rho: float
    xi: np.ndarray
    x_star: np.ndarray
    z_star: np.ndarray
    routing: np.ndarray
    workload: np.ndarray
    alpha: np.ndarray
    unique: bool
    basic: np.ndarray
    pool_load: np.ndarray
    graph_is_tree: bool
    basic_is_tree: bool
    edges: np.ndarray

    @property
    def crp(self) -> bool:
        """Complete resource pooling: unique, basic tree spanning, every pool loaded at rho."""
        return bool(self.unique and self.basic_is_tree and np.all(np.abs(self.pool_load - self.rho) <= TOL))


def is_spanning_tree(edges: np.ndarray) -> bool:
    """True when the bipartite graph on classes and pools with these (I, J) edges is a spanning tree.

    Args:
        edges: Boolean (I, J) edges between classes and pools.

    Returns:
        Whether the graph is a spanning tree.
    """
    num_i, num_j = edges.shape
    if int(edges.sum()) != num_i + num_j - 1:
        return False
    parent = list(range(num_i + num_j))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i, j in zip(*np.nonzero(edges)):
        a, b = find(int(i)), find(num_i + int(j))
        if a == b:
            return False
        parent[a] = b
    return True


def _lp_data(lam: np.ndarray, mu: np.ndarray, nu: np.ndarray):
    """LP (2.3) in HiGHS form over the variables (xi on the edges, t).

    Each capacity row is divided by its ``lambda_i``, so the LP HiGHS sees is the same when all rates, or
    one class's rates, are multiplied by a common factor (its tolerances are absolute).
    """
    num_i, num_j = mu.shape
    idx = np.argwhere(mu > 0)
    k = len(idx)
    c = np.zeros(k + 1)
    c[-1] = 1.0
    a_eq = np.zeros((num_i, k + 1))
    a_ub = np.zeros((num_j, k + 1))
    for e, (i, j) in enumerate(idx):
        a_eq[i, e] = mu[i, j] * nu[j] / lam[i]  # row i divided by lambda_i: scale-free, right-hand side 1
        a_ub[j, e] = 1.0
    a_ub[:, -1] = -1.0
    return idx, c, a_ub, np.zeros(num_j), a_eq, np.ones(num_i)


def solve_static_plan(lam: np.ndarray, mu: np.ndarray, nu: np.ndarray) -> StaticPlan:
    """Solve LP (2.3) = SPP (1) with HiGHS and check uniqueness of the solution.

    Uniqueness is checked directly: on the optimal face (value fixed at rho*) each xi_ij is minimised and
    maximised; the solution is unique when every range is below ``TOL``.

    Args:
        lam: Arrival rates lambda_i (I,).
        mu: Service rates (I, J), 0 off the graph.
        nu: Pool sizes (J,).

    Returns:
        A :class:`StaticPlan`.

    Raises:
        InputError: Naming ``system`` where HiGHS cannot solve LP (2.3), or ``system.mu`` where it cannot solve it
            accurately in float64.
    """
    lam, mu, nu = (np.asarray(a, dtype=float) for a in (lam, mu, nu))
    num_i, num_j = mu.shape
    idx, c, a_ub, b_ub, a_eq, b_eq = _lp_data(lam, mu, nu)
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0 or res.x is None or not np.all(np.isfinite(res.x)):
        raise InputError("system", f"LP (2.3) could not be solved ({res.message})")
    rho = float(res.x[-1])
    xi = np.zeros((num_i, num_j))
    for e, (i, j) in enumerate(idx):
        xi[i, j] = res.x[e]
    # d rho / d lambda_i: the marginal of scaled row i is d rho / d(lambda_i / lambda_i) at fixed mu nu / lambda_i
    workload = np.asarray(res.eqlin.marginals, dtype=float) / lam
    alpha = -np.asarray(res.ineqlin.marginals, dtype=float)
    # Uniqueness: range of each xi_ij over the optimal face {value <= rho*(1 + TOL)}.
    a_face = np.vstack([a_ub, c])
    b_face = np.concatenate([b_ub, [rho * (1 + TOL) + TOL]])
    unique = True
    for e in range(len(idx)):
        lo_hi = []
        for sign in (1.0, -1.0):
            ce = np.zeros(len(c))
            ce[e] = sign
            r = linprog(ce, A_ub=a_face, b_ub=b_face, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
            if r.status != 0 or r.fun is None:
                raise InputError("system.mu", f"LP (2.3) cannot be solved accurately in float64 ({r.message}); "
                                              "the rates span too many decades")
            lo_hi.append(sign * r.fun)
        if lo_hi[1] - lo_hi[0] > 1e3 * TOL * max(1.0, abs(lo_hi[1])):
            unique = False
            break
    scale = max(1.0, float(xi.max()))
    basic = xi > TOL * scale
    xi = np.where(basic, xi, 0.0)
    return StaticPlan(
        rho=rho,
        xi=xi,
        x_star=(xi * nu).sum(axis=1),
        z_star=xi * nu,
        routing=mu * nu * xi,
        workload=workload,
        alpha=alpha,
        unique=unique,
        basic=basic,
        pool_load=xi.sum(axis=0),
        graph_is_tree=is_spanning_tree(mu > 0),
        basic_is_tree=is_spanning_tree(basic),
        edges=mu > 0,
    )


def tree_duals(mu: np.ndarray, nu: np.ndarray, tree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SPP duals from the tree equations ``nu_i mu_ij beta_j = alpha_j`` on the tree, ``sum alpha = 1``.

    An independent route to the duals (the tree has I + J - 1 edges, so with the normalisation the
    linear system is square and nonsingular).

    Args:
        mu: Service rates (I, J), 0 off the graph.
        nu: Pool sizes (J,).
        tree: Boolean (I, J) basic activity tree.

    Returns:
        ``(workload nu_i, alpha_j)``.
    """
    num_i, num_j = mu.shape
    rows, rhs = [], []
    for i, j in np.argwhere(tree):
        r = np.zeros(num_i + num_j)
        r[i] = mu[i, j] * nu[j]
        r[num_i + j] = -1.0
        rows.append(r)
        rhs.append(0.0)
    r = np.zeros(num_i + num_j)
    r[num_i:] = 1.0
    rows.append(r)
    rhs.append(1.0)
    sol = np.linalg.solve(np.array(rows), np.array(rhs))
    return sol[:num_i], sol[num_i:]


def resolve_scaling(requested: str, plan: StaticPlan, has_second_order: bool) -> str:
    """Decide the scaling from LP (2.3)'s value and check complete resource pooling.

    Args:
      requested: ``"auto"``, ``"halfin-whitt"`` or ``"underloaded"`` (the config's ``scaling``).
      plan: the solved LP.
      has_second_order: whether the config has nonzero Halfin-Whitt second-order terms.

    Returns:
      ``"halfin-whitt"`` or ``"underloaded"``; raises :class:`InputError` naming the key otherwise.
    """
    rho = plan.rho
    critical = abs(rho - 1.0) <= 1e-6
    if rho > 1.0 + 1e-6:
        raise InputError("system.lambda", f"overloaded: LP (2.3) value rho* = {rho:.6g} > 1")
    if requested == "halfin-whitt" and not critical:
        raise InputError("system.lambda", f"Halfin-Whitt scaling needs LP (2.3) critical (rho* = 1), got {rho:.6g}")
    if requested == "underloaded" and critical:
        raise InputError("system.lambda", "underloaded scaling needs rho < 1, LP (2.3) gives rho = 1")
    scaling = requested if requested != "auto" else ("halfin-whitt" if critical else "underloaded")
    if scaling == "underloaded" and has_second_order:
        raise InputError("system.lambda_hat", f"second-order terms need a critical LP (2.3), rho* = {rho:.6g}")
    if not plan.unique:
        raise InputError("system.mu", "complete resource pooling fails: LP (2.3) has more than one solution")
    if not np.all(np.abs(plan.pool_load - rho) <= 1e-6):
        j = int(np.argmax(np.abs(plan.pool_load - rho)))
        raise InputError("system.pool_size", f"complete resource pooling fails: pool {j + 1} is not loaded at rho")
    if not plan.basic_is_tree:
        raise InputError("system.mu", "complete resource pooling fails: the basic activities are not a spanning tree")
    if scaling == "halfin-whitt" and not plan.graph_is_tree:
        extra = [(int(i) + 1, int(j) + 1) for i, j in np.argwhere(plan.edges & ~plan.basic)]
        raise InputError(
            "system.mu",
            "the activity graph is not a tree: (2.4) needs every activity basic"
            + (f" (activity {extra[0]} has xi* = 0)" if extra else ""),
        )
    return scaling
