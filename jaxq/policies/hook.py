"""A policy of the 2x2 system as a pair of pure functions: :class:`Policy2x2` (the public policy hook).

A policy sees the system after every event, with the queue lengths already updated, and says which class each
idle server starts (or that it stays idle). Its memory is an explicit pytree that ``init`` builds and
``decide`` returns anew, as an optax transformation's state. The built-in policies of the switched-policies paper
(Definitions 2.7-2.10) are one such value, :data:`BUILTIN`, whose memory is the current mode and whose
parameters are the policy as data (:class:`jaxq.policies.pss2x2.Policy`): the engines run every policy through the
one path of :func:`decision`, and what the built-ins need (a decision on the jobs in the system, no checking,
a recorded mode, a perturbation of their parameters, debug invariants) are fields of the public type.

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

    ``decide`` (after ``update``, where the policy has one) applies after every event (a self-loop of a
    uniformised chain is not an event: what the functions return there is discarded), on one replication
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
      jobs: ``decide`` gets the jobs of each class in the system (waiting + in service) for ``queues`` (default
        False: the jobs waiting). The built-ins decide on the jobs in the system (the engines hold them).
      checked: the engine checks every assignment (default True, as above). False: the assignment is carried out
        as given (an idle server starts the class asked for, -1 stays idle) and nothing is counted: for a policy
        whose assignments are valid by construction (the built-ins), at the speed of an unchecked run.
      mode: ``mode(memory) -> int32`` in {0, 1}: the mode results record (``switches``, the diagnostics' mode
        fields); default None, always mode 0. The built-ins' is their memory, the current mode.
      memory_is_mode: the memory is the mode itself, an int32 scalar 0 or 1 (``mode`` is then ignored): the engines
        keep it where they record the mode, with no memory of its own in their state (faster). The built-ins' is.
      perturb: ``perturb(params, eps) -> params``: the parameters of a replication smoothed by its own Gaussian
        ``eps`` (2,) float64 (drawn from its key, beyond every event's draw; output ``samples["eps"]``; the event
        driver). Default None: not smoothed. The built-ins' moves the switching level and the threshold
        (``levels.perturb``).
      invariants: names of the counters of ``violations`` (default none).
      violations: ``violations(x, before, serving, started, memory, event, params)`` -> one bool per name of
        ``invariants``, on the post-decision state (``x`` the jobs in the system, ``before`` the assignment before
        the decision, ``serving`` after, ``started`` (2,) bool, ``memory`` the new memory): counted per
        replication by the debug engines (``debug=True``, ``info["violations"]``). The built-ins' are the
        Definition 2.7 invariants (:data:`VIOLATIONS`).
      update: ``update(queues, serving, memory, event, params) -> memory``, the memory after the event, computed
        before any server is assigned; ``decide`` then gets this memory (and returns the memory to keep, usually
        the one it got). Default None: ``decide`` does both. The result is the same; what differs is speed where
        the assignment depends on a memory the event changes (a mode resampled at events): the engines compute
        that memory once and keep it where they record it, rather than once more inside every server's
        assignment. The built-ins' resamples the current mode (Definition 2.10); their ``decide`` dispatches in it.

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
    jobs: bool = False
    checked: bool = True
    mode: Callable[[Any], Any] | None = None
    memory_is_mode: bool = False
    perturb: Callable[[Any, Any], Any] | None = None
    invariants: tuple = ()
    violations: Callable[..., Any] | None = None
    update: Callable[..., Any] | None = None

    def static(self) -> "Policy2x2":
        """The policy without its parameters: hashable, the key of the compiled engines."""
        return self._replace(params=None)


def mode_of(policy: Policy2x2, memory):
    """The mode (int32, 0 or 1) a policy's memory records.

    Args:
        policy: The policy.
        memory (typing.Any): Its memory.

    Returns:
        (jax.Array): The memory itself (:attr:`Policy2x2.memory_is_mode`), :attr:`Policy2x2.mode` of it, 0 without one.
    """
    if policy.memory_is_mode:
        return jnp.asarray(memory).astype(jnp.int32)
    return jnp.zeros((), jnp.int32) if policy.mode is None else jnp.asarray(policy.mode(memory)).astype(jnp.int32)


def run_params(policy: Policy2x2, params, eps):
    """The parameters a replication runs with.

    Args:
        policy: The policy.
        params (typing.Any): Its parameters.
        eps (jax.Array | None): The replication's (2,) Gaussian draw; None for a policy that is not perturbed.

    Returns:
        (typing.Any): ``policy.perturb(params, eps)``, or ``params`` where ``eps`` is None.
    """
    return params if eps is None else policy.perturb(params, eps)


def violations_of(policy: Policy2x2, x, before, serving, started, memory, event, params):
    """The policy's own invariants (:attr:`Policy2x2.violations`) after a decision.

    Args:
        policy: The policy.
        x (jax.Array): The jobs of each class in the system.
        before (jax.Array): The assignment before the decision.
        serving (jax.Array): The assignment after it.
        started (jax.Array): (2,) bool, the servers that start a job.
        memory (typing.Any): The new memory.
        event (jax.Array): The event code.
        params (typing.Any): The policy's parameters.

    Returns:
        (tuple): A tuple of bools, one per name of :attr:`Policy2x2.invariants` (empty without any).
    """
    if policy.violations is None:
        return ()
    return tuple(policy.violations(x, before, serving, started, memory, event, params))


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
    """A user's policy checked on abstract arguments before any run.

    ``init`` runs; ``decide`` returns a pair ``(assignment, memory)``, ``assignment`` of shape (2,) and an integer
    dtype (a tuple of two integers too) and ``memory`` of the structure and shapes of ``init``'s, with dtypes of the
    same kinds (the engines cast it to ``init``'s dtypes, so an int32 for an int64 is fine, a float for an int is not).

    Args:
        policy: The policy.
        params (typing.Any): Its parameters.

    Raises:
        InputError: Naming ``policy`` and what was expected: one of the above fails.
    """
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
    if policy.memory_is_mode and not (hasattr(memory, "shape") and memory.shape == ()
                                      and jnp.issubdtype(memory.dtype, jnp.integer)):
        raise InputError("policy", f"{name}: memory_is_mode needs a memory that is one integer (the mode, 0 or 1), "
                                   f"got {tree_layout(memory)[1]}")
    _same_memory(name, call, out[1], memory)
    if policy.update is not None:
        call = "update(queues, serving, memory, event, params)"
        _same_memory(name, call, _traced(policy, call, policy.update, pair, pair, memory, code, params), memory)


def _same_memory(name: str, call: str, got, memory) -> None:
    """An InputError naming ``policy`` unless ``got`` has the structure, shapes and dtype kinds of ``memory``."""
    if _kinds(tree_layout(got)) != _kinds(tree_layout(memory)):
        raise InputError("policy", f"{name}: {call} must return memory of the structure, shapes and dtype kinds init("
                                   f"params) gave ({tree_layout(memory)[1]}), got {tree_layout(got)[1]} "
                                   f"(structure {jax.tree_util.tree_structure(got)})")


def event_code(is_arrival, arrival_class, completed_server):
    """The event as ``decide`` sees it.

    Args:
        is_arrival (jax.Array): Whether the event is an arrival.
        arrival_class (jax.Array): The arrival's class.
        completed_server (jax.Array): The server that completed (for a completion).

    Returns:
        (jax.Array): The event code (int32): ``arrival_class`` for an arrival, else ``2 + completed_server``.
    """
    return jnp.where(is_arrival, arrival_class, 2 + completed_server).astype(jnp.int32)


def waiting(x, serving):
    """Jobs waiting per class, ``x_i - #{k: serving_k = i}``.

    Args:
        x (jax.Array): The jobs of each class in the system, (2,).
        serving (jax.Array): The class each server serves, ``-1`` when idle, (2,).

    Returns:
        (jax.Array): The jobs waiting per class, (2,).
    """
    return pol.queues(x, serving)


class Perturb(NamedTuple):
    """Gaussian smoothing of a built-in policy's level and threshold for gradients (:func:`_builtin_perturb`).

    Attributes:
        sign: +1 or -1 (antithetic pair).
        tau_level: The scale of the perturbation of the level (unscaled workload units).
        theta_real: c n^a_bar, the unrounded threshold.
        tau_theta: The scale of the perturbation of the threshold.
    """

    sign: Any  # +1 or -1 (antithetic pair)
    tau_level: Any  # scale of the perturbation of the level (unscaled workload units)
    theta_real: Any  # c n^a_bar, the unrounded threshold
    tau_theta: Any  # scale of the perturbation of the threshold


class BuiltinParams(NamedTuple):
    """The parameters of :data:`BUILTIN`.

    Attributes:
        policy: The policy as data.
        level: This replication's switching level, unscaled workload units (float64).
        theta: This replication's threshold Theta_n (int32).
        perturb: The perturbation of a smoothed run (None: none).
    """

    policy: pol.Policy
    level: Any  # switching level, unscaled workload units (float64)
    theta: Any  # threshold Theta_n (int32)
    perturb: Perturb | None = None


def _builtin_init(params: BuiltinParams):
    """The current mode of the empty system (the memory of the built-in policies)."""
    return pol.initial_mode(params.policy, params.level)


def builtin_update(x, serving, mode, event, params: BuiltinParams):
    """Definition 2.10 from the jobs in the system ``x``: the current mode after the event (the ``update`` of
    :data:`BUILTIN`), resampled at the policy's sampling times.

    Args:
        x (jax.Array): The jobs of each class in the system, (2,).
        serving (jax.Array): The class each server serves, ``-1`` when idle (as ``decide``).
        mode (jax.Array): The current mode before the event (the memory).
        event (jax.Array): The event code (as ``decide``).
        params: The built-in's parameters.

    Returns:
        (jax.Array): The new current mode.
    """
    # event - COMPLETION_1 is negative for an arrival, never a server: the completed server alone says whether the
    # event is a completion of the single-activity server (no arrival flag to test)
    return pol.resample(params.policy, x, mode, False, event - COMPLETION_1, params.level)


def builtin_assign(x, serving, mode, event, params: BuiltinParams):
    """Definitions 2.7-2.9 from the jobs in the system ``x`` in the current mode (the ``decide`` of :data:`BUILTIN`,
    whose ``update`` has resampled the mode).

    Args:
        x (jax.Array): The jobs of each class in the system, (2,).
        serving (jax.Array): The class each server serves, ``-1`` when idle (as ``decide``).
        mode (jax.Array): The current mode, after the event (the memory).
        event (jax.Array): The event code (as ``decide``; not used).
        params: The built-in's parameters.

    Returns:
        (tuple[jax.Array, jax.Array]): ``(assignment, mode)``: the assignment of every server (busy ones included: the
            engine ignores their entries) and the mode, unchanged.
    """
    new, _, _ = pol.assign(params.policy, x, serving, mode, params.theta)
    return new, mode


def builtin_decide_jobs(x, serving, mode, event, params: BuiltinParams):
    """Definitions 2.7-2.10 from the jobs in the system ``x`` in one function: :func:`builtin_update`, then
    :func:`builtin_assign` (the built-ins as a policy without ``update``).

    Args:
        x (jax.Array): The jobs of each class in the system, (2,).
        serving (jax.Array): The class each server serves, ``-1`` when idle (as ``decide``).
        mode (jax.Array): The current mode before the event (the memory).
        event (jax.Array): The event code (as ``decide``).
        params: The built-in's parameters.

    Returns:
        (tuple[jax.Array, jax.Array]): ``(assignment, mode)``: the assignment and the new current mode.
    """
    return builtin_assign(x, serving, builtin_update(x, serving, mode, event, params), event, params)


def _builtin_perturb(params: BuiltinParams, eps):
    """A replication's level ``level + sign tau_level eps_1`` and threshold ``max(ceil(theta_real + sign tau_theta
    eps_2), 0)`` (:func:`jaxq.sim.models.pss2x2.perturbed_parameters`)."""
    q = params.perturb
    level = params.policy.level + q.sign * q.tau_level * eps[0]
    theta = jnp.maximum(jnp.ceil(q.theta_real + q.sign * q.tau_theta * eps[1]).astype(jnp.int32), 0)
    return params._replace(level=jnp.asarray(level, jnp.float64), theta=jnp.asarray(theta, jnp.int32))


# Debug counters of the built-ins (Definition 2.7 invariants), in this order.
VIOLATIONS = (
    "prioritising_server_idle_with_waiting_job",  # 2.7.2: the dual-activity server idles while a job waits
    "dedicated_server_idle_with_its_class_waiting",  # 2.7.1
    "dedicated_server_started_other_class",  # 2.7.1
    "priority_not_respected",  # 2.7.2 / 2.8: started the other class while the prioritised one waits
    "preempted_or_inconsistent",  # a busy server changed job without completing, or a queue < 0
    "more_than_two_draws",  # the two-slot sampler would have been insufficient
)


def _builtin_violations(x, before, after, started, mode, event, params: BuiltinParams):
    """Invariants of Definition 2.7 checked on the post-decision state (``x``: jobs in the system; the
    :attr:`Policy2x2.violations` of :data:`BUILTIN`, counted by the debug engines)."""
    p = params.policy
    k1, i1, i2 = pol.pick(p.k1, mode), pol.pick(p.i1, mode), pol.pick(p.i2, mode)
    prio = pol.priority_class(pol.pick(p.rule, mode), x, i1, i2, params.theta)
    is_arr = event < COMPLETION_1
    q = pol.queues(x, after)
    q_before = pol.queues(x, before)
    k2 = 1 - k1
    idle = after == pol.IDLE
    v0 = idle[k2] & (jnp.sum(q) > 0)
    v1 = idle[k1] & (q[i2] > 0)
    v2 = started[k1] & (after[k1] != i2)
    v3 = started[k2] & (after[k2] != prio) & (q_before[prio] > 0)
    busy_changed = (before != pol.IDLE) & (after != before)
    v4 = jnp.any(busy_changed) | jnp.any(q < 0)
    v5 = (is_arr.astype(jnp.int32) + jnp.sum(started)) > 2
    return (v0, v1, v2, v3, v4, v5)


def _identity_mode(memory):
    """The mode a built-in's memory records: the memory itself."""
    return memory


