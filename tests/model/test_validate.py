"""The validation layer and the numerics that hold at any scale.

Every numeric fix is checked against an independent value: a 50-80 digit mpmath solution of the
HJB's linear system, the time-scaling identity of the 2x2 system, or the unscaled system itself.
"""

import dataclasses
import math
import time

import numpy as np
import pytest

from jaxq.cli import main
from jaxq.diffusion import hjb
from jaxq.diffusion.workload import analyze
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.model import load
from jaxq.model import validate as v
from jaxq.model.network import from_dict as network_from_dict
from jaxq.model.pss2x2 import from_dict as pss_from_dict
from jaxq.planning.modes import modes

PP = path("pss_PP").read_text()
EXAMPLES_2X2 = ["pss_P", "pss_T2", "pss_PP", "pss_T2T2", "pss_T1T2", "pss_T2T1"]


# ----------------------------------------------------------------------------------- files and types
@pytest.mark.parametrize(
    "data, needle",
    [
        (PP.replace("PP policy", "PP polic\u00e9").encode("latin-1"), "not a UTF-8 text file"),
        (PP.encode("utf-16"), "not a UTF-8 text file"),
        (bytes(range(256)) * 2, "not a UTF-8 text file"),
        ((PP + "\n[extra]\nx = " + "[" * 500 + "]" * 500 + "\n").encode(), "nested too deeply"),
        (PP.replace("h = [1.0, 1.0]", "h = " + "[" * 500 + "]" * 500).encode(), "nested too deeply"),
        (b"[system]\nkind = \n", "not valid TOML"),
        (b"x" * (v.MAX_FILE_BYTES + 10), "too large"),
    ],
)
def test_unreadable_files_are_one_input_error(tmp_path, data, needle):
    f = tmp_path / "bad.toml"
    f.write_bytes(data)
    with pytest.raises(InputError, match=needle) as e:
        load(f)
    assert e.value.key == str(f) and "\n" not in str(e.value)


def test_utf8_byte_order_mark_is_accepted(tmp_path):
    f = tmp_path / "bom.toml"
    f.write_bytes(b"\xef\xbb\xbf" + PP.encode())
    assert load(f).gamma == 0.5


@pytest.mark.parametrize(
    "old, new, key",
    [
        ("gamma = 0.5", "gamma = true", "cost.gamma"),
        ("gamma = 0.5", 'gamma = "0.5"', "cost.gamma"),
        ("lambda = [0.7, 0.6]", 'lambda = ["0.7", "0.6"]', "system.lambda.0"),
        ("lambda = [0.7, 0.6]", "lambda = [true, 0.6]", "system.lambda.0"),
        ("gamma = 0.5", "gamma = 0.5\n[extra]\nx = 1", "extra"),
        ("h = [1.0, 1.0]", "h = [1e300, 1.0]", "cost.h.0"),
        ("lambda_hat = [-1.0, 0.0]", "lambda_hat = [-1.0, 1e300]", "system.lambda_hat.1"),
        ("mu_hat = [[1.0, 0.5], [1.0, 0.5]]", "mu_hat = [[1.0, 0.5], [1.0, 1e300]]", "system.mu_hat.1.1"),
        ("gamma = 0.5", "gamma = 1e-300", "cost.gamma"),
        ("gamma = 0.5", "gamma = inf", "cost.gamma"),
        ("gamma = 0.5", "gamma = nan", "cost.gamma"),
        ("gamma = 0.5", "gamma = 1979-05-27", "cost.gamma"),
    ],
)
def test_strict_types_and_ranges_in_system_files(tmp_path, old, new, key):
    f = tmp_path / "s.toml"
    assert old in PP
    f.write_text(PP.replace(old, new))
    with pytest.raises(InputError) as e:
        load(f)
    assert e.value.key == key, str(e.value)


def test_python_api_refuses_what_the_files_refuse():
    data = {"system": {"kind": "pss2x2", "lambda": [0.7, 0.6], "mu": [[0.4, 0.6], [0.8, 1.2]]},
            "cost": {"h": [1.0, 1.0], "gamma": True}}
    with pytest.raises(InputError, match="cost.gamma"):
        pss_from_dict(data)
    with pytest.raises(InputError, match="extra"):
        pss_from_dict({**data, "cost": {"h": [1.0, 1.0], "gamma": 0.5}, "extra": {}})
    s = load(path("pss_PP"))
    with pytest.raises(InputError, match="cost.gamma"):
        dataclasses.replace(s, gamma=float("nan"))
    with pytest.raises(InputError, match="n"):
        s.rates(1e200)  # n-th rates beyond MAX_RATE
    with pytest.raises(InputError, match="n"):
        v.check_rates(s, float("inf"))
    lam_n, mu_n = v.check_rates(s, 1e6)
    assert np.all(np.isfinite(lam_n)) and np.all(mu_n > 0)


