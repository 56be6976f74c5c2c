"""A mistyped keyword to a public function is an InputError naming it and the closest valid keyword (difflib),
before any work: never Python's TypeError naming jaxq's internal functions."""

import pytest

import jaxq

CASES = {
    "simulate_2x2": (lambda: jaxq.simulate("pss_PP", 16, 8, swtich_at=1.0), "swtich_at", "switch_at"),
    "simulate_2x2_horizon": (lambda: jaxq.simulate("pss_PP", 16, 8, horizn=1.0), "horizn", "horizon"),
    "simulate_network": (lambda: jaxq.simulate("network_N", 16, 8, warmpu=1.0), "warmpu", "warmup"),
    "tune_exact": (lambda: jaxq.tune("pss_T2T1", z_inti=1.0), "z_inti", "z_init"),
    "tune_sde": (lambda: jaxq.tune("pss_T2T1", target="sde", pahts=10), "pahts", "paths"),
    "tune_prelimit": (lambda: jaxq.tune("pss_T2T1", target="prelimit", n=100, iteratons=2), "iteratons", "iterations"),
    "exact_cost": (lambda: jaxq.exact_cost("pss_PP", 4, max_state=10), "max_state", "max_states"),
    "optimal": (lambda: jaxq.optimal("pss_P", 4, queue_caps=10), "queue_caps", "queue_cap"),
    "simulate_sde": (lambda: jaxq.simulate_sde("pss_PP", pats=10), "pats", "paths"),
    "simulate_sde_internal_name": (lambda: jaxq.simulate_sde("pss_PP", scheme_name="euler"), "scheme_name", "scheme"),
    "simulate_network_sde": (lambda: jaxq.simulate_network_sde("network_N", snap=3), "snap", "snaps"),
    "simulate_fastslow": (lambda: jaxq.simulate_fastslow(1.0, 1.0, 0.5, (1, 2), stesp=10), "stesp", "steps"),
    "analyze": (lambda: jaxq.analyze("network_N", basis_pol=1), "basis_pol", "basis_pool"),
    "solve_fastslow": (lambda: jaxq.solve_fastslow(1.0, 1.0, 0.5, discont=0.1), "discont", "discount"),
    "read_run": (lambda: jaxq.read_run("x", complete=True), "complete", "complete_only"),
    "run_experiment": (lambda: jaxq.run_experiment("x.toml", "out", resum=True), "resum", "resume"),
    "threshold_term": (lambda: jaxq.threshold_term("pss_T2T1", 100, theta_exponen=0.4), "theta_exponen",
                       "theta_exponent"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_unknown_keyword_names_it_and_the_closest_valid_one(case):
    call, bad, good = CASES[case]
    with pytest.raises(jaxq.InputError) as e:
        call()
    assert e.value.key == bad and f"did you mean {good!r}" in e.value.reason, str(e.value)
    assert "jaxq." in e.value.reason  # names the public function, not an internal one


def test_a_keyword_close_to_nothing_lists_the_valid_ones():
    with pytest.raises(jaxq.InputError, match=r"valid: .*switch_at") as e:
        jaxq.simulate("pss_PP", 16, 8, qqqqqqqq=1)
    assert e.value.key == "qqqqqqqq"


def test_valid_options_still_pass():
    r = jaxq.simulate("pss_PP", 16, 8, switch_at=None, theta_exponent=0.4, horizon=1.0, chunk=4)
    assert r.value > 0 and r.info["horizon"] == 1.0