# The policies P, T2, PP, T2T2, T1T2, T2T1 (Theorem 2.11) and the fixed-mode baselines RULE@m: one decision rule
# whose parameters (BuiltinParams: rules per mode, sampling times, roles, level, threshold) say which policy it is.
# Its memory is the current mode (recorded: switches, the diagnostics' mode fields); it decides on the jobs in the
# system; its assignments are valid by construction (not checked); its invariants are the debug counters.
BUILTIN = Policy2x2(init=_builtin_init, decide=builtin_assign, name="builtin", jobs=True, checked=False,
                    mode=_identity_mode, memory_is_mode=True, invariants=VIOLATIONS, violations=_builtin_violations,
                    update=builtin_update)
BUILTIN_PERTURBED = BUILTIN._replace(perturb=_builtin_perturb)  # the same, its level and threshold smoothed


def builtin(policy: pol.Policy, level=None, theta=None, perturb: Perturb | None = None,
            name: str = "builtin") -> Policy2x2:
    """A built-in policy (:func:`jaxq.policies.pss2x2.make`) as a :class:`Policy2x2` with its parameters.

    Args:
        policy: The policy as data.
        level (jax.Array | float | None): The switching level (unscaled workload; None: the policy's).
        theta (jax.Array | int | None): The threshold Theta_n (None: the policy's).
        perturb: Its level and threshold smoothed per replication (None: not smoothed).
        name: The name results report.

    Returns:
        The policy.
    """
    base = BUILTIN if perturb is None else BUILTIN_PERTURBED
    return base._replace(name=name, params=BuiltinParams(policy, policy.level if level is None else level,
                                                         policy.theta if theta is None else theta, perturb))


