"""The ``jaxq`` command line (started by :func:`jaxq.cli.main`, which imports this module).

Each subcommand is a module of this package with ``register(subparsers)``; the parser it adds sets
``func`` to a function ``run(args) -> dict``. The dictionary is printed as one JSON object with
``--json`` and as a readable table otherwise (a module may supply ``render(result) -> str``).
Bad input raises :class:`jaxq.InputError`: one line on stderr, exit code 2, no traceback.

Exactly one line on a refusal: while a command runs, Python warnings (numpy RuntimeWarnings, JAX,
pydantic) and log records are held back; they are shown after a successful run and dropped when the
command refuses its input, so the error line is the only line on stderr. Progress bars appear only on
a terminal (or with ``JAXQ_PROGRESS=1``; ``0`` hides them) and only after a short delay
(:func:`jaxq.cli.output.progress`, :mod:`jaxq.cli.progress`), after validation; a job expected to take more
than 30 s (at the rate measured once its first work is done) says so and then writes a progress line at least
once a minute on any stderr (:mod:`jaxq.progress`); ``--quiet`` silences both. One kind of line is not
held back: the note of a job too large to finish soon (its estimated work, :func:`jaxq.cli.progress.long_work_note`)
is written when the simulator announces its work, after validation and before the work starts.
A result's ``warnings`` (a list of sentences in its JSON) are written as ``jaxq: note: ...`` lines on stderr,
one each, before the result itself.
An unexpected exception is one line ``jaxq: internal error: ...`` and exit code 1
(``JAXQ_DEBUG=1`` shows the traceback; unset, empty or ``0`` does not). Ctrl-C (SIGINT) is one line
``jaxq: interrupted`` (for ``jaxq run``: ``; resume with jaxq run ... --resume``) and exit code 130.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
import warnings

from jaxq.api import InputError, catch_interrupts, check_interrupt
from jaxq.cli.output import emit

# Subcommand modules, in the order ``jaxq --help`` lists them.
COMMANDS = ("demo", "analyze", "simulate", "optimal", "sde", "tune", "fastslow", "network", "run", "bench")


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message and exit code 2."""

    def error(self, message: str):  # noqa: D102
        sys.stderr.write(f"jaxq: error: {message}\n")
        raise SystemExit(2)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command, or only ``only`` (a faster start: one command module imported).

    Args:
        only: The one command to register (default: every command in :data:`COMMANDS` whose module is installed).

    Returns:
        The parser.
    """
    parser = _Parser(prog="jaxq", description="Heavy-traffic studies of parallel server systems in JAX.")
    from jaxq.api import __version__

    parser.add_argument("--version", action="version", version=f"jaxq {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS if only is None else (only,):
        try:
            mod = importlib.import_module(f"jaxq.cli.{name}")
        except ModuleNotFoundError as e:  # a command whose module is not installed is simply absent
            if e.name != f"jaxq.cli.{name}":
                raise
            continue
        mod.register(sub)
    return parser


def add_cv(p: argparse.ArgumentParser) -> None:
    """``--cv on|off``: control variates from the diffusion limit (on by default).

    Args:
        p: The command's parser.
    """
    p.add_argument("--cv", choices=("on", "off"), default="on",
                   help="control variates from the diffusion limit (default on): the plain estimate is reported beside")


def add_common(p: argparse.ArgumentParser, seed: bool = False) -> None:
    """Options every command shares: ``--json`` and, for random commands, ``--seed``.

    Args:
        p: The command's parser.
        seed: Also add ``--seed``.
    """
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--quiet", action="store_true",
                   help="no progress reports (the estimate and the minute lines of a long job, the bar)")
    if seed:
        from jaxq.api import arg_type

        p.add_argument("--seed", type=arg_type("seed"), default=0,
                       help="random seed in [0, 2^32) (same seed, same numbers)")


def add_target(p: argparse.ArgumentParser, unit: str = "replications") -> None:
    """A precision target's options: ``--rel-se``, ``--max-reps``, ``--budget`` (:func:`target_of`).

    Args:
        p: The command's parser.
        unit: What the target plans, as the help text names it.
    """
    p.add_argument("--rel-se", type=float, default=None,
                   help=f"stop at this standard error over the estimate (e.g. 0.001): a pilot on a derived seed plans "
                        f"the {unit}, which are then a prefix of the fixed run with --seed")
    p.add_argument("--max-reps", type=int, default=None,
                   help=f"the most {unit} of a --rel-se run (default 100000; a target needing more is refused "
                        "before the run)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds for a --rel-se run, pilot included: it stops short of the target when they do not "
                        "suffice")


def target_of(args, reps_key: str = "reps", default=None):
    """The :class:`jaxq.mc.target.Target` of parsed ``args`` (None: a fixed number of ``args.<reps_key>``;
    :func:`jaxq.mc.target.target_from`, the options named as on the command line).

    Args:
        args (argparse.Namespace): The parsed command line, with the options of :func:`add_target`.
        reps_key: The attribute (and option) of the fixed number of replications.
        default (jaxq.mc.target.Target | None): The target when no option asks for one (passed on to
            :func:`jaxq.mc.target.target_from`).

    Returns:
        (jaxq.mc.target.Target | None): The target, or None.
    """
    from jaxq.api import target_from

    return target_from(getattr(args, reps_key), args.rel_se, args.max_reps, args.budget, reps_name=reps_key,
                       names={"rel_se": "rel-se", "max_reps": "max-reps", "reps": reps_key}, default=default)


def enable_compile_cache() -> None:
    """Keep compiled XLA programs on disk so repeated commands do not recompile.

    ``$JAXQ_CACHE_DIR`` (default ``~/.cache/jaxq/xla``); ``off`` disables it.
    """
    path = os.environ.get("JAXQ_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "jaxq", "xla"))
    if path.lower() == "off":
        return
    import jax

    try:
        os.makedirs(path, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    except (OSError, AttributeError):  # read-only home or an old jax: compile every time
        pass


class _HeldLogs(logging.Handler):
    """Keeps log records while a command runs (replayed on success, dropped on a refusal)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):  # noqa: D102
        self.records.append(record)


