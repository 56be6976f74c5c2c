"""Random 2x2 systems (jaxq.studies.random_draw), the random_systems study's grid, and the threshold rules."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from jaxq.errors import InputError
from jaxq.model.distributions import Dist
from jaxq.policies import pss2x2 as pol
from jaxq.policies import thresholds
from jaxq.studies.random_draw import CASES, FAMILIES, SCV_RANGE, draw, draw_system
from jaxq.sim import pss2x2 as PT

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def drawn():
    return draw(0, 3)


def test_every_system_satisfies_assumption_2_2(drawn):
    """EHTC (rho* = sum lambda_i / alpha_i = 1), product form (multiple LP solutions), nondegeneracy."""
    for d in drawn:
        s, md = d.system, d.analysis.modes
        alpha = s.mu.sum(axis=1)
        beta = s.mu[0] / s.mu[0].sum()
        assert np.allclose(np.outer(alpha, beta), s.mu, rtol=1e-12)  # mu_11 mu_22 = mu_12 mu_21
        assert math.isclose(float(np.sum(s.lam / alpha)), 1.0, rel_tol=1e-12)
        assert math.isclose(md.rho_star, 1.0, rel_tol=1e-9)
        # every LP solution lies on the segment between the two modes: they differ (multiplicity)
        assert not np.allclose(md.xi[0], md.xi[1])
        for i in range(2):
            for k in range(2):
                assert abs(s.lam[i] - s.mu[i, k]) >= 0.04 * alpha[i]  # lambda_i != mu_ik with the draw's margin
        for n in (2.0, 100.0):  # every rate of the n-th system is positive
            lam_n, mu_n = s.rates(n)
            assert np.all(lam_n > 0) and np.all(mu_n > 0)


def test_primitives_within_the_families_and_scv_range(drawn):
    seen = set()
    for d in drawn:
        laws = list(d.system.interarrival) + [x for row in d.system.service for x in row]
        for law in laws:
            assert law.name in FAMILIES
            assert SCV_RANGE[0] - 1e-12 <= law.scv <= SCV_RANGE[1] + 1e-12
            seen.add(law.name)
    assert seen == set(FAMILIES)  # 18 systems x 6 streams: every family drawn


def test_every_case_is_hit_with_its_policy(drawn):
    by_case = {c: [d for d in drawn if d.case == c] for c in CASES}
    for case, ds in by_case.items():
        assert len(ds) == 3
        for d in ds:
            an = d.analysis
            assert an.policy == case
            assert an.case == ("single" if case in ("P", "T2") else "dual")
            if case in ("PP", "T2T2"):
                assert an.modes.switching == "server"
            if case in ("T1T2", "T2T1"):
                assert an.modes.switching == "class"
            h, alpha = d.system.h, an.modes.alpha
            assert h[an.p] * alpha[an.p] > h[an.q] * alpha[an.q]  # the HPC (2.12) without a tie
            if an.case == "dual":  # (2.20): the higher mode has the smaller drift and the larger sigma
                assert an.b[an.higher] < an.b[an.lower] and an.sigma[an.higher] > an.sigma[an.lower]
                # dual mode needs unequal service SCVs (Lemma B.1)
                assert len({x.scv for row in d.system.service for x in row}) > 1


def test_same_seed_same_set_and_more_systems_keep_the_first():
    a = draw_system(5, "T2T1", 1).system.to_dict()
    assert draw_system(5, "T2T1", 1).system.to_dict() == a
    assert draw_system(6, "T2T1", 1).system.to_dict() != a
    draw.cache_clear()
    first = [d.system.to_dict() for d in draw(5, 1)]
    draw.cache_clear()
    again = [d.system.to_dict() for d in draw(5, 2) if d.index == 0]
    assert first == again


def test_unknown_case_is_refused():
    with pytest.raises(InputError, match="case"):
        draw_system(0, "T1T1", 0)


def test_theta_rule_constants(drawn):
    """paper: c = 1; scv: c = 1 when every primitive is exponential; depth: the closed form of its docstring."""
    for d in drawn:
        res = pol.resolve(d.analysis, "auto", None)
        assert thresholds.theta_rule_constant("paper", d.analysis, res) == 1.0
        c_scv = thresholds.theta_rule_constant("scv", d.analysis, res)
        c_depth = thresholds.theta_rule_constant("depth", d.analysis, res)
        if not pol.uses_threshold(res.rules):
            assert c_scv == c_depth == 1.0
            continue
        s, md = d.system, d.analysis.modes
        t2 = [m for m, r in ((res.lower, res.rules.lower), (res.higher, res.rules.higher)) if r == pol.RULE_T2]
        want_scv, want_depth = [], []
        for m in t2:
            p, k1 = md.i2[m], md.k1[m]
            assert md.xi[m][p, k1] == 1.0 and s.lam[p] > s.mu[p, k1]  # k1 dedicated to p, p's queue grows
            var = s.lam[p] * s.ca2[p] + s.mu[p, k1] * s.cs2[p, k1]
            want_scv.append(var / (s.lam[p] + s.mu[p, k1]))
            want_depth.append(var / (2 * (s.lam[p] - s.mu[p, k1])))
        assert math.isclose(c_scv, max(want_scv), rel_tol=1e-12)
        assert math.isclose(c_depth, max(want_depth), rel_tol=1e-12)
        exp_sys = type(s)(lam=s.lam, mu=s.mu, lambda_hat=s.lambda_hat, mu_hat=s.mu_hat, h=s.h, gamma=s.gamma,
                          service=((Dist("exponential", 1.0),) * 2,) * 2)
        from jaxq.diffusion.workload import analyze

        an = analyze(exp_sys)
        if an.policy == d.analysis.policy:
            assert math.isclose(thresholds.theta_rule_constant("scv", an, pol.resolve(an, "auto", None)), 1.0)
    with pytest.raises(InputError, match="theta_rule"):
        thresholds.theta_rule_constant("large", drawn[0].analysis, pol.resolve(drawn[0].analysis, "auto", None))


def test_case_rule_scales_root_by_the_kind_of_policy(drawn):
    """case: root's constant x 0.4 under T1T2/T2T1, x 1.3 under T2, x 1 under T2T2; 1 without a threshold."""
    want = {"T1T2": 0.4, "T2T1": 0.4, "T2": 1.3, "T2T2": 1.0}
    seen = set()
    for d in drawn:
        res = pol.resolve(d.analysis, "auto", None)
        c = thresholds.theta_rule_constant("case", d.analysis, res)
        if not pol.uses_threshold(res.rules):
            assert c == 1.0
            continue
        root = thresholds.theta_rule_constant("root", d.analysis, res)
        assert math.isclose(c, want[res.name] * root, rel_tol=1e-12), (d.label, res.name)
        seen.add(res.name)
    assert seen == set(want)


