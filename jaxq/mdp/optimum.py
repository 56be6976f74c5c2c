"""J*_n beside the limit and beside Theorem 2.11's policy: what :func:`jaxq.optimal` returns.

:func:`optimal` solves the n-th 2x2 system's control problem (:mod:`jaxq.mdp.pss2x2`), reads its decisions off as a
:class:`jaxq.Policy2x2` (a table lookup on the jobs in the system and the servers' classes), and puts beside J*_n
the lower bound V0 of the limit and the exact J_n of Theorem 2.11's policy (:func:`jaxq.sim.exact_ctmc.policy_cost`),
with their ratios.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxq.diffusion.workload import analyze
from jaxq.errors import InputError
from jaxq.mdp import pss2x2 as dp
from jaxq.model.pss2x2 import PSS2x2
from jaxq.model.validate import check_bool, check_float, check_int
from jaxq.policies.hook import Policy2x2

LOWER_BOUND_NOTE = ("phases observed: J_star is the optimum of a controller that sees the phases of the phase-type "
                    "primitives (to within truncation_change), a lower bound on J_n of "
                    "every non-anticipating policy; J_table is the exact cost of the phase-blind table policy "
                    "(result.policy)")


def _decide(queues, serving, memory, event, params):
    """Look the decision up: ``params[x_1, x_2, s_1 + 1, s_2 + 1]`` with x the jobs in the system (capped at
    the table's last row: beyond the truncation the decision at the cap)."""
    in_service = jnp.stack([jnp.sum(serving == c) for c in range(2)]).astype(queues.dtype)
    x = jnp.minimum(queues + in_service, jnp.array(params.shape[:2]) - 1)
    return params[x[0], x[1], serving[0] + 1, serving[1] + 1].astype(jnp.int32), memory


TABLE = Policy2x2(init=lambda params: (), decide=_decide, name="optimal")


def table_policy(table: np.ndarray) -> Policy2x2:
    """A :class:`jaxq.Policy2x2` that takes the decisions of ``table[x_1, x_2, s_1 + 1, s_2 + 1, k]`` (the class
    idle server k starts, -1 to stay idle).

    Args:
        table: The decision table.

    Returns:
        The policy, the table (int32) as its parameters.
    """
    return TABLE._replace(params=jnp.asarray(np.asarray(table, dtype=np.int32)))


@dataclass(frozen=True, eq=False)
class Optimal:
    """The optimum of the n-th 2x2 system.

    Attributes:
        n: The index of the system.
        J_star: The optimal discounted cost from the empty system (with phase-type primitives: of a controller that
            sees the phases, a lower bound for every non-anticipating policy), solved with the queues truncated at
            ``queue_cap`` and arrivals to a full queue charged as jobs never served: an upper bound on J*_n, the
            cost of a policy of the n-th system.
        J_star_lower: With ``bracket``: the optimum with arrivals to a full queue charged the floor of their cost
            in the full system (:func:`jaxq.mdp.pss2x2.charges`), a lower bound on J*_n; else None.
        truncation_change: The relative change of ``J_star`` when the cap of class 1 is doubled plus the one when
            the cap of class 2 is; with ``bracket``, ``(J_star - J_star_lower) / J_star`` (J*_n lies in the bracket,
            and no larger cap moves either truncation's optimum by more).
        queue_cap: The caps ``(Q_1, Q_2)`` of the two queues (equal with ``bracket``).
        states: States of that truncated chain.
        iterations: Policy improvements (all caps).
        wall_s: Seconds.
        V0: The lower bound of the limit (Theorem 2.11).
        exact_cost: The exact J_n of Theorem 2.11's policy (None when not asked for), with ``policy_name``,
            ``theta`` and ``switch_at`` it used.
        policy_name: The name of Theorem 2.11's policy (None when not asked for).
        theta: Its threshold (None when not asked for or without one).
        switch_at: Its switching level (None when not asked for or without one).
        J_table: The exact cost of :attr:`policy` on the same chain (J_star itself with exponential primitives).
        policy: The optimal decisions as a :class:`jaxq.Policy2x2` (``jaxq.simulate(system, n, policy=...)``).
        table: Its table, ``table[x_1, x_2, s_1 + 1, s_2 + 1, k]``.
        phases_observed: Whether the primitives have phases (then J_star is a lower bound, see ``note``).
        serving: ``serving[i][k]``, the share of the discounted time ``gamma exp(-gamma t) dt`` that server k spends
            on class i under the optimal policy (Theorem 2.11's policies never use the active mode's non-basic
            activity (i1, k1)).
        idle_waiting: ``[k]``, the share server k idles while a job waits.
        solution: The solution of the truncated chain (:class:`jaxq.mdp.pss2x2.CapSolution`).
    """

    n: float
    J_star: float
    J_star_lower: float | None
    truncation_change: float
    queue_cap: tuple[int, int]
    states: int
    iterations: int
    wall_s: float
    V0: float
    exact_cost: float | None
    policy_name: str | None
    theta: int | None
    switch_at: float | None
    J_table: float
    policy: Policy2x2
    table: np.ndarray
    phases_observed: bool
    serving: list
    idle_waiting: list
    solution: Any = None

    @property
    def note(self) -> str | None:
        return LOWER_BOUND_NOTE if self.phases_observed else None

    def to_dict(self) -> dict:
        """The command line's JSON object."""
        ratio = (lambda a, b: None if a is None or b is None or b == 0 else a / b)  # noqa: E731
        return {"n": self.n, "J_star": self.J_star, "J_star_lower": self.J_star_lower,
                "truncation_change": self.truncation_change,
                "queue_cap": list(self.queue_cap), "states": self.states, "iterations": self.iterations,
                "wall_s": self.wall_s, "V0": self.V0, "exact_cost": self.exact_cost, "policy": self.policy_name,
                "theta": self.theta, "switch_at": self.switch_at, "J_table": self.J_table,
                "J_star_over_V0": ratio(self.J_star, self.V0), "exact_cost_over_V0": ratio(self.exact_cost, self.V0),
                "J_star_over_exact_cost": ratio(self.J_star, self.exact_cost),
                "serving": self.serving, "idle_waiting": self.idle_waiting,
                "phases_observed": self.phases_observed, "note": self.note}


def optimal(system: PSS2x2, n: float, queue_cap: int | None = None, *, exact_policy: bool = True,
            rtol: float = dp.TRUNCATION_RTOL, max_states: int = dp.MAX_STATES,
            max_gib: float = dp.MAX_BYTES / 2**30, bracket: bool = False) -> Optimal:
    """J*_n, the optimal policy as a table, and Theorem 2.11's exact J_n and V0 beside them.

    Args:
        system: A 2x2 system with exponential or phase-type primitives (Erlang, hyperexponential, gamma with an
            integer shape); other laws are refused naming the primitive.
        n: The index of the system.
        queue_cap: The first cap of both queues (each class's doubling is then tested once); default:
            ``max(6, 2 sqrt(n))``, each class's cap doubled until doubling it changes J_star by at most ``rtol / 2``
            (:func:`jaxq.mdp.pss2x2.optimal_cost`).
        exact_policy: Also solve Theorem 2.11's policy exactly (:func:`jaxq.sim.exact_ctmc.policy_cost`).
        rtol: The truncation's tolerance.
        max_states: A larger chain is refused before it is built.
        max_gib: A chain of more GiB is refused before it is built.
        bracket: Bracket J*_n between the floor and the never-served truncations at one cap of both queues
            (:func:`jaxq.mdp.pss2x2.bracket_cost`, ``J_star_lower``): proven, and closes at small n.

    Returns:
        The optimum.

    Raises:
        InputError: Naming ``n``, ``queue_cap``, ``rtol``, ``max_states`` or ``max_gib`` when out of range; as
            :func:`jaxq.mdp.pss2x2.optimal_cost` (a primitive that is not phase-type, a chain too large); as
            :func:`jaxq.sim.exact_ctmc.policy_cost` for Theorem 2.11's policy.
    """
    n = check_float(n, "n", gt=0.0)
    if queue_cap is not None:
        queue_cap = check_int(queue_cap, "queue_cap", lo=2)
    rtol = check_float(rtol, "rtol", gt=0.0, lt=1.0)
    max_states = check_int(max_states, "max_states", lo=1)
    max_gib = check_float(max_gib, "max_gib", gt=0.0)
    bracket = check_bool(bracket, "bracket")
    nth = system.at(n)  # a rate that is not positive at this n: refused before anything is solved
    opt = dp.optimal_cost(nth, n, queue_cap, rtol=rtol, max_states=max_states, max_bytes=max_gib * 2**30,
                          bracket=bracket)
    sol = opt.solution
    ch = sol.chain
    acts = dp.actions(ch.lay)
    trans = dp.transitions(ch)
    table = dp.observable_table(ch, acts, trans, sol.value, sol.policy)
    j_table = dp.table_cost(ch, table) if opt.phases_observed else opt.J_star
    shares = dp.activity_shares(ch, acts, trans, sol.policy)
    exact = name = theta = switch_at = None
    if exact_policy:
        from jaxq.sim.exact_ctmc import policy_cost

        try:
            pc = policy_cost(nth, n, rtol=min(rtol, 1e-5), max_states=max_states)
        except InputError as e:
            raise InputError(e.key, f"{e.reason} (Theorem 2.11's policy beside the optimum; exact_policy=False "
                                    f"skips it)") from None
        exact, name, theta, switch_at = pc["J"], pc["policy"], pc["theta"], pc["switch_at"]
    return Optimal(n=n, J_star=opt.J_star, J_star_lower=opt.J_lower, truncation_change=opt.truncation_change, queue_cap=opt.cap,
                   states=opt.states, iterations=opt.iterations, wall_s=opt.wall_s, V0=float(analyze(system).V0),
                   exact_cost=exact, policy_name=name, theta=theta, switch_at=switch_at, J_table=j_table,
                   policy=table_policy(table), table=table, phases_observed=opt.phases_observed,
                   serving=shares["serving"], idle_waiting=shares["idle_waiting"], solution=sol)


