"""The network studies and benchmark run at small size."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _load(rel: str):
    spec = importlib.util.spec_from_file_location(rel.replace("/", "_")[:-3], ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tightness_small(tmp_path):
    rows = _load("experiments/network_tightness.py").main(["--small", "--out", str(tmp_path)])
    assert (tmp_path / "network_tightness.png").is_file() and (tmp_path / "network_tightness.csv").is_file()
    assert {r["network"] for r in rows} == {"N", "M"} and all(np.isfinite(r["mean_queue_hat"]) for r in rows)


def test_transience_small(tmp_path):
    rows = _load("experiments/network_transience.py").main(["--small", "--out", str(tmp_path)])
    assert rows[0]["spare_capacity"] < 0 and (tmp_path / "network_transience.png").is_file()
    ctmc = [r["sum_x_hat"] for r in rows if r["source"] == "ctmc n=100"]
    assert ctmc[-1] > ctmc[0]  # the total grows when rho < 0


def test_lap_concentration_small(tmp_path):
    res = _load("experiments/network_lap_concentration.py").main(["--small", "--out", str(tmp_path)])
    assert np.isfinite(res["exponent"]) and (tmp_path / "network_lap_concentration.png").is_file()


def test_bench_quick():
    rows = list(importlib.import_module("jaxq.bench.network").bench(quick=True))
    ours = [r for r in rows if r["impl"].startswith("jaxq")]  # numba rows are empty without numba
    assert ours and all(r["events_per_s"] > 0 and {"engine", "n", "reps", "compile_s"} <= set(r) for r in ours)


def test_diffusion_compare_small(tmp_path):
    rows = _load("experiments/network_diffusion_compare.py").main(["--small", "--out", str(tmp_path)])
    assert rows[0]["source"] == "diffusion" and len(rows) == 3
