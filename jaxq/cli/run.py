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


def register(sub) -> None:
    from jaxq.api import arg_type

    p = sub.add_parser("run", help="run a study from an experiment file (resumable, sharded over devices)")
    p.add_argument("experiment", help="experiment file (TOML, see experiments/)")
    p.add_argument("--out", default=None, help="output directory (default: results/<experiment name>)")
    p.add_argument("--resume", action="store_true", help="keep finished chunks of an interrupted run")
    p.add_argument("--devices", type=arg_type("int", lo=1, hi=1 << 20), default=None, help="use the first K local devices (default: all)")
    p.add_argument("--distributed", action="store_true",
                   help="call jax.distributed.initialize() (SLURM etc. auto-detected) and split chunks over processes")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--seed", type=arg_type("seed"), default=None,
                   help="run with this seed in [0, 2^32) instead of the file's seeds")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> dict | None:
    import jax

    from jaxq.api import check_output_folder, load_experiment, run_study

    if args.out is not None and not args.out.strip():
        raise InputError("--out", f"is empty ({args.out!r}); name an output folder (default: "
                                  "results/<experiment name>)")
    if args.distributed:
        try:  # cross-process barriers on CPU hosts need gloo; GPU and TPU backends ignore this option
            jax.config.update("jax_cpu_collectives_implementation", "gloo")
        except (AttributeError, ValueError):
            pass
        initialize_distributed()
    seeds = None if args.seed is None else [check_seed(args.seed, "--seed")]
    from jaxq.cli.output import progress

    with progress(None, "run: checking the experiment file", unit="points"):  # a large grid takes a while
        exp = load_experiment(args.experiment, seeds)  # validates everything before anything is written
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
    }


def initialize_distributed() -> None:
    """``jax.distributed.initialize()``: coordinator, process count and id from the cluster manager (SLURM, Open
    MPI, ...); a process not started by one, or a coordinator that cannot be reached, is an InputError naming
    ``--distributed`` (one line, exit 2) instead of JAX's exception."""
    import jax

    try:
        jax.distributed.initialize()
    except ValueError as e:  # no cluster detected and no coordinator address given
        raise InputError("--distributed", "no cluster coordinator found: this process was not started by a "
                                          "cluster manager that jax detects (SLURM, Open MPI, Kubernetes, Cloud "
                                          "TPU); drop --distributed to run on this machine alone "
                                          f"(jax: {_first_line(e)})") from None
    except RuntimeError as e:  # a coordinator that does not answer, a second initialisation, ...
        raise InputError("--distributed", f"could not join the cluster: {_first_line(e)}") from None


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
HEADLINE = ("reps", "paths", "J_hat", "J_hat_stderr", "V0", "gap", "sup_X_hat_p", "sup_X_hat_p_stderr",
            "excess_over_baseline", "excess_over_baseline_stderr", "V_limit", "ks", "ks_noise_95", "V_hat",
            "V_hat_stderr", "V_exact", "bias", "rate", "rate_stderr", "ks_rate", "weak_order", "q_L", "q_H", "cost",
            "threshold", "best_threshold_cost", "rel_gap", "simulated_cost", "simulated_cost_stderr",
            "simulation_agrees", "queue_hat", "queue_hat_stderr", "idleness_hat", "idleness_hat_stderr")


def table_columns(rows: list[dict]) -> list[str]:
    """Every column of a table (as its CSV has them), the keys and headline numbers first."""
    from jaxq.api import table_columns

    cols = table_columns(rows)
    known = [c for c in KEYS + HEADLINE if c in cols]
    return known + [c for c in cols if c not in known]


def readable_rows(rows: list[dict]) -> list[dict]:
    """Rows as printed: the network study's diffusion rows (no ``n``, an empty cell in the CSV) say so."""
    return [{**r, "n": "diffusion"} if r.get("engine") == "diffusion" and r.get("n") is None else r for r in rows]


def render(r: dict) -> str:
    r = to_jsonable(r)
    lines = [f"{r['experiment']} (study {r['study']}): {r['replications']} replications, {r['events']} events, "
             f"{r['chunks_computed']} chunks computed, {r['chunks_reused']} reused, {r['wall_s']:.1f} s"]
    width = max(80, shutil.get_terminal_size((120, 24)).columns)
    for name, rows in r["tables"].items():
        lines += ["", f"{name}:", format_table(readable_rows(rows), table_columns(rows), width=width, keys=KEYS)]
    lines += ["", f"wrote {len(r['files'])} files under {r['out']}/:"]
    lines += [f"  {Path(f).name}" for f in r["files"]]
    return "\n".join(lines)