def test_setup_uses_the_rule(drawn):
    from jaxq.sim.pss2x2 import setup

    d = next(d for d in drawn if d.case == "T2T2")
    res = pol.resolve(d.analysis, "auto", None)
    c = thresholds.theta_rule_constant("depth", d.analysis, res)
    for n in (100.0, 1e4):
        st = setup(d.system, n, analysis=d.analysis,
                   levels=PT.Levels(theta_exponent=0.4, theta_rule="depth"))
        assert st.theta == math.ceil(c * n**0.4 - 1e-9)
        assert setup(d.system, n, analysis=d.analysis,
                     levels=PT.Levels(theta_exponent=0.4, theta_rule="paper")).theta == math.ceil(
            n**0.4 - 1e-9)
        root = thresholds.theta_rule_constant("root", d.analysis, res)
        assert setup(d.system, n, analysis=d.analysis,
                     levels=PT.Levels(theta_exponent=0.4, theta_rule="root")).theta == math.ceil(root * n**0.4 - 1e-9)
        # the default rule (excursion) picks Theta_n itself: the exponent does not change it
        from jaxq.policies import excursion
        found = excursion.levels(d.analysis, res, n)
        st = setup(d.system, n, analysis=d.analysis, levels=PT.Levels(theta_exponent=0.4))
        assert (st.theta, st.switch_at) == (found.theta, pytest.approx(found.z))


def test_experiment_files_validate_and_list_their_points():
    from jaxq.studies.experiment import load_experiment
    from jaxq.studies.random_systems import subset_of

    exp = load_experiment(ROOT / "experiments" / "random_systems_cpu.toml")
    pts = exp.points
    systems = {p["rsystem"] for p in pts}
    assert len(systems) == 24 and {p["case"] for p in pts} == set(CASES)
    rules = exp.grid.rules
    for p in pts:  # threshold-free policies (P, PP) run once per n, the others once per rule
        assert p["rule"] == rules[0] or p["case"] not in ("P", "PP")
    assert len(pts) == 8 * 3 + 16 * 3 * len(rules)
    assert len(set(exp.point_digests())) == len(pts)
    assert subset_of(exp) == []


def test_bad_rules_are_refused(tmp_path):
    from jaxq.studies.experiment import load_experiment

    base = ('[experiment]\nstudy = "random_systems"\nreplications = 4\n[grid]\nper_case = 1\ncases = ["P"]\n'
            'n = [100]\n')
    for rules, match in (('["paper"]', "RULE@EXPONENT"), ('["depth*0@0.4"]', "positive"),
                         ('["big@0.4"]', "unknown rule"),
                         ('["scv@1.5"]', r"\[0, 1\]")):
        f = tmp_path / "e.toml"
        f.write_text(base + f"rules = {rules}\n")
        with pytest.raises(InputError, match=match) as e:
            load_experiment(f)
        assert e.value.key == "grid.rules"
    f.write_text(base + 'subset_n = [1000]\n')
    with pytest.raises(InputError) as e:
        load_experiment(f)
    assert e.value.key == "grid.subset_size"


