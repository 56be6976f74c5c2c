"""The public Python API of jaxq (``import jaxq``): load, analyse, simulate, tune, solve, run studies.

Every function takes plain Python values and returns a documented object; the command line is a thin
layer over these functions. Arrays are indexed as the papers index them (class i, server or pool k/j),
0-based; labels in printed output are 1-based.

>>> import jaxq
>>> system = jaxq.load("pss_PP")                      # a bundled example or a TOML file
>>> a = jaxq.analyze(system)                          # modes, case, policy, z*, V0
>>> r = jaxq.simulate(system, n=400, reps=256)        # J_n under Theorem 2.11's policy
>>> jaxq.exact_cost(system, n=16)["J"]                # J_n exactly (small n; phase-type primitives)
>>> r.value, r.stderr, r.ci95, r.events_per_s
>>> s = jaxq.simulate_sde(system, paths=20_000)       # V_WCP(0) by the skew-exact scheme
>>> jaxq.threshold_term("pss_T2T1", n=10**6, theta_rule="root")  # the threshold's share of J_n - V0 (0: P, PP)
>>> net = jaxq.load("network_N")
>>> jaxq.analyze(net).spare_capacity                  # the uniform-stability paper's rho
>>> jaxq.simulate(net, n=100, policy="lap")["mean_queue"]

The steps of these functions, for scripts and the ``jaxq`` command (which calls nothing else), are here too, from
the modules of this package: the checks of user input (:mod:`jaxq.api.inputs`: ``InputError``, ``arg_type``,
``check_seed``, ``read_system``, ...), the simulators called directly (:mod:`jaxq.api.unchecked`: ``simulate_2x2``,
``simulate_network``, ``analyze_network``, ``wcp_value``, ...), studies step by step (:mod:`jaxq.api.studies`:
``load_experiment``, ``check_output_folder``, ``run_study``, ...), what a run writes (:mod:`jaxq.api.outputs`:
``to_jsonable``, ``atomic_write``, ``Monitor``, ``set_quiet``, ...), ``jaxq bench`` (:mod:`jaxq.api.bench`) and
the options' choices and defaults (:mod:`jaxq.api.choices`: ``POLICY_CHOICES``, ``ENGINES``, ...; imported on
first use, as they import the simulators).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING

from jaxq import __version__  # noqa: F401  (jaxq.api.__version__: the command line's --version)
from jaxq.api.bench import bench_parts, bench_sections, run_bench  # noqa: F401
from jaxq.api.unchecked import (  # noqa: F401
    analyze_network,
    check_tunable,
    network_diffusion,
    sde_tuning_step,
    simulate_2x2,
    simulate_network,
    simulate_network_diffusion,
    wcp_value,
)
from jaxq.api.inputs import (  # noqa: F401
    MAX_MAGNITUDE,
    InputError,
    arg_type,
    check_devices,
    check_output_file,
    check_rates,
    check_seed,
    check_work,
    example_path,
    pss_default_horizon,
    pss_events_per_replication,
    read_system,
)
from jaxq.api.outputs import (  # noqa: F401
    Monitor,
    atomic_write,
    catch_interrupts,
    check_interrupt,
    duration,
    monitor,
    quiet,
    sci,
    set_quiet,
    table_columns,
    to_jsonable,
)
from jaxq.api.studies import (  # noqa: F401
    check_output_folder,
    is_empty_folder,
    load_experiment,
    parse_experiment,
    read_manifest,
    run_study,
)
from jaxq.model import validate as v
from jaxq.policies.hook import Policy2x2  # noqa: F401  (jaxq.Policy2x2: a user's policy of the 2x2 system)
from jaxq.precision import in_float64
from jaxq.sim.markov import MarkovModel, difference_controls  # noqa: F401

if TYPE_CHECKING:
    from jaxq.api.simulate_options import Batching, Levels, NetworkOutputs, Outputs, Truncation, Window

_CHOICES = ("POLICY_CHOICES", "ENGINES", "THETA_RULES", "DEFAULT_THETA_EXPONENT", "DEFAULT_THETA_RULE", "SDE_SCHEMES",
            "DEFAULT_SDE_SCHEME", "TUNE_SEARCH_REPS", "TUNE_GRADIENT_REPS")


_TARGET = ("Target", "run_to_target", "checked_target", "target_from", "run_reps")  # precision targets (jaxq.mc.target)
# jaxq.simulate's typed groups of options (jaxq.api.simulate_options imports the simulators: on first use)
_GROUPS = ("Truncation", "Levels", "Outputs", "Batching", "Window", "NetworkOutputs")


def __getattr__(name):
    if name in _CHOICES:  # jaxq.api.choices imports the simulators: only when one of its names is asked for
        return getattr(importlib.import_module("jaxq.api.choices"), name)
    if name in _TARGET:
        return getattr(importlib.import_module("jaxq.mc.target"), name)
    if name in _GROUPS:
        return getattr(importlib.import_module("jaxq.api.simulate_options"), name)
    raise AttributeError(f"module 'jaxq.api' has no attribute {name!r}")

# ------------------------------------------------------------------------------------------ argument checks
# Every public function checks its own arguments here, before any work, by name (the function's own keyword
# arguments and the options it passes on): an InputError naming the argument, as the command line does.
# Values the library checks itself (a model's rates, n against the system, ranges that depend on the system)
# pass through after a type check.


def _optional(check):
    return lambda value, key: None if value is None else check(value, key)


def _replications(value, key):
    return v.check_int(value, key, lo=2, hi=v.MAX_REPLICATIONS)  # one replication has no standard error


def _number(**bounds):
    def check(value, key):
        v.check_float(value, key, **bounds)
        return value  # the callee may want an int (fast/slow steps): checked, not converted
    return check


_SYSTEM_FILE = "a bundled example (pss_PP, network_N, ...) or a TOML file"
_CHECKS = {
    "seed": v.check_seed,
    "seeds": _optional(v.check_seeds),
    "reps": _optional(_replications),
    "paths": _optional(_replications),
    "chunk": _optional(lambda x, k: v.check_int(x, k, lo=1)),
    "start": lambda x, k: v.check_int(x, k, lo=0),
    "steps": _optional(lambda x, k: v.check_int(x, k, lo=1)),
    "basis_pool": _optional(lambda x, k: v.check_int(x, k, lo=1)),
    "cv": v.check_bool,
    "debug": v.check_bool,
    "resume": v.check_bool,
    "devices": v.check_devices,
    "record_times": v.check_times,
    "snap_times": _optional(v.check_times),
    "times": _optional(v.check_times),
    "uc": _optional(v.check_vector),
    "us": _optional(v.check_vector),
    "policy": lambda x, k: x if isinstance(x, Policy2x2) else _optional(v.check_text)(x, k),
    "engine": v.check_text,
    "scheme": v.check_text,
    "control": v.check_text,
    "target": v.check_text,
    "n": _optional(_number(gt=0)),
    "horizon": _optional(_number(gt=0)),
    "warmup": _number(ge=0),
    "dt": _optional(_number(gt=0)),
    "z0": _number(ge=0),
    "switch_at": _optional(_number(ge=0)),
    "source": lambda x, k: _file_name(x, k, _SYSTEM_FILE),
    "experiment": lambda x, k: v.check_path(x, k, "an experiment file (or give its TOML text)"),
    "out": lambda x, k: v.check_path(x, k, "an output folder"),
}
_KINDS = {"pss2x2": "a 'pss2x2' system (e.g. pss_PP)", "network": "a 'network' system (e.g. network_N)"}


def _file_name(value, key: str, what: str):
    """A file name (:func:`jaxq.model.validate.check_path`) that is not TOML text pasted in its place."""
    name = v.check_path(value, key, what)
    text = str(os.fspath(name))
    if "\n" in text:
        raise InputError(key, f"got {text.count(chr(10)) + 1} lines of text, not a name: give {what} by its path "
                              "(write the text to a .toml file)")
    return name


def _system(value, key: str, kind: str | None):
    """A system argument loaded (a bundled name, a TOML path or a loaded system) and of the kind needed."""
    from jaxq.model.network import Network
    from jaxq.model.pss2x2 import PSS2x2

    from jaxq.sim.markov import MarkovModel

    if kind is None and isinstance(value, MarkovModel):
        return value
    if isinstance(value, (str, os.PathLike)):
        value = load(_file_name(value, key, _SYSTEM_FILE))
    if not isinstance(value, (PSS2x2, Network)):
        raise InputError(key, f"expected a bundled example name, a TOML file or a loaded system, got an "
                              f"object of type {type(value).__name__}")
    got = "pss2x2" if isinstance(value, PSS2x2) else "network"
    if kind is not None and got != kind:
        raise InputError(key, f"this needs {_KINDS[kind]}, got a '{got}' system")
    return value


def _bind(fn, sig: inspect.Signature, args, kwargs) -> inspect.BoundArguments:
    """``sig.bind``, a missing or extra positional argument refused as an InputError naming it (not Python's
    TypeError)."""
    try:
        return sig.bind(*args, **kwargs)
    except TypeError as e:
        text = str(e)
        missing = text.split("'")[1] if "missing a required argument" in text else None
        if missing is not None:
            needed = [p.name for p in sig.parameters.values() if p.default is p.empty
                      and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            raise InputError(missing, f"missing: jaxq.{fn.__name__} needs {', '.join(needed)}") from None
        positional = [p for p in sig.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        raise InputError("arguments", f"jaxq.{fn.__name__} takes at most {len(positional)} positional arguments "
                                      f"({', '.join(p.name for p in positional)}), got {len(args)}") from None


def _checked(**systems):
    """Decorator of every public function: checks its arguments (:data:`_CHECKS`, by name, its ``**options``
    included) and then loads its system arguments (``systems``: name -> the kind needed, or None for either)."""

    def wrap(fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            _check_keywords(fn, sig, kwargs)
            with in_float64():  # jaxq computes in float64 whatever the caller's JAX configuration
                bound = _bind(fn, sig, args, kwargs)
                for name, value in bound.arguments.items():
                    if sig.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                        bound.arguments[name] = {k: _CHECKS[k](x, k) if k in _CHECKS else x for k, x in value.items()}
                    elif name in _CHECKS and name not in systems:
                        bound.arguments[name] = _CHECKS[name](value, name)
                for name, kind in systems.items():  # after the cheap checks: loading reads and validates a file
                    if name in bound.arguments:
                        bound.arguments[name] = _system(bound.arguments[name], name, kind)
                return fn(*bound.args, **bound.kwargs)

        return checked

    return wrap


def _keywords(fn, skip: int = 0) -> set[str]:
    """The names ``fn`` takes by keyword, less its first ``skip`` parameters (those the API passes itself)."""
    params = list(inspect.signature(fn).parameters.values())[skip:]
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name for p in params if p.kind in kinds}


def _unknown(name: str, valid, where: str) -> InputError:
    """An InputError naming an unknown keyword argument and the closest valid one (difflib)."""
    import difflib

    close = difflib.get_close_matches(name, sorted(valid), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f"; valid: {', '.join(sorted(valid))}"
    return InputError(name, f"is not a keyword argument of {where}{hint}")


def _check_keywords(fn, sig: inspect.Signature, kwargs: dict) -> None:
    """Refuse a keyword that a public function without ``**options`` does not take (InputError naming it)."""
    params = sig.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return  # the function checks its options itself (:func:`_check_options`; jaxq.simulate: :func:`_options`)
    named = {k for k, p in params.items() if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
    for k in kwargs:
        if k not in named:
            raise _unknown(k, named, f"jaxq.{fn.__name__}")


def _check_options(where: str, options: dict, own, *callees, taken=(), flat=None) -> None:
    """Refuse an option that none of ``callees`` (pairs ``(function, number of leading parameters the API
    passes itself)``) takes: an InputError naming it and the closest valid keyword (the function's own
    keywords ``own`` included); ``taken``: keywords the API passes itself under another name; ``flat``: typed
    arguments (name -> NamedTuple) whose fields the API takes as flat options and groups itself (the arguments
    themselves are the API's, not options)."""
    flat = flat or {}
    valid = set()
    for fn, skip in callees:
        valid |= _keywords(fn, skip)
    valid -= set(taken) | set(flat)
    for group in flat.values():
        valid |= set(group._fields)
    for k in options:
        if k not in valid:
            raise _unknown(k, valid | set(own), where)


def _own(fn) -> set[str]:
    """A public function's own keyword parameters (not ``**options``)."""
    return _keywords(fn) - {p.name for p in inspect.signature(fn).parameters.values()
                            if p.kind is inspect.Parameter.VAR_KEYWORD}


@_checked()
def example_names() -> list[str]:
    """Names of the bundled example systems (``pss_P``, ..., ``network_N``, ...)."""
    from jaxq.examples import names

    return names()


@_checked()
def load(source):
    """Load a system: a bundled example name (``"pss_PP"``, ``"network_N"``) or a TOML file path.

    Args:
        source (str | os.PathLike): A bundled example name (``"pss_PP"``, ``"network_N"``) or a TOML file path.

    Returns:
        (jaxq.model.pss2x2.PSS2x2 | jaxq.model.network.Network): A :class:`jaxq.model.pss2x2.PSS2x2`
            (``kind = "pss2x2"``) or a :class:`jaxq.model.network.Network` (``kind = "network"``).

    Raises:
        InputError: A bad file, naming the key and the reason.
    """
    from jaxq.model import load as load_file

    return load_file(os.fspath(source))


@_checked(system=None)
def analyze(system, basis_pool: int | None = None):
    """The exact limit objects of a system.

    2x2 system (the switched-policies paper): LP (2.7), modes (3.2)-(3.3), b and sigma (2.13), the HPC (2.12), single or
    dual case, z* (smooth fit) and the lower bound V0, the policy of Theorem 2.11. Network (the uniform-stability and
    LAP-tightness papers): LP (2.3), CRP, scaling, LAP priorities and psi*, the diffusion limit and the spare capacity.

    Args:
        system (str | os.PathLike | jaxq.model.pss2x2.PSS2x2 | jaxq.model.network.Network): A 2x2 system or a network
            (an example name or a TOML path is loaded as :func:`load` does).
        basis_pool: For a network, jhat, 1-based.

    Returns:
        (jaxq.diffusion.workload.Analysis | jaxq.diffusion.network_analysis.NetworkAnalysis): For a 2x2 system a
            :class:`jaxq.diffusion.workload.Analysis` (``.to_dict()`` is ``jaxq analyze``'s JSON); for a network a
            :class:`jaxq.diffusion.network_analysis.NetworkAnalysis`.
    """
    from jaxq.model.network import Network

    if isinstance(system, Network):
        from jaxq.diffusion.network_analysis import analyze as analyze_network

        return analyze_network(system, basis_pool)
    from jaxq.diffusion.workload import analyze as analyze_pss

    return analyze_pss(system)


@_checked(system="pss2x2")
def threshold_term(system, n: float, theta_exponent: float | None = None,
                   theta_rule: str | None = None) -> float | None:
    """``Delta_n``: the part of ``J_n - V0`` that the threshold of Theorem 2.11's policy costs in the n-th system.

    It is 0 for P and PP (:mod:`jaxq.diffusion.threshold`), with ``Theta_n = ceil(c n^a)`` ((2.29): c = 1), ``a`` the
    simulator's default exponent and c the constant of the simulator's default rule unless given. ``J_n - V0 - Delta_n``
    is what the diffusion approximation itself leaves; the convergence study reports both.

    Args:
        system (str | os.PathLike | jaxq.model.pss2x2.PSS2x2): The 2x2 system (an example name or a TOML path is
            loaded).
        n: The index of the system.
        theta_exponent: The exponent ``a`` of ``Theta_n`` (default the simulator's).
        theta_rule: The rule of the constant c (default the simulator's; :func:`jaxq.policies.thresholds.rule_levels`).

    Returns:
        ``Delta_n``; None where the formula does not apply (the held jobs reach the switching level z*, or the rule
            moves the switching level away from z*, as ``excursion`` may).
    """
    import math

    from jaxq.diffusion.threshold import threshold_term as term
    from jaxq.sim.pss2x2 import DEFAULT_THETA_EXPONENT, DEFAULT_THETA_RULE, Levels, setup

    an = analyze(system)
    a = DEFAULT_THETA_EXPONENT if theta_exponent is None else theta_exponent
    rule = DEFAULT_THETA_RULE if theta_rule is None else theta_rule
    st = setup(system, n, analysis=an, levels=Levels(theta_exponent=a, theta_rule=rule))  # validates n, a, the rule
    return term(an, st.policy, (st.theta or 0) / math.sqrt(n), st.switch_at)


@_checked(system=None)
def simulate(system, n: float | None = None, reps: int | None = None, *, policy: str | None = None,
             engine: str = "auto", seed: int = 0, rel_se: float | None = None, max_reps: int | None = None,
             budget: float | None = None, truncation: Truncation | None = None, levels: Levels | None = None,
             outputs: Outputs | NetworkOutputs | None = None, batching: Batching | None = None,
             window: Window | None = None, **options):
    """Monte Carlo of the n-th (prelimit) system or of a :class:`MarkovModel`.

    2x2 system: the discounted cost J_n (2.6) (``result.value``, ``result.stderr``, ``result.ci95``) under
    ``policy`` (default ``"auto"``: Theorem 2.11's; also ``P``, ``T2``, ``PP``, ``T2T2``, ``T1T2``, ``T2T1``,
    ``RULE@m``, a :class:`jaxq.Policy2x2` of the user's, docs/guides/policy-hook.md; ``"tuned"``: Theorem 2.11's
    policy with its switching level and threshold tuned for this n by
    :func:`jaxq.tuning.prelimit.simulate_tuned`, whose search uses a seed derived from ``seed`` and never ``seed``
    itself, so the replications reported are fresh; ``info["tuned"]`` holds z, Theta_n and the search's cost),
    ``reps`` replications (default 1000) of :func:`jaxq.sim.pss2x2.simulate`; the default truncation is checked
    against the estimate (:func:`jaxq.sim.pss2x2.simulate_bounded`).

    Network: stationary averages over [warmup, horizon] (``result["mean_queue"]``, ...) under ``policy``
    (default ``"priority"``; ``lap``, ``lqfs``, ``swc``), ``reps`` default 64 (:func:`jaxq.sim.network.simulate`).

    A :class:`MarkovModel` (no ``n``, no ``policy``): the discounted integral ``E int_0^T exp(-gamma t) observe
    dt`` (option ``discount``) or the time average over [warmup, horizon] (option ``warmup``), at least one of the
    two; ``reps`` default 256; ``engine`` ``auto`` (uniformised when the model has a ``rate_bound``), ``event`` or
    ``uniformized`` (:func:`jaxq.sim.simulate_markov.simulate_markov`).

    Precision target (every kind above), in place of ``reps``: ``rel_se``, ``max_reps``, ``budget``. A pilot on a
    seed derived from ``seed`` plans the replications; the run is then replications ``0 .. R-1`` of ``seed``, a prefix
    of the fixed run, unbiased (:func:`jaxq.mc.target.run_to_target`). ``info``: ``rel_se_target``,
    ``stopped_by`` (``target``, ``max_reps``, ``budget``), ``pilot``.

    **Options.** Each kind of system takes a few typed groups of options (named tuples: ``jaxq.Truncation``,
    ``jaxq.Levels``, ``jaxq.Outputs``, ``jaxq.Batching``, ``jaxq.Window``, ``jaxq.NetworkOutputs``) and a few plain
    options. A group's fields may be given as flat keywords instead, the same run: ``horizon=30.0`` is
    ``truncation=jaxq.Truncation(horizon=30.0)`` and ``chunk=64, devices=2`` is ``batching=jaxq.Batching(chunk=64,
    devices=2)``. A field given both in its group and flat, a group not of its type and an option the kind of
    system does not take are refused (an InputError naming it). Each field below with its default:

    A 2x2 system:

    - ``truncation`` (``jaxq.Truncation``): which driver runs and where it truncates the discounted integral (2.6).
        - ``engine`` (``"auto"``): as the argument ``engine``; give it in one of the two places.
        - ``horizon`` (None): the event driver's truncation time T; None: where the tail bound is about
          ``rel_tol`` V0, then extended until the bound is small beside the estimate and its standard error.
        - ``steps`` (None): the uniformised driver's number of steps K; None: sized as ``horizon``.
        - ``rel_tol`` (1e-4): the tail bound the default truncation aims at, relative to V0.
        - ``block`` (128): events per block of the event driver (how often it checks that every replication is
          done).
        - ``se_floor`` (None): the standard error, relative to J_hat, below which the default truncation is not
          lengthened; None: a precision target's ``rel_se`` under a target, else the run's own standard error; 0: always
          the run's own.
    - ``levels`` (``jaxq.Levels``): the levels of Theorem 2.11's policy in the n-th system.
        - ``switch_at`` (None): the switching level z in scaled workload; None: the rule's, z* of the analysis for
          every rule but ``excursion``.
        - ``theta_exponent`` (0.34): the exponent a of the threshold Theta_n = ceil(c n^a) (2.28)-(2.29).
        - ``theta_rule`` (``"excursion"``): the rule of the constant c (``jaxq.api.THETA_RULES``).
        - ``theta_constant`` (1.0): a factor on the rule's constant c.
        - ``perturb`` (None): ``(sign, tau_z, tau_c)``, z and c perturbed per replication by Gaussians (the
          smoothed gradient of the prelimit tuner; event driver).
    - ``outputs`` (``jaxq.Outputs``): what a run records besides J per replication.
        - ``record_times`` (``()``): times in [0, horizon] at which W_hat(t) is recorded (event driver;
          ``samples["W_hat_t"]``).
        - ``cv`` (True): the control variates from the diffusion limit, cross-fitted by replication index; the
          plain estimate is reported beside.
        - ``diagnostics`` (True): the diagnostics (docs/guides/diagnostics.md) and their warning.
        - ``debug`` (False): the Definition 2.7 invariant counters (event driver).
        - ``observers`` (None): statistics of the path, name -> ``jaxq.Observer`` (docs/guides/observers.md).
    - ``batching`` (``jaxq.Batching``): how the replications are executed; any value gives the same numbers.
        - ``start`` (0): the index of the first replication.
        - ``chunk`` (None): replications per compiled call; None: all, at most the backend's
          ``jaxq.mc.replications.DEFAULT_CHUNK``.
        - ``devices`` (None): the devices each chunk is cut over; None: all local devices (the host CPU for a run
          of few replications on an accelerator; on a CPU, one device per core for a run of at least
          ``jaxq.mc.replications.SPREAD_WORK`` events or steps, the first below), a count K (the first K) or a list
          of local JAX devices.
        - ``progress`` (None): called with the work done after every call.
    - ``analysis`` (None): the system's analysis (:func:`analyze`; computed when None).

    A 2x2 system under ``policy="tuned"``: ``truncation``, ``outputs``, ``batching`` and ``analysis`` as above;
    ``theta_exponent`` (None: 0.34) and ``tune_reps`` (None: 128, replications per candidate of the search); the
    search sets the other levels, so ``levels``, ``switch_at``, ``theta_rule``, ``theta_constant`` and ``perturb``
    are refused.

    A network:

    - ``window`` (``jaxq.Window``): the window of the time averages, ``0 <= warmup < horizon``; every replication
      starts at time 0.
        - ``warmup`` (20.0): the start of the window.
        - ``horizon`` (200.0): its end, the simulated time.
    - ``outputs`` (``jaxq.NetworkOutputs``): what a run records besides the window averages of the counts.
        - ``snap_times`` (None): times in [0, horizon] at which the class counts are recorded (event engine).
        - ``hist_range`` (6.0): histograms of X_hat on [-hist_range, hist_range].
        - ``hist_bins`` (60): their bins (0: none, a faster run).
        - ``cv`` (True): control variates, approximating martingales with a quadratic basis in X_hat; the plain
          means are reported beside (``<key>_plain``).
    - ``batching`` (``jaxq.Batching``): as for a 2x2 system.
    - ``observers`` (None): statistics of the path, name -> ``jaxq.Observer`` of the model's states
      (docs/guides/observers.md).

    A :class:`MarkovModel`:

    - ``batching`` (``jaxq.Batching``): as for a 2x2 system.
    - ``horizon`` (required): the simulated time T of every replication.
    - ``discount`` (None): the discount rate gamma > 0 of the discounted integral (None: not estimated).
    - ``warmup`` (None): the start of the averaging window [warmup, T] (None: no time average).
    - ``params`` (None): passed to the model's functions.
    - ``observers`` (None): statistics of the path, name -> ``jaxq.Observer`` (docs/guides/observers.md).

    Args:
        system (str | os.PathLike | jaxq.model.pss2x2.PSS2x2 | jaxq.model.network.Network | MarkovModel): A 2x2
            system, a network (an example name or a TOML path is loaded) or a :class:`MarkovModel`.
        n: The index of the system (needed for a 2x2 system and a network; none for a :class:`MarkovModel`).
        reps: Replications (default 1000 for a 2x2 system, 64 for a network, 256 for a :class:`MarkovModel`).
        policy: The policy (2x2 system: default ``"auto"``; network: default ``"priority"``; none for a
            :class:`MarkovModel`, which states its own decisions).
        engine: ``auto``, ``event`` or ``uniformized``.
        seed: Replication r uses ``fold_in(PRNGKey(seed), r)``.
        rel_se: The standard error over the estimate to reach; for a network, over each class's ``mean_queue``; for a
            MarkovModel, over every estimate.
        max_reps: Default 100,000; a target that needs more is refused before the run.
        budget: Seconds; the run stops short when they do not suffice.
        truncation: A 2x2 system's truncation (Options above).
        levels: A 2x2 system's levels of Theorem 2.11's policy (Options above).
        outputs: What a run records: ``jaxq.Outputs`` for a 2x2 system, ``jaxq.NetworkOutputs`` for a network
            (Options above).
        batching: How the replications are executed, any kind of system (Options above).
        window: A network's averaging window (Options above).
        **options (typing.Any): The plain options of each kind and the groups' fields given flat (Options above).

    Returns:
        (jaxq.mc.result.SimResult): The estimates.

    Raises:
        InputError: Naming the argument: no ``n`` for a 2x2 system or a network, an ``n`` or a ``policy`` for a
            :class:`MarkovModel`, a :class:`jaxq.Policy2x2` for a network, an unknown option, a group not of its
            type, a field given both in its group and flat.
    """
    from jaxq.model.network import Network
    from jaxq.sim.markov import MarkovModel

    target = _target(reps, rel_se, max_reps, budget)
    given = {"truncation": truncation, "levels": levels, "outputs": outputs, "batching": batching, "window": window}
    options = {**{k: x for k, x in given.items() if x is not None}, **options}
    if isinstance(system, MarkovModel):
        return _simulate_markov(system, n, reps, policy, engine, seed, options, target)
    if n is None:
        raise InputError("n", "the index n of the system is needed")
    if isinstance(system, Network):
        from jaxq.sim import network

        if isinstance(policy, Policy2x2):
            raise InputError("policy", "a Policy2x2 is a policy of the 2x2 system; a network takes a policy name")
        options = _options("network", options)
        return _run(lambda r, s: network.simulate(system, n, policy or "priority", reps=r, engine=engine, seed=s,
                                                  **network.grouped(_placed(options, r))), reps, 64, seed, target,
                    "mean_queue")
    from jaxq.sim import pss2x2

    if policy == "tuned":  # the search of jaxq.tuning.prelimit, then fresh replications of the tuned policy
        from jaxq.tuning.prelimit import simulate_tuned

        options = _options("pss2x2_tuned", options)
        engine = _one_engine(options, engine)
        reps = 1000 if reps is None else reps
        return simulate_tuned(system, n, reps, engine=engine, seed=seed, target=target,
                              **_placed(options, target.max_reps if target else reps))

    options = pss2x2.held_to(target, _options("pss2x2", options))
    engine = _one_engine(options, engine)
    return _run(lambda r, s: pss2x2.simulate_bounded(
        system, n, r, **pss2x2.grouped({"policy": policy or "auto", "seed": s, "engine": engine,
                                        **_placed(options, r)})), reps, 1000, seed, target)


def _options(kind: str, options: dict) -> dict:
    """``jaxq.simulate``'s options for a kind of system (:data:`jaxq.api.simulate_options.KINDS`) as flat keywords:
    the groups given whole replaced by their fields, checked as the flat keywords are (:data:`_CHECKS`); an option
    the kind does not take is an InputError naming it and the closest valid one."""
    from jaxq.api.simulate_options import KINDS, OWN, flat

    spec = KINDS[kind]
    out = flat(spec, options, lambda key, names: _unknown(key, names | set(OWN), spec.where))
    return {k: _CHECKS[k](x, k) if k in _CHECKS and k not in options else x for k, x in out.items()}


def _one_engine(options: dict, engine: str) -> str:
    """The engine of a 2x2 run: ``jaxq.simulate``'s ``engine`` or its ``truncation``'s (popped from ``options``),
    whichever is not ``"auto"``; both is an InputError naming ``engine``."""
    grouped = options.pop("engine", "auto")
    if grouped != "auto" and engine != "auto":
        raise InputError("engine", "given twice: as engine= and in truncation= (Truncation); give it once")
    return engine if grouped == "auto" else grouped


def _target(reps, rel_se, max_reps, budget):
    """The precision target of ``jaxq.simulate`` (None: a fixed number of replications), checked."""
    from jaxq.mc.target import target_from

    return target_from(reps, rel_se, max_reps, budget)


def _run(go, reps, default_reps, seed, target, estimate=None):
    """``go(reps, seed)`` once, or to the precision ``target`` on ``estimate`` (default the primary one;
    :func:`jaxq.mc.target.run_reps`)."""
    from jaxq.mc.target import run_reps

    return run_reps(go, default_reps if reps is None else reps, seed, target, estimate=estimate)


def _simulate_markov(model, n, reps, policy, engine, seed, options, target=None):
    from jaxq.mc.replications import Batching
    from jaxq.sim.simulate_markov import MarkovRun, simulate_markov

    if n is not None:
        raise InputError("n", "a MarkovModel has no index n (its parameters go in params)")
    if policy is not None:
        raise InputError("policy", "a MarkovModel states its own decisions in its transition")
    options = _options("markov", options)
    if options.get("horizon") is None:
        raise InputError("horizon", "a MarkovModel needs the simulated time horizon")
    params = options.pop("params", None)

    def go(r, s):
        placed = dict(_placed(options, r))
        batching = Batching(**{k: placed.pop(k) for k in Batching._fields if k in placed})
        return simulate_markov(model, MarkovRun(engine=engine, batching=batching, **placed), params=params, reps=r,
                               seed=s)

    return _run(go, reps, 256, seed, target)


def _placed(options: dict, reps) -> dict:
    """``options`` of a single run with its devices: the host CPU for a run of fewer than
    :data:`jaxq.mc.replications.HOST_BELOW` replications on an accelerator when no devices are named
    (:func:`jaxq.mc.replications.small_run_devices`); unchanged otherwise (and for a bad ``reps``, refused
    later)."""
    from jaxq.mc.replications import small_run_devices

    if options.get("devices") is not None or isinstance(reps, bool) or not isinstance(reps, int):
        return options
    devices = small_run_devices(reps)
    return options if devices is None else {**options, "devices": devices}


@_checked(system="pss2x2")
def exact_cost(system, n: float, **options) -> dict:
    """The exact J_n of a 2x2 system under a policy, no Monte Carlo.

    A sparse solve of its truncated CTMC, with the phases of the interarrival and service times in the state for
    Erlang, hyperexponential and integer-shape gamma primitives (:func:`jaxq.sim.exact_ctmc.policy_cost`).

    Args:
        system (str | os.PathLike | jaxq.model.pss2x2.PSS2x2): The 2x2 system (an example name or a TOML path is
            loaded).
        n: The index of the system.
        **options (typing.Any): ``policy`` (default ``"auto"``, as :func:`simulate`), ``switch_at``,
            ``theta_exponent``, ``theta_constant``, ``rtol`` (the cap grows until two caps agree within it, default
            1e-5) and ``max_states`` (refused beforehand, on ``n``, beyond it; default 2e6: small n, a few seconds to a
            minute).

    Returns:
        ``J``, ``truncation_change``, ``cap``, ``states``, ``policy``, ``theta``, ``switch_at``.
    """
    from jaxq.sim.exact_ctmc import policy_cost

    _check_options("jaxq.exact_cost", options, _own(exact_cost), (policy_cost, 2))
    return policy_cost(system, n, **options)


@_checked(system="pss2x2")
def optimal(system, n: float, queue_cap: int | None = None, *, exact_policy: bool = True, rtol: float = 1e-6,
            max_states: int = 3_000_000, max_gib: float = 8.0, bracket: bool = False):
    """The optimal discounted cost J*_n of the n-th 2x2 system from empty.

    By policy iteration on its truncated Markov decision process, with the optimal policy as a
    :class:`jaxq.Policy2x2` (:func:`jaxq.mdp.optimum.optimal`).

    The model is :func:`simulate`'s (the n-th rates, non-preemptive service, cost h.X/sqrt(n), discount gamma);
    after every event each idle server may start a waiting job of either class or stay idle. Exponential and
    phase-type primitives (Erlang, hyperexponential, gamma with an integer shape); with phases the controller
    sees them, so J*_n is a lower bound for every non-anticipating policy and ``J_table`` is the exact cost of the
    phase-blind ``result.policy``. Beside J*_n: V0 and, with ``exact_policy``, the exact J_n of Theorem 2.11's policy
    (``exact_cost``) and the ratios.

    Args:
        system (str | os.PathLike | jaxq.model.pss2x2.PSS2x2): The 2x2 system (an example name or a TOML path is
            loaded).
        n: The index of the system.
        queue_cap: The first cap of both queues, each class's doubling then tested once (default:
            ``max(6, 2 sqrt(n))``, each class's cap doubled until doubling it moves ``J_star`` by at most
            ``rtol / 2``; ``truncation_change`` is the two classes' changes added). ``J_star`` charges arrivals to a
            full queue as jobs never served: an upper bound on J*_n, the cost of a policy.
        exact_policy: Also the exact J_n of Theorem 2.11's policy (``exact_cost``) and the ratios.
        rtol: The largest ``truncation_change`` accepted.
        max_states: A chain of more than ``max_states`` states is refused before it is built.
        max_gib: A chain of more than ``max_gib`` GiB is refused before it is built.
        bracket: A proven bracket instead: one cap of both queues, doubled from ``max(6, 4 sqrt(n))`` until the
            truncation that charges arrivals to a full queue the floor of their cost (a lower bound,
            ``J_star_lower``) and the never-served one agree to ``rtol`` (``truncation_change`` is then the
            bracket's width). It closes at small n; at large n the floor optimum games the cap.

    Returns:
        (jaxq.mdp.optimum.Optimal): J*_n and the rest; ``to_dict()`` is the command line's JSON.
    """
    from jaxq.mdp.optimum import optimal as solve

    v.check_bool(exact_policy, "exact_policy")
    return solve(system, n, queue_cap, exact_policy=exact_policy, rtol=rtol, max_states=max_states,
                 max_gib=max_gib, bracket=bracket)


@_checked(system="pss2x2")
def simulate_sde(system, *, paths: int | None = None, dt: float | None = None, scheme: str = "skew", z0: float = 0.0,
                 switch_at: float | None = None, horizon: float | None = None, seed: int = 0,
                 rel_se: float | None = None, max_reps: int | None = None, budget: float | None = None, **options):
    """The workload diffusion (2.23)/(2.24) of a 2x2 system, ``dZ = b(Z)dt + sigma(Z)dB + dL``.

    It switches modes at ``switch_at`` (default z*) and estimates V_WCP(z0) = E int exp(-gamma t) Z dt.

    Args:
        system (str | os.PathLike | jaxq.model.pss2x2.PSS2x2): The 2x2 system (an example name or a TOML path is
            loaded).
        paths: Default 20,000; or a precision target in its place (``rel_se``, ``max_reps`` paths, ``budget``), as in
            :func:`simulate`.
        dt: Default ``1e-3 min(1, 1/gamma)``, and at most 0.01 sigma^2/b^2 (the drift's time scale); a step with
            ``gamma dt > 0.1`` or ``b^2 dt / sigma^2 > 0.3`` is refused (:func:`jaxq.sde.estimators.check_resolution`).
        scheme: ``skew`` (default), ``exact`` or ``euler``.
        z0: The initial workload.
        switch_at: The switching level (default z*).
        horizon: The simulated horizon (:func:`jaxq.sde.estimators.wcp_value`).
        seed: The seed of the paths.
        rel_se: The precision target, as in :func:`simulate`.
        max_reps: The most paths of a precision target, as in :func:`simulate`.
        budget: Seconds of a precision target, as in :func:`simulate`.
        **options (typing.Any): Options of :func:`jaxq.sde.estimators.discounted_cost`.

    Returns:
        (jaxq.mc.result.SimResult): Primary ``V_hat``; ``info["V_exact"]`` is the exact ODE value for the same
            switching level.
    """
    from jaxq.options import grouped
    from jaxq.sde.estimators import GROUPS, discounted_cost, wcp_value

    _check_options("jaxq.simulate_sde", options, _own(simulate_sde), (discounted_cost, 3),
                   taken=("scheme_name",), flat=GROUPS)
    target = _target(paths, rel_se, max_reps, budget)
    a = analyze(system)
    return _run(lambda p, s: wcp_value(a, z0, switch_at, dt=dt, paths=p, seed=s, scheme_name=scheme,
                                       **grouped({"horizon": horizon, **options}, GROUPS)), paths, 20_000, seed, target)


@_checked(network="network")
def simulate_network_sde(network, *, control: str = "constant", uc=None, us=None, paths: int = 256,
                         dt: float = 0.01, horizon: float = 200.0, warmup: float = 20.0, seed: int = 0, **options):
    """Euler scheme of the controlled network diffusion (2.27) of a critically loaded network.

    The uniform-stability paper.

    Args:
        network (str | os.PathLike | jaxq.model.network.Network): The network (an example name or a TOML path is
            loaded).
        control: The control (:class:`jaxq.sde.network_euler.Control`).
        uc (typing.Any): Default uniform shares.
        us (typing.Any): Default uniform shares.
        paths: The number of paths.
        dt: The Euler step.
        horizon: The simulated horizon.
        warmup: The start of the long-run averages.
        seed: The seed of the paths.
        **options (typing.Any): Options of :func:`jaxq.sde.network_euler.simulate_diffusion`.

    Returns:
        (jaxq.mc.result.SimResult): Long-run averages (``mean_neg`` = E<e,X>^-, ``mean_pos``, ``mean_x``,
            ``identity_rhs``; ``info["identity_lhs"]`` the spare capacity of (3.6)).
    """
    from jaxq.diffusion.network_analysis import stationary_diffusion
    from jaxq.options import grouped
    from jaxq.sde.network_euler import GROUPS, Control, simulate_diffusion

    _check_options("jaxq.simulate_network_sde", options, _own(simulate_network_sde), (simulate_diffusion, 1),
                   taken=("control",), flat=GROUPS)
    dl = stationary_diffusion(analyze(network))  # critically loaded, positive spare capacity (long-run averages)
    return simulate_diffusion(dl, Control(control, uc, us), paths=paths, seed=seed,
                              **grouped({"dt": dt, "horizon": horizon, "warmup": warmup, **options}, GROUPS))


@_checked(system="pss2x2")
def tune(system, target: str = "exact", **options):
    """Tune the switching level z (and, for the prelimit, the threshold Theta_n = ceil(c n^a)).

    Args:
        system (str | os.PathLike | jaxq.model.pss2x2.PSS2x2): The 2x2 system (an example name or a TOML path is
            loaded).
        target: ``"exact"``: L-BFGS on the closed-form WCP cost J(0; z) (:func:`jaxq.tuning.exact.tune_exact`);
            ``"sde"``: pathwise gradients of the Monte Carlo cost of the sigmoid-blended control
            (:func:`jaxq.tuning.sde.tune_sde`); ``"prelimit"``: J_n of the n-th system (needs ``n``;
            :func:`jaxq.tuning.prelimit.tune_prelimit`): one-dimensional searches in Theta_n and z on common random
            numbers (``method="search"``, default, about a minute at n = 1000 on two cores) or Adam on smoothed
            gradients (``method="gradient"``), then the tuned and the default policy on fresh replications
            (``.evaluation``).
        **options (typing.Any): Passed to the tuner.

    Returns:
        (typing.Any): The tuner's result.

    Raises:
        InputError: ``n`` missing for the prelimit target, a single-mode system (no z to tune), an unknown target.
    """
    if target == "prelimit":
        from jaxq.options import grouped
        from jaxq.tuning.prelimit import GROUPS, tune_prelimit

        _check_options("jaxq.tune (target 'prelimit')", options, _own(tune), (tune_prelimit, 1),
                       flat=GROUPS)
        if "n" not in options:
            raise InputError("n", "the prelimit target needs the index n of the system")
        n = options.pop("n")
        return tune_prelimit(system, n, **grouped(options, GROUPS))
    if target == "exact":
        from jaxq.tuning.exact import tune_exact

        _check_options("jaxq.tune (target 'exact')", options, _own(tune), (tune_exact, 5))
    elif target == "sde":
        from jaxq.tuning.sde import tune_sde

        _check_options("jaxq.tune (target 'sde')", options, _own(tune), (tune_sde, 2))
    a = analyze(system)
    if a.case != "dual":
        raise InputError("system", "single-mode case (2.19): the optimal policy never switches, so there is no z to tune")
    if target == "exact":
        return tune_exact(*a.mode_coefficients(), a.system.gamma, **options)
    if target == "sde":
        return tune_sde(a.mode_coefficients(), a.system.gamma, **options)
    raise InputError("target", f"expected exact, sde or prelimit, got {target!r}")


@_checked()
def solve_fastslow(lam: float, mu1: float, mu2, *, discount: float | None = None, slow_servers: int | None = None,
                   truncation: int | None = None):
    """The optimal policy of one fast and K slow servers (the fast/slow-servers paper) by value iteration.

    Args:
        lam: The arrival rate.
        mu1: The rate of the fast server.
        mu2 (float | list[float]): A number (K identical slow servers, K = ``slow_servers``, default 2) or a list
            (heterogeneous).
        discount: None gives the long-run average cost.
        slow_servers: K, for a number ``mu2``.
        truncation: The truncation of the queue (:func:`jaxq.mdp.fastslow.solve`).

    Returns:
        (jaxq.mdp.fastslow.Solution): Thresholds q_L <= q_H, policy table, structure, inequalities (K1)-(K6).
    """
    from jaxq.mdp.fastslow import solve

    return solve(lam, mu1, mu2, discount=discount, slow_servers=slow_servers, truncation=truncation)


@_checked()
def simulate_fastslow(lam: float, mu1: float, mu2: float, q_thresholds, *, reps: int | None = None, seed: int = 0,
                      rel_se: float | None = None, max_reps: int | None = None, budget: float | None = None,
                      **options):
    """Simulate a threshold policy of one fast and K identical slow servers.

    Precision target, in place of ``reps``: ``rel_se`` on ``value_empty``, ``max_reps``, ``budget``, as for
    :func:`simulate`.

    Args:
        lam: The arrival rate.
        mu1: The rate of the fast server.
        mu2: The rate of each slow server.
        q_thresholds (typing.Any): The thresholds of the policy.
        reps: Replications (default 64; None with ``rel_se``: planned by a pilot).
        seed: The seed (replication r uses ``fold_in(PRNGKey(seed), r)``).
        rel_se: The relative standard error to reach on ``value_empty`` (None: a fixed ``reps``).
        max_reps: The most replications a targeted run takes.
        budget: The most seconds a targeted run takes.
        **options (typing.Any): Options of :func:`jaxq.sim.fastslow.simulate` (``observers`` among them,
            docs/guides/observers.md).

    Returns:
        (jaxq.mc.result.SimResult): Discounted cost from empty (``value_empty``) and average cost.
    """
    from jaxq.sim import fastslow

    target = _target(reps, rel_se, max_reps, budget)
    _check_options("jaxq.simulate_fastslow", options, _own(simulate_fastslow), (fastslow.simulate, 4),
                   flat=fastslow.GROUPS, taken=("reps", "seed"))
    return _run(lambda r, s: fastslow.simulate(lam, mu1, mu2, q_thresholds,
                                               **fastslow.grouped({**options, "reps": r, "seed": s})),
                reps, 64, seed, target)


@_checked()
def run_experiment(experiment, out, *, resume: bool = False, seeds: list[int] | None = None, devices=None,
                   progress: bool | None = None) -> dict:
    """Run a study from an experiment file (path) or its TOML text, resumably, into the folder ``out``.

    See ``experiments/*.toml``.

    Args:
        experiment (str | os.PathLike): An experiment file (path) or its TOML text.
        out (str | os.PathLike): The output folder; a non-empty folder needs ``resume=True``.
        resume: Continue the run in ``out``.
        seeds: The seeds (in place of the experiment's).
        devices (typing.Any): The devices of the run.
        progress: Show progress (None: the default).

    Returns:
        The run record (``run.json``: tables, files, events, times).
    """
    text = str(experiment)
    if "\n" in text or "[experiment]" in text:
        exp = parse_experiment(text, Path(out).resolve() / "experiment.toml", seeds)
    else:
        exp = load_experiment(experiment, seeds)
    check_output_folder(Path(out), resume=resume)  # as jaxq run: a non-empty folder needs resume=True
    return run_study(exp, out, resume=resume, devices=devices, progress=progress)


@_checked()
def read_run(out, *, complete_only: bool = False) -> tuple[list[dict], list[dict]]:
    """The grid points and the per-replication records of a finished run in the folder ``out``.

    Every chunk is checked against the digests of the run's manifest, as ``jaxq run --resume`` checks them.

    Args:
        out (str | os.PathLike): The folder of the run.
        complete_only: Then only the points whose chunks all check are returned, and the result's ``left_out`` (the
            points left out, with their chunks' states) and ``warnings`` (one sentence per point) say what is missing.

    Returns:
        ``(points, records)``: ``points[i]`` is the grid point (JSON of the manifest: system, policy, n, seed, ...)
            and ``records[i]`` a dict of numpy arrays, one entry per replication (``J``, ``W_hat@2``, ...).

    Raises:
        InputError: Unless ``complete_only=True``, a grid point with a chunk that is missing, damaged or foreign
            (another run's, or an earlier run's of an edited experiment), or that disagrees with the point's other
            chunks (without a column they have, or with NaN where their replications hold numbers), naming the folder,
            the point and the chunk.
    """
    from jaxq.studies.reading import read_records

    return read_records(Path(out), complete_only=v.check_bool(complete_only, "complete_only"))
