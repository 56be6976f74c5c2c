"""One fast and K identical slow servers under a threshold policy (the fast/slow-servers paper), as a Markov chain
stated once.

Post-decision state ``(x, y)``: x = queue plus the job at the fast server, y = jobs at the slow servers.
Events: an arrival (rate ``lambda``), a fast completion (rate ``mu1``; fictitious when x = 0: the
uniformised operator (7)), a slow completion (rate ``y mu2``). After every event, fictitious ones
included, the threshold policy (:func:`jaxq.policies.fastslow.decide`) assigns queued jobs to idle slow
servers; threshold policies are idempotent, so this is the continuous-time system. Uniformisation rate
``lambda + mu1 + K mu2``, the rate of the fast/slow-servers paper's uniformised chain. Observed: the cost ``x + y``.
Controls (:data:`MARKOV_CV`): the Henderson-Glynn martingales of ``x, y, x^2, x y, y^2`` (the value
function of a threshold policy is close to a quadratic in (x, y): linear in the slow servers' jobs, about
quadratic in the queue), each difference taken over the full transition, decisions included.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxq.policies.fastslow import decide
from jaxq.sim.markov import MarkovModel, as_markov, difference_controls


class Params(NamedTuple):
    """Traced parameters of the fast/slow system under a threshold policy.

    Attributes:
        lam: The arrival rate lambda.
        mu1: The fast server's rate.
        mu2: A slow server's rate.
        n_thr: (K,) int32 population thresholds (:func:`jaxq.policies.fastslow.population_thresholds`).
    """

    lam: jnp.ndarray
    mu1: jnp.ndarray
    mu2: jnp.ndarray
    n_thr: jnp.ndarray  # (K,) int32 population thresholds


class State(NamedTuple):
    """The post-decision state of one replication.

    Attributes:
        x: int32, the queue plus the job at the fast server.
        y: int32, the jobs at the slow servers.
    """

    x: jnp.ndarray  # int32
    y: jnp.ndarray  # int32


def _transition(s: State, fired, p: Params):
    arrival, fast, slow = fired
    x = jnp.where(arrival, s.x + 1, jnp.where(fast, jnp.maximum(s.x - 1, 0), s.x))
    y = jnp.where(slow, s.y - 1, s.y)
    x, y = decide(x, y, p.n_thr)
    return State(x, y), ()


MODEL = MarkovModel(
    name="fastslow",
    init=lambda p: State(jnp.int32(0), jnp.int32(0)),
    counts=lambda s, p: (1, 1, s.y),
    rates=lambda p: jnp.stack([p.lam, p.mu1, p.mu2]),
    records=True,
    one_hot=True,
    rate_bound=lambda p: float(np.asarray(p.lam) + np.asarray(p.mu1)
                               + np.asarray(p.n_thr).shape[0] * np.asarray(p.mu2)),
    transition=_transition,
    observe=lambda s, p: {"cost": s.x + s.y},
)


def _basis(s: State, p: Params):
    x, y = s.x.astype(jnp.float64), s.y.astype(jnp.float64)
    return x, y, x * x, x * y, y * y


MARKOV = as_markov(MODEL)
MARKOV_CV = as_markov(MODEL._replace(name="fastslow-cv", controls=difference_controls(_basis)))
