"""Slow-server configurations of the fast/slow system: what the slow servers can be doing.

The state of the (post-decision) MDP is ``(x, c)``: ``x`` = jobs in the queue plus the job at the fast
server (the fast/slow-servers paper, (4)) and ``c`` a configuration of the slow servers. Two layouts:

* identical slow servers (the paper's case with K = 2, and K = 1, 3, 4, ...): ``c = y``, the number
  of busy slow servers; the event operator is the lumped form of (9)-(11);
* heterogeneous slow servers with rates ``mu2[j]``: ``c`` is the bitmask of busy servers.

A layout is static numpy data (shapes fix the compiled code); the rates enter as traced arrays:
the slow-event rate matrix is ``R = sum_j mu2[j] * move[j]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True, eq=False)
class Configurations:
    """Static structure of the slow-server configurations.

    Attributes:
        kind: ``"identical"`` or ``"heterogeneous"``.
        K: Number of slow servers.
        count: ``count[c]`` busy slow servers in configuration c, shape (C,).
        mask: ``mask[c]`` bitmask of busy servers (identical: the first ``count[c]`` servers), shape (C,).
        move: ``move[j, c, c2]`` = multiplicity of the transition c -> c2 at rate ``mu2[j]`` (a
            completion, or a fictitious event of an idle server: uniformisation), shape (J, C, C).
        act_to: Actions of configuration c, shape (C, A): target configuration. Actions are sorted by the
            number assigned, so the first minimiser breaks ties towards fewer slow jobs (policy (14)).
        act_add: Actions of configuration c, shape (C, A): number of queued jobs it assigns.
        act_ok: Actions of configuration c, shape (C, A): whether the slot is used.
        rank: ``rank[j]`` speed rank of server j (0 = fastest; identical: j), shape (K,).
    """

    kind: str
    K: int
    count: np.ndarray
    mask: np.ndarray
    move: np.ndarray
    act_to: np.ndarray
    act_add: np.ndarray
    act_ok: np.ndarray
    rank: np.ndarray

    @property
    def C(self) -> int:
        return len(self.count)

    def config_of_mask(self, m: int) -> int:
        """Configuration index of the busy set ``m`` (identical: only its size matters).

        Args:
            m: The bitmask of busy servers.

        Returns:
            The configuration index.
        """
        return bin(m).count("1") if self.kind == "identical" else int(m)


@lru_cache(maxsize=None)
def identical(K: int) -> Configurations:
    """K identical slow servers: ``c = y``; slow events of (9)-(11): y -> y-1 at rate y mu2.

    Args:
        K: The number of slow servers.

    Returns:
        The configurations (cached per K).
    """
    C = K + 1
    move = np.zeros((1, C, C))
    for y in range(C):
        if y:
            move[0, y, y - 1] = y  # one of y busy slow servers completes
        move[0, y, y] += K - y  # fictitious completions of idle slow servers
    a = np.arange(C)
    act_to = np.minimum(a[None, :] + a[:, None], K)
    act_add = np.broadcast_to(a[None, :], (C, C)).copy()
    act_ok = a[None, :] + a[:, None] <= K
    return Configurations("identical", K, a.copy(), (1 << a) - 1, move, act_to, act_add, act_ok, np.arange(K))


@lru_cache(maxsize=None)
def _heterogeneous(K: int, rank: tuple[int, ...]) -> Configurations:
    C = 1 << K
    count = np.array([bin(m).count("1") for m in range(C)])
    move = np.zeros((K, C, C))
    for m in range(C):
        for j in range(K):
            move[j, m, m ^ (1 << j) if m >> j & 1 else m] += 1.0
    rk = np.array(rank)
    acts = []
    for m in range(C):  # supersets of m, by number assigned then by speed of the servers used
        sup = [s for s in range(C) if s & m == m]
        sup.sort(key=lambda s: (count[s] - count[m], sorted(rk[[j for j in range(K) if (s & ~m) >> j & 1]].tolist())))
        acts.append(sup)
    act_to = np.zeros((C, C), dtype=np.int64)
    act_ok = np.zeros((C, C), dtype=bool)
    for m, sup in enumerate(acts):
        act_to[m, : len(sup)] = sup
        act_to[m, len(sup) :] = m
        act_ok[m, : len(sup)] = True
    act_add = count[act_to] - count[:, None]
    return Configurations("heterogeneous", K, count, np.arange(C), move, act_to, act_add, act_ok, rk)


def heterogeneous(mu2) -> Configurations:
    """Slow servers with rates ``mu2[j]`` (bitmask configurations); ranks by decreasing speed.

    Args:
        mu2 (typing.Sequence[float] | numpy.ndarray): The slow service rates, shape (K,).

    Returns:
        The configurations.
    """
    mu2 = np.asarray(mu2, dtype=float)
    rank = np.empty(len(mu2), dtype=np.int64)
    rank[np.argsort(-mu2, kind="stable")] = np.arange(len(mu2))
    return _heterogeneous(len(mu2), tuple(int(r) for r in rank))
