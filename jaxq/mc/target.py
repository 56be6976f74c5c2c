"""Runs that stop at a precision target: a pilot on its own stream plans the replications of a fixed run.

``run_to_target(run, seed, target)`` turns any simulator ``run(reps, seed) -> SimResult`` into one that stops when
the standard error is at most ``target.rel_se`` times the estimate, in two stages:

1. **Pilot**: replications of the seed ``derived_seed(seed, PILOT)`` (:func:`jaxq.mc.rng.derived_seed`), a stream
   the result never uses. It measures the relative standard error ``q`` and the seconds per replication. It runs
   :data:`PILOT_FIRST` replications first, then ``target.pilot_reps`` (:data:`PILOT_REPS`) of the same stream
   (repeating the first ones), which plan the run instead, where those cost at most :data:`PILOT_EVENTS` events
   (at the first stage's events per replication: a deterministic count, so the plan does not depend on the
   machine) or the first stage plans a run longer than them. A run that needs few replications of a large system
   (n = 10^6: about 10^8 events each) so pays for 16 pilot replications, not 128; a small system's run, or a long
   one, is planned by the larger pilot, whose plan is steadier (a smaller safety factor, control variates fitted as
   the run's are). With a budget, the larger pilot runs only where the budget affords it and a run as long.
2. **The run**: replications ``0 .. R-1`` of ``seed``, ``R = max(m, ceil(m (q / rel_se)^2 s))`` with ``m`` the
   planning pilot's replications and ``s = 1 + 2 sqrt(2 / (m - 1))`` (the pilot's variance two of its standard
   errors high, for normal samples), capped by ``max_reps`` and by what ``budget`` seconds leave after the pilot.
   At least ``m``: the control variates are fitted on the run's own replications, and with fewer than the pilot's
   a run can be much noisier than the pilot measured (8 coefficients fitted on 14 replications once gave 3x the
   standard error planned).

``R`` is never below the first stage's replications, so replications ``0 .. AHEAD PILOT_FIRST - 1`` of ``seed``
(:data:`AHEAD`, at most ``max_reps``) run beside the first stage, in its batch (:func:`jaxq.mc.replications.ahead`),
and the run takes them instead of computing them again: a long run of 16 replications (the least a run takes) costs
about one stage's time instead of two. The pilot never reads them, and a replication's
outputs are the same in any batch on one platform (the run takes none computed on another). The batch's time is
shared by replications: the pilot's stage counts its own, the run the rest. Not under a budget (the pilot's seconds
would depend on the run's replications, the longest of a batch setting its time).

The run is ``run(R, seed)`` itself: replication r uses ``fold_in(PRNGKey(seed), r)``, so a targeted run is the fixed
run of R replications with the same seed, bit for bit (and a prefix of a longer one where the simulator's driver does
not depend on the replications: the 2x2 system's ``engine="auto"`` gives fewer than 256 long replications to the
event driver, :func:`jaxq.sim.simulate_markov.slow_lockstep`), and its control variates are fitted (cross-fitted by
replication index) as that fixed run's are. Its replications are not chosen by their own values (``R`` depends on the
pilot only), so the estimate is unbiased whatever the pilot said. The price: the target is met with high probability,
not surely. A run that ends above its target says so in its ``warnings``.

The relative standard error of a result is that of its primary estimate, of a named one (a network's mean queue
per class), or of every estimate of a result without a primary one (a user's MarkovModel), the largest over the
entries.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, NamedTuple

import numpy as np

from jaxq.errors import InputError
from jaxq.mc.rng import PILOT, derived_seed
from jaxq.mc.replications import ahead
from jaxq.mc.result import SimResult, with_work_of

PILOT_FIRST = 16  # replications of the pilot's first stage
PILOT_REPS = 128  # replications of the larger pilot (at most max_reps)
# The run's replications computed beside the first stage, in its batch: this many times the stage's, the run's least.
# With every while loop compiled as one function (jaxq.xla_flags) a replication's lanes cost about their share of a
# step (2x2 event engine with controls and diagnostics at n = 10^6, one core: 8, 16, 24, 32 replications in lockstep
# take 0.57, 1.17, 1.55, 2.01 us a step, benchmarks/results/step_cost_cpu_avx512.json), so each replication run ahead
# and not taken costs what it would in a later pass: 16 more (the run's 17th to 32nd) cost a long run of 16 half its
# time again.
AHEAD = 1
PILOT_EVENTS = 2e8  # the larger pilot runs where it costs at most these events, or where the first plans a longer run
STOPS = ("target", "max_reps", "budget")


class Target(NamedTuple):
    """A precision target.

    Attributes:
        rel_se: The standard error over the estimate.
        max_reps: The most replications of the run.
        budget: The most seconds for the pilot and the run together (None: no limit).
        pilot_reps: The replications of the larger pilot (at most ``max_reps``), run after the first stage
            (:data:`PILOT_FIRST`, or ``pilot_reps`` when smaller) where it is cheap or the first plans a longer run.
        strict: A target that needs more than ``max_reps`` is refused before the run (False: the run stops at
            ``max_reps``).
    """

    rel_se: float
    max_reps: int = 100_000
    budget: float | None = None
    pilot_reps: int = PILOT_REPS
    strict: bool = True


def checked_target(target: Target, keys: dict | None = None) -> Target:
    """``target`` with its fields checked.

    Args:
        target: The target.
        keys: Maps a field to the caller's name of it, e.g. ``{"rel_se": "rel-se"}``.

    Returns:
        The target, its numbers as Python floats and ints.

    Raises:
        InputError: Naming the key of a bad field.
    """
    name = {"rel_se": "rel_se", "max_reps": "max_reps", "budget": "budget", "pilot_reps": "pilot_reps",
            **(keys or {})}
    r = target.rel_se
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or not 0 < r < 1:
        raise InputError(name["rel_se"], f"the relative standard error to reach must be a number in (0, 1), got {r!r}")
    for key in ("max_reps", "pilot_reps"):
        v = getattr(target, key)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 2:
            raise InputError(name[key], f"must be an integer >= 2, got {v!r}")
    b = target.budget
    if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b) or b <= 0):
        raise InputError(name["budget"], f"must be a number of seconds > 0, got {b!r}")
    return target._replace(rel_se=float(r), max_reps=int(target.max_reps), pilot_reps=int(target.pilot_reps),
                           budget=None if b is None else float(b))


def relative_stderr(res: SimResult, key: str | None = None) -> float:
    """The standard error over the estimate ``key``, the largest over the entries.

    An entry 0 with standard error 0 counts 0.

    Args:
        res: The result.
        key: The estimate (default the primary one, or every estimate of a result without one: a user's MarkovModel).

    Returns:
        The largest relative standard error; inf where an entry is 0 with a positive standard error, NaN where one is
            not finite.
    """
    if key is not None:
        ests = [res.estimates[key]]
    else:
        ests = [res.main] if res.primary is not None else list(res.estimates.values())
    worst = 0.0
    for est in ests:
        v = np.abs(np.asarray(est.value, dtype=float)).ravel()
        se = np.asarray(est.stderr, dtype=float).ravel()
        if not (np.all(np.isfinite(v)) and np.all(np.isfinite(se))):
            return math.nan
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(se == 0, 0.0, se / v)
        worst = max(worst, float(q.max(initial=0.0)))
    return worst


def safety(pilot_reps: int) -> float:
    """The factor on the pilot's variance: two standard errors of a sample variance of normal samples.

    Args:
        pilot_reps: The replications of the pilot.

    Returns:
        ``1 + 2 sqrt(2 / (pilot_reps - 1))``.
    """
    return 1.0 + 2.0 * math.sqrt(2.0 / (pilot_reps - 1))


def plan(q: float, pilot_reps: int, rel_se: float) -> float:
    """The replications that bring a relative standard error ``q`` over ``pilot_reps`` replications down to ``rel_se``.

    The standard error falls like one over the square root of the replications, with the pilot's :func:`safety`
    factor, and never fewer than the pilot's own (with control variates, fitted on the run's replications, a shorter
    run is noisier than the pilot that measured q).

    Args:
        q: The pilot's relative standard error.
        pilot_reps: The replications of the pilot.
        rel_se: The relative standard error to reach.

    Returns:
        The replications; inf when ``q`` is not finite.
    """
    if not math.isfinite(q):
        return math.inf
    return max(float(pilot_reps), math.ceil(pilot_reps * (q / rel_se) ** 2 * safety(pilot_reps)))


def pilot_stages(target: Target) -> tuple[int, ...]:
    """The replications of the pilot's stages: :data:`PILOT_FIRST`, then ``pilot_reps`` (each at most ``max_reps``).

    Args:
        target: The precision target.

    Returns:
        One or two sizes, increasing (one where the larger is under twice the first: it would mostly repeat it).
    """
    last = min(target.pilot_reps, target.max_reps)
    first = min(PILOT_FIRST, last)
    return (first, last) if 2 * first <= last else (last,)


def _spent(pilots: list[SimResult]) -> float:
    return sum(p.wall_s for p in pilots)


def _per_rep(pilot: SimResult) -> float:
    """Seconds per replication of a pilot, its compilation left out."""
    return max(pilot.wall_s - pilot.compile_s, 1e-9) / pilot.reps


def _left(target: Target, pilots: list[SimResult]) -> float:
    """What the budget leaves after the pilots for a run that may compile again for its own shape."""
    return target.budget - _spent(pilots) - pilots[-1].compile_s


def run_to_target(run: Callable[[int, int], SimResult], seed: int, target: Target, *, key: str = "rel_se",
                  estimate: str | None = None) -> SimResult:
    """``run(reps, seed)`` with the replications planned by a pilot.

    So that the standard error is at most ``target.rel_se`` of the estimate (see the module).

    Args:
        run: The simulator, ``run(reps, seed) -> SimResult``.
        seed: The seed of the run (the pilot's is derived from it).
        target: The precision target.
        key: Names the target in refusals.
        estimate: The estimate targeted (default the primary one; every entry of an array).

    Returns:
        The run's result, with ``wall_s``, ``compile_s`` and ``events`` counting the pilot too, and in ``info``:
            ``rel_se_target``, ``rel_se`` (reached), ``stopped_by`` (``target``, ``max_reps`` or ``budget``) and
            ``pilot`` (its seed, the replications and relative standard error of the stage that planned the run, the
            seconds of every stage, ``stages``: the replications of each stage, ``ahead``: the run's replications
            taken from those computed beside the first stage, 0 where the run's program, arguments or platform are
            not the pilot's).

    Raises:
        InputError: Naming ``key`` where the pilot's estimate is 0 or not finite, or (``strict``) the target needs more
            than ``max_reps``; naming ``budget`` where no run fits in what the pilot left of it.
    """
    pilot_seed = derived_seed(seed, PILOT)
    stages = pilot_stages(target)
    # runs ahead (module docstring), not under a budget
    count = 0 if target.budget is not None else min(AHEAD * stages[0], target.max_reps)
    with ahead(pilot_seed, seed, count) as early:
        return _planned(run, seed, target, key, estimate, pilot_seed, stages, early)


def _planned(run, seed, target, key, estimate, pilot_seed, stages, early) -> SimResult:
    pilots = []
    for m in stages:
        if pilots:  # a larger pilot: cheap, or the first plans a longer run; and a budget affords it and its run
            cheap = pilot.events / pilot.reps * m <= PILOT_EVENTS
            # the budget must leave room for this stage, a run as long, and the run's own compilation
            unaffordable = target.budget is not None and \
                _left(target, pilots) - pilot.compile_s < 2 * m * _per_rep(pilot)
            if not (cheap or (math.isfinite(need) and need > m)) or unaffordable:
                break
        pilot = run(m, pilot_seed)
        pilots.append(pilot)
        q = relative_stderr(pilot, estimate)
        need = plan(q, m, target.rel_se)
    m = pilot.reps
    if not math.isfinite(need):
        why = "is 0" if q == math.inf else "is not finite"
        raise InputError(key, f"the pilot's estimate {why} (relative standard error {q:.3g} over {m} replications): "
                              "no number of replications reaches a relative target; pass reps instead")
    reps, stopped = int(need), "target"
    if reps > target.max_reps:
        if target.strict:
            raise InputError(key, f"the target {target.rel_se:g} needs about {reps:,} replications (the pilot's relative "
                                  f"standard error is {q:.3g} over {m}), more than max_reps = {target.max_reps:,}; "
                                  "raise max_reps or loosen the target")
        reps, stopped = target.max_reps, "max_reps"
    if target.budget is not None:
        left = _left(target, pilots)
        fit = int(left // _per_rep(pilot)) if left > 0 else 0
        if fit < 2:
            sizes = " + ".join(str(p.reps) for p in pilots)
            raise InputError("budget", f"the pilot's {sizes} replications took {_spent(pilots):.3g} s of the budget "
                                       f"of {target.budget:g} s: no run fits in what is left")
        if fit < reps:
            reps, stopped = fit, "budget"
    res = run(reps, seed)
    reached = relative_stderr(res, estimate)
    notes = res.warnings
    if not reached <= target.rel_se:
        why = (f"the pilot's {m} replications planned {reps:,} (run again with a larger pilot, or pass reps)"
               if stopped == "target" else f"stopped by {stopped} at {reps:,} replications (the pilot asked for about "
                                           f"{int(need):,})")
        notes += (f"the relative standard error {reached:.3g} is above the target {target.rel_se:g}: {why}",)
    if not early.charged:  # replications run ahead that the run did not take: their time counts here
        res = dataclasses.replace(res, wall_s=res.wall_s + early.ahead_s)
    out = with_work_of(res, *pilots, rel_se_target=target.rel_se, rel_se=reached, stopped_by=stopped,
                       **({} if estimate is None else {"rel_se_of": estimate}),
                       pilot={"seed": pilot_seed, "reps": m, "rel_se": q, "wall_s": _spent(pilots),
                              "stages": [p.reps for p in pilots], "ahead": early.used})
    return dataclasses.replace(out, warnings=notes)


def target_from(reps, rel_se, max_reps=None, budget=None, *, names: dict | None = None, reps_name: str = "reps",
                default: Target | None = None) -> Target | None:
    """The precision target of a call's options, checked (None: a fixed number of replications).

    Args:
        reps (int | None): The fixed replications; excludes ``rel_se``.
        rel_se (float | None): The relative standard error to reach; excludes ``reps``.
        max_reps (int | None): Needs ``rel_se``.
        budget (float | None): Needs ``rel_se``.
        names: Maps the fields (and ``reps``) to the caller's names of them in the one-line refusals (the command
            line's ``rel-se``, ...).
        reps_name: The caller's name of ``reps``.
        default: The target when neither is given (None: the caller's fixed default).

    Returns:
        The target, or None for a fixed number of replications.

    Raises:
        InputError: Naming the key: ``reps`` and ``rel_se`` both given, ``max_reps`` or ``budget`` without ``rel_se``,
            or a bad field (:func:`checked_target`).
    """
    name = {"rel_se": "rel_se", "max_reps": "max_reps", "budget": "budget", "reps": reps_name, **(names or {})}
    if rel_se is None:
        for key, value in (("max_reps", max_reps), ("budget", budget)):
            if value is not None:
                raise InputError(name[key], f"belongs to a precision target: pass {name['rel_se']} too")
        return default if reps is None else None
    if reps is not None:
        raise InputError(name["rel_se"], f"a precision target chooses the {reps_name}: pass {name['reps']} or "
                                         f"{name['rel_se']}, not both")
    return checked_target(Target(rel_se, **({} if max_reps is None else {"max_reps": max_reps}), budget=budget),
                          name)


def run_reps(run: Callable[[int, int], SimResult], reps: int, seed: int, target: Target | None, *,
             key: str = "rel_se", estimate: str | None = None) -> SimResult:
    """``run(reps, seed)`` when ``target`` is None, else :func:`run_to_target` (``reps`` unused).

    Args:
        run: The simulator, ``run(reps, seed) -> SimResult``.
        reps: The replications of a fixed run.
        seed: The seed.
        target: The precision target, or None.
        key: Names the target in refusals.
        estimate: The estimate targeted (default the primary one).

    Returns:
        The result.
    """
    return run(reps, seed) if target is None else run_to_target(run, seed, target, key=key, estimate=estimate)
