"""``jaxq demo``: the analysis table of the six cases plus a convergence study, written to disk."""

import json
from pathlib import Path

from jaxq.cli import main
from jaxq.cli.demo import render


def test_demo_small_json(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--small", "--json", "--no-progress", "--out", str(out)]) == 0
    r = json.loads(capsys.readouterr().out)  # exactly one JSON object
    text = render(r)  # what the command prints without --json (one run of the study serves both)
    assert "The six cases of Theorem 2.11" in text and f"under {out}/" in text
    assert [row["policy"] for row in r["systems"]] == ["P", "T2", "PP", "T2T2", "T1T2", "T2T1"]
    s = r["study"]
    assert {row["system"] for row in s["summary"]} == {"pss_P", "pss_PP", "pss_T2T1"}
    for f in s["files"]:
        assert Path(f).is_file(), f
    assert {Path(f).name for f in s["figures"]} == {"J_n.png", "gap_loglog.png"}
    for row in s["summary"]:  # --small has a finite horizon: J is truncated, the threshold term does not apply
        assert row["threshold_term"] is None and row["residual"] is None
    # the written experiment file reruns the same study with `jaxq run` (resuming: nothing recomputed)
    assert main(["run", str(out / "demo.toml"), "--out", str(out), "--resume", "--json", "--no-progress"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["chunks_computed"] == 0
    assert [row["J_hat"] for row in again["tables"]["summary"]] == [row["J_hat"] for row in s["summary"]]

