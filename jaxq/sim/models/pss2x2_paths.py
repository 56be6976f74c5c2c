"""What the 2x2 event rule estimates along a path, as observers (:mod:`jaxq.mc.observer`) of its :class:`View`
segments: the discounted cost (2.6), the state at the horizon, the running supremum of X, W_hat at the record
times and the renewal control variates (the sums of the martingale increments the rule computes from the variates
it draws: ``Segment.martingale``, one tuple per variate slot).

The event rule (:func:`jaxq.sim.models.pss2x2.event_model`) folds them, beside the diagnostics and a user's observers,
into one observer state (:func:`path_observers`), each segment the state held over ``[t0, min(t1, T))`` with weight
``int exp(-gamma t) dt`` there, its jump (a real event up to T, else the state held) and the clock
``(t0, min(t1, T))``; the rule freezes them for a void event and once the replication is done. Parameters: the
rule's ``Params`` (``h_hat``, ``horizon``, ``t_rec``, ``policy.alpha_inv``, ``inv_sqrt_n``). Pairs of integers are
packed in one int64 (:func:`pack2`), as in the rule's state: XLA:CPU runs one loop over the replications per state
array.
"""

from __future__ import annotations

from functools import lru_cache

import jax.numpy as jnp

from jaxq.sim.models.pss2x2_diagnostics import View
from jaxq.mc.observer import Observer, Segment, combine, integral, snapshots, with_params


def pack2(a, b):
    """Two non-negative int32 (below 2^31) as one int64 ``a + 2^32 b``.

    Args:
        a (jax.Array): The low half.
        b (jax.Array): The high half.

    Returns:
        (jax.Array): The packed int64.
    """
    return a.astype(jnp.int64) | (b.astype(jnp.int64) << 32)


def unpack2(v):
    """The two int32 halves of :func:`pack2`.

    Args:
        v (jax.Array): The packed int64.

    Returns:
        (tuple[jax.Array, jax.Array]): ``(a, b)``.
    """
    return (v & 0xFFFFFFFF).astype(jnp.int32), (v >> 32).astype(jnp.int32)


def cost_rate(v: View, p):
    """``h . X_hat = h_hat . X`` (``h_hat = h / sqrt(n)``): the integrand of the cost (2.6).

    Args:
        v: The state held.
        p (jaxq.sim.models.pss2x2.Params): The rule's parameters (``h_hat``).

    Returns:
        (jax.Array): The cost rate, float64.
    """
    return p.h_hat[0] * v.x0.astype(jnp.float64) + p.h_hat[1] * v.x1.astype(jnp.float64)


COST = integral(cost_rate)  # J_T = int_0^T exp(-gamma t) h . X_hat(t) dt


def _at_horizon(acc, seg: Segment, p):
    """X(T), packed: the state after the segment whose clock ends at T (the path's last: t0 < T while the rule runs),
    the state held when the first event past T ended it, the one after an event exactly at T.

    Args:
      acc (jax.Array): X(T) so far (0 until the last segment).
      seg: a segment of the rule (``interval = (t0, min(t1, T))``).
      p (jaxq.sim.models.pss2x2.Params): the rule's ``Params`` (``horizon``).

    Returns:
      (jax.Array): The packed X(T) (:func:`pack2`) once the segment ends at T, else ``acc``.
    """
    return jnp.where(seg.interval[1] >= p.horizon, pack2(seg.after.x0, seg.after.x1), acc)


X_AT_HORIZON = Observer(lambda p: jnp.zeros((), jnp.int64), _at_horizon, lambda acc, mass, p: acc)


def _sup(acc, seg: Segment, p):
    """sup over [0, T] of each X_i, packed: every state the path holds up to T is X(0) = 0 or one a real jump
    (t1 <= T) reaches, so the states reached (``after``: the state held for a jump past T) are enough."""
    a0, a1 = unpack2(acc)
    return pack2(jnp.maximum(a0, seg.after.x0), jnp.maximum(a1, seg.after.x1))


SUPREMUM = Observer(lambda p: jnp.zeros((), jnp.int64), _sup, lambda acc, mass, p: acc)


def w_hat(v: View, p):
    """The scaled workload ``W_hat = (X_1 / alpha_1 + X_2 / alpha_2) / sqrt(n)``.

    Args:
        v: The state held.
        p (jaxq.sim.models.pss2x2.Params): The rule's parameters (``policy.alpha_inv``, ``inv_sqrt_n``).

    Returns:
        (jax.Array): W_hat, float64.
    """
    return (p.policy.alpha_inv[0] * v.x0.astype(jnp.float64)
            + p.policy.alpha_inv[1] * v.x1.astype(jnp.float64)) * p.inv_sqrt_n


def _empty(p) -> View:
    zero = jnp.zeros((), jnp.int32)
    return View(zero, zero, zero, zero, zero)


# W_hat of the state held at each record time (Params.t_rec)
W_AT_RECORD_TIMES = with_params(snapshots(w_hat, _empty), lambda p: (p, p.t_rec))

# the control variates, per clock and event (renewal: pss2x2._age_controls) or per event (CTMC): 6 per stream/event
# V'(W_hat) dW_hat; per variate (renewal) or per event (CTMC): 2 linear in
# X_hat_i, 3 quadratic (X_hat_1^2, X_hat_2^2, X_hat_1 X_hat_2); the renewal rule adds 6 of second order per stream,
# ((min(v, K) - 1)^2 - E[(min(v, K) - 1)^2]) dW_hat^2, capped at K = Params.cv_cap
CONTROLS = 11
SECOND_ORDER = 6
RENEWAL_CONTROL_COUNT = CONTROLS + SECOND_ORDER


def _controls(acc, seg: Segment, p):
    """Add the event's martingale increments: tuples of increments (the renewal rule: its clocks', then one per
    variate slot, in the order drawn)."""
    for inc in seg.martingale:
        acc = tuple(a + m for a, m in zip(acc, inc))
    return acc


# the renewal control variates: the sums of the increments the rule computes from the variates it draws
RENEWAL_CONTROLS = Observer(lambda p: tuple(jnp.zeros((), jnp.float64) for _ in range(RENEWAL_CONTROL_COUNT)),
                            _controls,
                            lambda acc, mass, p: acc)

PATH = {"cost": COST, "x_T": X_AT_HORIZON, "sup": SUPREMUM, "w_rec": W_AT_RECORD_TIMES}


@lru_cache(maxsize=64)
def _without_martingale(observer: Observer) -> Observer:
    """``observer`` shown segments without the rule's own control increments (``Segment.martingale`` None)."""
    return Observer(observer.init, lambda s, seg, p: observer.update(s, seg._replace(martingale=None), p),
                    observer.finish)


@lru_cache(maxsize=64)
def path_observers(observer: Observer | None = None, cv: bool = False) -> Observer:
    """The rule's own observers and ``observer`` as one (cached: the same observers give the same rule).

    Args:
        observer: The diagnostics, a user's, shown no ``Segment.martingale``; output ``user`` (None: none).
        cv: Also :data:`RENEWAL_CONTROLS`, output ``cv``.

    Returns:
        The combined observer: :data:`PATH`, and the above.
    """
    return combine({**PATH, **({"cv": RENEWAL_CONTROLS} if cv else {}),
                    **({"user": _without_martingale(observer)} if observer is not None else {})})
