"""Policy tables of the fast/slow MDP (numpy only, no scipy: the command line imports this).

A *policy table* ``policy[x, c]`` gives the post-decision slow configuration chosen at the
pre-decision state ``(x, c)`` (the state just after an event, before assigning jobs).
"""

from __future__ import annotations

import numpy as np

from jaxq.mdp.layout import Configurations
from jaxq.mdp.operators import assignment_tables


def post_state(layout: Configurations, N: int, policy: np.ndarray) -> np.ndarray:
    """Flat post-decision index of every pre-decision state under ``policy`` (N+1, C) -> (n,).

    Args:
        layout: The slow-server configurations.
        N: The truncation, ``x <= N``.
        policy: The policy table, shape (N+1, C).

    Returns:
        The indices, shape ((N+1) C,).

    Raises:
        ValueError: The policy removes slow jobs or assigns more jobs than are queued.
    """
    x = np.arange(N + 1)[:, None]
    add = layout.count[policy] - layout.count[None, :]
    if np.any(add < 0) or np.any(add > np.maximum(x - 1, 0)):
        raise ValueError("policy removes slow jobs or assigns more jobs than are queued")
    return ((x - add) * layout.C + policy).reshape(-1)


def greedy_policy(layout: Configurations, N: int, value: np.ndarray, tie: float = 0.0, current: np.ndarray | None = None):
    """Policy (14): the first minimiser of ``value`` over the allowed actions (fewer slow jobs first).

    Args:
        layout: The slow-server configurations.
        N: The truncation, ``x <= N``.
        value: Value function on post-decision states, (N+1, C).
        tie: Actions within ``tie`` of the minimum count as minimisers.
        current: If given, keep its action wherever it is a minimiser (policy iteration cannot cycle).

    Returns:
        (numpy.ndarray): The post-decision configuration table, (N+1, C), int.
    """
    idx, ok = assignment_tables(layout, N)
    vals = np.where(ok, np.asarray(value).reshape(-1)[idx], np.inf)
    best = vals.min(axis=-1, keepdims=True)
    arg = np.argmax(vals <= best + tie, axis=-1)
    pol = np.take_along_axis(np.broadcast_to(layout.act_to, vals.shape), arg[..., None], -1)[..., 0]
    if current is not None:
        cur_val = np.asarray(value).reshape(-1)[post_state(layout, N, current)].reshape(pol.shape)
        pol = np.where(cur_val <= best[..., 0] + tie, current, pol)
    return pol
