"""jaxq.bench.sizes: the tiny dry run and the accelerator grid."""

from jaxq.bench import sizes


def test_tiny_switch_shrinks_every_size(monkeypatch):
    full = sizes.grid(False)
    monkeypatch.setenv("JAXQ_BENCH_TINY", "1")
    assert sizes.tiny()
    small = sizes.grid(False)
    assert set(small) == set(full)
    assert small["target_events"] < full["target_events"] and small["mmc_reps"] < full["mmc_reps"]
    assert max(small["pss2x2_ctmc_reps"]) < max(full["pss2x2_ctmc_reps"])
    assert max(small["pss2x2_family_reps"]) < max(full["pss2x2_family_reps"]) == 10**4
    monkeypatch.setenv("JAXQ_BENCH_TINY", "0")
    assert sizes.grid(False) == full


def test_accelerator_grid_caps_the_events_of_one_replication(monkeypatch):
    monkeypatch.setattr(sizes.jax, "default_backend", lambda: "gpu")
    for quick in (True, False):
        g = sizes.grid(quick)
        assert g["rep_events"] is not None and g["rep_events"] <= 1e5
        assert max(g["pss2x2_ctmc_reps"]) >= 10**6 and g["mmc_reps"] >= 10**5
        assert max(g["pss2x2_family_reps"]) == 10**6  # the event engine per family at 10^4-10^6 replications
        assert g["pss2x2_mixed_reps"] == (10**6,)  # the mixed-primitive systems at the largest size only
    monkeypatch.setattr(sizes.jax, "default_backend", lambda: "cpu")
    assert sizes.grid(False)["rep_events"] is None and max(sizes.grid(False)["pss2x2_ctmc_reps"]) == 10**5