def test_lean_rule_is_an_eighth_of_the_depth(drawn):
    for d in drawn:
        res = pol.resolve(d.analysis, "auto", None)
        lean = thresholds.theta_rule_constant("lean", d.analysis, res)
        if pol.uses_threshold(res.rules):
            assert lean == thresholds.LEAN_FACTOR * thresholds.theta_rule_constant("depth", d.analysis, res)
        else:
            assert lean == 1.0


def test_subset_is_stratified_and_gets_its_replications(tmp_path):
    from jaxq.studies.experiment import load_experiment

    f = tmp_path / "e.toml"
    f.write_text('[experiment]\nstudy = "random_systems"\nreplications = 4\nchunk = 4\n[grid]\nper_case = 2\n'
                 'n = [100]\nsubset_n = [1000]\nsubset_size = 6\nreplications_at = {"1000" = 6}\n')
    exp = load_experiment(f)
    big = [p for p in exp.points if p["n"] == 1000]
    assert sorted(p["case"] for p in big) == sorted(CASES)  # one system of each case
    assert all(p["reps"] == 6 for p in big) and len(exp.points) == 12 + 6


def test_tuned_points_are_stratified_over_the_cases_with_something_to_tune(tmp_path):
    from jaxq.studies.experiment import load_experiment
    from jaxq.studies.random_systems import TUNABLE_CASES, TUNED

    f = tmp_path / "e.toml"
    f.write_text('[experiment]\nstudy = "random_systems"\nreplications = 4\nchunk = 4\n[grid]\nper_case = 2\n'
                 'n = [100]\ntuned_n = [100, 1000]\ntuned_size = 5\ntune_reps = 8\n')
    exp = load_experiment(f)
    tuned = [p for p in exp.points if p["rule"] == TUNED]
    assert len(tuned) == 5 * 2 and all(p["tune_reps"] == 8 for p in tuned)
    for n in (100, 1000):  # one system of each tunable case at each n (P has nothing to tune)
        assert sorted(p["case"] for p in tuned if p["n"] == n) == sorted(TUNABLE_CASES)
    assert load_experiment(f).points == exp.points  # the subset is a function of the draw's seed
    f.write_text(f.read_text().replace("tuned_size = 5", "tuned_size = 0"))
    with pytest.raises(InputError, match="grid.tuned_size"):
        load_experiment(f)
    f.write_text(f.read_text().replace("tuned_size = 0", "tuned_size = 11"))
    with pytest.raises(InputError, match="grid.tuned_size"):  # 10 tunable systems drawn
        load_experiment(f)


def test_convergence_shares_count_j_rising_to_v0_from_below():
    """J_n below V0 at 10^3 rising to V0 at 10^4 is not 'non-increasing' but its distance to V0 shrinks; J_n moving
    away from V0 is neither; equal within the interval is both."""
    from jaxq.studies.random_systems import _gap_nonincreasing, _nonincreasing

    def pt(j, se=0.01):
        return {"J_hat": j, "J_hat_stderr": se, "V0": 1.0}

    assert not _nonincreasing(pt(0.90), pt(0.99)) and _gap_nonincreasing(pt(0.90), pt(0.99))
    assert not _nonincreasing(pt(1.40), pt(1.60)) and not _gap_nonincreasing(pt(1.40), pt(1.60))
    assert _nonincreasing(pt(1.20), pt(1.21)) and _gap_nonincreasing(pt(1.20), pt(1.21))
    assert not _gap_nonincreasing(pt(0.97), pt(1.10))  # overshoots V0 by more than it was below


def test_the_points_carry_the_levels_of_their_rule(tmp_path, monkeypatch):
    """A point's digest sees the threshold and switching level its rule gives (the excursion rule computes them), so
    chunks computed under other levels are never reused."""
    from jaxq.policies import excursion
    from jaxq.studies.experiment import load_experiment

    f = tmp_path / "e.toml"
    f.write_text('[experiment]\nstudy = "random_systems"\nreplications = 4\n[grid]\nper_case = 1\ncases = ["T2T1"]\n'
                 'n = [1000]\nrules = ["excursion@0.34", "root@0.34"]\n')
    exp = load_experiment(f)
    exc, root = exp.points
    d = draw_system(0, "T2T1", 0)
    res = pol.resolve(d.analysis, "auto", None)
    found = excursion.levels(d.analysis, res, 1000.0)
    assert (exc["theta"], exc["switch_at"]) == (found.theta, pytest.approx(found.z))
    assert root["switch_at"] == pytest.approx(d.analysis.z_star) and exc["switch_at"] != root["switch_at"]
    before = exp.point_digests()
    # other levels from the model (as after a change to it): the excursion point's digest changes, root's does not
    monkeypatch.setattr(excursion, "levels", lambda *a, **k: found._replace(theta=found.theta + 1))
    after = load_experiment(f).point_digests()
    assert after[0] != before[0] and after[1] == before[1]
