"""LP (2.7) of seed 000 and its two modes.

Under the extended heavy traffic condition with multiplicity (EHTCM) and nondegeneracy (Assumption 2.2)
the solutions of LP (2.7) form the segment between two nondegenerate modes (Lemma 2.1). The service
rates then have product form ``mu_ik = alpha_i beta_k`` with ``beta_1 + beta_2 = 1``, every solution is
column-stochastic and is given by its entry ``xi_11`` through (3.2); the modes are the end points (3.3).

Indices are 0-based in arrays; the paper's labels are 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxq.errors import InputError

RTOL = 1e-9  # relative tolerance for the exact conditions (EHTC, product form, nondegeneracy)


@dataclass(frozen=True, eq=False)
class Modes:
    """The LP (2.7) solution set of a 2x2 system.

    Attributes:
      rho_star: optimal value of LP (2.7).
      alpha, beta: product-form factors, ``mu_ik = alpha_i beta_k``, ``sum(beta) = 1``.
      xi: array (2, 2, 2); ``xi[m]`` is mode m+1, labelled as in (3.3).
      zero: the non-basic activity (i', k) of each mode, 0-based.
      i1, i2, k1, k2: single-/dual-activity class and server of each mode, 0-based, shape (2,).
      switching: ``"class"`` (3.5) or ``"server"`` (3.6).
      lp_face: the extreme points of the LP's optimal face found by HiGHS (cross-check of ``xi``).
    """

    rho_star: float
    alpha: np.ndarray
    beta: np.ndarray
    xi: np.ndarray
    zero: np.ndarray
    i1: np.ndarray
    i2: np.ndarray
    k1: np.ndarray
    k2: np.ndarray
    switching: str
    lp_face: np.ndarray


def solve_lp(lam: np.ndarray, mu: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Solve LP (2.7) with HiGHS; return rho* and the optimal face's extremes in ``xi_11``.

    Returns ``(rho_star, xi_min, xi_max)`` where ``xi_min``/``xi_max`` minimise/maximise ``xi_11``
    over the optimal face (equal when the solution is unique).
    """
    from scipy.optimize import linprog  # imported here: the command line starts faster without it
    # Variables: xi_11, xi_12, xi_21, xi_22, rho.
    a_eq = np.array([[mu[0, 0], mu[0, 1], 0, 0, 0], [0, 0, mu[1, 0], mu[1, 1], 0]], dtype=float)
    a_ub = np.array([[1, 0, 1, 0, -1], [0, 1, 0, 1, -1]], dtype=float)
    bounds = [(0, None)] * 4 + [(None, None)]
    res = linprog([0, 0, 0, 0, 1], A_ub=a_ub, b_ub=[0, 0], A_eq=a_eq, b_eq=lam, bounds=bounds, method="highs")
    if res.status != 0:
        raise InputError("system", f"LP (2.7) could not be solved: {res.message}")
    rho = float(res.fun)
    # The optimal face: fix rho = rho* and extremise xi_11.
    bounds_face = [(0, None)] * 4 + [(rho, rho)]
    ext = []
    for sign in (1.0, -1.0):
        r = linprog([sign, 0, 0, 0, 0], A_ub=a_ub, b_ub=[0, 0], A_eq=a_eq, b_eq=lam, bounds=bounds_face, method="highs")
        ext.append(r.x[:4].reshape(2, 2))
    return rho, ext[0], ext[1]


def product_form(mu: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Factors ``alpha, beta`` with ``sum(beta) = 1`` and whether ``mu = alpha beta^T`` holds."""
    alpha = mu.sum(axis=1)
    beta = mu[0] / mu[0].sum()
    ok = np.allclose(np.outer(alpha, beta), mu, rtol=RTOL, atol=0.0)
    return alpha, beta, bool(ok)


def mode_from_xi11(xi11: float, lam, alpha, beta) -> np.ndarray:
    """Every LP solution as a function of its entry ``xi_11`` (3.2)."""
    c = lam[0] / (alpha[0] * beta[1])
    r = beta[0] / beta[1]
    return np.array([[xi11, c - r * xi11], [1 - xi11, 1 - c + r * xi11]])


def modes(lam, mu) -> Modes:
    """LP (2.7), the product form, and the two modes (3.2)-(3.3), validated against Assumption 2.2."""
    lam = np.asarray(lam, dtype=float)
    mu = np.asarray(mu, dtype=float)
    rho, face_lo, face_hi = solve_lp(lam, mu)
    if abs(rho - 1.0) > 1e-8:
        load = "underloaded" if rho < 1 else "overloaded"
        raise InputError(
            "system.lambda",
            f"LP (2.7) gives rho* = {rho:.10g} != 1 ({load}): the extended heavy traffic condition (EHTC) fails",
        )
    alpha, beta, is_product = product_form(mu)
    if not is_product:
        raise InputError(
            "system.mu",
            "rates are not of product form (mu_11 mu_22 != mu_12 mu_21), so LP (2.7) has a unique solution "
            "and the EHTC with multiplicity (Assumption 2.2.1) fails",
        )
    for i in range(2):
        for k in range(2):
            if abs(lam[i] - mu[i, k]) <= RTOL * max(lam[i], mu[i, k]):
                raise InputError(
                    "system.mu",
                    f"lambda_{i + 1} = mu_{i + 1}{k + 1} = {lam[i]:g}: a mode is degenerate "
                    "(nondegeneracy condition (2.8) fails)",
                )
    x1 = max(0.0, lam[0] / (alpha[0] * beta[0]) - beta[1] / beta[0])  # (3.3)
    x2 = min(lam[0] / (alpha[0] * beta[0]), 1.0)
    xi = np.stack([mode_from_xi11(x1, lam, alpha, beta), mode_from_xi11(x2, lam, alpha, beta)])
    xi[np.abs(xi) < 1e-12] = 0.0
    # Cross-check with the LP's optimal face found by HiGHS.
    face = np.stack([face_lo, face_hi])
    if not np.allclose(face, xi, atol=1e-7):
        raise RuntimeError(f"modes (3.3) {xi.tolist()} disagree with the LP optimal face {face.tolist()}")
    zero, i1, i2, k1, k2 = [], [], [], [], []
    for m in range(2):
        zs = np.argwhere(xi[m] <= 1e-12)
        if len(zs) != 1:  # excluded by (2.8) (Lemma 3.2); kept as an internal consistency check
            raise RuntimeError(f"mode {m + 1} has {len(zs)} zero entries: {xi[m].tolist()}")
        ip, k = (int(v) for v in zs[0])
        zero.append((ip, k))
        i1.append(ip)
        i2.append(1 - ip)
        k1.append(k)
        k2.append(1 - k)
    (r1, c1), (r2, c2) = zero
    if r1 != r2 and c1 == c2:
        kind = "class"
    elif r1 == r2 and c1 != c2:
        kind = "server"
    else:  # Lemma 2.1.4 rules this out
        raise RuntimeError(f"modes are neither class- nor server-switched: zeros at {zero}")
    # Lemma 3.3: (3.5) gives class switching, (3.6) server switching.
    crit = np.max(lam / alpha) - np.max(beta)
    if (crit < 0) != (kind == "class"):
        raise RuntimeError(f"switching criterion (3.5)/(3.6) disagrees with the modes: {kind}, {crit}")
    return Modes(
        rho_star=rho,
        alpha=alpha,
        beta=beta,
        xi=xi,
        zero=np.array(zero),
        i1=np.array(i1),
        i2=np.array(i2),
        k1=np.array(k1),
        k2=np.array(k2),
        switching=kind,
        lp_face=face,
    )