def decision(policy: Policy2x2, x, before, memory, event, params, real=None):
    """One decision of any policy after an event, as the engines make it.

    ``update`` (where the policy has one) and ``decide`` see the jobs in the system ``x`` (``policy.jobs``) or the
    queues; a checked policy's assignment is :func:`checked`, a trusted one's carried out as given.

    Args:
        policy: The policy.
        x (jax.Array): The jobs of each class in the system, (2,).
        before (jax.Array): The assignment before the decision.
        memory (typing.Any): The policy's memory.
        event (jax.Array): The event code.
        params (typing.Any): The policy's parameters.
        real (jax.Array | None): False for a self-loop of a uniformised chain, which is not an event: the memory
            returned is then the one given (the caller keeps the assignment). None: an event.

    Returns:
        (tuple): ``(memory, serving, started, bad)`` (``bad`` None for a trusted policy).
    """
    q = waiting(x, before)
    seen = x if policy.jobs else q

    def kept(old, new):  # the new memory at an event, the old one at a self-loop
        return new if real is None else jax.tree_util.tree_map(
            lambda a, b: jnp.where(real, jnp.asarray(b, jnp.asarray(a).dtype), a), old, new)

    if policy.update is not None:  # the memory after the event (kept at a self-loop): the one decide assigns from
        memory = kept(memory, policy.update(seen, before, memory, event, params))
    assignment, new = policy.decide(seen, before, memory, event, params)
    # decide's memory, kept at a self-loop (after an update the kept memory is the old one there, and a decide that
    # returns its memory unchanged leaves one value: the mode the assignment was made in is the one recorded)
    memory = kept(memory, new)
    if policy.checked:
        serving, started, bad = checked(assignment, q, before)
        return memory, serving, started, bad
    # carried out as given on the idle servers (component by component: selects on scalars, as a two-element array
    # under vmap is a strided axis of the batch)
    a = jnp.asarray(assignment).astype(before.dtype)
    idle = [before[k] == IDLE for k in range(2)]
    started = [idle[k] & (a[k] != IDLE) for k in range(2)]
    serving = [jnp.where(idle[k], a[k], before[k]) for k in range(2)]
    return memory, jnp.stack(serving), jnp.stack(started), None


def checked(assignment, queues, serving):
    """The assignment carried out and whether it was valid.

    Args:
        assignment (jax.Array): For each server the class it asks for, ``-1`` to stay idle.
        queues (jax.Array): The jobs waiting per class.
        serving (jax.Array): The assignment before (``-1`` idle).

    Returns:
        (tuple[jax.Array, jax.Array, jax.Array]): ``(serving, started, bad)``: the new assignment (busy servers
            untouched; an invalid request is not carried out), a bool (2,) marking servers that start a job, and a bool:
            some idle server asked for a class it cannot serve (not -1, 0, 1) or for more jobs of a class than wait.
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
