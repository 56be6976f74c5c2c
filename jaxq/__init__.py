"""jaxq: a JAX engine for heavy-traffic studies of parallel server queueing systems.

The public API (``import jaxq``; see :mod:`jaxq.api` and docs/reference/api.md):

    load, example_names            a system from a bundled name or a TOML file
    analyze                        the exact limit objects (2x2 system or network)
    simulate                       Monte Carlo of the n-th system (2x2: J_n; network: stationary averages)
    exact_cost                     J_n of a 2x2 system exactly at small n (exponential or phase-type primitives)
    optimal                        J*_n, the optimum of the n-th 2x2 system, by dynamic programming; its policy
    simulate_sde                   the workload diffusion of a 2x2 system and V_WCP
    simulate_network_sde           the network diffusion (2.27)
    tune                           switching level z (L-BFGS); prelimit: z and threshold (a search)
    solve_fastslow                 the fast/slow server MDP (thresholds, structure, (K1)-(K6))
    simulate_fastslow              a threshold policy of the fast/slow system
    run_experiment, read_run       a study from an experiment file, resumable; its per-replication records
    Truncation, Levels, Outputs    simulate's typed options of a 2x2 system (truncation, policy levels, outputs)
    Window, NetworkOutputs         simulate's typed options of a network (averaging window, outputs)
    Batching                       how simulate executes the replications (any kind of system)
    MarkovModel                    a user's continuous-time Markov chain (simulate runs it)
    difference_controls            control variates of a MarkovModel from functions of its state
    SimResult, Estimate            what the simulators return
    InputError                     the one exception for bad input

Layout (dependencies point down this list): model -> planning -> diffusion -> policies -> sim -> sde ->
mdp -> tuning -> studies -> bench -> api -> cli. The API is imported lazily, so ``import jaxq`` is cheap.
"""

import importlib

from jaxq import xla_flags

xla_flags.configure()  # a host device per core, 512-bit vectors on AVX-512, while loops as one function: before XLA
# starts (jaxq.xla_flags)

# Analytics and accumulators are float64 throughout (see SPEC.md), whatever the user's JAX configuration:
# every public function of jaxq.api runs inside ``jax.enable_x64(True)`` (the command line, which owns its
# process, turns it on globally). Importing jaxq changes nothing in the user's JAX configuration.

from jaxq.errors import InputError  # noqa: E402

__version__ = "0.2.0"

_API = {name: "jaxq.api" for name in ("load", "example_names", "analyze", "simulate", "exact_cost", "optimal", "simulate_sde",
                                       "simulate_network_sde", "tune", "solve_fastslow", "simulate_fastslow",
                                       "run_experiment", "read_run", "threshold_term")}
_API.update(SimResult="jaxq.mc.result", Estimate="jaxq.mc.result", MarkovModel="jaxq.sim.markov",
            difference_controls="jaxq.sim.markov", Policy2x2="jaxq.api", Observer="jaxq.mc.observer",
            Segment="jaxq.mc.observer")
_API.update({name: "jaxq.api" for name in ("Truncation", "Levels", "Outputs", "Batching", "Window", "NetworkOutputs")})
__all__ = ["InputError", "__version__", *_API]


def __getattr__(name):
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'jaxq' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_API))
