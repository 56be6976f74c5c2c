"""The operators of the fast/slow-servers paper on the truncated state space ``x = 0..N`` (JAX, pure functions).

``f`` is an array of shape ``(N+1, C)`` indexed by the post-decision state ``(x, c)``. Truncation: an
arrival at ``x = N`` is lost (the chain stays in the box); the truncation is chosen large enough for
this not to matter and checked by doubling it (see :mod:`jaxq.mdp.fastslow`).
"""

from __future__ import annotations

from functools import lru_cache

import jax.numpy as jnp
import numpy as np

from jaxq.mdp.layout import Configurations


@lru_cache(maxsize=None)
def assignment_tables(layout: Configurations, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Static gather indices of the job assignment operator (7) on the box ``x = 0..N``.

    Args:
        layout: The slow-server configurations.
        N: The truncation, ``x <= N``.

    Returns:
        ``(idx, ok)``: idx, the flat index ``x' * C + c'`` of the post-decision state of action a at ``(x, c)``,
            (N+1, C, A); ok, whether action a is allowed at ``(x, c)``: at most ``(x-1)^+`` queued jobs can be
            assigned (the job at the fast server stays there), (N+1, C, A).
    """
    x = np.arange(N + 1)[:, None, None]
    add = layout.act_add[None]
    ok = layout.act_ok[None] & (add <= np.maximum(x - 1, 0))
    idx = np.clip(x - add, 0, N) * layout.C + layout.act_to[None]
    return idx, ok


def assignment_values(f: jnp.ndarray, idx: np.ndarray, ok: np.ndarray) -> jnp.ndarray:
    """Values ``f(x + y - k, k)`` of every action, ``+inf`` where not allowed, shape (N+1, C, A).

    Args:
        f: Values at the post-decision states, shape (N+1, C).
        idx: The gather indices of :func:`assignment_tables`.
        ok: The allowed actions of :func:`assignment_tables`.

    Returns:
        The values, shape (N+1, C, A).
    """
    return jnp.where(ok, f.reshape(-1)[idx], jnp.inf)


def assign(f: jnp.ndarray, idx: np.ndarray, ok: np.ndarray) -> jnp.ndarray:
    """Job assignment operator (7): ``(Q f)(x, c) = min over allowed actions of f(post-decision)``.

    Args:
        f: Values at the post-decision states, shape (N+1, C).
        idx: The gather indices of :func:`assignment_tables`.
        ok: The allowed actions of :func:`assignment_tables`.

    Returns:
        ``Q f``, shape (N+1, C).
    """
    return assignment_values(f, idx, ok).min(axis=-1)


def events(f: jnp.ndarray, lam, mu1, slow_rates: jnp.ndarray) -> jnp.ndarray:
    """Event operator (9)-(11) (un-normalised: rows sum to the uniformisation rate gamma).

    Args:
        f: Values at the pre-decision states, shape (N+1, C).
        lam (float | jax.Array): Arrival rate.
        mu1 (float | jax.Array): Fast service rate.
        slow_rates: ``R[c, c2]``, rate of the slow event c -> c2 (including the fictitious ones).

    Returns:
        ``P f``, shape (N+1, C).
    """
    up = jnp.concatenate([f[1:], f[-1:]])  # arrival; lost at x = N (truncation)
    down = jnp.concatenate([f[:1], f[:-1]])  # fast completion: (x-1)^+
    return lam * up + mu1 * down + f @ slow_rates.T


def slow_rate_matrix(layout: Configurations, mu2: jnp.ndarray) -> jnp.ndarray:
    """``R = sum_j mu2[j] move[j]`` (identical layout: ``mu2`` has one entry).

    Args:
        layout: The slow-server configurations.
        mu2: The slow service rates, shape (J,).

    Returns:
        R, shape (C, C).
    """
    return jnp.tensordot(mu2, jnp.asarray(layout.move), axes=1)


def cost(layout: Configurations, N: int) -> np.ndarray:
    """Holding cost (5): jobs in the system, ``c(x, y) = x + y``, shape (N+1, C).

    Args:
        layout: The slow-server configurations.
        N: The truncation, ``x <= N``.

    Returns:
        The cost, shape (N+1, C).
    """
    return np.arange(N + 1)[:, None] + layout.count[None, :].astype(float)
