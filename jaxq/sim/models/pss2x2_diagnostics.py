"""The diagnostics observer of the 2x2 system (docs/diagnostics.md): what it reads of a post-decision state
(:class:`View`), what it integrates (:class:`Diagnostics`) and the per-replication averages it reports.

Both drivers build the :class:`View` (the event rule of :mod:`jaxq.sim.models.pss2x2`, and :func:`markov_view` of
the CTMC's states), and a user's observers of the 2x2 system read the same View; the parameters the diagnostics
read are the model's ``Params.hpc`` (the high-priority class) and ``Params.inv_sqrt_n``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import jax.numpy as jnp

from jaxq.mc.observer import Observer, Segment, viewed


def _sel(c, a, b):
    return jnp.where(c, a, b)

class View(NamedTuple):
    """What the diagnostics read of a post-decision state (int32 scalars; both drivers build it).

    Attributes:
        x0: The jobs of class 1 (queue + service).
        x1: The jobs of class 2.
        s0: The class served by server 1 (-1 idle).
        s1: The class served by server 2 (-1 idle).
        mode: The current mode (0-based).
    """

    x0: jnp.ndarray  # jobs of class 1 (queue + service)
    x1: jnp.ndarray
    s0: jnp.ndarray  # class served by server 1 (-1 idle)
    s1: jnp.ndarray
    mode: jnp.ndarray  # current mode (0-based)


class Diagnostics(NamedTuple):
    """The diagnostics observer's state: integrals of the functional's weight w(t) (float64 scalars).

    One array each per replication, which XLA:CPU updates in a loop of its own: the fewer the cheaper. The
    normaliser, the integral of w itself, is the functional's mass that the driver passes to ``finish``.

    Attributes:
        idle: ``idle[2 k + i]``: over the time server k is idle while a class-i job waits (in queue, not in
            service).
        x_p: Of X_hat_p (the high-priority class, ``Params.hpc``).
        mode0: Over the time in mode 1 (0-based 0).
        switches: w at the mode switches.
    """

    idle: tuple
    x_p: jnp.ndarray
    mode0: jnp.ndarray
    switches: jnp.ndarray


def _diag_init(p) -> Diagnostics:
    z = jnp.zeros((), jnp.float64)
    return Diagnostics((z, z, z, z), z, z, z)


def _diag_update(o: Diagnostics, seg: Segment, p) -> Diagnostics:
    v, w = seg.held, seg.weight
    i32, f64 = jnp.int32, jnp.float64
    idle0, idle1 = v.s0 < 0, v.s1 < 0
    wait0 = (v.x0 - (v.s0 == 0).astype(i32) - (v.s1 == 0).astype(i32)) > 0  # a class-1 job in queue
    wait1 = (v.x1 - (v.s0 == 1).astype(i32) - (v.s1 == 1).astype(i32)) > 0
    on = lambda c: _sel(c, w, 0.0)  # noqa: E731
    x_p = _sel(p.hpc == 0, v.x0, v.x1).astype(f64) * p.inv_sqrt_n
    return Diagnostics(
        idle=(o.idle[0] + on(idle0 & wait0), o.idle[1] + on(idle0 & wait1), o.idle[2] + on(idle1 & wait0),
              o.idle[3] + on(idle1 & wait1)),
        x_p=o.x_p + w * x_p, mode0=o.mode0 + on(v.mode == 0),
        switches=o.switches + _sel(seg.after.mode != v.mode, seg.jump, 0.0))


def _diag_finish(o: Diagnostics, mass, p) -> dict:
    """Per replication: the weighted averages (the weights normalised to total 1) and the switch rate."""
    t = mass
    m0 = o.mode0 / t
    return {"idle_waiting": jnp.stack(o.idle).reshape(2, 2) / t, "X_hat_p": o.x_p / t,
            "mode_fraction": jnp.stack([m0, 1.0 - m0]), "switch_rate": o.switches / t}


# The diagnostics of a 2x2 run (docs/diagnostics.md), under the functional's weight: for the discounted cost the
# discounted occupation measure, gamma exp(-gamma t) dt over [0, T] normalised to mass 1 (what J_n integrates).
DIAGNOSTICS = Observer(_diag_init, _diag_update, _diag_finish)


def markov_view(s, p) -> View:
    """The :class:`View` of a CTMC state (what an observer of the 2x2 system reads on the Markov drivers).

    Args:
        s (jaxq.sim.models.pss2x2.CtmcState): The CTMC's state.
        p (typing.Any): The model's parameters (unused).

    Returns:
        The view.
    """
    return View(s.x0, s.x1, s.s0, s.s1, s.mode)


@lru_cache(maxsize=64)
def markov_observer(observer: Observer) -> Observer:
    """An observer of :class:`View` segments on the CTMC's states (both Markov drivers).

    The CTMC's state has the fields of View; cached, so a driver compiles once per observer.

    Args:
        observer: The observer of :class:`View` segments.

    Returns:
        The observer of the CTMC's states.
    """
    return viewed(observer, markov_view)


# The diagnostics on the CTMC's states (both Markov drivers: uniformised and event).
MARKOV_DIAGNOSTICS = markov_observer(DIAGNOSTICS)
