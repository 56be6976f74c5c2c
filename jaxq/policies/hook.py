"""A policy of the 2x2 system as a pair of pure functions: :class:`Policy2x2` (the public policy hook).

A policy sees the system after every event, with the queue lengths already updated, and says which class each
idle server starts (or that it stays idle). Its memory is an explicit pytree that ``init`` builds and
``decide`` returns anew, as an optax transformation's state. The built-in policies of the switched-policies paper
(Definitions 2.7-2.10) are one such pair, :data:`BUILTIN`, whose memory is the current mode and whose
parameters are the policy as data (:class:`jaxq.policies.pss2x2.Policy`).

Indices are 0-based: class i in {0, 1}, server k in {0, 1}. The event that fired is encoded as an int32:

* ``ARRIVAL_1 = 0``, ``ARRIVAL_2 = 1``: an arrival of class 1 or 2 (``event = i``);
* ``COMPLETION_1 = 2``, ``COMPLETION_2 = 3``: a service completion at server 1 or 2 (``event = 2 + k``).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxq.errors import InputError
from jaxq.mc.observer import tree_layout
from jaxq.policies import pss2x2 as pol

ARRIVAL_1, ARRIVAL_2, COMPLETION_1, COMPLETION_2 = 0, 1, 2, 3
IDLE = pol.IDLE


class Policy2x2(NamedTuple):
    """A non-preemptive policy of the 2x2 system: ``init(params) -> memory`` and
    ``decide(queues, serving, memory, event, params) -> (assignment, memory)``.

    ``decide`` is called after every event (never at a self-loop of a uniformised chain), on one replication
    (the engine ``vmap``-s it), and must be traceable by JAX: no Python branching on its array arguments
    (use ``jnp.where``).

    Args of ``decide``:
      queues: (2,) int32, the jobs of each class waiting (not in service) after the event.
      serving: (2,) int32, the class each server is serving after the event, ``-1`` when idle (a server whose
        service just completed is idle).
      memory: the pytree that ``init`` built or the last ``decide`` returned (fixed structure and shapes; the
        engine keeps the dtypes ``init`` gave).
      event: int32, the event that fired: ``0``/``1`` an arrival of class 1/2, ``2``/``3`` a completion at
        server 1/2 (module constants ``ARRIVAL_1`` ... ``COMPLETION_2``).
      params: the pytree given as :attr:`params` (traced: changing its values does not recompile).

    ``decide`` returns ``(assignment, memory)``: ``assignment`` (2,) int, for each idle server the class it
    starts (a waiting job of that class leaves the queue) or ``-1`` to stay idle; entries of busy servers are
    ignored (service is never interrupted). Assigning a class with no waiting job (two idle servers taking the
    same class need two waiting jobs) or a class a server cannot serve (anything but -1, 0, 1) is a violation:
    the engine counts it (the assignment is then not carried out) and the run fails with an ``InputError``
    naming ``policy``. The event driver draws at most two variates an event, so there starting both servers at
    an arrival (possible only after idling while jobs waited) is a violation too. Before any run the functions are
    traced once (:func:`check`): an assignment that is not (2,) integers, a ``decide`` that returns no pair, or
    memory of another structure, shape or kind of dtype than ``init``'s is an ``InputError`` naming ``policy``.

    The compiled engines are cached by ``(init, decide, name)``: define the functions once and change ``params``
    (``policy._replace(params=...)``) to run the same policy with other parameters without recompiling.

    Attributes:
      init: ``init(params) -> memory``: the memory of the empty system at time 0.
      decide: ``decide(queues, serving, memory, event, params) -> (assignment, memory)``.
      params: the policy's parameters (any pytree of arrays; default none).
      name: the name results report in ``info["policy"]``.

    Example:
      Longest queue first (an idle server takes a job of the class with more jobs waiting)::

          def lqf(queues, serving, memory, event, params):
              first = jnp.where(queues[1] > queues[0], 1, 0)
              out = []
              left = queues
              for k in range(2):
                  c = jnp.where(left[first] > 0, first, jnp.where(left[1 - first] > 0, 1 - first, -1))
                  c = jnp.where(serving[k] == -1, c, -1)
                  left = left - (jnp.arange(2) == c)
                  out.append(c)
              return jnp.stack(out), memory

          LQF = jaxq.Policy2x2(init=lambda params: (), decide=lqf, name="LQF")
          jaxq.simulate(system, n=100, reps=1000, policy=LQF)
    """

    init: Callable[[Any], Any]
    decide: Callable[..., tuple]
    params: Any = None
    name: str = "Policy2x2"

    def static(self) -> "Policy2x2":
        """The policy without its parameters: hashable, the key of the compiled engines."""
        return self._replace(params=None)


def _traced(policy: Policy2x2, what: str, fn, *args):
    """``jax.eval_shape(fn, *args)``, or one InputError naming ``policy`` with what failed (no JAX traceback)."""
    try:
        return jax.eval_shape(fn, *args)
    except Exception as e:  # noqa: BLE001  (a user's function: any error is the policy's, reported by its name)
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise InputError("policy", f"the Policy2x2 {policy.name!r}: {what} fails: {type(e).__name__}: "
                                   f"{first}") from None


def _kind(dtype: str) -> str:
    """The kind of a dtype (``i`` for any integer, ``f`` for any float, ``b``...; another dtype its own name)."""
    try:
        return jnp.dtype(dtype).kind.replace("u", "i")
    except TypeError:
        return dtype


def _kinds(layout) -> tuple:
    """A :func:`~jaxq.mc.observer.tree_layout` with each dtype's kind for its dtype."""
    return layout[0], tuple((shape, _kind(dtype)) for shape, dtype in layout[1])


