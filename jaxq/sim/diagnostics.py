"""Diagnostics of a 2x2 run and the warning when the prelimit is far from the limit (docs/diagnostics.md).

The per-replication diagnostics come from the observer :data:`jaxq.sim.models.pss2x2.DIAGNOSTICS` (both drivers),
under the discounted occupation measure: the weights ``gamma exp(-gamma t) dt`` over the run, normalised to total
mass 1, the measure J_n integrates (``J_n = E int exp(-gamma t) h.X_hat dt = E[h.X_hat under it] / gamma``):

* ``idle_waiting[k][i]``: the share of (weighted) time server k is idle while a class-i job waits in queue.
  Definition 2.7 never leaves a server idle while a job of one of its basic activities in the current mode
  waits, so every nonzero entry is the current mode's non-basic activity: the dedicated server idling while the
  class it does not serve waits. Proposition 5.5 (no idleness while there is work) says it vanishes as n grows;
* ``idle_while_waiting[k]``: the share of time server k idles while some job waits (the sum over i: a server
  never idles while both classes wait, by the same rule);
* ``X_hat_p``: the average of the high-priority class's scaled queue (state-space collapse, Proposition 5.4:
  below ``2 Theta_n / sqrt(n)``);
* ``mode_fraction`` (dual-mode policies): the share of time in LP mode 1 and 2;
* ``switch_rate`` (dual-mode policies): mode switches per unit time (the jumps weighted by ``gamma
  exp(-gamma t)``, normalised by the same mass).

Each is a mean over replications with its standard error.
"""

from __future__ import annotations

import math

import numpy as np

from jaxq.diffusion import threshold as thr
from jaxq.mc.result import Estimate

WEIGHTING = "discounted occupation measure: gamma exp(-gamma t) dt on [0, T], normalised to mass 1"
SAMPLE_PREFIX = "diag_"  # per-replication diagnostics in SimResult.samples: diag_idle_waiting, ...
# The warning (SPEC.md): J_hat more than WARN_EXCESS above V0 at n >= WARN_MIN_N.
WARN_MIN_N = 1000
WARN_EXCESS = 0.5
# What explains it, in this order: the limit's threshold term Delta_n, when it is the larger part of J_hat - V0 and
# J_hat - V0 - Delta_n is within the same WARN_EXCESS of V0; a server idle while a job waits at least IDLE_NOTABLE
# of the time (the bundled examples
# idle 1-8% at n = 10^3 and default thresholds, a T2T2 system with Theta_n = 2 16%); X_hat_p above twice the
# threshold's scale Theta_n/sqrt(n) (Proposition 5.4), or without a threshold carrying HPC_COST_SHARE of the cost.
IDLE_NOTABLE = 0.05
HPC_COST_SHARE = 0.25


def samples(observed: dict) -> dict:
    """The observer's per-replication outputs as ``SimResult.samples`` entries (numpy, axis 0 replications).

    Args:
        observed: The observer's outputs, name -> per-replication array.

    Returns:
        The samples, each name prefixed with :data:`SAMPLE_PREFIX`.
    """
    return {SAMPLE_PREFIX + k: np.asarray(v, dtype=np.float64) for k, v in observed.items()}


def summarize(smp: dict, dual: bool, hpc: int) -> dict:
    """The ``diagnostics`` object of a result from its per-replication samples: each diagnostic's mean and
    ``<key>_stderr`` (lists for arrays), ``weighting``, ``hpc`` (the high-priority class p, 1-based); mode entries
    only for a dual-mode policy.

    Args:
        smp: The result's samples (:func:`samples`).
        dual: Whether the policy is dual-mode.
        hpc: The high-priority class p, 1-based.

    Returns:
        The diagnostics object.
    """
    keys = ["idle_waiting", "idle_while_waiting", "X_hat_p"] + (["mode_fraction", "switch_rate"] if dual else [])
    per = {k: smp[SAMPLE_PREFIX + k] for k in ("idle_waiting", "X_hat_p", "mode_fraction", "switch_rate")}
    per["idle_while_waiting"] = per["idle_waiting"].sum(axis=2)
    out: dict = {"weighting": WEIGHTING, "hpc": int(hpc)}
    for k in keys:
        est = Estimate.of(per[k])
        out[k] = _listed(est.value)
        out[k + "_stderr"] = _listed(est.stderr)
    return out


def _listed(v):
    return np.asarray(v).tolist() if np.ndim(v) else float(v)


