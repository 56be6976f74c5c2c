"""The ``jaxq`` command line: :func:`main`, and the names of :mod:`jaxq.cli.app` (the parser, the shared options).

This module imports nothing heavy: :func:`main` records Ctrl-C from its first line, then imports the command line
(JAX, the API, the parser), so a Ctrl-C at any moment, the first second included, ends the command with one line
``jaxq: interrupted`` and exit code 130. During that import a Ctrl-C is only recorded, and acted on once the
import returns (a second or two): raised inside the initialisation of a C extension (numpy's, jaxlib's) it made
the import fail with a traceback, or crashed the interpreter.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    """The ``jaxq`` command: its exit status (0, 1 an internal error, 2 bad input, 130 interrupted).

    Args:
        argv: The arguments after ``jaxq`` (default: ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    requested: list[bool] = []

    def handler(signum, frame):  # recorded, never raised into the import (module docstring)
        requested.append(True)

    def unraisable(info):  # a Ctrl-C raised in a finalizer is recorded, not printed as "Exception ignored"
        if isinstance(info.exc_value, KeyboardInterrupt):
            requested.append(True)
        else:
            previous_hook(info)

    previous = signal.signal(signal.SIGINT, handler) if threading.current_thread() is threading.main_thread() else None
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        try:
            app = importlib.import_module("jaxq.cli.app")
            if requested:
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            sys.stderr.write("jaxq: interrupted\n")
            return 130
        return app.main(argv)  # its own handler (jaxq.interrupt) takes over for the command
    finally:
        sys.unraisablehook = previous_hook
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def command() -> None:
    """The ``jaxq`` executable (the console script and ``python -m jaxq``): :func:`main`, its status the process's.

    An interrupted command (status 130) ends at once, its output flushed: Python reports a Ctrl-C that it saw
    raised inside code run by ``exec`` of a string (the methods that ``dataclasses`` and ``namedtuple`` write do) as
    the process killed by SIGINT at exit, even when the command caught it and printed its one line.
    """
    status = main()
    if status == 130:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(130)
    sys.exit(status)


# the command line's shared names, which live in jaxq.cli.app (imported on first use)
_FROM_APP = frozenset({"COMMANDS", "_Parser", "add_common", "add_cv", "add_target", "build_parser", "debug_enabled",
                       "enable_compile_cache", "target_of"})


def __getattr__(name):
    if name in _FROM_APP:
        return getattr(importlib.import_module("jaxq.cli.app"), name)
    raise AttributeError(f"module 'jaxq.cli' has no attribute {name!r}")
