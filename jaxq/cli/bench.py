"""``jaxq bench``: throughput of each simulator on this machine, side by side with its baselines.

The baselines (numba, Ciw) are loaded from ``benchmarks/baselines/`` of the repository checkout
(:mod:`jaxq.api.bench`); without them the jaxq rows are measured and the baseline columns stay empty.
"""

from __future__ import annotations

import json
import sys

from jaxq.api import InputError
from jaxq.cli import add_common
from jaxq.cli.output import format_table, to_jsonable


def register(sub) -> None:
    """Add the ``bench`` command to the subcommands.

    Args:
        sub (argparse._SubParsersAction): The subcommands of the ``jaxq`` parser.
    """
    p = sub.add_parser("bench", help="events per second of each engine beside Ciw and a numba baseline")
    p.add_argument("--quick", action="store_true", help="small sizes (about a minute)")
    p.add_argument("--only", default=None, help="comma-separated sections (default: all but verdict, which runs "
                                                "only when named: the time to a precision target beside a plain "
                                                "loop)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="also write the JSON result to FILE, rewritten atomically after every measured row "
                        "(an interrupted run keeps what it measured)")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> dict:
    """Measure the sections of ``args.only`` (default: those run by default), writing ``args.out`` after every row.

    Args:
        args (argparse.Namespace): The parsed command line.

    Returns:
        The result of :func:`jaxq.api.run_bench`.

    Raises:
        InputError: Naming ``--only`` for no section or an unknown one.
    """
    from jaxq.api import bench_parts, bench_sections, run_bench

    sections = None
    if args.only is not None:
        sections = [s.strip() for s in args.only.split(",") if s.strip()]
        if not sections:
            raise InputError("--only", f"no section named; choose from {bench_sections()}")
        unknown = [s for s in sections if s not in bench_sections()]
        if unknown:
            raise InputError("--only", f"unknown section(s) {unknown}; choose from {bench_sections()}")
    if sections is None or "pss2x2" in sections:  # its parts (an environment variable): refused before any run
        bench_parts()
    on_row = None
    if args.out is not None:  # checked before any measurement: a bad path must not cost the whole run
        from jaxq.api import check_output_file
        from jaxq.cli.output import write_atomic

        out = check_output_file(args.out, "--out")

        def on_row(result):  # columns keep the order in which a section reports them
            write_atomic(out, (json.dumps(to_jsonable(result), indent=1) + "\n").encode())
    from jaxq.cli.output import progress

    names = list(sections) if sections is not None else list(bench_sections(on_request=False))
    with progress(len(names), "bench", unit="sections") as done:  # estimate, then a line a minute (any stderr)
        started = []

        def section(name):  # called as each section starts: the previous one is done
            if started:
                done(1)
            started.append(name)
            print(f"bench: {name} ...", file=sys.stderr)

        return run_bench(sections, quick=args.quick, on_row=on_row, progress=section)


def render(r: dict) -> str:
    """The result as text: the machine, then each section's table.

    Args:
        r: The result of :func:`run`.

    Returns:
        The lines of text.
    """
    r = to_jsonable(r)
    m = r["machine"]
    lines = [f"machine: {m['processor']}, {m['cpu_count']} cpus, jax {m['jax']} on {m['backend']} ({m['device']} x{m['device_count']})"]
    if "baselines" in m:  # results written before the baselines left the package have no such key
        where = m["baselines"] or "none found (benchmarks/baselines of a checkout, or $JAXQ_BASELINES)"
        lines.append(f"baselines: {where} (numba {m.get('numba') or 'not installed'}, "
                     f"ciw {m.get('ciw') or 'not installed'})")
    for name, sec in r["sections"].items():
        lines.append(f"\n[{name}]  ({sec['wall_s']:.1f} s, peak RSS {sec['peak_rss_mb']:.0f} MB)")
        lines.append(format_table(sec["rows"], digits=3))
        bad = [row for row in sec["rows"] if isinstance(row.get("z"), (int, float)) and abs(row["z"]) > 4]
        if bad:  # two runs of one estimand that disagree: a bug in one of them, never noise
            lines.append(f"WARNING: {len(bad)} row(s) whose estimates disagree by more than 4 combined standard "
                         "errors: " + "; ".join(f"{row.get('dist')} n={row.get('n')} reps={row.get('reps')} "
                                                 f"z={row['z']:.1f}" for row in bad))
    return "\n".join(lines)
