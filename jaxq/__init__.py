"""jaxq: a JAX engine for heavy-traffic studies of parallel server queueing systems.

Layout (dependencies point down this list):
    config, distributions      model and parameters
    planning                   static planning: LPs, modes, trees, LAP
    diffusion                  diffusion limits: workload coefficients, HJB, spare capacity
    sim, sde, mdp              simulation: prelimit engines, SDE schemes, fast/slow MDP
    policies, tuning           control policies, autodiff tuning
    studies, cli               experiment runner, figures, command line
"""

import jax

# Analytics and accumulators are float64 throughout (see SPEC.md).
jax.config.update("jax_enable_x64", True)

from jaxq.errors import InputError  # noqa: E402

__version__ = "0.1.0"
__all__ = ["InputError", "__version__"]