def test_network_pools_beyond_int32_are_refused():
    net = network_from_dict({"system": {"kind": "network", "lambda": [1.0], "mu": [[1.0]], "pool_size": [1.0],
                                        "pool_size_hat": [1e12]}})
    with pytest.raises(InputError, match="2\\^31"):
        v.check_rates(net, 100.0)
    with pytest.raises(InputError, match="system.mu.0.0"):
        network_from_dict({"system": {"kind": "network", "lambda": [1.0], "mu": [["1"]], "pool_size": [1.0]}})
    with pytest.raises(InputError, match="cost"):
        network_from_dict({"system": {"kind": "network", "lambda": [1.0], "mu": [[1.0]], "pool_size": [1.0]},
                           "cost": {}})


def test_seed_and_number_checks():
    for good in (0, 7, 2**32 - 1, np.int64(5)):
        assert v.check_seed(good, "--seed") == int(good)
    for bad in (-1, 2**32, 18446744073709551616, True, 1.5, "3", None):
        with pytest.raises(InputError) as e:
            v.check_seed(bad, "--seed")
        assert e.value.key == "--seed"
    with pytest.raises(InputError, match="finite"):
        v.check_float(float("nan"), "x", gt=0)
    with pytest.raises(InputError):
        v.check_float(True, "x")
    assert v.check_int(3, "k", lo=1, hi=5) == 3
    with pytest.raises(InputError):
        v.check_int(6, "k", lo=1, hi=5)
    import argparse

    parse = v.arg_type("seed")
    assert parse("12") == 12
    for text in ("-1", "4294967296", "1e3", "", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)


def test_work_estimates():
    s = load(path("pss_PP"))
    per = v.pss_events_per_replication(s, 100.0, 10.0)
    assert per == pytest.approx(2 * float(np.sum(100 * s.lam + 10 * s.lambda_hat)) * 10)
    assert v.check_work("reps", 1000, per) == pytest.approx(1000 * per)
    with pytest.raises(InputError, match="replications"):
        v.check_work("reps", 10**10, 1.0)
    with pytest.raises(InputError, match="per replication"):
        v.check_work("n", 10, 2.0**32)
    with pytest.raises(InputError, match="steps"):
        v.check_work("dt", 10, v.sde_steps_per_path(30.0, 1e-300), unit="steps")
    v.check_work("dt", 10, v.sde_steps_per_path(30.0, 1e-6), unit="steps")
    with pytest.raises(InputError, match="GiB"):
        v.check_chunk("chunk", 10**10)


# ----------------------------------------------------------------------------------- scale-free analysis
def _scaled(s, c_rows=(1.0, 1.0), c=1.0):
    r = np.array(c_rows)[:, None]
    return dataclasses.replace(s, lam=s.lam * c * r[:, 0], mu=s.mu * c * r, lambda_hat=s.lambda_hat * c * r[:, 0],
                               mu_hat=s.mu_hat * c * r)


@pytest.mark.parametrize("name", EXAMPLES_2X2)
@pytest.mark.parametrize("c", [1e-9, 1e9])
def test_all_rates_scaled_is_the_same_system_in_another_time_unit(name, c):
    """Rates x c is the system with time divided by c: same LP, modes and policy, and
    V0(gamma) = V0_unscaled(gamma / c) / c (the unscaled analysis at another discount rate)."""
    s = load(path(name))
    a = analyze(_scaled(s, c=c))
    b = analyze(dataclasses.replace(s, gamma=s.gamma / c))
    assert a.modes.rho_star == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(a.modes.xi, b.modes.xi, atol=1e-12)
    assert (a.case, a.policy, a.p, a.modes.switching) == (b.case, b.policy, b.p, b.modes.switching)
    assert a.V0 == pytest.approx(b.V0 / c, rel=1e-10)


@pytest.mark.parametrize("name", EXAMPLES_2X2)
def test_classes_at_mixed_scales(name):
    """Class 1's rates x 1e-9 and class 2's x 1e9: product form and EHTC are unchanged, so is the LP's
    solution set (xi is scale-free); no RuntimeError (modes disagreeing with the LP face)."""
    s = load(path(name))
    a, b = analyze(_scaled(s, c_rows=(1e-9, 1e9))), analyze(s)
    np.testing.assert_allclose(a.modes.xi, b.modes.xi, atol=1e-12)
    assert a.modes.switching == b.modes.switching and a.modes.rho_star == pytest.approx(1.0, abs=1e-12)


