"""Diffusion limit of a tree network in the Halfin-Whitt regime (the uniform-stability paper, Sections 2.2-2.5).

* Phi of (2.22): the unique linear map from D = {(alpha, beta): sum alpha = sum beta} to allocations on
  the tree with class sums alpha and pool sums beta (a tree's incidence matrix has full column rank, so
  Phi is its pseudo-inverse restricted to D).
* B1, B2 of (2.24): ``sum_j mu_ij Phi_ij(alpha, beta) = (B1 alpha + B2 beta)_i`` in the basis
  ``(alpha, beta_{-jhat})`` (column jhat of B2 is 0). The basis pool jhat is the dominant pool (the one
  non-leaf pool) when there is one, as in (2.33); for class-dependent rates B1 = diag(mu_i), B2 = 0 for
  every jhat (2.34). Otherwise we take the pool of largest degree (smallest index on ties) with B1
  nonsingular; the spare capacity of a general tree depends on that choice (it measures idleness in
  units of pool jhat servers).
* The second-order term l (2.14), the spare capacity rho = -<e, B1^{-1} l> (2.35) and the drift
  b(x, u) = l - sum_j mu_ij Phi_hat_ij[u](x) of (2.28)-(2.29), equal to (2.30).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxq.model.network import Network, ScaledNetwork
from jaxq.planning.network_lp import StaticPlan


@dataclass(frozen=True, eq=False)
class NetworkDiffusion:
    """Limit objects of a critically loaded tree network.

    Attributes:
        tree: Boolean (I, J) activity tree.
        edges: Its activities as an (E, 2) int array.
        phi_matrix: (E, I + J) matrix P with Phi(alpha, beta) = P @ concat(alpha, beta) on D (2.22).
        drift_matrix: (I, I + J) matrix K = M P with sum_j mu_ij Phi_ij = K @ concat(alpha, beta).
        B1: The matrix B1 of (2.24)/(2.30) in the basis (alpha, beta_{-basis_pool}).
        B2: The matrix B2 of (2.24)/(2.30) in the basis (alpha, beta_{-basis_pool}).
        basis_pool: jhat, 0-based.
        ell: The second-order term l of (2.14).
        spare_capacity: rho of (2.35).
        network_type: ``"class-dependent"``, ``"dominant-pool"`` or ``"general"``.
        b1_diagonal: Whether B1 is diagonal (the property the uniform stability results need).
        sigma: Diagonal of the diffusion coefficient, sqrt(2 lambda_i).
    """

    tree: np.ndarray
    edges: np.ndarray
    phi_matrix: np.ndarray
    drift_matrix: np.ndarray
    B1: np.ndarray
    B2: np.ndarray
    basis_pool: int
    ell: np.ndarray
    spare_capacity: float
    network_type: str
    b1_diagonal: bool
    sigma: np.ndarray

    def phi(self, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """Phi(alpha, beta) of (2.22) as an (I, J) matrix (0 off the tree).

        Args:
            alpha: The class sums alpha, shape (I,).
            beta: The pool sums beta, shape (J,).

        Returns:
            Phi(alpha, beta), shape (I, J).
        """
        num_i, num_j = self.tree.shape
        vals = self.phi_matrix @ np.concatenate([alpha, beta])
        out = np.zeros((num_i, num_j))
        out[self.edges[:, 0], self.edges[:, 1]] = vals
        return out

    def idleness_weight(self, us: np.ndarray) -> float:
        """1 + <e, B1^{-1} B2 u^s>, the weight of idleness in identity (3.6) and in (3.1).

        Args:
            us: The idleness allocation u^s, shape (J,).

        Returns:
            The weight.
        """
        return float(1.0 + np.sum(np.linalg.solve(self.B1, self.B2 @ us)))


def phi_matrix(tree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pseudo-inverse of the tree's incidence matrix: Phi = P @ (alpha, beta) on D (2.22).

    Args:
        tree: Boolean (I, J) activity tree.

    Returns:
        ``(edges, P)`` with edges an (E, 2) array of (i, j) and P of shape (E, I + J).
    """
    num_i, num_j = tree.shape
    edges = np.argwhere(tree)
    inc = np.zeros((num_i + num_j, len(edges)))
    for e, (i, j) in enumerate(edges):
        inc[i, e] = 1.0
        inc[num_i + j, e] = 1.0
    return edges, np.round(np.linalg.pinv(inc), 13) + 0.0  # entries are rationals; drop round-off


