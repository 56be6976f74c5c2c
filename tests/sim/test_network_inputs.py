"""Network inputs: a negative pool of the n-th system, and `network sde` on a transient diffusion."""

import pytest

from jaxq.cli import main
from jaxq.diffusion.network_analysis import analyze, stationary_diffusion
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.model import load


def _negative_hat(tmp_path):
    src = path("network_N").read_text()
    assert "pool_size_hat = [0.5, 0.3]" in src
    f = tmp_path / "neg_hat.toml"
    f.write_text(src.replace("pool_size_hat = [0.5, 0.3]", "pool_size_hat = [0.5, -1e30]"))
    return str(f)


def test_negative_pool_is_named_as_such(tmp_path):
    """n pool_size + sqrt(n) pool_size_hat = -1e31 servers was reported as 'more than 2^31 - 1 servers'."""
    net = load(_negative_hat(tmp_path))
    with pytest.raises(InputError, match="pool 2 .* -1e\\+31 servers .* cannot be negative") as e:
        net.rates(100.0)
    assert e.value.key == "system.pool_size_hat"


def test_cli_simulate_refuses_a_negative_pool(tmp_path, capsys):
    assert main(["network", "simulate", _negative_hat(tmp_path), "--n", "100", "--reps", "2", "--horizon", "2",
                 "--warmup", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("jaxq: error: system.pool_size_hat: pool 2") and err.count("\n") == 1


@pytest.mark.parametrize("which", ["negative_hat", "network_N_understaffed"])
def test_network_sde_refuses_a_transient_diffusion(tmp_path, capsys, which):
    """Spare capacity rho < 0: the diffusion is transient (the uniform-stability paper, Propositions 3.1-3.2); it printed 'long-run
    averages' such as mean_pos 1.4e31 beside an identity (3.6) of -6.7e29 against 0."""
    net = _negative_hat(tmp_path) if which == "negative_hat" else which
    assert main(["network", "sde", net, "--paths", "2", "--horizon", "2", "--warmup", "1", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("jaxq: error: system: spare capacity rho = -") and "transient" in err
    assert err.count("\n") == 1


def test_stationary_diffusion_of_the_n_network():
    """The library check: the N network (rho = 0.5667) passes; rho <= 0 and a subcritical network do not."""
    dl = stationary_diffusion(analyze(load("network_N")))
    assert dl.spare_capacity == pytest.approx(0.5667, abs=1e-4)
    with pytest.raises(InputError, match="transient") as e:
        stationary_diffusion(analyze(load("network_N_understaffed")))
    assert e.value.key == "system"
    with pytest.raises(InputError, match="critically loaded") as e:
        stationary_diffusion(analyze(load("network_lap")))  # underloaded (the LAP-tightness paper): no diffusion limit
    assert e.value.key == "system.lambda"
