"""Smoke tests of the fast/slow experiments and benchmark at small size."""

import importlib.util
import os


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(rel):
    spec = importlib.util.spec_from_file_location(rel.replace("/", "_")[:-3], os.path.join(ROOT, rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_map_small(tmp_path):
    rows = _load("experiments/fastslow_map.py").run(small=True, out=str(tmp_path))
    assert len(rows) == 18 and all(r["threshold_structure"] and r["q_L"] <= r["q_H"] for r in rows)
    assert (tmp_path / "fastslow_map.csv").exists() and (tmp_path / "fastslow_map.png").stat().st_size < 200_000


def test_kslow_small(tmp_path):
    mod = _load("experiments/fastslow_kslow.py")
    rows = mod.run(small=True, out=str(tmp_path))
    assert all(r["pi_agrees"] for r in rows) and all(r["gap"] >= 0 for r in rows)
    assert (tmp_path / "fastslow_kslow.csv").exists()


def test_bench_rows():
    rows = list(importlib.import_module("jaxq.bench.fastslow").bench(quick=True))  # a generator: read it once
    assert {r["engine"] for r in rows} == {"fastslow_vi", "fastslow_ctmc"}
    ours = [r for r in rows if r["impl"].startswith("jaxq")]  # numba rows are empty without numba
    assert len(ours) == 2
    for r in ours:
        assert set(r) >= {"engine", "size", "reps", "updates_per_s", "compile_s"} and r["updates_per_s"] > 0