def _m_matrix(mu: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(I, E) matrix with (M phi)_i = sum_j mu_ij phi_ij."""
    m = np.zeros((mu.shape[0], len(edges)))
    for e, (i, j) in enumerate(edges):
        m[i, e] = mu[i, j]
    return m


def b_matrices(mu: np.ndarray, tree: np.ndarray, basis_pool: int) -> tuple[np.ndarray, np.ndarray]:
    """B1 (I, I) and B2 (I, J) of (2.24) in the basis (alpha, beta_{-basis_pool}).

    Args:
        mu: Service rates (I, J).
        tree: Boolean (I, J) activity tree.
        basis_pool: jhat, 0-based.

    Returns:
        ``(B1, B2)``.
    """
    num_i, num_j = tree.shape
    edges, p = phi_matrix(tree)
    k = _m_matrix(mu, edges) @ p
    b1 = np.zeros((num_i, num_i))
    b2 = np.zeros((num_i, num_j))
    for i in range(num_i):  # alpha = e_i, beta = e_jhat keeps (alpha, beta) in D
        v = np.zeros(num_i + num_j)
        v[i], v[num_i + basis_pool] = 1.0, 1.0
        b1[:, i] = k @ v
    for j in range(num_j):
        if j != basis_pool:
            v = np.zeros(num_i + num_j)
            v[num_i + j], v[num_i + basis_pool] = 1.0, -1.0
            b2[:, j] = k @ v
    # drop round-off of the pseudo-inverse, relative to the scale of the rates (scale-free)
    scale = max(float(np.abs(b1).max()), float(np.abs(b2).max()), np.finfo(float).tiny)
    return np.round(b1 / scale, 12) * scale + 0.0, np.round(b2 / scale, 12) * scale + 0.0


def network_type(mu: np.ndarray, tree: np.ndarray) -> str:
    """``"class-dependent"`` (mu_ij = mu_i), ``"dominant-pool"`` (one non-leaf pool) or ``"general"``.

    Args:
        mu: Service rates (I, J).
        tree: Boolean (I, J) activity tree.

    Returns:
        The type.
    """
    if all(np.ptp(mu[i, tree[i]]) <= 1e-12 * mu[i, tree[i]].max() for i in range(tree.shape[0])):
        return "class-dependent"
    if int((tree.sum(axis=0) > 1).sum()) == 1:
        return "dominant-pool"
    return "general"


def choose_basis_pool(mu: np.ndarray, tree: np.ndarray) -> int:
    """jhat: the dominant (non-leaf) pool if unique, else the largest-degree pool with B1 nonsingular.

    Args:
        mu: Service rates (I, J).
        tree: Boolean (I, J) activity tree.

    Returns:
        jhat, 0-based (0 when no pool gives a nonsingular B1).
    """
    deg = tree.sum(axis=0)
    nonleaf = np.nonzero(deg > 1)[0]
    if len(nonleaf) == 1:
        return int(nonleaf[0])
    for j in sorted(range(tree.shape[1]), key=lambda j: (-deg[j], j)):
        b1, _ = b_matrices(mu, tree, j)
        if abs(np.linalg.det(b1)) > 1e-12 * max(1.0, np.abs(b1).max()) ** b1.shape[0]:
            return j
    return 0


def second_order_term(net: Network, plan: StaticPlan) -> np.ndarray:
    """l_i = lambda_hat_i - sum_j mu_hat_ij z*_ij - sum_j mu_ij xi*_ij nu_hat_j (limit of (2.14)).

    Args:
        net: The network.
        plan: Its solved LP (2.3).

    Returns:
        l, shape (I,).
    """
    return net.lambda_hat - (net.mu_hat * plan.z_star).sum(axis=1) - (net.mu * plan.xi * net.nu_hat).sum(axis=1)


def second_order_term_n(net: Network | ScaledNetwork, plan: StaticPlan, n: float) -> np.ndarray:
    """l^n_i of (2.14) for the n-th system (integer pool sizes).

    Args:
        net: The network, or its n-th system in the Halfin-Whitt scaling (:meth:`jaxq.model.network.Network.at`:
            its rates are then read, not computed again).
        plan: Its solved LP (2.3).
        n: The scale n.

    Returns:
        l^n, shape (I,).
    """
    nth = net.at(n, "halfin-whitt")
    return (nth.lam_n - (nth.mu_n * plan.xi * nth.N).sum(axis=1)) / nth.sqrt_n


def spare_capacity(b1: np.ndarray, ell: np.ndarray) -> float:
    """rho = -<e, B1^{-1} l> (2.35).

    Args:
        b1: B1, shape (I, I).
        ell: l, shape (I,).

    Returns:
        rho.
    """
    return float(-np.sum(np.linalg.solve(b1, ell)))


def spare_capacity_n(net: Network | ScaledNetwork, plan: StaticPlan, n: float, basis_pool: int) -> float:
    """rho_n = -<e, (B1^n)^{-1} l^n> (2.35) of the n-th system.

    Args:
        net: The network, or its n-th system in the Halfin-Whitt scaling (:meth:`jaxq.model.network.Network.at`).
        plan: Its solved LP (2.3).
        n: The scale n.
        basis_pool: jhat, 0-based.

    Returns:
        rho_n.
    """
    nth = net.at(n, "halfin-whitt")
    b1n, _ = b_matrices(nth.mu_n, plan.basic, basis_pool)
    return spare_capacity(b1n, second_order_term_n(nth, plan, n))


def diffusion_limit(net: Network, plan: StaticPlan, basis_pool: int | None = None) -> NetworkDiffusion:
    """All limit objects of the uniform-stability paper for a network satisfying CRP with rho* = 1.

    Args:
        net: The network.
        plan: Its solved LP (2.3) (CRP already checked).
        basis_pool: Optional jhat (0-based); default :func:`choose_basis_pool`.

    Returns:
        The limit objects.
    """
    tree = plan.basic
    edges, p = phi_matrix(tree)
    jhat = choose_basis_pool(net.mu, tree) if basis_pool is None else basis_pool
    b1, b2 = b_matrices(net.mu, tree, jhat)
    ell = second_order_term(net, plan)
    return NetworkDiffusion(
        tree=tree,
        edges=edges,
        phi_matrix=p,
        drift_matrix=_m_matrix(net.mu, edges) @ p,
        B1=b1,
        B2=b2,
        basis_pool=jhat,
        ell=ell,
        spare_capacity=spare_capacity(b1, ell),
        network_type=network_type(net.mu, tree),
        b1_diagonal=bool(np.allclose(b1, np.diag(np.diag(b1)), rtol=0.0, atol=1e-12 * float(np.abs(b1).max()))),
        sigma=np.sqrt(2.0 * net.lam),
    )


def drift(x, uc, us, ell, drift_matrix):
    """b(x, u) of (2.29) through Phi: l - K (x - (e.x)^+ u^c, -(e.x)^- u^s); works on numpy or jax arrays.

    Args:
        x (numpy.ndarray | jax.Array): State (..., I).
        uc (numpy.ndarray | jax.Array): (..., I) in the simplex.
        us (numpy.ndarray | jax.Array): (..., J) in the simplex.
        ell (numpy.ndarray | jax.Array): l (I,).
        drift_matrix (numpy.ndarray | jax.Array): K = M P, (I, I + J).

    Returns:
        (numpy.ndarray | jax.Array): b(x, u), shape (..., I).
    """
    s = x.sum(axis=-1, keepdims=True)
    pos = s * (s > 0)
    neg = -s * (s < 0)
    num_i = x.shape[-1]
    alpha = x - pos * uc
    beta = -neg * us
    return ell - alpha @ drift_matrix[:, :num_i].T - beta @ drift_matrix[:, num_i:].T