def check(policy: Policy2x2, params) -> None:
    """A user's policy checked on abstract arguments before any run (one InputError naming ``policy`` and what was
    expected): ``init`` runs; ``decide`` returns a pair ``(assignment, memory)``, ``assignment`` of shape (2,) and an
    integer dtype (a tuple of two integers too) and ``memory`` of the structure and shapes of ``init``'s, with
    dtypes of the same kinds (the engines cast it to ``init``'s dtypes, so an int32 for an int64 is fine, a float
    for an int is not)."""
    name = f"the Policy2x2 {policy.name!r}"
    memory = _traced(policy, "init(params)", lambda p: jax.tree_util.tree_map(jnp.asarray, policy.init(p)), params)
    pair, code = jax.ShapeDtypeStruct((2,), jnp.int32), jax.ShapeDtypeStruct((), jnp.int32)
    call = "decide(queues, serving, memory, event, params)"
    out = _traced(policy, call, policy.decide, pair, pair, memory, code, params)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        got = f"an array of shape {out.shape}" if hasattr(out, "shape") else jax.tree_util.tree_structure(out)
        raise InputError("policy", f"{name}: {call} must return a pair (assignment, memory), got {got}")
    a = _traced(policy, call, jnp.asarray, out[0])
    if a.shape != (2,) or not jnp.issubdtype(a.dtype, jnp.integer):
        raise InputError("policy", f"{name}: {call} must return an assignment of shape (2,) and an integer dtype "
                                   f"(for each idle server the class it starts, -1 to stay idle), got shape "
                                   f"{a.shape} {a.dtype}")
    if _kinds(tree_layout(out[1])) != _kinds(tree_layout(memory)):
        raise InputError("policy", f"{name}: {call} must return memory of the structure, shapes and dtype kinds init("
                                   f"params) gave ({tree_layout(memory)[1]}), got {tree_layout(out[1])[1]} "
                                   f"(structure {jax.tree_util.tree_structure(out[1])})")


def event_code(is_arrival, arrival_class, completed_server):
    """The event as ``decide`` sees it: ``arrival_class`` for an arrival, else ``2 + completed_server``."""
    return jnp.where(is_arrival, arrival_class, 2 + completed_server).astype(jnp.int32)


def waiting(x, serving):
    """Jobs waiting per class, ``x_i - #{k: serving_k = i}``, from the jobs in the system ``x`` (2,)."""
    return pol.queues(x, serving)


class BuiltinParams(NamedTuple):
    """The parameters of :data:`BUILTIN`: the policy as data, and this replication's level and threshold."""

    policy: pol.Policy
    level: Any  # switching level, unscaled workload units (float64)
    theta: Any  # threshold Theta_n (int32)


def _builtin_init(params: BuiltinParams):
    """The current mode of the empty system (the memory of the built-in policies)."""
    return pol.initial_mode(params.policy, params.level)


def builtin_decide_jobs(x, serving, mode, event, params: BuiltinParams):
    """Definitions 2.7-2.10 from the jobs in the system ``x`` (queue + service; the rest as ``decide``): resample
    the current mode at its sampling times, then dispatch the idle servers. Returns ``(assignment, mode)``.

    The built-in engines call this form (they hold ``x``; the round trip through the queues costs them speed).
    """
    mode, new, _, _ = pol.decide(params.policy, x, serving, mode, event < COMPLETION_1, event - COMPLETION_1,
                                 params.level, params.theta)
    return new, mode


def _builtin_decide(queues, serving, mode, event, params: BuiltinParams):
    """:func:`builtin_decide_jobs` from the queues: ``x = queues + jobs in service``."""
    in_service = jnp.stack([(serving[0] == c).astype(queues.dtype) + (serving[1] == c).astype(queues.dtype)
                            for c in range(2)])
    return builtin_decide_jobs(queues + in_service, serving, mode, event, params)


# The policies P, T2, PP, T2T2, T1T2, T2T1 (Theorem 2.11) and the fixed-mode baselines RULE@m: one decision rule
# whose parameters (BuiltinParams: rules per mode, sampling times, roles, level, threshold) say which policy it is.
BUILTIN = Policy2x2(init=_builtin_init, decide=_builtin_decide, name="builtin")


def builtin(policy: pol.Policy, level=None, theta=None) -> Policy2x2:
    """A built-in policy (:func:`jaxq.policies.pss2x2.make`) as a :class:`Policy2x2` with its parameters."""
    return BUILTIN._replace(params=BuiltinParams(policy, policy.level if level is None else level,
                                                 policy.theta if theta is None else theta))


def checked(assignment, queues, serving):
    """The assignment carried out and whether it was valid.

    Returns ``(serving, started, bad)``: the new assignment (busy servers untouched; an invalid request is not
    carried out), a bool (2,) marking servers that start a job, and a bool: some idle server asked for a class
    it cannot serve (not -1, 0, 1) or for more jobs of a class than wait.
    """
    a = jnp.asarray(assignment).astype(jnp.int32)
    idle = serving == IDLE
    ask = idle & (a != IDLE)
    bad_class = jnp.any(ask & ((a < 0) | (a > 1)))
    want = jnp.stack([jnp.sum((ask & (a == c)).astype(queues.dtype)) for c in range(2)])
    short = jnp.any(want > queues)
    bad = bad_class | short
    start = ask & ~bad
    return jnp.where(start, a, serving).astype(serving.dtype), start, bad
