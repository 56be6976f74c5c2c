"""The ``jaxq`` command line.

Each subcommand is a module of this package with ``register(subparsers)``; the parser it adds sets
``func`` to a function ``run(args) -> dict``. The dictionary is printed as one JSON object with
``--json`` and as a readable table otherwise (a module may supply ``render(result) -> str``).
Bad input raises :class:`jaxq.InputError`: one line on stderr, exit code 2, no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from jaxq.cli.output import emit
from jaxq.errors import InputError

# Subcommand modules, in the order ``jaxq --help`` lists them.
COMMANDS = ("demo", "analyze", "simulate", "sde", "tune", "fastslow", "network", "run", "bench")


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message and exit code 2."""

    def error(self, message: str):  # noqa: D102
        sys.stderr.write(f"jaxq: error: {message}\n")
        raise SystemExit(2)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command, or only ``only`` (a faster start: one command module imported)."""
    parser = _Parser(prog="jaxq", description="Heavy-traffic studies of parallel server systems in JAX.")
    from jaxq import __version__

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


def add_common(p: argparse.ArgumentParser, seed: bool = False) -> None:
    """Options every command shares: ``--json`` and, for random commands, ``--seed``."""
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    if seed:
        p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same numbers)")


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


def main(argv: list[str] | None = None) -> int:
    enable_compile_cache()
    argv = sys.argv[1:] if argv is None else list(argv)
    only = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(only)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        result = args.func(args)
        if result is not None:
            mod = sys.modules[args.func.__module__]
            emit(result, as_json=getattr(args, "json", False), render=getattr(mod, "render", None))
    except InputError as e:
        sys.stderr.write(f"jaxq: error: {e}\n")
        return 2
    except BrokenPipeError:  # e.g. piped into head: not an error of ours
        sys.stderr.close()
        return 0
    except OSError as e:  # an output path that cannot be created or written: bad input too
        where = e.filename if e.filename is not None else "output"
        sys.stderr.write(f"jaxq: error: {where}: {e.strerror or e}\n")
        return 2
    return 0
