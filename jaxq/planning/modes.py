"""LP (2.7) of the switched-policies paper and its two modes.

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
LP_TOL = 1e-7  # agreement asked of HiGHS with the closed forms (rho*, the optimal face; both scale-free)


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


HIGHS_MATRIX_RANGE = (1e-9, 1e15)  # HiGHS's small_matrix_value and large_matrix_value: coefficients it accepts


def _lp_failed(detail: str) -> InputError:
    return InputError(
        "system.mu",
        f"LP (2.7) cannot be solved accurately in float64 ({detail}); the rates span too many decades",
    )


def solve_lp(lam: np.ndarray, mu: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Solve LP (2.7) with HiGHS; return rho* and the optimal face's extremes in ``xi_11``.

    Row i of the capacity constraint is divided by ``lambda_i`` (``sum_k (mu_ik / lambda_i) xi_ik = 1``), so the LP
    HiGHS sees does not change when all rates, or one class's rates, are multiplied by a common factor.

    Args:
        lam: The arrival rates ``lambda_i``, shape (2,).
        mu: The service rates ``mu_ik``, shape (2, 2).

    Returns:
        ``(rho_star, xi_min, xi_max)`` where ``xi_min``/``xi_max`` minimise/maximise ``xi_11`` over the optimal face
            (equal when the solution is unique).

    Raises:
        InputError: Naming ``system.mu``, where HiGHS cannot solve the LP accurately in float64.
    """
    from scipy.optimize import linprog  # imported here: the command line starts faster without it

    lam = np.asarray(lam, dtype=float)
    mu = np.asarray(mu, dtype=float)
    m = mu / lam[:, None]
    # Variables: xi_11, xi_12, xi_21, xi_22, rho.
    a_eq = np.array([[m[0, 0], m[0, 1], 0, 0, 0], [0, 0, m[1, 0], m[1, 1], 0]], dtype=float)
    a_ub = np.array([[1, 0, 1, 0, -1], [0, 1, 0, 1, -1]], dtype=float)
    b_eq = [1.0, 1.0]
    bounds = [(0, None)] * 4 + [(None, None)]
    res = linprog([0, 0, 0, 0, 1], A_ub=a_ub, b_ub=[0, 0], A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status != 0 or res.x is None or not np.all(np.isfinite(res.x)):
        lo, hi = float(m.min()), float(m.max())
        if not (HIGHS_MATRIX_RANGE[0] <= lo and hi <= HIGHS_MATRIX_RANGE[1]):  # what HiGHS calls a "model error"
            raise InputError("system", f"LP (2.7) cannot be solved: its coefficients, the ratios mu_ik / lambda_i, "
                                       f"span {lo:.3g} .. {hi:.3g}, beyond the range HiGHS accepts "
                                       f"[{HIGHS_MATRIX_RANGE[0]:g}, {HIGHS_MATRIX_RANGE[1]:g}]: a near-zero or huge "
                                       "rate")
        raise InputError("system", f"LP (2.7) could not be solved: {res.message}")
    rho = float(res.fun)
    # The optimal face: fix rho = rho* and extremise xi_11.
    bounds_face = [(0, None)] * 4 + [(rho, rho)]
    ext = []
    for sign in (1.0, -1.0):
        r = linprog([sign, 0, 0, 0, 0], A_ub=a_ub, b_ub=[0, 0], A_eq=a_eq, b_eq=b_eq, bounds=bounds_face,
                    method="highs")
        if r.status != 0 or r.x is None:
            raise _lp_failed(f"HiGHS finds no point of the optimal face: {r.message}")
        ext.append(r.x[:4].reshape(2, 2))
    return rho, ext[0], ext[1]


def product_form(mu: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Factors ``alpha, beta`` with ``sum(beta) = 1`` and whether ``mu = alpha beta^T`` holds (relative ``RTOL``).

    Args:
        mu: The service rates ``mu_ik``, shape (2, 2).

    Returns:
        ``(alpha, beta, holds)``.
    """
    alpha = mu.sum(axis=1)
    beta = mu[0] / mu[0].sum()
    ok = np.allclose(np.outer(alpha, beta), mu, rtol=RTOL, atol=0.0)
    return alpha, beta, bool(ok)


def mode_from_xi11(xi11: float, lam, alpha, beta) -> np.ndarray:
    """Every LP solution as a function of its entry ``xi_11`` (3.2).

    Args:
        xi11: The entry ``xi_11``.
        lam (numpy.ndarray): The arrival rates ``lambda_i``, shape (2,).
        alpha (numpy.ndarray): The product-form factor ``alpha`` (:func:`product_form`).
        beta (numpy.ndarray): The product-form factor ``beta``, ``sum(beta) = 1``.

    Returns:
        The solution ``xi``, shape (2, 2).
    """
    c = lam[0] / (alpha[0] * beta[1])
    r = beta[0] / beta[1]
    return np.array([[xi11, c - r * xi11], [1 - xi11, 1 - c + r * xi11]])


def closed_form_modes(c1: float, beta: np.ndarray) -> np.ndarray:
    """The two modes (3.3) from ``c_1 = lambda_1 / alpha_1`` and ``beta``, with exact zeros.

    (3.2) with column sums 1: ``beta_1 xi_11 + beta_2 xi_12 = c_1``. Mode 1 has
    ``xi_11 = max(0, (c_1 - beta_2) / beta_1)``, mode 2 ``xi_11 = min(c_1 / beta_1, 1)``. Each branch is
    written so that its zero entry is exactly 0 and every other entry is a ratio of scale-free numbers
    in [0, 1] (no cancellation of large terms, whatever the scale of the rates).

    Args:
        c1: ``c_1 = lambda_1 / alpha_1``.
        beta: The product-form factor ``beta``, ``sum(beta) = 1``.

    Returns:
        The two modes, shape (2, 2, 2).
    """
    b1, b2 = float(beta[0]), float(beta[1])
    if c1 <= b2:  # mode 1: xi_11 = 0
        m1 = [[0.0, c1 / b2], [1.0, (b2 - c1) / b2]]
    else:  # xi_12 = 1, xi_22 = 0
        x = (c1 - b2) / b1
        m1 = [[x, 1.0], [1.0 - x, 0.0]]
    if c1 <= b1:  # mode 2: xi_11 = c_1 / beta_1, xi_12 = 0
        x = c1 / b1
        m2 = [[x, 0.0], [1.0 - x, 1.0]]
    else:  # xi_11 = 1, xi_21 = 0
        y = (c1 - b1) / b2
        m2 = [[1.0, y], [0.0, 1.0 - y]]
    return np.array([m1, m2])


def modes(lam, mu) -> Modes:
    """LP (2.7), the product form, and the two modes (3.2)-(3.3), validated against Assumption 2.2.

    Args:
        lam (numpy.typing.ArrayLike): The arrival rates ``lambda_i``, shape (2,).
        mu (numpy.typing.ArrayLike): The service rates ``mu_ik``, shape (2, 2).

    Returns:
        The LP (2.7) solution set.

    Raises:
        InputError: Naming ``system.lambda`` where rho* != 1 (the EHTC fails), or ``system.mu`` where the rates are not
            of product form, a mode is degenerate (2.8) or the LP cannot be solved accurately in float64.
    """
    lam = np.asarray(lam, dtype=float)
    mu = np.asarray(mu, dtype=float)
    alpha, beta, is_product = product_form(mu)
    rho_lp, face_lo, face_hi = solve_lp(lam, mu)
    # With product form rho* = sum_i lambda_i / alpha_i exactly (both columns loaded equally), a
    # scale-free closed form; HiGHS must agree with it, or the LP is beyond float64.
    rho = float(np.sum(lam / alpha)) if is_product else rho_lp
    if is_product and abs(rho_lp - rho) > LP_TOL * rho:
        raise _lp_failed(f"HiGHS gives rho* = {rho_lp:.10g}, the product form {rho:.10g}")
    if abs(rho - 1.0) > 1e-8:
        load = "underloaded" if rho < 1 else "overloaded"
        raise InputError(
            "system.lambda",
            f"LP (2.7) gives rho* = {rho:.10g} != 1 ({load}): the extended heavy traffic condition (EHTC) fails",
        )
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
    xi = closed_form_modes(float(lam[0] / alpha[0]), beta)
    # Cross-check with the LP's optimal face found by HiGHS, in units of total capacity
    # (beta_k xi_ik: the share of sum_k beta_k = 1 that class i gets at server k). HiGHS's tolerances are
    # absolute in those units, so a server slower than the other by many decades is checked as
    # loosely as HiGHS can resolve it, and a typical system to 1e-7.
    face = np.stack([face_lo, face_hi])
    if not np.allclose(face * beta, xi * beta, rtol=0.0, atol=LP_TOL):
        raise _lp_failed(f"HiGHS's optimal face {face.tolist()} is not the modes (3.3) {xi.tolist()}")
    zero, i1, i2, k1, k2 = [], [], [], [], []
    for m in range(2):
        zs = np.argwhere(xi[m] == 0.0)
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