@contextlib.contextmanager
def _held_diagnostics():
    """Hold Python warnings and WARNING+ log records of the command; yields a ``release()`` callable."""
    root = logging.getLogger()
    handler = _HeldLogs()
    saved_handlers, saved_propagate = {}, {}
    # Loggers with their own handlers (absl, jax) and the root logger's last-resort output.
    loggers = [root] + [lg for lg in logging.Logger.manager.loggerDict.values()
                        if isinstance(lg, logging.Logger) and lg.handlers]
    for lg in loggers:
        saved_handlers[lg] = lg.handlers[:]
        lg.handlers = [handler]
        saved_propagate[lg] = lg.propagate
        lg.propagate = False
    with warnings.catch_warnings(record=True) as caught:  # the filters in force still apply
        try:
            yield caught, handler
        finally:
            for lg in loggers:
                lg.handlers = saved_handlers[lg]
                lg.propagate = saved_propagate[lg]


def _replay(caught, handler) -> None:
    """Show the held warnings and log records (after a successful command)."""
    seen = set()
    for w in caught:
        key = (str(w.message), w.category, w.filename, w.lineno)
        if key in seen:
            continue
        seen.add(key)
        sys.stderr.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno))
    fmt = logging.Formatter("%(levelname)s:%(name)s:%(message)s")
    for r in handler.records:
        sys.stderr.write(fmt.format(r) + "\n")


def debug_enabled() -> bool:
    """``JAXQ_DEBUG`` asks for tracebacks: any value but unset, empty, ``0``, ``off``, ``no``, ``false``."""
    from jaxq.cli.output import env_switch

    return env_switch("JAXQ_DEBUG") is not False and bool(os.environ.get("JAXQ_DEBUG", "").strip())


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    """The ``jaxq`` command: its exit status (0, 1 an internal error, 2 bad input, 130 interrupted).

    Args:
        argv: The arguments after ``jaxq`` (default: ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:  # a Ctrl-C raised inside a finalizer is raised again by the replication loop (jaxq.interrupt)
        with catch_interrupts():
            return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C (SIGINT): one line, no traceback, the shell's status for SIGINT
        sys.stderr.write(f"jaxq: interrupted{_resume_hint(argv)}\n")
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        return 130


def _resume_hint(argv: list[str]) -> str:
    """``; resume with jaxq run FILE --resume ...`` for an interrupted ``jaxq run`` (its finished chunks are kept)."""
    if not argv or argv[0] != "run":
        return ""
    import shlex

    rest = [a for a in argv[1:] if a != "--resume"]
    return f"; resume with {shlex.join(['jaxq', 'run', *rest, '--resume'])}"


def _backend_unavailable(e: BaseException) -> bool:
    """Whether JAX could not start the platform that ``JAX_PLATFORMS`` (or the default) asks for."""
    return isinstance(e, RuntimeError) and "Unable to initialize backend" in str(e)


def _main(argv: list[str]) -> int:
    import jax

    # The command owns its process: float64 for everything (the library scopes it per call instead).
    jax.config.update("jax_enable_x64", True)
    enable_compile_cache()
    only = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(only)
    check_interrupt()  # a Ctrl-C that a finalizer swallowed while JAX started or the parser was built
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # a bad option (one line already written), --help or --version
        return e.code if isinstance(e.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from jaxq.api import set_quiet

    set_quiet(bool(getattr(args, "quiet", False)))
    with _held_diagnostics() as (caught, held):
        try:
            result = args.func(args)
            if result is not None:
                for note in result.get("warnings") or ():
                    sys.stderr.write(f"jaxq: note: {_one_line(note)}\n")
                mod = sys.modules[args.func.__module__]
                emit(result, as_json=getattr(args, "json", False), render=getattr(mod, "render", None))
        except InputError as e:
            sys.stderr.write(f"jaxq: error: {_one_line(e)}\n")
            return 2
        except BrokenPipeError:  # e.g. piped into head: not an error of ours
            sys.stderr.close()
            return 0
        except OSError as e:  # an output path that cannot be created or written: bad input too
            where = e.filename if e.filename is not None else "output"
            sys.stderr.write(f"jaxq: error: {_one_line(where)}: {_one_line(e.strerror or e)}\n")
            return 2
        except (RecursionError, MemoryError) as e:  # input too large or too deep for this machine
            sys.stderr.write(f"jaxq: error: input: too large or too deeply nested ({type(e).__name__})\n")
            return 2
        except Exception as e:  # a bug of ours: one line, not a traceback (JAXQ_DEBUG=1 shows it)
            if _backend_unavailable(e):  # the environment names a platform this install cannot start: bad input
                sys.stderr.write(f"jaxq: error: JAX_PLATFORMS: {_one_line(e)[:300]}\n")
                return 2
            if debug_enabled():
                raise
            sys.stderr.write(f"jaxq: internal error: {type(e).__name__}: {_one_line(e)[:300]} "
                             "(please report it; JAXQ_DEBUG=1 shows the traceback)\n")
            return 1
    _replay(caught, held)
    return 0
