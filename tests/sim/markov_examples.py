"""Two user Markov models, written with the public API only, and their exact values on the finite chain.

* :data:`MMCM`: M/M/c+M with a waiting room of K (plain rates; index transition);
* :data:`DEPARTURES`, :data:`FULL`, :data:`EVENTS`: observers of :data:`MMCM`'s path (the discounted number of
  departures, the discounted time and share of time with the waiting room full, the event types that fired and
  their compensators);
* :data:`TANDEM`: two stations in tandem with finite buffers, blocking before service and arrivals lost at a
  full first station (structured rates; records of lost arrivals).

Exact values: the discounted cost ``v = (gamma I - Q)^{-1} f`` at the start state and the stationary mean
``pi f`` with ``pi Q = 0``, by dense linear solves on the enumerated states.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

import jaxq

MMCM_PARAMS = {"lam": 3.0, "mu": 1.0, "theta": 0.5, "c": 3, "K": 5}
TANDEM_PARAMS = {"lam": 1.0, "mu1": 1.3, "mu2": 1.1, "B1": 3, "B2": 2}


def _mmcm_rates(x, p):
    return jnp.stack([jnp.where(x < p["c"] + p["K"], p["lam"], 0.0),
                      p["mu"] * jnp.minimum(x, p["c"]),
                      p["theta"] * jnp.maximum(x - p["c"], 0)])


MMCM = jaxq.MarkovModel(
    init=lambda p: jnp.int32(0),
    rates=_mmcm_rates,
    transition=lambda x, e, p: x + jnp.where(e == 0, 1, -1),
    observe=lambda x, p: {"x": x.astype(jnp.float64), "q": jnp.maximum(x - p["c"], 0).astype(jnp.float64)},
    rate_bound=lambda p: p["lam"] + p["c"] * p["mu"] + p["K"] * p["theta"],
    name="mmcm",
)


def _departures_update(acc, seg, p):
    return acc + jnp.where(seg.after < seg.held, seg.jump, 0.0)


# the discounted number of departures, E sum_i exp(-gamma T_i) 1{departure at T_i}: a statistic of the jumps
DEPARTURES = jaxq.Observer(init=lambda p: jnp.float64(0.0), update=_departures_update,
                           finish=lambda acc, mass, p: acc)


def _full_update(acc, seg, p):
    return acc + jnp.where(seg.held == p["c"] + p["K"], seg.weight, 0.0)


# the discounted time with the waiting room full, and its share of the discounted occupation measure
FULL = jaxq.Observer(init=lambda p: jnp.float64(0.0), update=_full_update,
                     finish=lambda acc, mass, p: {"time": acc, "share": acc / mass})


def _events_update(acc, seg, p):
    served, abandoned = (jnp.where(seg.fired[e], seg.jump, 0.0) for e in (1, 2))
    comp = seg.compensator[1] + seg.compensator[2]
    return {"served": acc["served"] + served, "abandoned": acc["abandoned"] + abandoned,
            "compensator": acc["compensator"] + comp, "martingale": acc["martingale"] + served + abandoned - comp}


# the event types that fired and their compensators: the discounted services and abandonments, the compensator of
# their sum (E int exp(-gamma t) (departure rate) dt) and the martingale (mean zero)
EVENTS = jaxq.Observer(init=lambda p: {k: jnp.float64(0.0) for k in ("served", "abandoned", "compensator",
                                                                      "martingale")},
                       update=_events_update, finish=lambda acc, mass, p: acc)


def _tandem_transition(s, e, p):
    x1, x2 = s
    arrive, move, leave = e == 0, e == 1, e == 2
    lost = arrive & (x1 >= p["B1"])
    x1 = x1 + (arrive & ~lost).astype(jnp.int32) - move.astype(jnp.int32)
    x2 = x2 + move.astype(jnp.int32) - leave.astype(jnp.int32)
    return (x1, x2), {"lost": lost.astype(jnp.float64)}


TANDEM = jaxq.MarkovModel(
    init=lambda p: (jnp.int32(0), jnp.int32(0)),
    counts=lambda s, p: (1, ((s[0] > 0) & (s[1] < p["B2"])).astype(jnp.int32), (s[1] > 0).astype(jnp.int32)),
    rates=lambda p: jnp.stack([p["lam"], p["mu1"], p["mu2"]]),
    transition=_tandem_transition,
    observe=lambda s, p: {"x1": s[0].astype(jnp.float64), "x2": s[1].astype(jnp.float64)},
    rate_bound=lambda p: p["lam"] + p["mu1"] + p["mu2"],
    records=True,
    name="tandem",
)


def mmcm_chain(p):
    """States 0..c+K, generator Q, observed {x, q}, start index 0."""
    n = p["c"] + p["K"] + 1
    Q = np.zeros((n, n))
    for x in range(n):
        if x + 1 < n:
            Q[x, x + 1] = p["lam"]
        if x > 0:
            Q[x, x - 1] = p["mu"] * min(x, p["c"]) + p["theta"] * max(x - p["c"], 0)
    np.fill_diagonal(Q, -Q.sum(axis=1))
    xs = np.arange(n, dtype=float)
    return Q, {"x": xs, "q": np.maximum(xs - p["c"], 0)}, 0


def tandem_chain(p):
    """States (x1, x2), generator Q, observed {x1, x2}, start index of (0, 0), loss rate per state."""
    states = [(a, b) for a in range(p["B1"] + 1) for b in range(p["B2"] + 1)]
    at = {s: i for i, s in enumerate(states)}
    Q = np.zeros((len(states), len(states)))
    for (a, b), i in at.items():
        if a < p["B1"]:
            Q[i, at[(a + 1, b)]] += p["lam"]
        if a > 0 and b < p["B2"]:
            Q[i, at[(a - 1, b + 1)]] += p["mu1"]
        if b > 0:
            Q[i, at[(a, b - 1)]] += p["mu2"]
    np.fill_diagonal(Q, -Q.sum(axis=1))
    f = {"x1": np.array([s[0] for s in states], float), "x2": np.array([s[1] for s in states], float)}
    lost = np.array([p["lam"] if s[0] == p["B1"] else 0.0 for s in states])
    return Q, f, at[(0, 0)], lost


def discounted(Q, f, start, gamma):
    """``E_start int_0^inf exp(-gamma t) f(X_t) dt``: ``(gamma I - Q) v = f``."""
    return float(np.linalg.solve(gamma * np.eye(len(Q)) - Q, f)[start])


def stationary(Q):
    """``pi`` with ``pi Q = 0``, ``sum pi = 1``."""
    A = np.vstack([Q.T, np.ones(len(Q))])
    b = np.zeros(len(Q) + 1)
    b[-1] = 1.0
    return np.linalg.lstsq(A, b, rcond=None)[0]


def mmcm_with_controls():
    """:data:`MMCM` with the difference controls of x and x^2 (a function of no arguments, as `jaxq run` takes)."""
    return MMCM._replace(controls=jaxq.difference_controls(lambda x, p: (x * 1.0, x * x * 1.0)))