def test_random_product_form_systems_over_18_decades():
    rng = np.random.default_rng(17)
    for _ in range(200):
        alpha, beta = 10 ** rng.uniform(-9, 9, 2), 10 ** rng.uniform(-9, 9, 2)
        beta /= beta.sum()
        c1 = rng.uniform(0.05, 0.95)
        if min(abs(c1 - beta[0]), abs(c1 - beta[1])) < 1e-6:
            continue
        lam, mu = np.array([c1, 1 - c1]) * alpha, np.outer(alpha, beta)
        m = modes(lam, mu)  # never a RuntimeError
        # the closed form against the defining constraints: rows give lambda, columns sum to 1
        for x in m.xi:
            np.testing.assert_allclose((mu * x).sum(axis=1) / lam, 1.0, rtol=1e-9)
            np.testing.assert_allclose(x.sum(axis=0), 1.0, rtol=1e-12)
            assert np.all(x >= 0) and np.sum(x == 0) == 1


def test_scaled_system_file_is_accepted_like_the_unscaled_one(tmp_path, capsys):
    text = PP
    for key in ("lambda", "mu", "lambda_hat", "mu_hat"):
        line = next(ln for ln in text.splitlines() if ln.startswith(f"{key} ="))
        val = eval(line.split("=", 1)[1])  # noqa: S307 (a list literal of the test's own file)
        scale = (lambda x: [scale(y) for y in x] if isinstance(x, list) else x * 1e-9)  # noqa: E731
        text = text.replace(line, f"{key} = {scale(val)!r}")
    f = tmp_path / "tiny_rates.toml"
    f.write_text(text)
    assert main(["analyze", str(f)]) == 0
    assert "dual-mode case" in capsys.readouterr().out


# ----------------------------------------------------------------------------------- V0 for tiny gamma
try:
    import mpmath as mp
except ImportError:  # pragma: no cover
    mp = None
needs_mpmath = pytest.mark.skipif(mp is None, reason="mpmath (the high-precision reference) is not installed")


def _mp_switching(bL, sL, bH, sH, g, dps=80):
    """V_WCP(0) and z* from the textbook constants (A, B, C) of the ODE solution, solved in `dps` digits:
    an implementation independent of jaxq.diffusion.hjb (different unknowns, arbitrary precision)."""
    with mp.workdps(dps):
        bL, sL, bH, sH, g = (mp.mpf(x) for x in (bL, sL, bH, sH, g))

        def roots(b, s):
            d = mp.sqrt(b * b + 2 * g * s * s)
            return (-b + d) / (s * s), (-b - d) / (s * s)

        p, q = roots(bL, sL)
        _, r = roots(bH, sH)

        def abc(z):
            m = mp.matrix([[p * mp.exp(-p * z), q, 0], [1, mp.exp(q * z), -1], [p, q * mp.exp(q * z), -r]])
            return mp.lu_solve(m, mp.matrix([-1 / g, (bH - bL) / g**2, 0]))

        def gap(z):
            A, B, C = abc(z)
            return C * r * r - (A * p * p + B * q * q * mp.exp(q * z))

        return abc, gap, (bL, g, p)


def _mp_value(bL, sL, bH, sH, g, z_guess):
    abc, gap, (bL_, g_, p) = _mp_switching(bL, sL, bH, sH, g)
    with mp.workdps(80):
        z = mp.findroot(gap, (mp.mpf(z_guess) * (1 - mp.mpf(1e-4)), mp.mpf(z_guess) * (1 + mp.mpf(1e-4))))
        A, B, _ = abc(z)
        return float(bL_ / g_**2 + A * mp.exp(-p * z) + B), float(z)


@needs_mpmath
@pytest.mark.parametrize("name, gamma", [(n, g) for n in ("pss_PP", "pss_T2T2") for g in (0.5, 1e-8, 1e-14, 1e3)]
                         + [("pss_T1T2", 1e-12), ("pss_T2T1", 1e-20)])  # b_L < 0 (PP, T1T2) and b_L > 0
def test_dual_mode_v0_and_z_star_to_machine_precision(name, gamma):
    a = analyze(load(path(name)))
    coef = (*a.mode_coefficients(), gamma)
    z = float(hjb.switching_point(*coef))
    v0 = float(hjb.switching_cost(0.0, z, *coef))
    v_ref, z_ref = _mp_value(*coef, z)
    assert v0 == pytest.approx(v_ref, rel=1e-12)
    assert z == pytest.approx(z_ref, rel=1e-10)


@needs_mpmath
@pytest.mark.parametrize("gamma", [1e-8, 1e-12, 1e-14, 1e-20])
def test_single_mode_v0_for_tiny_gamma(gamma):
    b, s = -2.0, 1.3
    with mp.workdps(80):
        B, S, G = mp.mpf(b), mp.mpf(s), mp.mpf(gamma)
        ref = float(B / G**2 + S * S / (G * (B + mp.sqrt(B * B + 2 * G * S * S))))
    assert float(hjb.rbm_value(0.0, b, s, gamma)) == pytest.approx(ref, rel=1e-13)


