"""float64 for jaxq's own computations without touching the caller's JAX configuration.

``import jaxq`` leaves ``jax_enable_x64`` as the user set it. Every public function of :mod:`jaxq.api` runs inside
``jax.enable_x64(True)``; so do the methods of returned objects that compute with JAX and the simulators' entry
points below the API (:func:`float64`), so that a researcher who calls them directly gets float64 too.
"""

from __future__ import annotations

import functools

import jax


def in_float64():
    """The context in which jaxq computes: ``jax.enable_x64(True)``, the caller's setting restored on exit."""
    return jax.enable_x64(True)


def float64(fn):
    """``fn`` run inside ``jax.enable_x64(True)`` (the caller's setting is restored on return); its signature and
    docstring are ``fn``'s.

    Args:
        fn (typing.Callable): The function.

    Returns:
        (typing.Callable): The wrapped function.
    """

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with in_float64():
            return fn(*args, **kwargs)

    return wrapped
