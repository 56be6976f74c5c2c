"""Leaf activity priority (LAP) of the LAP-tightness paper: the priority assignment and the equilibrium point psi*.

Priority assignment on the basic activity tree (Section 2 of the LAP-tightness paper):

1. Class priorities: repeatedly pick a leaf of the tree; if it is a class give it the next (highest
   unassigned) priority; remove it. Tie-break (ours, deterministic): among the current leaves pick the
   class leaf of smallest index; if no class is a leaf, remove the pool leaf of smallest index.
2. Activity priorities: take the highest-priority remaining class; if it is a leaf, its only edge gets
   the next priority and the edge and the class are removed; otherwise an edge to a pool leaf gets the
   next priority and is removed. Tie-break: the pool leaf of smallest index.

A user may instead give a complete activity order; it is accepted only if the two steps can produce it.

Equilibrium point (the LAP-tightness paper, the recursive definition around its missing display (2)): in LAP order,
``lambda_ij = min(lambda_i', beta_j' mu_ij)``, ``psi*_ij = lambda_ij / mu_ij``, then
``lambda_i' -= lambda_ij`` and ``beta_j' -= psi*_ij`` (primes: what is left). Queues are 0 at
equilibrium (rho < 1). The paper assumes ``psi*_ij > 0`` on every tree activity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxq.errors import InputError


def _degrees(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return edges.sum(axis=1), edges.sum(axis=0)


def class_priorities(tree: np.ndarray) -> list[int]:
    """Step 1: classes in priority order (0-based, highest first) by leaf removal with our tie-break.

    Args:
        tree: Boolean (I, J) basic activity tree.

    Returns:
        The classes, 0-based, highest priority first.
    """
    num_i, num_j = tree.shape
    e = tree.copy()
    alive_i, alive_j = np.ones(num_i, bool), np.ones(num_j, bool)
    order: list[int] = []
    while alive_i.any():
        di, dj = _degrees(e)
        leaf_i = np.nonzero(alive_i & (di <= 1))[0]
        if len(leaf_i):
            i = int(leaf_i[0])
            order.append(i)
            alive_i[i] = False
            e[i, :] = False
            continue
        j = int(np.nonzero(alive_j & (dj <= 1))[0][0])  # a tree always has a leaf
        alive_j[j] = False
        e[:, j] = False
    return order


def _valid_class_order(tree: np.ndarray, order: list[int]) -> bool:
    """Whether leaf removal can assign classes in this order (pool leaves may be removed at any time)."""
    e = tree.copy()
    alive_j = np.ones(tree.shape[1], bool)
    for i in order:
        while True:  # removing pool leaves only helps classes become leaves
            dj = e.sum(axis=0)
            leaves = np.nonzero(alive_j & (dj <= 1))[0]
            if not len(leaves):
                break
            alive_j[leaves] = False
            e[:, leaves] = False
        if e[i].sum() > 1:
            return False
        e[i, :] = False
    return True


def activity_priorities(tree: np.ndarray, classes: list[int] | None = None) -> list[tuple[int, int]]:
    """Step 2: activities (i, j), 0-based, highest priority first.

    Args:
      tree: boolean (I, J) basic activity tree.
      classes: class priority order (default: :func:`class_priorities`).
    """
    classes = class_priorities(tree) if classes is None else classes
    e = tree.copy()
    out: list[tuple[int, int]] = []
    for i in classes:
        while e[i].any():
            pools = np.nonzero(e[i])[0]
            if len(pools) == 1:
                j = int(pools[0])
            else:
                dj = e.sum(axis=0)
                leaves = [int(j) for j in pools if dj[j] == 1]
                if not leaves:
                    raise InputError("system.lap_order", f"class {i + 1} has no pool leaf: not a LAP class order")
                j = leaves[0]
            out.append((i, j))
            e[i, j] = False
    return out


def validate_activity_order(tree: np.ndarray, order: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Check that a user-given activity order (0-based pairs) is one the LAP algorithm can produce.

    Args:
        tree: Boolean (I, J) basic activity tree.
        order: The activities (i, j), 0-based, highest priority first.

    Returns:
        The order, checked.

    Raises:
        InputError: Naming ``system.lap_order``: an order that does not list every basic activity exactly once, whose
            activities of a class are not consecutive, or that is not one the LAP algorithm can produce.
    """
    key = "system.lap_order"
    if sorted(order) != sorted(map(tuple, np.argwhere(tree).tolist())):
        raise InputError(key, "must list every basic activity exactly once")
    classes: list[int] = []
    for i, _ in order:
        if not classes or classes[-1] != i:
            if i in classes:
                raise InputError(key, f"activities of class {i + 1} must be consecutive (i < i' implies (ij) < (i'j'))")
            classes.append(i)
    if not _valid_class_order(tree, classes):
        raise InputError(key, "the class order is not a leaf-removal order of the tree")
    e = tree.copy()
    for i, j in order:
        if e[i].sum() > 1 and e[:, j].sum() != 1:
            raise InputError(key, f"activity [{i + 1}, {j + 1}] is taken before pool {j + 1} is a leaf")
        e[i, j] = False
    return list(order)


@dataclass(frozen=True, eq=False)
class LapEquilibrium:
    """The LAP equilibrium point.

    Attributes:
      order: activity priorities, 0-based pairs, highest first.
      class_order: class priorities, 0-based, highest first.
      psi: psi*_ij, servers of pool j on class i per unit of r, shape (I, J).
      routing: lambda_ij of the recursion (not the SPP's).
      unserved: lambda left over per class after the recursion (0 when LAP can carry the load).
      assumption_holds: psi*_ij > 0 on every activity of the tree (the LAP-tightness paper's standing assumption).
    """

    order: list[tuple[int, int]]
    class_order: list[int]
    psi: np.ndarray
    routing: np.ndarray
    unserved: np.ndarray
    assumption_holds: bool


def lap_equilibrium(
    lam: np.ndarray, mu: np.ndarray, beta: np.ndarray, tree: np.ndarray, order: list[tuple[int, int]] | None = None
) -> LapEquilibrium:
    """LAP priorities and equilibrium psi* on a basic activity tree.

    Args:
      lam: lambda_i; mu: mu_ij; beta: pool sizes per unit of r; tree: boolean (I, J) basic tree.
      order: optional user-given activity order (0-based pairs); validated.
    """
    order = activity_priorities(tree) if order is None else validate_activity_order(tree, list(order))
    classes = list(dict.fromkeys(i for i, _ in order))
    lam_left = np.array(lam, dtype=float).copy()
    beta_left = np.array(beta, dtype=float).copy()
    psi = np.zeros(mu.shape)
    routing = np.zeros(mu.shape)
    for i, j in order:
        rate = min(lam_left[i], beta_left[j] * mu[i, j])
        routing[i, j] = rate
        psi[i, j] = rate / mu[i, j]
        lam_left[i] -= rate
        beta_left[j] -= psi[i, j]
    scale = max(1.0, float(np.max(lam)))
    unserved = np.where(lam_left > 1e-12 * scale, lam_left, 0.0)
    holds = bool(np.all(psi[tree] > 1e-12 * scale))
    return LapEquilibrium(order, classes, psi, routing, unserved, holds)
