"""The README's performance table from a ``jaxq bench --json`` result: one line per model and baseline.

``python -m jaxq.bench.report RESULT.json`` prints a markdown table: for every jaxq configuration that
has a baseline measured beside it (numba, Ciw), the jaxq rate, the baseline's rate and their ratio,
taken at the largest number of replications (or paths) measured (the 2x2 system: every size from 10^4
replications on, one row per family in all six streams, and the effective rate of the controlled run:
events/s times the variance reduction of the control variates); jaxq rows without a baseline follow
with the baseline cell empty. Rates are those of the file (medians of repeats); nothing is re-measured.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RATE_KEYS = ("events_per_s", "path_steps_per_s", "updates_per_s")
METHODS = {"gammahalf": "as Erlang + Z^2/2", "gamma": "step envelope"}  # jaxq.sim.sampling; else "as <method>"
UNITS = {"events_per_s": "ev/s", "path_steps_per_s": "path-steps/s", "updates_per_s": "updates/s"}


def _rate(row: dict) -> tuple[str, float | None]:
    for k in RATE_KEYS:
        if k in row:
            return k, row[k]
    raise KeyError(f"row without a rate: {sorted(row)}")


def _num(v) -> str:
    """3 significant digits, exponent without padding (``1.3e8``); ``x`` ratios as ``1.4x``."""
    if v is None:
        return ""
    if 0.1 <= abs(v) < 1000:
        return f"{v:.3g}"
    m, e = f"{v:.2e}".split("e")
    return f"{float(m):.3g}e{int(e)}"


def _reps(row: dict) -> int:
    return int(row.get("reps") or row.get("paths") or 1)


def _largest(rows: list[dict], key) -> list[dict]:
    """For every group ``key(row)``, the rows with that group's largest replication count."""
    best: dict = {}
    for r in rows:
        best[key(r)] = max(best.get(key(r), 0), _reps(r))
    return [r for r in rows if _reps(r) == best[key(r)]]


def _count(k: int) -> str:
    """``10^4`` for powers of ten from 100 on, the number itself otherwise."""
    e = len(str(k)) - 1
    return f"10^{e}" if k >= 100 and k == 10**e else str(k)


def _label(section: str, row: dict) -> str:
    """What was measured, in words a reader of the README recognises."""
    reps = _count(_reps(row))
    if section == "pss2x2":
        # engine "jaxq.sim.pss2x2[uniformized]" (results before the engine redesign: "jaxq.sim.pss2x2_ctmc")
        kind = "uniformised engine" if row["engine"].endswith(("[uniformized]", "_ctmc")) else "event engine"
        part = row.get("part")
        if part == "families":  # one family in all six streams; the sampling method where it is not the family
            method = row.get("method")
            name = row["dist"].split(":")[0]
            how = f" ({METHODS.get(method, 'as ' + str(method))})" if method and (method != name or method in METHODS) else ""
            return f"2x2 system, {row['dist']}{how} in all six streams, n = {row['n']}, {reps} reps, {kind}"
        if part == "effective":
            vr = row.get("variance_reduction")
            return (f"2x2 system, {row['dist']}, n = {row['n']}, {reps} reps, {kind} with control variates: effective "
                    f"ev/s = {_num(row['events_per_s'])} ev/s x variance reduction {_num(vr)}")
        return f"2x2 system, {row['dist']}, n = {row['n']}, {reps} reps, {kind}"
    if section == "mmc":
        model = "M/M/c" if row["engine"] == "mmc" else "two-class priority M/M/c"
        model += f" (n = {row['n']})"
        return f"{model}, {reps} reps"
    if section == "network":
        return f"N network, {row['engine'].split('[')[1].rstrip(']')}, n = {row['n']}, {reps} reps"
    if section == "sde":
        return f"reflected SDE, {row['scheme']} scheme, {reps} paths"
    if section == "fastslow":
        what = "value iteration" if row["engine"] == "fastslow_vi" else "CTMC"
        return f"fast/slow {what}, {row['size']} {'states' if what == 'value iteration' else 'steps'}, {reps} reps"
    if section == "optimal":
        return (f"optimum J*_n of the 2x2 system ({row['system']}), n = {row['n']}, policy iteration, "
                f"{row['states']:,} states")
    return f"{section}: {row.get('engine', '')}"


