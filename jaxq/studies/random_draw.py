"""Random 2x2 systems, stratified over the six cases of Theorem 2.11 (the switched-policies paper).

Every drawn system satisfies Assumption 2.2 by construction: product-form rates ``mu_ik = alpha_i beta_k``
(multiple LP solutions), ``lambda_1 / alpha_1 + lambda_2 / alpha_2 = 1`` (rho* = 1, the EHTC) and
``lambda_i != mu_ik`` with a margin (nondegeneracy (2.8)); :func:`jaxq.diffusion.workload.analyze` (which
re-solves LP (2.7) with HiGHS and re-checks all three) classifies it.

How each case is reached. With ``c_i = lambda_i / alpha_i`` (``c_1 + c_2 = 1``) and ``beta_1 + beta_2 = 1``:

* the modes are class-switched iff ``max(c) < max(beta)`` ((3.5), Lemma 3.3), server-switched otherwise (3.6);
  the draw of ``(c_1, beta_1)`` is repeated until it has the switching kind the case needs (below) and
  ``|c_i - beta_k| >= 0.05`` (nondegeneracy with a margin);
* single mode (2.19) iff one mode has both the smaller (or equal) drift b and the smaller diffusion sigma;
  dual mode (2.20) iff the mode with the smaller drift has the larger sigma (it is xi^H, the other xi^L).
  b comes from the second-order terms lambda_hat, mu_hat, sigma from the SCVs; the whole draw (rates, terms,
  primitives) is repeated until (2.19) or (2.20) holds as the case asks (rejection: about half the draws);
* the HPC p (the larger ``h_i alpha_i``, (2.12)) is set last by the cost h: ``h_q`` log-uniform in [0.5, 2]
  and ``h_p = h_q alpha_q / alpha_p`` times a factor log-uniform in [1.2, 4], where p is the class the case
  asks for:

  ======  ===========  ==========  =====================================================
  case    (2.19/2.20)  switching   p
  ======  ===========  ==========  =====================================================
  P       single       any         i1(xi^A), the single-activity class of the active mode
  T2      single       any         i2(xi^A), the dual-activity class
  PP      dual         server      i1(xi^L) = i1(xi^H) (server-switched: one single-activity class)
  T2T2    dual         server      i2(xi^L) = i2(xi^H)
  T1T2    dual         class       i1(xi^L) = i2(xi^H)
  T2T1    dual         class       i2(xi^L) = i1(xi^H)
  ======  ===========  ==========  =====================================================

  (class-switched modes have different single-activity classes, server-switched ones the same: so PP and
  T2T2 need server switching and T1T2, T2T1 class switching; P and T2 take either, drawn with probability 1/2).

Primitives: each of the six streams (two interarrival, four service laws) draws its family uniformly from
exponential, Erlang, gamma, lognormal and hyperexponential, and its SCV within [0.1, 10] as the family allows:
exponential 1; Erlang 1/k, k uniform in 1..10; hyperexponential log-uniform in (1, 10]; gamma and lognormal
log-uniform in [0.1, 10]. Deterministic laws (SCV 0) are outside [0.1, 10] and never drawn. Dual-mode cases
need non-equal service SCVs (with exponential services sigma is the same in both modes, Lemma B.1): the
rejection step takes care of it. Rates: ``alpha_i`` log-uniform in [0.5, 2]; second-order terms
``lambda_hat_i = u lambda_i``, ``mu_hat_ik = u' mu_ik`` with u, u' uniform in [-1, 1] (so every rate of the
n-th system is positive for n >= 2); gamma log-uniform in [0.5, 2].

System j of case c is drawn from ``numpy.random.default_rng((seed, c, j))`` (:func:`jaxq.mc.rng.generator`): the set is reproducible, and
asking for more systems per case keeps the earlier ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from jaxq.diffusion.workload import Analysis, analyze
from jaxq.errors import InputError
from jaxq.mc import rng as streams
from jaxq.model.distributions import Dist
from jaxq.model.policy_table import POLICY_TABLE, ROLE_I1
from jaxq.model.pss2x2 import PSS2x2

CASES = tuple(POLICY_TABLE)
FAMILIES = ("exponential", "erlang", "gamma", "lognormal", "hyperexponential")
SCV_RANGE = (0.1, 10.0)
MARGIN = 0.05  # |c_i - beta_k| >= MARGIN: nondegeneracy (2.8) with room
MAX_TRIES = 10_000
DRAWN_KEPT = 6 * 10_000  # systems draw_system keeps: every system of the largest grid (per_case <= 10^4)
_DUAL = {case: spec.dual for case, spec in POLICY_TABLE.items()}
_SWITCHING = {case: spec.switching for case, spec in POLICY_TABLE.items() if spec.dual}  # the kind of modes it needs


@dataclass(frozen=True, eq=False)
class Drawn:
    """One drawn system: its label (``CASE_jjj``), case, index within the case, system and analysis.

    Attributes:
        label: ``CASE_jjj``.
        case: The case of Theorem 2.11.
        index: The index within the case.
        system: The system.
        analysis: Its analysis.
    """

    label: str
    case: str
    index: int
    system: PSS2x2
    analysis: Analysis

    def describe(self) -> dict:
        """Its parameters as one flat row (for the tables)."""
        s, an = self.system, self.analysis
        row = {"system": self.label, "case": self.case, "policy": an.policy, "switching": an.modes.switching,
               "hpc": an.p + 1, "V0": an.V0, "z_star": an.z_star, "gamma": s.gamma,
               "b": _fmt(an.b), "sigma": _fmt(an.sigma), "alpha": _fmt(an.modes.alpha), "beta": _fmt(an.modes.beta),
               "lambda": _fmt(s.lam), "mu": _fmt(s.mu.ravel()), "lambda_hat": _fmt(s.lambda_hat),
               "mu_hat": _fmt(s.mu_hat.ravel()), "h": _fmt(s.h),
               "interarrival": " ".join(str(d) for d in s.interarrival),
               "service": " ".join(str(d) for row in s.service for d in row)}
        return row


def _fmt(a) -> str:
    return " ".join(f"{float(x):.4g}" for x in np.ravel(a))


def _loguniform(rng, lo, hi) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def draw_law(rng) -> Dist:
    """A mean-1 law: the family uniform over :data:`FAMILIES`, the SCV within [0.1, 10] as the family allows.

    Args:
        rng (numpy.random.Generator): The generator.

    Returns:
        The law.
    """
    fam = FAMILIES[int(rng.integers(len(FAMILIES)))]
    if fam == "exponential":
        return Dist(fam, 1.0)
    if fam == "erlang":
        return Dist(fam, 1.0 / int(rng.integers(1, 11)))
    if fam == "hyperexponential":
        return Dist(fam, round(_loguniform(rng, 1.0 + 1e-3, SCV_RANGE[1]), 6))
    return Dist(fam, round(_loguniform(rng, *SCV_RANGE), 6))


def _cbeta(rng, switching: str | None) -> tuple[float, float]:
    """``(c_1, beta_1)`` with the asked switching kind and nondegenerate with margin (rejection)."""
    for _ in range(MAX_TRIES):
        c1, b1 = float(rng.uniform(0.05, 0.95)), float(rng.uniform(0.05, 0.95))
        c, b = (c1, 1 - c1), (b1, 1 - b1)
        if min(abs(ci - bk) for ci in c for bk in b) < MARGIN:
            continue
        kind = "class" if max(c) < max(b) else "server"
        if switching is None or kind == switching:
            return c1, b1
    raise RuntimeError("no (c, beta) found")  # pragma: no cover: each kind has positive probability


def _candidate(rng, case: str) -> PSS2x2:
    """One draw of rates, second-order terms, primitives and gamma for ``case`` (h set later)."""
    switching = _SWITCHING.get(case) or ("class" if rng.uniform() < 0.5 else "server")
    c1, b1 = _cbeta(rng, switching)
    alpha = np.array([_loguniform(rng, 0.5, 2.0) for _ in range(2)])
    beta = np.array([b1, 1 - b1])
    lam = np.array([c1, 1 - c1]) * alpha
    mu = np.outer(alpha, beta)
    lam_hat = rng.uniform(-1, 1, 2) * lam
    mu_hat = rng.uniform(-1, 1, (2, 2)) * mu
    inter = tuple(draw_law(rng) for _ in range(2))
    serv = tuple(tuple(draw_law(rng) for _ in range(2)) for _ in range(2))
    gamma = _loguniform(rng, 0.5, 2.0)
    return PSS2x2(lam=lam, mu=mu, lambda_hat=lam_hat, mu_hat=mu_hat, interarrival=inter, service=serv,
                  h=np.ones(2), gamma=gamma)


def target_hpc(case: str, an: Analysis) -> int | None:
    """The class p (0-based) that makes ``case`` the system's case, or None when no choice of p can: the class with
    the case's role (the policy table's ``roles``) in the active mode, or in both the lower and the higher mode.

    Args:
        case: The case.
        an: The system's analysis.

    Returns:
        The class, or None.
    """
    i1, i2 = an.modes.i1, an.modes.i2
    if an.case != ("dual" if _DUAL[case] else "single"):
        return None
    at = (an.lower, an.higher) if _DUAL[case] else (an.active,)
    ps = {int((i1 if role == ROLE_I1 else i2)[m]) for role, m in zip(POLICY_TABLE[case].roles, at)}
    return ps.pop() if len(ps) == 1 else None


@lru_cache(maxsize=DRAWN_KEPT)
def draw_system(seed: int, case: str, index: int) -> Drawn:
    """System ``index`` of ``case`` for ``seed`` (module docstring); deterministic, cached (:func:`draw` of the
    same systems draws none again).

    Args:
        seed: The seed of the set.
        case: The case.
        index: The index within the case.

    Returns:
        The drawn system.

    Raises:
        InputError: Naming ``case`` for an unknown case.
    """
    if case not in CASES:
        raise InputError("case", f"unknown case {case!r}; choose one of {', '.join(CASES)}")
    rng = streams.generator(seed, CASES.index(case), index)
    for _ in range(MAX_TRIES):
        s = _candidate(rng, case)
        try:
            an = analyze(s)
        except InputError:  # e.g. a switching point float64 cannot resolve: draw again
            continue
        p = target_hpc(case, an)
        if p is None:
            continue
        q = 1 - p
        h = np.empty(2)
        h[q] = _loguniform(rng, 0.5, 2.0)
        h[p] = h[q] * an.modes.alpha[q] / an.modes.alpha[p] * _loguniform(rng, 1.2, 4.0)
        s = PSS2x2(lam=s.lam, mu=s.mu, lambda_hat=s.lambda_hat, mu_hat=s.mu_hat, interarrival=s.interarrival,
                   service=s.service, h=h, gamma=s.gamma)
        an = analyze(s)
        if an.policy != case:  # cannot happen: p decides the case once single/dual and the roles are set
            raise RuntimeError(f"drew a {an.policy} system for case {case}")
        return Drawn(f"{case}_{index:03d}", case, int(index), s, an)
    raise RuntimeError(f"no {case} system in {MAX_TRIES} draws")  # pragma: no cover


@lru_cache(maxsize=64)
def draw(seed: int, per_case: int, cases: tuple[str, ...] = CASES) -> tuple[Drawn, ...]:
    """``per_case`` systems of each case, case-major (``P_000, P_001, ..., T2T1_...``); cached.

    Args:
        seed: The seed of the set.
        per_case: The systems per case.
        cases: The cases.

    Returns:
        The drawn systems.

    Raises:
        InputError: Naming ``per_case`` when it is not a whole number >= 1.
    """
    if not (isinstance(per_case, int) and per_case >= 1):
        raise InputError("per_case", f"must be a whole number >= 1, got {per_case!r}")
    return tuple(draw_system(seed, c, j) for c in cases for j in range(per_case))