def limit_threshold_term(analysis, policy: str, theta: int | None, n: float, switch_at: float | None):
    """Delta_n of :func:`jaxq.diffusion.threshold.threshold_term` for a run (None where the limit does not define
    it: no threshold, another policy than the theorem's, or a switching level other than z*).

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The system's analysis.
        policy: The policy's name.
        theta: The threshold Theta_n (None: none).
        n: The scale n.
        switch_at: The switching level z (None: z*).

    Returns:
        (float | None): Delta_n, or None.
    """
    return None if theta is None else thr.threshold_term(analysis, policy, theta / math.sqrt(n), switch_at)


def warning(diag: dict, *, J_hat: float, V0: float, n: float, gamma: float, h, hpc: int, theta: int | None,
            policy: str, threshold_term: float | None = None) -> str | None:
    """The sentence due when ``J_hat > (1 + WARN_EXCESS) V0`` at ``n >= WARN_MIN_N`` (else None), naming the
    diagnostic that explains the gap, or those checked when none stands out.

    Args:
        diag: :func:`summarize`'s object (None for a run without diagnostics: the gap is still said).
        J_hat: The estimate of J_n.
        V0: The limit's lower bound V0.
        n: The scale n.
        gamma: The discount rate.
        h (Sequence[float]): The holding costs per class.
        hpc: The high-priority class p, 1-based.
        theta: The threshold Theta_n (None: none).
        policy: The policy's name.
        threshold_term: The limit's Delta_n (:func:`limit_threshold_term`; None where undefined).

    Returns:
        The sentence, or None.
    """
    if not (n >= WARN_MIN_N and V0 > 0 and J_hat > (1.0 + WARN_EXCESS) * V0):
        return None
    head = f"J_hat = {J_hat:.4g} is {100.0 * (J_hat / V0 - 1.0):.0f}% above the lower bound V0 = {V0:.4g} at n = {n:g}"
    delta = threshold_term if threshold_term is not None and threshold_term > 0 else None
    if delta is not None and J_hat - V0 - delta <= min(WARN_EXCESS * V0, delta):
        return (f"{head}: the limit's threshold term Delta_n = {delta:.4g} (the cost of holding the "
                f"high-priority class {hpc} near Theta_n = {theta}) accounts for it, J_hat - V0 - Delta_n = "
                f"{J_hat - V0 - delta:.3g}; Delta_n shrinks like n^(a - 1/2) with the threshold exponent a.")
    besides = ("" if delta is None else f"; the limit's threshold term Delta_n = {delta:.4g} accounts for "
                                        f"{100.0 * delta / (J_hat - V0):.0f}% of J_hat - V0")
    if diag is None:  # a run without diagnostics (diagnostics=False): the gap, and how to see its cause
        return f"{head}; run with diagnostics on to see which server idles or which queue is held."
    idle = np.asarray(diag["idle_waiting"], dtype=float)
    k, i = np.unravel_index(int(np.argmax(idle)), idle.shape)
    theta_hat = None if theta is None else theta / math.sqrt(n)
    xp = float(diag["X_hat_p"])
    share = float(h[hpc - 1]) * xp / (gamma * J_hat) if J_hat > 0 else 0.0
    if idle[k, i] >= IDLE_NOTABLE:
        why = (f"the threshold Theta_n = {theta} is small for this system's variability: the queue that feeds the "
               f"server runs empty (a larger threshold: another --theta-rule or --theta-exponent, or the tuned "
               f"policy)" if theta is not None else
               f"under policy {policy} the queue that feeds the server runs empty at this n")
        return (f"{head}: server {k + 1} idled {100.0 * idle[k, i]:.2g}% of the time while class {i + 1} waited "
                f"(Proposition 5.5 wants no idling while there is work); {why}{besides}.")
    if (theta_hat is not None and xp > 2.0 * theta_hat) or (theta_hat is None and share > HPC_COST_SHARE):
        scale = (f"above twice the threshold's scale Theta_n/sqrt(n) = {theta_hat:.3g}" if theta_hat is not None
                 else f"{100.0 * share:.0f}% of the cost")
        return (f"{head}: the high-priority class {hpc} held X_hat_p = {xp:.3g} on average, {scale}, where "
                f"state-space collapse (Proposition 5.4) keeps it small{besides}.")
    checked = (f"idling while a job waits at most {100.0 * float(idle.max()):.2g}% per server, X_hat_p = {xp:.3g}"
               + (f" (Theta_n/sqrt(n) = {theta_hat:.3g})" if theta_hat is not None else ""))
    if "switch_rate" in diag:
        mf = diag["mode_fraction"]
        checked += (f", {float(diag['switch_rate']):.3g} mode switches per unit time, time in modes 1/2 "
                    f"{100.0 * mf[0]:.0f}%/{100.0 * mf[1]:.0f}%")
    return f"{head} and no diagnostic stands out ({checked}){besides}: the prelimit is far from the limit at this n."
