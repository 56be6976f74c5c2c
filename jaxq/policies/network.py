"""Routing and scheduling policies of many-server parallel server networks (the uniform-stability and LAP-tightness
papers).

A network policy decides, after every event, which idle pool an arriving job joins and which queued
class a freed server takes. Four policies, as data plus pure functions:

* ``priority`` (non-preemptive static priority): an arriving class-i job takes an idle server in the
  lowest-index pool that can serve it; a freed pool-j server takes the queued job of the lowest-index class;
* ``lap`` (the LAP-tightness paper, leaf activity priority, non-preemptive): routing to the idle pool of highest
  activity priority, scheduling of the queued class of highest class priority, on the basic activity tree only;
* ``lqfs`` (longest queue, freest server, non-preemptive): routing to the pool with the largest idle
  fraction ``y_j / N_j``, scheduling of the longest queue ``q_i``; ties to the lowest index;
* ``swc`` (Definition 2.1 of the uniform-stability paper): the Markov policy ``z = z(x)`` that maximises the number of
  busy servers given the class counts x, by greedy leaf elimination on the tree in LAP activity order (optimal on a
  tree); jobs in service may move between pools (preemptive-resume, exact for exponential services).

The state a policy sees is a handful of scalars per replication (queue ``q[i]`` per class, busy servers
``z[(i, j)]`` per activity the policy uses), written out activity by activity at trace time (the network
is static, a :class:`Layout`), so that under ``vmap`` every operation runs along the replications.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError

POLICIES = ("priority", "lap", "lqfs", "swc")
NONE = 1e30  # score of a pool or class that cannot be chosen


class Layout(NamedTuple):
    """The static shape of the network under one policy (hashable: part of the compiled program).

    Attributes:
        num_i: The number of classes I.
        num_j: The number of pools J.
        edges: The activities (i, j) the policy may use, row-major.
        elim: ``swc``: the greedy elimination order of the tree's activities (the LAP activity order).
        swc: Whether the policy is ``swc``.
    """

    num_i: int
    num_j: int
    edges: tuple  # activities (i, j) the policy may use, row-major
    elim: tuple  # swc: greedy elimination order of the tree's activities
    swc: bool


class Rule(NamedTuple):
    """Traced parameters of a non-preemptive rule: lower score wins.

    The routing score of pool j for class i is ``route_rank[i, j] - dynamic * y_j / N_j``; the scheduling
    score of class i at pool j is ``sched_rank[i, j] - dynamic * q_i``.

    Attributes:
        route_rank: (I, J) static routing ranks.
        sched_rank: (I, J) static scheduling ranks.
        dynamic: 0.0 (static ranks) or 1.0 (lqfs).
    """

    route_rank: jnp.ndarray  # (I, J)
    sched_rank: jnp.ndarray  # (I, J)
    dynamic: jnp.ndarray  # 0.0 (static ranks) or 1.0 (lqfs)


def make(policy: str, edges_all: np.ndarray, tree: np.ndarray, lap_order, class_order) -> tuple[Layout, Rule]:
    """The layout and rule of a named policy.

    Args:
        policy: One of :data:`POLICIES`.
        edges_all: Boolean (I, J) activity graph.
        tree: Boolean (I, J) basic activity tree.
        lap_order (Sequence[tuple[int, int]]): LAP activity priorities (0-based pairs, highest first).
        class_order (Sequence[int]): LAP class priorities (0-based classes, highest first).

    Returns:
        ``(layout, rule)``.

    Raises:
        InputError: Naming ``policy``: not one of :data:`POLICIES`.
    """
    if policy not in POLICIES:
        raise InputError("policy", f"expected one of {', '.join(POLICIES)}, got {policy!r}")
    num_i, num_j = edges_all.shape
    edge = tree if policy in ("lap", "swc") else edges_all
    ii, jj = np.meshgrid(np.arange(num_i), np.arange(num_j), indexing="ij")
    act_rank = np.full((num_i, num_j), NONE)
    for r, (i, j) in enumerate(lap_order):
        act_rank[i, j] = r
    cls_rank = np.zeros(num_i)
    for r, i in enumerate(class_order):
        cls_rank[i] = r
    if policy == "lap":
        route, sched, dyn = act_rank, np.broadcast_to(cls_rank[:, None], (num_i, num_j)), 0.0
    elif policy == "lqfs":
        route, sched, dyn = 1e-9 * jj, 1e-9 * ii, 1.0
    else:
        route, sched, dyn = jj.astype(float), ii.astype(float), 0.0
    layout = Layout(num_i, num_j, tuple((int(i), int(j)) for i, j in zip(*np.nonzero(edge))),
                    tuple((int(i), int(j)) for i, j in lap_order), policy == "swc")
    return layout, Rule(jnp.asarray(route, jnp.float64), jnp.asarray(sched, jnp.float64), jnp.float64(dyn))


def first_min(cands):
    """The first candidate with the smallest score among ``(ok, score)`` pairs.

    Args:
        cands (Sequence[tuple[jax.Array, jax.Array]]): ``(ok, score)`` pairs: whether the candidate can be chosen,
            and its score.

    Returns:
        (tuple[jax.Array, list]): ``(found, picks)``: whether some candidate can be chosen, and one-hot picks (one bool
            per candidate).
    """
    best = jnp.float64(NONE)
    picks = []
    for ok, score in cands:
        s = jnp.where(ok, score, NONE)
        better = s < best
        picks = [pk & ~better for pk in picks] + [better]
        best = jnp.where(better, s, best)
    return best < NONE, picks


def route(i: int, y: dict, big_n, rule: Rule, lay: Layout):
    """Where an arriving class-i job goes, over the idle pools that serve i.

    Args:
        i: The arriving job's class.
        y: Idle servers per pool j.
        big_n (Sequence): Pool sizes N_j.
        rule: The rule's scores.
        lay: The layout.

    Returns:
        (tuple[jax.Array, dict]): ``(found, {pool j: picked})``.
    """
    js = [j for (a, j) in lay.edges if a == i]
    found, picks = first_min([(y[j] > 0, rule.route_rank[i, j] - rule.dynamic * y[j] / big_n[j]) for j in js])
    return found, dict(zip(js, picks))


def schedule(j: int, q, rule: Rule, lay: Layout):
    """Which queued class a freed pool-j server takes.

    Args:
        j: The freed server's pool.
        q (Mapping[int, jax.Array] | Sequence[jax.Array]): Queued jobs per class i.
        rule: The rule's scores.
        lay: The layout.

    Returns:
        (tuple[jax.Array, dict]): ``(found, {class i: picked})``.
    """
    cls = [i for (i, b) in lay.edges if b == j]
    found, picks = first_min([(q[i] > 0, rule.sched_rank[i, j] - rule.dynamic * q[i]) for i in cls])
    return found, dict(zip(cls, picks))


def swc_allocation(x, big_n, lay: Layout) -> dict:
    """Definition 2.1: ``z(x)``, maximal busy servers by greedy leaf elimination on the tree (order ``lay.elim``).

    Args:
        x (Sequence[jax.Array]): Jobs per class (I scalars).
        big_n (Sequence): Pool sizes (J,).
        lay: The layout.

    Returns:
        ``{(i, j): busy servers}``.
    """
    cap = {("i", i): x[i] for i in range(lay.num_i)} | {("j", j): big_n[j] for j in range(lay.num_j)}
    z = {e: jnp.int32(0) for e in lay.edges}
    for i, j in lay.elim:
        f = jnp.minimum(cap[("i", i)], cap[("j", j)])
        cap[("i", i)] = cap[("i", i)] - f
        cap[("j", j)] = cap[("j", j)] - f
        z[(i, j)] = f
    return z
