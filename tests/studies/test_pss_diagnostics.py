"""The diagnostics and the warning in the tables of ``jaxq run``'s 2x2 studies."""

import tomllib
from pathlib import Path

import numpy as np

from jaxq.studies import experiment as ex
from jaxq.studies import runner

RUN = """
[experiment]
study = "convergence"
systems = ["pss_T2", "pss_PP"]
replications = 48
chunk = 48
seeds = [5]
[grid]
n = [16, 1000]
engine = "auto"                # pss_T2 on the uniformised driver, pss_PP on the event driver
theta_rule = "paper"           # c = 1, under which pss_T2 at n = 10^3 is far above V0
"""


def test_summary_rows_carry_diagnostics_and_the_warning(tmp_path):
    exp = ex.from_dict(tomllib.loads(RUN), Path("/tmp/diag_run.toml"))
    rec = runner.run(exp, tmp_path / "out", progress=False)
    rows = {(r["system"], r["n"]): r for r in rec["tables"]["summary"]}
    for (system, n), r in rows.items():
        assert 0.0 <= r["idle_while_waiting_1"] <= 1.0 and 0.0 <= r["idle_while_waiting_2"] <= 1.0
        assert r["X_hat_p_mean"] > 0.0
        assert (r["switch_rate"] is not None) == (system == "pss_PP")  # the dual-mode example
        due = n >= 1000 and r["J_hat"] > 1.5 * r["V0"]
        assert (r["warning"] is not None) == due, (system, n, r["warning"])
    # pss_T2 at n = 10^3 is 51% above V0, which the limit's threshold term accounts for
    t2 = rows[("pss_T2", 1000)]
    assert t2["warning"] is not None and "threshold term Delta_n" in t2["warning"]
    assert rows[("pss_PP", 1000)]["warning"] is None
    header = (tmp_path / "out" / "summary.csv").read_text().splitlines()[0].split(",")
    assert {"idle_while_waiting_1", "X_hat_p_mean", "switch_rate", "warning"} <= set(header)
    records = (tmp_path / "out" / "records.csv").read_text().splitlines()[0].split(",")
    assert {"diag_idle_12", "diag_X_hat_p", "diag_mode_1", "diag_switch_rate"} <= set(records)
    assert np.isfinite([r["X_hat_p_mean"] for r in rows.values()]).all()
