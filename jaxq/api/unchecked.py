"""The simulators and analyses behind :func:`jaxq.api.simulate`, :func:`jaxq.api.analyze` and the other functions,
called directly: no argument check by the API's decorator and no dispatch on the kind of system.

Each refuses bad values itself (one :class:`jaxq.InputError`, named as the simulator names it: ``basis-pool``,
``horizon`` for a warm-up beyond the horizon, ...), which is what the ``jaxq`` command reports for its options; a
script that wants the API's own checks calls the functions of :mod:`jaxq.api`. All compute in float64 whatever the
caller's JAX configuration.
"""

from __future__ import annotations

from jaxq.errors import InputError
from jaxq.precision import float64

__all__ = ["analyze_network", "check_tunable", "network_diffusion", "sde_tuning_step", "simulate_2x2",
           "simulate_network", "simulate_network_diffusion", "wcp_value"]


@float64
def simulate_2x2(system, n: float, reps: int, **options):
    """J_n of a 2x2 system by Monte Carlo, its default truncation checked against the estimate.

    :func:`jaxq.sim.pss2x2.simulate_bounded`.

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The 2x2 system.
        n: The index of the system.
        reps: Replications.
        **options (typing.Any): ``policy``, ``seed`` and the fields of the typed arguments of
            :func:`jaxq.sim.pss2x2.simulate`, flat: ``engine``, ``horizon``, ``theta_exponent``, ``chunk``,
            ``progress``, ...; grouped once by :func:`jaxq.sim.pss2x2.grouped`.

    Returns:
        (jaxq.mc.result.SimResult): The estimate.
    """
    from jaxq.sim.pss2x2 import grouped, simulate_bounded

    return simulate_bounded(system, n, reps, **grouped(options))


@float64
def analyze_network(network, basis_pool: int | None = None):
    """The exact limit objects of a network (the uniform-stability and LAP-tightness papers).

    LP (2.3), CRP, scaling, LAP priorities and psi*, the diffusion limit and the spare capacity.

    Args:
        network (jaxq.model.network.Network): The network.
        basis_pool: The pool jhat of the basis for B1, B2, 1-based.

    Returns:
        (jaxq.diffusion.network_analysis.NetworkAnalysis): The limit objects.
    """
    from jaxq.diffusion.network_analysis import analyze

    return analyze(network, basis_pool)


@float64
def simulate_network(network, n: float, policy: str = "priority", **options):
    """Stationary averages of the n-th network over [warmup, horizon] under ``policy`` with standard errors.

    :func:`jaxq.sim.network.simulate`.

    Args:
        network (jaxq.model.network.Network): The network.
        n: The index of the network.
        policy: ``priority``, ``lap``, ``lqfs``, ``swc``.
        **options (typing.Any): ``reps``, ``seed``, ``engine`` and the fields of its typed arguments, flat:
            ``warmup``, ``horizon``, ``snap_times``, ``cv``, ``chunk``, ``progress``, ...; grouped once by
            :func:`jaxq.sim.network.grouped`.

    Returns:
        (jaxq.mc.result.SimResult): The averages.
    """
    from jaxq.sim.network import grouped, simulate

    return simulate(network, n, policy, **grouped(options))


@float64
def network_diffusion(analysis):
    """The diffusion limit (2.27) of an analysed network whose long-run averages exist.

    Critically loaded, spare capacity rho > 0 (:func:`jaxq.diffusion.network_analysis.stationary_diffusion`).

    Args:
        analysis (jaxq.diffusion.network_analysis.NetworkAnalysis): The analysed network.

    Returns:
        (typing.Any): The diffusion limit; ``.spare_capacity`` is rho (2.35).

    Raises:
        InputError: Saying why the long-run averages do not exist.
    """
    from jaxq.diffusion.network_analysis import stationary_diffusion

    return stationary_diffusion(analysis)


@float64
def simulate_network_diffusion(diffusion, uc=None, us=None, control: str = "constant", **options):
    """Long-run averages of the network diffusion (:func:`network_diffusion`) under a control by the Euler scheme.

    :func:`jaxq.sde.network_euler.simulate_diffusion`.

    Args:
        diffusion (typing.Any): The diffusion limit (:func:`network_diffusion`).
        uc (typing.Any): The control's shares, default uniform.
        us (typing.Any): The control's shares, default uniform.
        control: ``constant`` or ``proportional``.
        **options (typing.Any): ``paths``, ``seed``, ``cv`` and the fields of its typed arguments, flat: ``dt``,
            ``horizon``, ``warmup``, ``chunk``, ``progress``, ...; grouped once by :func:`jaxq.options.grouped`.

    Returns:
        (jaxq.mc.result.SimResult): The long-run averages.
    """
    from jaxq.options import grouped
    from jaxq.sde.network_euler import GROUPS, Control, simulate_diffusion

    return simulate_diffusion(diffusion, Control(control, uc, us), **grouped(options, GROUPS))


