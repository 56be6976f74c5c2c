"""The M/M/c queue as a birth-death Markov chain, stated once (a network with one class and one pool).

State: jobs in the system x. Events: an arrival (rate ``lambda``), a completion (rate ``min(x, c) mu``).
Uniformisation rate ``lambda + c mu``. Observed: x and the queue ``(x - c)^+``; recorded per arrival:
whether it waited (all c servers busy). Controls (:data:`MARKOV_CV`): the Henderson-Glynn martingales of
``X_hat, X_hat^2, Q_hat, Q_hat^2`` with ``X_hat = (x - a)/sqrt(a)``, ``Q_hat = (x - c)^+/sqrt(a)``,
``a = lambda/mu`` (Halfin-Whitt scaling): Poisson's equation of x is linear below c (the infinite-server
part) and quadratic above it (the queue), which this basis spans up to the kink. The general network model (:mod:`jaxq.sim.models.network`) runs
the same chain; this statement has no policy or per-activity bookkeeping and runs about twice as fast, so
the M/M/c checks and benchmarks use it.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxq.sim.markov import MarkovModel, as_markov, difference_controls


class Params(NamedTuple):
    """Traced parameters of the M/M/c queue.

    Attributes:
        lam: The arrival rate.
        mu: The service rate per server.
        c: int32, the number of servers.
    """

    lam: jnp.ndarray  # arrival rate
    mu: jnp.ndarray  # service rate per server
    c: jnp.ndarray  # int32 servers


def _counts(x, p: Params):
    return 1, jnp.minimum(x, p.c)


def _transition(x, fired, p: Params):
    arrive, done = fired
    rec = {"arrivals": arrive.astype(jnp.int32), "waited": (arrive & (x >= p.c)).astype(jnp.int32)}
    return x + arrive.astype(jnp.int32) - done.astype(jnp.int32), rec


def _observe(x, p: Params):
    return {"x": x, "q": jnp.maximum(x - p.c, 0)}


def _basis(x, p: Params):
    a = p.lam / p.mu
    root = jnp.sqrt(a)
    xh = (x.astype(jnp.float64) - a) / root
    qh = jnp.maximum(x - p.c, 0).astype(jnp.float64) / root
    return xh, xh * xh, qh, qh * qh


MODEL = MarkovModel(
    name="mmc",
    init=lambda p: jnp.int32(0),
    counts=_counts,
    rates=lambda p: jnp.stack([p.lam, p.mu]),
    rate_bound=lambda p: float(np.asarray(p.lam) + np.asarray(p.c) * np.asarray(p.mu)),
    transition=_transition,
    observe=_observe,
    snapshot=lambda x, p: x.astype(jnp.float64)[None],
    records=True,
    one_hot=True,
)
MARKOV = as_markov(MODEL)
MARKOV_CV = as_markov(MODEL._replace(name="mmc-cv", controls=difference_controls(_basis)))