def headline(result: dict) -> list[dict]:
    """Rows ``{model, jaxq, unit, baseline, ratio}`` (baseline, ratio None where absent) from a bench result.

    A baseline row's ``jaxq_ratio`` is (jaxq rate) / (its rate) for one jaxq row of the same model: that
    row is the one whose rate it reproduces (to rounding), so the pairing needs no knowledge of row order.

    Args:
        result: The result of ``jaxq bench --json``.

    Returns:
        The rows.
    """
    out = []
    for section, sec in result["sections"].items():
        rows = sec["rows"]
        if section == "pss2x2":  # baseline columns inline; 10^4 replications (the target) and more
            most = {}
            for r in rows:
                g = (r["engine"], r["dist"], r["n"])
                most[g] = max(most.get(g, 0), _reps(r))
            for r in (r for r in rows if _reps(r) >= min(10_000, most[(r["engine"], r["dist"], r["n"])])):
                base = r.get("baseline_events_per_s")
                effective = r.get("part") == "effective"
                rate = r.get("effective_events_per_s") if effective else r["events_per_s"]
                out.append({"model": _label(section, r), "jaxq": rate, "unit": "ev/s",
                            "baseline": f"numba, all cores: {_num(base)}" if base else None,
                            "ratio": r.get("effective_ratio") if effective else r.get("ratio")})
            continue
        group = {"network": lambda r: (r["engine"], r["n"]), "mmc": lambda r: (r["engine"], r["n"]),
                 "sde": lambda r: (r["scheme"],), "optimal": lambda r: (r["engine"], r["n"])}.get(
            section, lambda r: (r.get("engine"),))
        rows = _largest(rows, lambda r: group(r) + (r.get("impl"),))
        ours = [r for r in rows if r.get("impl", "jaxq").startswith("jaxq")]
        paired = set()
        for r in rows:
            if r in ours:
                continue
            name, rate = _rate(r)
            ratio = r.get("jaxq_ratio")
            if ratio is None or not rate:
                continue
            target = ratio * rate
            match = [k for k, j in enumerate(ours) if group(j) == group(r) and _rate(j)[1]
                     and abs(_rate(j)[1] - target) <= 1e-9 * target]
            if not match:
                continue
            j = ours[match[0]]
            paired.add(match[0])
            out.append({"model": f"{_label(section, j)}, {j['impl']}", "jaxq": _rate(j)[1], "unit": UNITS[name],
                        "baseline": f"{r['impl']}: {_num(rate)}", "ratio": ratio})
        for k, j in enumerate(ours):
            name, rate = _rate(j)
            if k not in paired and rate:
                out.append({"model": f"{_label(section, j)}, {j['impl']}", "jaxq": rate, "unit": UNITS[name],
                            "baseline": None, "ratio": None})
    return out


def markdown(result: dict) -> str:
    """The table, with the machine it was measured on.

    Args:
        result: The result of ``jaxq bench --json``.

    Returns:
        The markdown text.
    """
    m = result["machine"]
    lines = [f"Measured on {m.get('device', '?')} ({m.get('backend', '?')}, {m.get('cpu_count', '?')} host CPUs, "
             f"jax {m.get('jax', '?')}).", "",
             "| model | jaxq | baseline (same run) | jaxq / baseline |", "|---|---|---|---|"]
    for h in headline(result):
        ratio = f"{_num(h['ratio'])}x" if h["ratio"] is not None else ""
        lines.append(f"| {h['model']} | {_num(h['jaxq'])} {h['unit']} | {h['baseline'] or ''} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxq.bench.report RESULT.json``: print the markdown table of a result.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``): the result file.

    Returns:
        The exit status (2: a usage error or a file that cannot be read).
    """
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m jaxq.bench.report RESULT.json", file=sys.stderr)
        return 2
    try:
        result = json.loads(Path(args[0]).read_text())
    except (OSError, json.JSONDecodeError) as e:
        print(f"jaxq.bench.report: error: {args[0]}: {e}", file=sys.stderr)
        return 2
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