@needs_mpmath
@pytest.mark.parametrize("gamma", ["1e-8", "1e-12", "1e-14"])
def test_analyze_pp_with_tiny_gamma(tmp_path, capsys, gamma):
    """PP with gamma = 1e-8 once raised 'no smooth-fit switching point found' (RuntimeError) and at
    1e-12 V0 was off by 2e-4. Now the analysis is the 80-digit value."""
    import json

    f = tmp_path / "g.toml"
    f.write_text(PP.replace("gamma = 0.5", f"gamma = {gamma}"))
    assert main(["analyze", str(f), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    a = analyze(load(f))
    v_ref, z_ref = _mp_value(*a.mode_coefficients(), float(gamma), r["z_star"])
    assert r["V_wcp0"] == pytest.approx(v_ref, rel=1e-12) and r["z_star"] == pytest.approx(z_ref, rel=1e-10)


# ----------------------------------------------------------------------------------- solvers with caps
@pytest.mark.parametrize(
    "args, key",
    [
        (["--lam", "1e300", "--mu1", "1", "--mu2", "0.3", "--discount", "0.05"], "lam"),
        (["--lam", "1e9", "--mu1", "1", "--mu2", "0.3", "--discount", "0.05"], "lam"),
        (["--lam", "1.2", "--mu1", "1e300", "--mu2", "0.3", "--average"], "mu1"),
        (["--lam", "1.2", "--mu1", "1e9", "--mu2", "0.3", "--average"], "mu2"),
        (["--lam", "1.2", "--mu1", "1", "--mu2", "0.3", "--discount", "1e-300"], "discount"),
        (["--lam", "1.2", "--mu1", "1", "--mu2", "0.3", "--discount", "1e-9"], "discount"),
        (["--lam", "0.5", "--mu1", "1", "--mu2", "1e-9", "--average"], "mu2"),
        (["--lam", "1.5991", "--mu1", "1", "--mu2", "0.3", "--average"], "lam"),  # load 0.9994
        (["--lam", "1.2", "--mu1", "1", "--mu2", "0.3", "--average", "--truncation", "-1"], "truncation"),
    ],
)
def test_fastslow_refuses_at_once(capsys, args, key):
    t0 = time.perf_counter()
    assert main(["fastslow", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"jaxq: error: {key}: ") and err.count("\n") == 1
    assert time.perf_counter() - t0 < 5.0


def test_value_iteration_that_does_not_converge_is_an_error():
    from jaxq.mdp.fastslow import solve

    with pytest.raises(InputError, match="did not converge within"):
        solve(1.2, 1.0, 0.3, discount=0.05, tol=0.0, max_iter=100)
    with pytest.raises(InputError, match="time limit"):
        solve(1.2, 1.0, 0.3, discount=0.001, tol=0.0, time_limit=0.0)
    s = solve(1.2, 1.0, 0.3, discount=0.05)
    assert s.converged and s.bounds[0] <= s.value_empty <= s.bounds[1]


@pytest.mark.parametrize(
    "extra, key",
    [
        (["--z-init", "1e-300"], "--z-init"),
        (["--z-init", "1e6"], "--z-init"),
        (["--z-init", "1e300"], "argument --z-init"),
        (["--z-init", "inf"], "argument --z-init"),
        (["--max-iter", "0"], "argument --max-iter"),
        (["--max-iter", "-1"], "argument --max-iter"),
        pytest.param(["--max-iter", "1"], "--max-iter", marks=pytest.mark.slow),  # runs the tuner first (about 10 s)
        (["--target", "prelimit", "--n", "-5"], "argument --n"),
        (["--figure", "x.xyz"], "--figure"),
        (["--seed", "18446744073709551616"], "argument --seed"),
    ],
)
def test_tune_refusals(capsys, extra, key):
    assert main(["tune", str(path("pss_PP")), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"jaxq: error: {key}: ") and err.count("\n") == 1, err


@pytest.mark.slow  # a second check: -m slow
def test_tune_converges_on_a_scale_free_test():
    from jaxq.tuning.exact import RTOL, tune_exact

    a = analyze(load(path("pss_T2T1")))
    r = tune_exact(*a.mode_coefficients(), a.system.gamma)
    assert r.newton_step <= RTOL * r.z and r.z == pytest.approx(a.z_star, rel=1e-7)
    # the same from the scaled problem (workload x 1e6): scale-free criterion, same iterations
    bL, sL, bH, sH = a.mode_coefficients()
    k = 1e6
    rk = tune_exact(k * bL, k * sL, k * bH, k * sH, a.system.gamma)
    assert rk.z == pytest.approx(k * r.z, rel=1e-7) and math.isfinite(rk.cost)
