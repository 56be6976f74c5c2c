"""The workload diffusion of the 2x2 system and the structure of its optimal control (the switched-policies paper).

``W = X_1/alpha_1 + X_2/alpha_2`` (2.10). Each mode xi gives a drift and a diffusion coefficient (2.13);
the HPC p is the class with the larger ``h_i alpha_i`` (2.12); the single-mode (2.19) or dual-mode (2.20)
condition decides whether the optimal WCP control switches; the roles of the HPC in the relevant modes
pick one of the six policies of Definitions 2.9-2.10 (Theorem 2.11).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np

from jaxq.diffusion import hjb
from jaxq.errors import InputError
from jaxq.model.policy_table import BY_ROLES, POLICY_TABLE, ROLE_I1, ROLE_I2
from jaxq.model.pss2x2 import PSS2x2
from jaxq.planning.modes import Modes, modes
from jaxq.precision import float64

POLICIES = tuple(POLICY_TABLE)

# Compiled once per process: the analysis is called many times (tests, sweeps, tuning).
_rbm_value = jax.jit(hjb.rbm_value)
_switching_cost = jax.jit(hjb.switching_cost)
_switching_point = jax.jit(hjb.switching_point)


def drift(xi, lam_hat, mu_hat, alpha):
    """b(xi) of (2.13).

    Args:
        xi (numpy.ndarray): The mode xi, shape (2, 2).
        lam_hat (numpy.ndarray): The second-order arrival terms lambda_hat_i, shape (2,).
        mu_hat (numpy.ndarray): The second-order service terms mu_hat_ik, shape (2, 2).
        alpha (numpy.ndarray): The product-form factor alpha, shape (2,).

    Returns:
        (float): b(xi).
    """
    return float(np.sum((lam_hat - np.sum(mu_hat * xi, axis=1)) / alpha))


def diffusion(xi, lam, mu, ca2, cs2, alpha):
    """sigma(xi) of (2.13): ``sigma_A,i^2 = lambda_i C_A,i^2``, ``sigma_S,ik^2 = mu_ik C_S,ik^2``.

    Args:
        xi (numpy.ndarray): The mode xi, shape (2, 2).
        lam (numpy.ndarray): The arrival rates lambda_i, shape (2,).
        mu (numpy.ndarray): The service rates mu_ik, shape (2, 2).
        ca2 (numpy.ndarray): The squared coefficients of variation C_A,i^2 of the interarrival times, shape (2,).
        cs2 (numpy.ndarray): The squared coefficients of variation C_S,ik^2 of the service times, shape (2, 2).
        alpha (numpy.ndarray): The product-form factor alpha, shape (2,).

    Returns:
        (float): sigma(xi).
    """
    return float(np.sqrt(np.sum((lam * ca2 + np.sum(mu * cs2 * xi, axis=1)) / alpha**2)))


def high_priority_class(h, alpha) -> int:
    """The HPC p of (2.12), 0-based; a tie (:func:`hpc_tie`: equal up to rounding) gives p = 1 (index 0).

    Args:
        h (numpy.ndarray): The holding costs h_i, shape (2,).
        alpha (numpy.ndarray): The product-form factor alpha, shape (2,).

    Returns:
        p, 0-based.
    """
    return 0 if hpc_tie(h, alpha) or h[0] * alpha[0] > h[1] * alpha[1] else 1


def hpc_tie(h, alpha) -> bool:
    """Whether ``h_1 alpha_1 = h_2 alpha_2`` (up to rounding: relative 1e-10, as :func:`classify`): (2.12) does
    not decide the HPC.

    Args:
        h (numpy.ndarray): The holding costs h_i, shape (2,).
        alpha (numpy.ndarray): The product-form factor alpha, shape (2,).

    Returns:
        Whether the products tie.
    """
    a, b = float(h[0] * alpha[0]), float(h[1] * alpha[1])
    return abs(a - b) <= 1e-10 * max(abs(a), abs(b))


def theta_exponent(m: float = np.inf) -> tuple[float, float]:
    """The open interval (2.28) for a_bar given the moment order m (m = inf: all moments finite).

    Args:
        m: The moment order.

    Returns:
        The ends of the interval.

    Raises:
        InputError: Naming ``m`` when m <= 2 (Assumption 2.6).
    """
    m0 = 0.5 * (5 + np.sqrt(17))
    if m <= 2:
        raise InputError("m", "Assumption 2.6 needs moments of order m > 2")
    if np.isinf(m):
        zeta = 1.0 / 6.0
    elif m <= m0:
        zeta = (m - 2) / (4 * m)
    else:
        zeta = (m * m - 5 * m + 2) / (2 * m * (3 * m - 2))
    return 0.5 - zeta, 0.5


@dataclass(frozen=True, eq=False)
class Analysis:
    """Everything ``jaxq analyze`` reports about a 2x2 system (0-based indices).

    ``lower``/``higher`` are the modes used below/above z* (dual case); ``active`` the mode of the
    single case. ``V_wcp0`` is V_WCP(0) in workload units and ``V0 = h_q alpha_q V_WCP(0)``.

    Attributes:
        system: The 2x2 system.
        modes: Its LP (2.7) solution set and modes (3.2)-(3.3).
        b: The drift b(xi) (2.13) of each mode, shape (2,).
        sigma: The diffusion coefficient sigma(xi) (2.13) of each mode, shape (2,).
        p: The HPC (2.12).
        case: ``"single"`` (2.19) or ``"dual"`` (2.20).
        active: The mode of the single case (None in the dual case).
        lower: The mode used below z* (dual case; None in the single case).
        higher: The mode used above z* (dual case; None in the single case).
        z_star: The optimal switching point z* (dual case; None in the single case).
        V_wcp0: V_WCP(0) in workload units.
        V0: ``h_q alpha_q V_WCP(0)``.
        policy: The policy of Theorem 2.11.
        warnings: Sentences a reader must see (a tie in (2.12)); also in every 2x2 SimResult.
        q: The other class, ``1 - p``.
    """

    system: PSS2x2
    modes: Modes
    b: np.ndarray
    sigma: np.ndarray
    p: int
    case: str
    active: int | None
    lower: int | None
    higher: int | None
    z_star: float | None
    V_wcp0: float
    V0: float
    policy: str
    warnings: tuple[str, ...] = ()  # sentences a reader must see (a tie in (2.12)); also in every 2x2 SimResult

    @property
    def q(self) -> int:
        return 1 - self.p

    def mode_coefficients(self) -> tuple[float, float, float, float]:
        """(b_L, s_L, b_H, s_H); in the single case both are the active mode."""
        lo = self.active if self.case == "single" else self.lower
        hi = self.active if self.case == "single" else self.higher
        return self.b[lo], self.sigma[lo], self.b[hi], self.sigma[hi]

    def cost_scale(self) -> float:
        """``h_q alpha_q``: multiplies a workload cost to give a cost in the units of J_n and V0."""
        return float(self.system.h[self.q] * self.modes.alpha[self.q])

    @float64
    def wcp_cost(self, z0: float = 0.0, switch_at: float | None = None) -> float:
        """Exact WCP cost from z0 of switching at ``switch_at`` (default z*; single case: no switch).

        Args:
            z0: The starting workload.
            switch_at: The switching level (None: z*, or no switch in the single case).

        Returns:
            The cost, in workload units.
        """
        bL, sL, bH, sH = self.mode_coefficients()
        g = self.system.gamma
        if switch_at is None:
            if self.case == "single":
                return float(_rbm_value(z0, bH, sH, g))
            switch_at = self.z_star
        return float(_switching_cost(z0, switch_at, bL, sL, bH, sH, g))

    def to_dict(self) -> dict:
        """The JSON of ``jaxq analyze`` (SPEC.md), labels 1-based."""
        m = self.modes
        out = {
            "rho_star": m.rho_star,
            "alpha": m.alpha,
            "beta": m.beta,
            "modes": m.xi,
            "switching": m.switching,
            "single_activity_class": m.i1 + 1,
            "single_activity_server": m.k1 + 1,
            "b": self.b,
            "sigma": self.sigma,
            "hpc": self.p + 1,
            "case": self.case,
        }
        if self.case == "single":
            out["active_mode"] = self.active + 1
        else:
            out["lower_mode"] = self.lower + 1
            out["higher_mode"] = self.higher + 1
        out.update(z_star=self.z_star, V_wcp0=self.V_wcp0, V0=self.V0, policy=self.policy,
                   warnings=list(self.warnings))
        return out


def classify(b, sigma) -> tuple[str, int | None, int | None, int | None]:
    """Single (2.19) or dual (2.20) case: ``(case, active, lower, higher)`` with 0-based modes.

    When both modes satisfy (2.19) (equal coefficients) the active mode is mode 1. Coefficients equal
    up to rounding (relative 1e-10, as under the symmetry conditions of Lemma B.1) count as equal.

    Args:
        b (numpy.ndarray): The drift of each mode, shape (2,).
        sigma (numpy.ndarray): The diffusion coefficient of each mode, shape (2,).

    Returns:
        ``(case, active, lower, higher)``.
    """
    tol_b = 1e-10 * max(1.0, abs(b[0]), abs(b[1]))
    tol_s = 1e-10 * max(sigma[0], sigma[1])
    for m in (0, 1):
        mp = 1 - m
        if b[m] <= b[mp] + tol_b and sigma[m] <= sigma[mp] + tol_s:
            return "single", m, None, None
    # (2.20): b_m < b_m' and sigma_m > sigma_m'; xi^L = mode m', xi^H = mode m.
    m = 0 if b[0] < b[1] else 1
    return "dual", None, 1 - m, m


def policy_name(case: str, p: int, i1, active, lower, higher) -> str:
    """Theorem 2.11: which of the six policies applies, by the role of the HPC p in the active mode (single case) or
    in the lower and the higher mode (dual case): the policy table's :data:`~jaxq.model.policy_table.BY_ROLES`.

    Args:
        case: ``"single"`` or ``"dual"``.
        p: The HPC, 0-based.
        i1 (numpy.ndarray): The single-activity class of each mode, 0-based, shape (2,).
        active (int | None): The mode of the single case.
        lower (int | None): The lower mode of the dual case.
        higher (int | None): The higher mode of the dual case.

    Returns:
        The policy's name.
    """
    role = lambda mode: ROLE_I1 if i1[mode] == p else ROLE_I2  # noqa: E731
    return BY_ROLES[(role(active),) if case == "single" else (role(lower), role(higher))]


@float64
def analyze(system: PSS2x2) -> Analysis:
    """LP, modes, workload coefficients, case, policy, z* and the lower bound V0 of a 2x2 system.

    Args:
        system: The 2x2 system.

    Returns:
        The analysis.

    Raises:
        InputError: Naming ``system.service`` when every primitive is deterministic (sigma = 0), or ``cost.gamma`` when
            no switching point is found in float64 or V0 is out of the float64 range the computations need.
    """
    md = modes(system.lam, system.mu)
    b = np.array([drift(md.xi[m], system.lambda_hat, system.mu_hat, md.alpha) for m in range(2)])
    sigma = np.array([diffusion(md.xi[m], system.lam, system.mu, system.ca2, system.cs2, md.alpha) for m in range(2)])
    if np.any(sigma <= 0):
        raise InputError(
            "system.service",
            "every primitive is deterministic, so sigma = 0: the workload diffusion is not uniformly elliptic",
        )
    p = high_priority_class(system.h, md.alpha)
    case, active, lower, higher = classify(b, sigma)
    g = system.gamma
    if case == "single":
        z_star = None
        v = float(_rbm_value(0.0, b[active], sigma[active], g))
    else:
        z_star = float(_switching_point(b[lower], sigma[lower], b[higher], sigma[higher], g))
        if not np.isfinite(z_star):  # (2.20) guarantees a root; none means float64 could not resolve it
            raise InputError(
                "cost.gamma",
                f"no smooth-fit switching point found in float64 for gamma = {g:g}, b = {b.tolist()}, "
                f"sigma = {sigma.tolist()}: the scales are too far apart",
            )
        v = float(_switching_cost(0.0, z_star, b[lower], sigma[lower], b[higher], sigma[higher], g))
    q = 1 - p
    v0 = float(system.h[q] * md.alpha[q] * v)
    if not (np.isfinite(v) and np.isfinite(v0) and v > 0 and abs(v0) < 1e150):
        raise InputError("cost.gamma", f"the lower bound V0 = {v0:g} is out of the float64 range the "
                                       "computations need (gamma, h or the rates too extreme)")
    name = policy_name(case, p, md.i1, active, lower, higher)
    notes = ()
    if hpc_tie(system.h, md.alpha):
        other = policy_name(case, 1 - p, md.i1, active, lower, higher)
        hq = float(system.h[q] * md.alpha[q])
        notes = (f"h_1 alpha_1 = h_2 alpha_2 = {hq:.6g}: a tie in the high-priority class (2.12), so either class "
                 f"may be it and both choices are asymptotically optimal (both give V0 = {v0:.6g}, the same "
                 f"workload cost times h_q alpha_q); class {p + 1} was taken (the convention on a tie: the first "
                 f"class), giving policy {name}" + (f"; with class {2 - p} the policy would be {other}, whose J_n "
                 "may differ at a finite n" if other != name else "; the other class gives the same policy"),)
    return Analysis(
        system=system,
        modes=md,
        b=b,
        sigma=sigma,
        p=p,
        case=case,
        active=active,
        lower=lower,
        higher=higher,
        z_star=z_star,
        V_wcp0=v,
        V0=v0,
        policy=name,
        warnings=notes,
    )
