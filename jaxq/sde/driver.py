"""The shared driver of the SDE schemes: ``lax.scan`` over steps, noise in blocks, ``vmap``-free batching.

A scheme is a ``Scheme(name, n_normal, n_uniform, init, step, observe)`` of module-level pure functions:
``init(params, z) -> y`` maps the state to the scheme's coordinates, ``step(params, y, h, normal,
uniform) -> y`` advances all paths by one step of length h (normal: (paths, n_normal) standard
normals, uniform: (paths, n_uniform) uniforms on [0, 1)), ``observe(params, y) -> z`` maps back.

Path r draws its noise from ``fold_in(fold_in(PRNGKey(seed), r), block)``: results do not depend on how
paths are batched. Within a block of ``block`` steps the noise of all paths is drawn at once; the
state of all paths is advanced together by an inner ``lax.scan``; nothing returns to the host until the
horizon is reached.

The discounted cost ``int_0^T exp(-gamma t) Z_t dt`` is integrated exactly against the linear
interpolation of Z within each step: away from the boundary and the jump levels, given its end
points, a Brownian motion with constant drift is a Brownian bridge whose conditional mean is linear,
so this rule is conditionally unbiased there; steps that touch the boundary or a level are a fraction
O(sqrt(dt)) of all steps and contribute an O(dt) bias in total.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError


class Scheme(NamedTuple):
    """One time-stepping method (see the module docstring)."""

    name: str
    n_normal: int
    n_uniform: int
    init: Callable
    step: Callable
    observe: Callable


def step_weights(gamma, h):
    """``(w0, w1)`` with ``int_0^h exp(-gamma s) [(1 - s/h) z0 + (s/h) z1] ds = w0 z0 + w1 z1``."""
    u = gamma * h
    i1 = -jnp.expm1(-u) / gamma
    # int_0^h s exp(-gamma s) ds / h, written to avoid cancellation for small u
    w1 = h * jnp.where(u > 1e-4, (1.0 - jnp.exp(-u) * (1.0 + u)) / (u * u), 0.5 - u / 3.0 + u * u / 8.0)
    return i1 - w1, w1


def path_keys(seed: int, first: int, count: int):
    """Keys ``fold_in(PRNGKey(seed), r)`` of paths r = first, ..., first + count - 1."""
    base = jax.random.PRNGKey(seed)
    return jax.vmap(lambda r: jax.random.fold_in(base, r))(jnp.arange(first, first + count, dtype=jnp.uint32))


def _block_noise(keys, j, block, n_normal, n_uniform):
    def one(key):
        k = jax.random.fold_in(key, j)
        kn, ku = jax.random.split(k)
        return (
            jax.random.normal(kn, (block, n_normal)),
            jax.random.uniform(ku, (block, n_uniform)),
        )

    normal, uniform = jax.vmap(one)(keys)  # (paths, block, n)
    return jnp.swapaxes(normal, 0, 1), jnp.swapaxes(uniform, 0, 1)


def run_paths(scheme: Scheme, params, z0, gamma, h, keys, n_blocks: int, block: int, snap_steps, remat: bool = False):
    """All paths of one batch: discounted cost over ``n_blocks * block`` steps and snapshots.

    Args:
      scheme: the method; params: its coefficient pytree; z0: start (scalar); gamma: discount rate;
      h: step; keys: (paths,) per-path keys; n_blocks: number of blocks (static only with remat);
      block: steps per block (static);
      snap_steps: (S,) step indices k at which Z(k h) is recorded (k = 0 records z0).
      remat: recompute each block in the backward pass (for gradients over long horizons).
    Returns:
      ``(cost, snaps)``: (paths,) discounted costs and (paths, S) snapshots.
    """
    paths = keys.shape[0]
    w0, w1 = step_weights(gamma, h)
    y0 = jnp.broadcast_to(scheme.init(params, jnp.asarray(z0, dtype=jnp.float64)), (paths,))
    zs0 = scheme.observe(params, y0)
    snaps0 = jnp.where(snap_steps[None, :] == 0, zs0[:, None], jnp.zeros((paths, snap_steps.shape[0])))

    def inner(carry, x):
        y, z, cost, snaps = carry
        k, normal, uniform = x
        y1 = scheme.step(params, y, h, normal, uniform)
        z1 = scheme.observe(params, y1)
        disc = jnp.exp(-gamma * h * k)
        cost = cost + disc * (w0 * z + w1 * z1)
        snaps = jnp.where(snap_steps[None, :] == k + 1, z1[:, None], snaps)
        return (y1, z1, cost, snaps), None

    def outer(carry, j):
        normal, uniform = _block_noise(keys, j, block, scheme.n_normal, scheme.n_uniform)
        ks = (j * block + jnp.arange(block)).astype(jnp.float64)
        carry, _ = jax.lax.scan(inner, carry, (ks, normal, uniform))
        return carry, None

    carry = (y0, zs0, jnp.zeros(paths), snaps0)
    if remat:  # reverse-mode differentiable: a scan over a static number of blocks
        (_, _, cost, snaps), _ = jax.lax.scan(jax.checkpoint(outer), carry, jnp.arange(n_blocks))
    else:  # a dynamic trip count: one compilation serves every step size and horizon
        _, _, cost, snaps = jax.lax.fori_loop(0, n_blocks, lambda j, c: outer(c, j)[0], carry)
    return cost, snaps


_run_jit = jax.jit(run_paths, static_argnames=("scheme", "block", "remat"))


def step_counts(dt: float, horizon: float, block: int = 64) -> tuple[int, int]:
    """``(n_blocks, block)`` covering ``ceil(horizon / dt)`` steps (rounded up to whole blocks)."""
    steps = max(1, math.ceil(horizon / dt - 1e-9))
    return math.ceil(steps / block), block


def check_step(dt: float, horizon: float) -> None:
    """InputError unless ``0 < dt <= horizon`` (finite)."""
    if not (math.isfinite(dt) and dt > 0):
        raise InputError("dt", "must be a positive number")
    if not (math.isfinite(horizon) and horizon > 0):
        raise InputError("horizon", "must be a positive number")
    if dt > horizon:
        raise InputError("dt", "must not exceed the horizon")


def simulate(scheme: Scheme, params, z0: float, gamma: float, dt: float, horizon: float, paths: int, seed: int = 0,
             times=(), chunk: int = 1 << 16, block: int = 64):
    """Discounted cost and snapshots of ``paths`` paths, batched by ``chunk`` (results do not depend on it).

    Args:
      scheme, params: the method and its coefficients; z0 >= 0: start; gamma > 0: discount rate;
      dt: step; horizon: truncation time T (rounded up to whole blocks of steps);
      paths: number of paths; seed: random seed; times: fixed times at which Z is recorded
      (each rounded to the nearest multiple of dt); chunk: paths per compiled call.
    Returns:
      dict with ``cost`` (paths,) = ``int_0^T exp(-gamma t) Z dt`` per path, ``snaps`` (paths, len(times)),
      ``horizon`` (the T used), ``steps``.
    """
    check_step(dt, horizon)
    if paths < 1:
        raise InputError("paths", "must be at least 1")
    times = np.atleast_1d(np.asarray(times, dtype=float))
    snap_steps = np.rint(times / dt).astype(np.int64)
    horizon = max(horizon, float(snap_steps.max(initial=0)) * dt)
    n_blocks, block = step_counts(dt, horizon, block)
    costs, snaps = [], []
    size = min(chunk, paths)  # every call has the same shape (the last chunk is padded): one compilation
    for first in range(0, paths, size):
        keys = path_keys(seed, first, size)
        c, s = _run_jit(scheme, params, z0, gamma, dt, keys, n_blocks, block, jnp.asarray(snap_steps))
        count = min(size, paths - first)
        costs.append(np.asarray(c)[:count])
        snaps.append(np.asarray(s)[:count])
    return {
        "cost": np.concatenate(costs),
        "snaps": np.concatenate(snaps),
        "horizon": n_blocks * block * dt,
        "steps": n_blocks * block,
    }
