"""``jaxq run EXPERIMENT.toml [--out DIR] [--resume] [--distributed]``: run a study from an experiment file.

Writes under DIR (default ``results/<experiment name>``): ``records.csv`` (one row per grid point and
replication), the study's tables (``summary.csv``, ...; Parquet too when pyarrow is installed), its
figures (PNG), ``run.json`` (versions, devices, seeds, wall time, tables) and ``chunks/`` (one file per
finished chunk: the unit of ``--resume``). Without ``--resume`` DIR must be empty or new (an earlier run's
or anyone's files are never overwritten or mixed with this run's); ``--resume`` continues a jaxq run there.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

from jaxq.api import InputError, check_devices, check_seed
from jaxq.cli import add_common
from jaxq.cli.output import format_table, to_jsonable

DISTRIBUTED_TIMEOUT_S = 120.0  # seconds --distributed waits for every process to join (JAX's default: 300)


def register(sub) -> None:
    """Add the ``run`` command to the subcommands.

    Args:
        sub (argparse._SubParsersAction): The subcommands of the ``jaxq`` parser.
    """
    from jaxq.api import arg_type

    p = sub.add_parser("run", help="run a study from an experiment file (resumable, sharded over devices)")
    p.add_argument("experiment", help="experiment file (TOML, see experiments/)")
    p.add_argument("--out", default=None, help="output directory (default: results/<experiment name>)")
    p.add_argument("--resume", action="store_true", help="keep finished chunks of an interrupted run")
    p.add_argument("--devices", type=arg_type("int", lo=1, hi=1 << 20), default=None, help="use the first K local devices (default: all)")
    p.add_argument("--distributed", action="store_true",
                   help="call jax.distributed.initialize() (SLURM etc. auto-detected) and split chunks over processes")
    p.add_argument("--distributed-timeout", type=arg_type("float", ge=1.0, le=86400.0), default=DISTRIBUTED_TIMEOUT_S,
                   metavar="SECONDS", help="with --distributed: how long to wait for every process of the cluster "
                   f"to join (default {DISTRIBUTED_TIMEOUT_S:g})")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--seed", type=arg_type("seed"), default=None,
                   help="run with this seed in [0, 2^32) instead of the file's seeds")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> dict | None:
    """Run the study of ``args.experiment`` into ``args.out`` (default ``results/<experiment name>``).

    Args:
        args (argparse.Namespace): The parsed command line.

    Returns:
        The report (the experiment, its totals, tables and files); None on a process other than 0 of a
        ``--distributed`` run.

    Raises:
        InputError: Naming the option at fault (``--out``, ``--distributed-timeout``, ``--seed``, ``--devices``,
            ...) before anything is written.
    """
    import jax

    from jaxq.api import check_output_folder, run_study

    if args.out is not None and not args.out.strip():
        raise InputError("--out", f"is empty ({args.out!r}); name an output folder (default: "
                                  "results/<experiment name>)")
    if args.distributed:
        try:  # cross-process barriers on CPU hosts need gloo; GPU and TPU backends ignore this option
            jax.config.update("jax_cpu_collectives_implementation", "gloo")
        except (AttributeError, ValueError):
            pass
        initialize_distributed(args.distributed_timeout)
    elif args.distributed_timeout != DISTRIBUTED_TIMEOUT_S:
        raise InputError("--distributed-timeout", "belongs to --distributed: pass it too")
    seeds = None if args.seed is None else [check_seed(args.seed, "--seed")]
    exp = _load(args.experiment, seeds, not args.no_progress)  # validates everything before anything is written
    devices = check_devices(args.devices, "--devices")  # None, or the first K local devices
    out = Path(args.out) if args.out else Path("results") / exp.name
    check_output_folder(out, resume=args.resume, default=not args.out)  # before any work
    # gloo (the CPU collectives of --distributed) prints its connection lines on the process's stdout, which
    # belongs to the report (one JSON object with --json): the run sends them to stderr
    quiet = stdout_to_stderr() if args.distributed else contextlib.nullcontext()
    with quiet:
        rec = run_study(exp, out, resume=args.resume, devices=devices, distributed=args.distributed,
                        progress=False if args.no_progress else None)
    if rec is None:  # not process 0: process 0 reports
        return None
    return {
        "experiment": exp.name,
        "study": exp.study.name,
        "out": str(out),
        "files": rec["files"],
        "chunks": rec["chunks"],
        "chunks_computed": rec["chunks_computed_this_session"],
        "chunks_reused": rec["chunks_reused"],
        "replications": rec["replications"],
        "events": rec["events"],
        "wall_s": rec["wall_s"],
        "compute_s": rec["compute_s"],
        "devices": rec["devices"],
        "tables": rec["tables"],
        **({"targets": rec["targets"]} if "targets" in rec else {}),  # the plans of a precision target
    }


def _load(path, seeds, bar: bool):
    """The experiment, validated, with a counter of the grid points checked (:func:`jaxq.cli.output.progress`: a bar
    on a terminal, ``bar`` False hides it; a note once the check has run 30 s, then a line a minute)."""
    from jaxq.api import load_experiment
    from jaxq.cli.output import progress

    with progress(None, "run: checking the experiment file", enabled=bar, unit="points") as update:
        return load_experiment(path, seeds, progress=update)


def initialize_distributed(timeout_s: float = DISTRIBUTED_TIMEOUT_S) -> None:
    """``jax.distributed.initialize()``: coordinator, process count and id from the cluster manager (SLURM, Open
    MPI, ...). Before it, every process meets the others within ``timeout_s`` seconds (:func:`rendezvous`): JAX's
    own wait ends a process that a peer never joins with a C++ abort after minutes, which no Python code can turn
    into a message. A process not started by a cluster manager, a process list jax cannot read, or a peer that
    never joins is an InputError naming ``--distributed`` (one line, exit 2).

    Args:
        timeout_s: The seconds every process waits for the others.

    Raises:
        InputError: Naming ``--distributed``.
    """
    import jax
    from jax._src import clusters  # jax's own cluster detection: the address and ids initialize() will use

    try:
        address, count, me, _ = clusters.ClusterEnv.auto_detect_unset_distributed_params(
            None, None, None, None, None, int(timeout_s))
    except Exception as e:  # noqa: BLE001  (a node list it cannot parse, a missing variable, ...)
        raise InputError("--distributed", f"could not read the cluster's process list: {_first_line(e)}") from None
    if address is None or count is None or me is None:
        raise InputError("--distributed", "no cluster coordinator found: this process was not started by a cluster "
                                          "manager that jax detects (SLURM, Open MPI, Kubernetes, Cloud TPU); drop "
                                          "--distributed to run on this machine alone")
    if int(count) > 1:
        rendezvous(str(address), int(count), int(me), timeout_s)
    try:
        jax.distributed.initialize(initialization_timeout=max(1, int(round(timeout_s))))
    except (ValueError, RuntimeError) as e:  # a second initialisation, ...
        raise InputError("--distributed", f"could not join the cluster: {_first_line(e)}") from None


def rendezvous(address: str, count: int, me: int, timeout_s: float) -> None:
    """Every process of a job of ``count`` meets process 0 at ``address`` (its host, the coordinator's port + 1)
    within ``timeout_s`` seconds, or an InputError naming what is missing: the processes that never joined (on
    process 0), or a coordinator that never answered (on the others).

    Args:
        address: The coordinator's ``host:port``.
        count: The processes of the job.
        me: This process's id.
        timeout_s: The seconds to wait.

    Raises:
        InputError: Naming ``--distributed``.
    """
    import socket
    import time

    host, _, port = address.rpartition(":")
    where = (host.strip("[]"), int(port) + 1)
    deadline = time.monotonic() + timeout_s
    if me == 0:
        joined: dict[int, socket.socket] = {}
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                srv.bind(("", where[1]))
            except OSError as e:
                raise InputError("--distributed", f"process 0 cannot listen on port {where[1]} for the other "
                                                  f"processes: {e.strerror or e}") from None
            srv.listen(count)
            while len(joined) < count - 1 and (left := deadline - time.monotonic()) > 0:
                srv.settimeout(min(left, 1.0))
                try:
                    conn, _ = srv.accept()
                except (TimeoutError, socket.timeout):
                    continue
                conn.settimeout(max(deadline - time.monotonic(), 0.1))
                try:
                    joined[int(conn.recv(16).decode().strip() or -1)] = conn
                except (OSError, ValueError):
                    conn.close()
            missing = [k for k in range(1, count) if k not in joined]
            for conn in joined.values():
                with contextlib.suppress(OSError):
                    conn.sendall(b"go" if not missing else b"no")
                conn.close()
        if missing:
            shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
            raise InputError("--distributed", f"process{'es' if len(missing) > 1 else ''} {shown} of {count} never "
                                              f"joined within {timeout_s:g} s (--distributed-timeout): is every task "
                                              "of the job running jaxq run --distributed?")
        return
    while (left := deadline - time.monotonic()) > 0:
        try:
            with socket.create_connection(where, timeout=min(left, 2.0)) as conn:
                conn.sendall(f"{me}\n".encode())
                conn.settimeout(max(deadline - time.monotonic(), 0.1) + 5.0)  # process 0 answers at its deadline
                answer = conn.recv(2)
            if answer == b"go":
                return
            raise InputError("--distributed", f"process 0 at {where[0]} gave up: another process of the {count} "
                                              f"never joined within {timeout_s:g} s (--distributed-timeout)")
        except (ConnectionRefusedError, TimeoutError, socket.timeout, OSError) as e:
            if isinstance(e, InputError):
                raise
            time.sleep(min(0.5, max(deadline - time.monotonic(), 0.0)))
    raise InputError("--distributed", f"the coordinator, process 0 at {where[0]}:{where[1] - 1}, did not answer within "
                                      f"{timeout_s:g} s (--distributed-timeout): is its task running jaxq run "
                                      "--distributed?")


@contextlib.contextmanager
def stdout_to_stderr():
    """File descriptor 1 points to stderr inside the block (what native libraries write there too)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


# The printed tables show every column of the CSV tables: the columns that say which row it is first (repeated
# in every block of a table wider than the terminal), then the headline numbers, then the rest in the CSV's order.
KEYS = ("system", "policy", "policy_used", "engine", "criterion", "K", "kind", "mu2", "load", "theta_exponent",
        "switch_at", "n", "dt", "t", "seed")
HEADLINE = ("reps", "paths", "rel_se_target", "rel_se", "stopped_by", "J_hat", "J_hat_stderr", "V0", "gap",
            "sup_X_hat_p", "sup_X_hat_p_stderr",
            "excess_over_baseline", "excess_over_baseline_stderr", "V_limit", "ks", "ks_noise_95", "V_hat",
            "V_hat_stderr", "V_exact", "bias", "rate", "rate_stderr", "ks_rate", "weak_order", "q_L", "q_H", "cost",
            "threshold", "best_threshold_cost", "rel_gap", "simulated_cost", "simulated_cost_stderr",
            "simulation_agrees", "queue_hat", "queue_hat_stderr", "idleness_hat", "idleness_hat_stderr")


def table_columns(rows: list[dict]) -> list[str]:
    """The columns of a printed table: those that say which row it is (:data:`KEYS`), then the headline
    numbers (:data:`HEADLINE`), then the rest in the CSV's order.

    Args:
        rows: The table's rows.

    Returns:
        The columns.
    """
    from jaxq.api import table_columns

    cols = table_columns(rows)
    known = [c for c in KEYS + HEADLINE if c in cols]
    return known + [c for c in cols if c not in known]


def readable_rows(rows: list[dict]) -> list[dict]:
    """The rows with ``n`` shown as ``diffusion`` in the rows of the diffusion engine (whose ``n`` is None).

    Args:
        rows: The table's rows.

    Returns:
        The rows.
    """
    return [{**r, "n": "diffusion"} if r.get("engine") == "diffusion" and r.get("n") is None else r for r in rows]


def render(r: dict) -> str:
    """The report as text: the totals, every table, and the files written.

    Args:
        r: The result of :func:`run`.

    Returns:
        The lines of text.
    """
    r = to_jsonable(r)
    lines = [f"{r['experiment']} (study {r['study']}): {r['replications']} replications, {r['events']} events, "
             f"{r['chunks_computed']} chunks computed, {r['chunks_reused']} reused, {r['wall_s']:.1f} s"]
    width = max(80, shutil.get_terminal_size((120, 24)).columns)
    for name, rows in r["tables"].items():
        lines += ["", f"{name}:", format_table(readable_rows(rows), table_columns(rows), width=width, keys=KEYS)]
    lines += ["", f"wrote {len(r['files'])} files under {r['out']}/:"]
    lines += [f"  {Path(f).name}" for f in r["files"]]
    return "\n".join(lines)
