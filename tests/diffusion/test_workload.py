"""``jaxq analyze``: cases, policies, z* and V0 on the bundled systems; symmetry (Lemma B.1); bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jaxq.cli import main
from jaxq.diffusion import hjb_fd
from jaxq.diffusion.workload import analyze, theta_exponent
from jaxq.examples import path
from jaxq.model import load
from jaxq.model.distributions import Dist
from jaxq.model.pss2x2 import PSS2x2

EXPECTED = {  # name: (policy, case, switching, hpc (1-based))
    "pss_P": ("P", "single", "server", 2),
    "pss_T2": ("T2", "single", "class", 1),
    "pss_PP": ("PP", "dual", "server", 2),
    "pss_T2T2": ("T2T2", "dual", "server", 1),
    "pss_T1T2": ("T1T2", "dual", "class", 2),
    "pss_T2T1": ("T2T1", "dual", "class", 1),
    "pss_spec": ("P", "single", "server", 2),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_examples_against_finite_differences(name):
    a = analyze(load(path(name)))
    policy, case, switching, hpc = EXPECTED[name]
    assert (a.policy, a.case, a.modes.switching, a.p + 1) == (policy, case, switching, hpc)
    bL, sL, bH, sH = a.mode_coefficients()
    z = a.z_star or 0.0
    x, u, mode = hjb_fd.solve(a.b, a.sigma, a.system.gamma, x_max=z + 40.0, n=40000)
    assert a.V_wcp0 == pytest.approx(u[0], rel=1e-4)
    assert a.V0 == pytest.approx(a.system.h[a.q] * a.modes.alpha[a.q] * u[0], rel=1e-4)
    if case == "dual":
        assert mode[0] == a.lower and mode[-1] == a.higher
        assert hjb_fd.switching_point(x, mode) == pytest.approx(a.z_star, abs=2 * (x[1] - x[0]))
        # the roles of the HPC in the lower and higher modes name the policy (Theorem 2.11)
        roles = "".join("1" if a.modes.i1[m] == a.p else "2" for m in (a.lower, a.higher))
        assert {"11": "PP", "22": "T2T2", "12": "T1T2", "21": "T2T1"}[roles] == policy
    else:
        assert np.all(mode == a.active) or np.allclose(a.b[0], a.b[1]) and np.allclose(a.sigma[0], a.sigma[1])


def test_exponential_primitives_give_equal_sigmas():
    """Lemma B.1.2 with all SCVs 1: sigma_1 = sigma_2, so only the single mode occurs."""
    for name in ("pss_P", "pss_T2"):
        a = analyze(load(path(name)))
        assert a.sigma[0] == pytest.approx(a.sigma[1], rel=1e-12) and a.case == "single"


def _system(mu_hat, cs2, lam_hat=(-0.5, -0.3), base="server"):
    lam, mu = ([0.7, 0.6], [[0.4, 0.6], [0.8, 1.2]]) if base == "server" else ([0.5, 0.5], [[0.7, 0.3], [0.7, 0.3]])
    serv = tuple(tuple(Dist("gamma", float(c)) for c in row) for row in cs2)
    return PSS2x2(lam=np.array(lam), mu=np.array(mu), lambda_hat=np.array(lam_hat), mu_hat=np.array(mu_hat),
                  service=serv, h=np.array([1.0, 1.0]), gamma=0.5)


@settings(max_examples=20, deadline=None)
@given(
    c=st.lists(st.floats(-1, 1), min_size=2, max_size=2),
    cs2=st.lists(st.floats(0.2, 4.0), min_size=4, max_size=4),
    base=st.sampled_from(["server", "class"]),
    which=st.sampled_from(["4.2", "4.3", "4.4"]),
)
def test_lemma_b1_symmetry_conditions(c, cs2, base, which):
    s0 = _system(np.zeros((2, 2)), np.ones((2, 2)), base=base)
    a0 = analyze(s0)
    alpha, beta = a0.modes.alpha, a0.modes.beta
    cs2 = np.array(cs2).reshape(2, 2)
    if which == "4.2":  # mu_hat_1k / alpha_1 = mu_hat_2k / alpha_2
        mu_hat = np.outer(alpha, c)
    elif which == "4.3":  # mu_hat_i1 / beta_1 = mu_hat_i2 / beta_2
        mu_hat = np.outer(c, beta)
    else:  # C_S_i1 = C_S_i2
        mu_hat = np.array([c, c[::-1]])
        cs2 = np.repeat(cs2[:, :1], 2, axis=1)
    a = analyze(_system(mu_hat, cs2, base=base))
    if which == "4.4":
        assert a.sigma[0] == pytest.approx(a.sigma[1], rel=1e-12)
    else:
        assert a.b[0] == pytest.approx(a.b[1], abs=1e-12)
    assert a.case == "single"


def test_theta_exponent_interval():
    assert theta_exponent() == pytest.approx((1 / 3, 1 / 2))
    lo, hi = theta_exponent(3.0)
    assert lo == pytest.approx(0.5 - 1 / 12) and hi == 0.5


BASE = """[system]
kind = "pss2x2"
lambda = [0.7, 0.6]
mu = [[0.4, 0.6], [0.8, 1.2]]
{extra}
[cost]
h = [1.0, 1.0]
gamma = 0.5
"""


def write(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return str(p)


BAD = [
    (BASE.replace("lambda = [0.7, 0.6]", "lambda = [0.7, 0.6, 0.1]"), "system.lambda"),
    (BASE.replace("mu = [[0.4, 0.6], [0.8, 1.2]]", "mu = [[0.4, 0.6]]"), "system.mu"),
    (BASE.replace("lambda = [0.7, 0.6]", "lambda = [0.7, -0.6]"), "system.lambda.1"),
    (BASE.replace("mu = [[0.4, 0.6], [0.8, 1.2]]", "mu = [[0.4, 0.0], [0.8, 1.2]]"), "system.mu.0.1"),
    (BASE.replace("h = [1.0, 1.0]", "h = [1.0, -1.0]"), "cost.h.1"),
    (BASE.replace("gamma = 0.5", "gamma = -0.5"), "cost.gamma"),
    (BASE.replace("gamma = 0.5", ""), "cost.gamma"),
    (BASE.format(extra='service = [["erlang:0.3", "exponential"], ["exponential", "exponential"]]'), "system.service[0][0]"),
    (BASE.format(extra='service = [["hyperexponential:0.5", "exponential"], ["exponential", "exponential"]]'), "system.service[0][0]"),
    (BASE.format(extra='interarrival = ["exponential:2", "exponential"]'), "system.interarrival[0]"),
    (BASE.format(extra='interarrival = ["weibull:2", "exponential"]'), "system.interarrival[0]"),
    (BASE.format(extra='interarrival = ["gamma", "exponential"]'), "system.interarrival[0]"),
    (BASE.replace("lambda = [0.7, 0.6]", "lambda = [0.6, 0.6]"), "EHTC"),
    (BASE.replace("mu = [[0.4, 0.6], [0.8, 1.2]]", "mu = [[0.75, 0.75], [0.75, 1.5]]").replace("lambda = [0.7, 0.6]", "lambda = [1.0, 1.0]"), "product form"),
    (BASE.replace("lambda = [0.7, 0.6]", "lambda = [0.4, 1.2]"), "degenerate"),
    (BASE.format(extra="colour = 3"), "system.colour: unknown key"),
    (BASE.replace('kind = "pss2x2"', 'kind = "tandem"'), "system.kind"),
    ("[system\nkind=", "not valid TOML"),
    (BASE.format(extra='service = [["deterministic", "deterministic"], ["deterministic", "deterministic"]]\ninterarrival = ["deterministic", "deterministic"]'), "sigma = 0"),
]


@pytest.mark.parametrize("text, needle", BAD)
def test_bad_configuration_is_one_line_and_exit_2(tmp_path, capsys, text, needle):
    cfg = write(tmp_path, text.replace("{extra}", ""))
    assert main(["analyze", cfg, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("jaxq: error: ")
    assert needle in err


def test_product_form_error_says_which_assumption_fails(tmp_path, capsys):
    text = BASE.format(extra="").replace("mu = [[0.4, 0.6], [0.8, 1.2]]", "mu = [[0.75, 0.75], [0.75, 1.5]]")
    text = text.replace("lambda = [0.7, 0.6]", "lambda = [1.0, 1.0]")
    assert main(["analyze", write(tmp_path, text)]) == 2
    err = capsys.readouterr().err
    assert "unique solution" in err and "Assumption 2.2.1" in err


def test_console_script_json():
    out = subprocess.run(
        [sys.executable, "-m", "jaxq", "analyze", str(path("pss_T1T2")), "--json"], capture_output=True, text=True, check=True
    ).stdout
    r = json.loads(out)
    for key in ("rho_star", "alpha", "beta", "modes", "switching", "b", "sigma", "hpc", "case", "lower_mode",
                "higher_mode", "z_star", "V_wcp0", "V0", "policy"):
        assert key in r
    assert r["policy"] == "T1T2" and r["case"] == "dual" and len(r["modes"]) == 2
    assert r["z_star"] == pytest.approx(analyze(load(path("pss_T1T2"))).z_star, rel=1e-12)


def test_unwritable_output_is_one_line_and_exit_2(capsys):
    assert main(["demo", "--small", "--out", "/proc/jaxq-cannot-write-here"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jaxq: error: --out: '/proc/jaxq-cannot-write-here'")