@float64
def wcp_value(analysis, z0: float = 0.0, switch_at: float | None = None, **options):
    """V_WCP(z0) of an analysed 2x2 system by Monte Carlo of the workload diffusion.

    Beside the exact value for the same level (:func:`jaxq.sde.estimators.wcp_value`).

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The analysed 2x2 system.
        z0: The initial workload.
        switch_at: The switching level (default z*).
        **options (typing.Any): ``dt``, ``paths``, ``seed``, ``scheme_name``, ``cv`` and the fields of the typed
            arguments of :func:`jaxq.sde.estimators.discounted_cost`, flat: ``horizon``, ``chunk``, ``progress``, ...;
            grouped once by :func:`jaxq.options.grouped`.

    Returns:
        (jaxq.mc.result.SimResult): The estimate (``info["V_exact"]``).
    """
    from jaxq.options import grouped
    from jaxq.sde.estimators import GROUPS
    from jaxq.sde.estimators import wcp_value as value

    return value(analysis, z0, switch_at, **grouped(options, GROUPS))


@float64
def check_tunable(analysis, policy: str) -> tuple[str, bool, bool, float]:
    """A policy of an analysed 2x2 system for the prelimit tuner.

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The analysed 2x2 system.
        policy: The policy's name.

    Returns:
        ``(policy name, tunes z?, tunes c?, z*)``.

    Raises:
        InputError: Naming ``policy``, for a policy with neither a switching level nor a threshold.
    """
    from jaxq.tuning.prelimit import tunable

    return tunable(analysis, policy)


SDE_TUNING_DT = 0.02  # the SDE target's default step, at most SDE_TUNING_GAMMA_DT / gamma ...
SDE_TUNING_GAMMA_DT = 0.01
SDE_TUNING_DRIFT_DT = 0.1  # ... and b^2 dt / sigma^2 at most 0.1 (+0.04% in the skew scheme; the examples keep 0.02)


@float64
def sde_tuning_step(analysis, dt: float | None = None, *, paths: int, chains: int, iterations: int,
                    dt_key: str = "dt", paths_key: str = "paths") -> float:
    """The time step of ``tune(target="sde")`` on an analysed dual-mode 2x2 system, checked before any work.

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The analysed dual-mode 2x2 system.
        dt: Default ``min(0.02, 0.01/gamma, 0.1 sigma^2/b^2)``; it must resolve the discount time scale and the drift's
            (:func:`jaxq.sde.estimators.check_resolution`) and be shorter than the horizon of the truncation bound
            (:func:`jaxq.sde.estimators.default_horizon`).
        paths: Paths per iteration; the work of ``chains`` chains of ``iterations`` iterations (three stages) of
            ``paths`` paths is checked against the limits.
        chains: The number of chains.
        iterations: Iterations per stage.
        dt_key: The name refusals of the step give.
        paths_key: The name refusals of the work give.

    Returns:
        The step.

    Raises:
        InputError: Naming ``dt_key`` or ``paths_key``.
    """
    from jaxq.model.validate import check_work
    from jaxq.sde.coefficients import wcp
    from jaxq.sde.estimators import check_resolution, default_dt, default_horizon, drift_time

    gamma = analysis.system.gamma
    bL, sL, bH, sH = analysis.mode_coefficients()
    drift = drift_time(wcp(bL, sL, bH, sH, 1.0))  # both modes' drift time scale (the level does not matter)
    default = default_dt(gamma, drift, SDE_TUNING_DT, SDE_TUNING_GAMMA_DT, SDE_TUNING_DRIFT_DT)
    dt = default if dt is None else dt
    check_resolution(dt, gamma, default=default, key=dt_key, drift=drift)
    horizon = default_horizon(0.0, max(abs(bL), abs(bH)), max(sL, sH), gamma)
    if not dt <= horizon:
        raise InputError(dt_key, f"dt = {dt:g} is longer than the SDE horizon {horizon:.3g} (gamma = {gamma:g}); "
                                 f"use dt <= {0.1 * horizon:.3g}")
    check_work(dt_key, paths, horizon / dt, unit="steps")
    check_work(paths_key, chains * 3 * iterations * paths, horizon / dt, unit="steps",
               per_replication_limit=float("inf"))
    return dt
