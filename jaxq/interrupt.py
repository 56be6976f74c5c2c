"""Ctrl-C that is never lost.

Python turns SIGINT into ``KeyboardInterrupt`` in whatever code runs at that moment; when that is a finalizer or
a garbage-collector callback (JAX runs many), the exception is printed as "ignored" and the program carries on,
so a long ``jaxq run`` could ignore a Ctrl-C. The command runs inside :func:`catching`, whose handler also
records the request; the replication loop calls :func:`check` between calls of the compiled program and raises
it again. Library users keep Python's own handler (nothing is recorded, :func:`check` does nothing).
"""

from __future__ import annotations

import contextlib
import signal
import threading

_requested = False


def _handler(signum, frame):
    global _requested
    _requested = True
    raise KeyboardInterrupt


@contextlib.contextmanager
def catching():
    """Within the block, SIGINT is recorded for :func:`check` besides raising ``KeyboardInterrupt``; the previous
    handler is restored and the record cleared when the block ends. Off the main thread (where Python allows no
    signal handler) the block changes nothing."""
    global _requested
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _requested = False
    previous = signal.signal(signal.SIGINT, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _requested = False


def check() -> None:
    """Raise ``KeyboardInterrupt`` if a recorded Ctrl-C has not ended the program yet."""
    global _requested
    if _requested:
        _requested = False
        raise KeyboardInterrupt
