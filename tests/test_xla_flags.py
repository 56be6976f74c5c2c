"""jaxq.xla_flags: the 512-bit vector preference is added on AVX-512 CPUs only, never over the user's choice."""

import pytest

from jaxq import xla_flags


def _cpuinfo(tmp_path, flags):
    p = tmp_path / "cpuinfo"
    p.write_text(f"processor\t: 0\nflags\t\t: fpu sse2 avx2 {flags}\n")
    return str(p)


def test_added_on_avx512_only(tmp_path):
    env = {}
    assert xla_flags.vector_width(env, _cpuinfo(tmp_path, "avx512f avx512bw")) == "--xla_cpu_prefer_vector_width=512"
    assert env["XLA_FLAGS"] == "--xla_cpu_prefer_vector_width=512"
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    xla_flags.vector_width(env, _cpuinfo(tmp_path, "avx512f"))
    assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=2 --xla_cpu_prefer_vector_width=512"
    env = {}
    assert xla_flags.vector_width(env, _cpuinfo(tmp_path, "avx512vl")) is None and "XLA_FLAGS" not in env
    assert xla_flags.vector_width(env, str(tmp_path / "missing")) is None and "XLA_FLAGS" not in env


def test_the_users_choice_wins(tmp_path):
    avx = _cpuinfo(tmp_path, "avx512f")
    env = {"XLA_FLAGS": "--xla_cpu_prefer_vector_width=256"}
    assert xla_flags.vector_width(env, avx) is None and env["XLA_FLAGS"] == "--xla_cpu_prefer_vector_width=256"
    env = {"JAXQ_VECTOR_WIDTH": "256"}
    assert xla_flags.vector_width(env, avx) is None and "XLA_FLAGS" not in env
    env = {"JAXQ_VECTOR_WIDTH": "512"}
    assert xla_flags.vector_width(env, _cpuinfo(tmp_path, "avx2")) == "--xla_cpu_prefer_vector_width=512"


def test_the_cpu_model_and_vector_width_a_record_names(tmp_path):
    """jaxq.bench.machine() records the CPU's model and XLA:CPU's vector width beside every figure."""
    import jaxq.bench

    p = tmp_path / "cpuinfo"
    p.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654\nflags\t\t: fpu avx2\n")
    assert xla_flags.cpu_model(str(p)) == "AMD EPYC 9654" and not xla_flags.cpu_has_avx512(str(p))
    assert xla_flags.cpu_model(str(tmp_path / "missing")) == "unknown"
    assert xla_flags.vector_bits({"XLA_FLAGS": "--xla_cpu_prefer_vector_width=512"}) == 512
    assert xla_flags.vector_bits({"XLA_FLAGS": "--xla_cpu_prefer_vector_width=256"}) == 256
    assert xla_flags.vector_bits({}) == 256
    m = jaxq.bench.machine()
    assert m["cpu_model"] == xla_flags.cpu_model() and m["vector_width"] == xla_flags.vector_bits()


def test_one_host_device_per_core_unless_told(monkeypatch):
    """One host device per core (two computations on one CPU device run one after the other), JAXQ_HOST_DEVICES=K
    for K, a device count in XLA_FLAGS wins, one core or K = 1 adds nothing; a bad K is named in a warning."""
    env = {}
    assert xla_flags.host_devices(env, cores=3) == "--xla_force_host_platform_device_count=3"
    assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=3"
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    assert xla_flags.host_devices(env, cores=8) is None and env["XLA_FLAGS"].endswith("=2")
    assert xla_flags.host_devices({}, cores=1) is None
    env = {"JAXQ_HOST_DEVICES": "1"}
    assert xla_flags.host_devices(env, cores=8) is None and "XLA_FLAGS" not in env
    env = {"JAXQ_HOST_DEVICES": "4", "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
    assert xla_flags.host_devices(env, cores=2) == "--xla_force_host_platform_device_count=4"
    assert env["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=false --xla_force_host_platform_device_count=4"
    with pytest.warns(UserWarning, match="JAXQ_HOST_DEVICES: expected a whole number >= 1, got 'two'"):
        assert xla_flags.host_devices({"JAXQ_HOST_DEVICES": "two"}, cores=2).endswith("=2")
    monkeypatch.setattr(xla_flags, "cpu_has_avx512", lambda cpuinfo="": True)
    env = {}
    assert xla_flags.configure(env, cores=2) == ["--xla_cpu_prefer_vector_width=512",
                                                "--xla_force_host_platform_device_count=2",
                                                f"{_THRESHOLD}={1 << 40},{_UNROLL}"]


_THRESHOLD, _UNROLL = "xla_cpu_small_while_loop_byte_threshold", "xla_cpu_disable_loop_unrolling"


def test_loop_options_join_the_users():
    """Every while loop as one function and no unrolling, joined to the user's own backend options (the rest of
    XLA_FLAGS as it was); an option the user's backend options name is the user's, and JAXQ_LOOP_OPTIONS=off adds
    none (a value that is neither off nor on is named in a warning)."""
    both = f"{_THRESHOLD}={1 << 40},{_UNROLL}"
    env = {}
    assert xla_flags.loop_options(env) == both and env["XLA_FLAGS"] == f"--xla_backend_extra_options={both}"
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2  --xla_backend_extra_options=foo=1 --xla_b=1"}
    xla_flags.loop_options(env)
    assert env["XLA_FLAGS"] == ("--xla_force_host_platform_device_count=2  --xla_backend_extra_options=foo=1,"
                                f"{both} --xla_b=1")
    env = {"XLA_FLAGS": "--xla_backend_extra_options="}
    assert xla_flags.loop_options(env) == both and env["XLA_FLAGS"] == f"--xla_backend_extra_options={both}"
    env = {"XLA_FLAGS": f"--xla_dump_to=/tmp/{_UNROLL}"}  # the name elsewhere in XLA_FLAGS is not the option
    assert xla_flags.loop_options(env) == both
    mine = f"--xla_backend_extra_options={_THRESHOLD}=64"
    env = {"XLA_FLAGS": mine}
    assert xla_flags.loop_options(env) == _UNROLL and env["XLA_FLAGS"] == f"{mine},{_UNROLL}"
    env = {"XLA_FLAGS": f"{mine},{_UNROLL}"}
    assert xla_flags.loop_options(env) is None and env["XLA_FLAGS"] == f"{mine},{_UNROLL}"
    for off in ("off", "0", "False"):
        env = {"JAXQ_LOOP_OPTIONS": off}
        assert xla_flags.loop_options(env) is None and "XLA_FLAGS" not in env
    with pytest.warns(UserWarning, match="JAXQ_LOOP_OPTIONS: expected off or on, got 'maybe'"):
        assert xla_flags.loop_options({"JAXQ_LOOP_OPTIONS": "maybe"}) == both


_SCAN = """
import jax, jax.numpy as jnp
import jaxq
jax.config.update("jax_enable_x64", True)
f = jax.jit(lambda x: jax.lax.scan(lambda c, _: (jnp.sqrt(c + 1.0) * 0.75 + jnp.exp(-c) / 3.0, None), x, None,
                                   length=64)[0])
exe = f.lower(jnp.linspace(0.0, 1.0, 4096)).compile()
print("xla_cpu_small_call" in exe.as_text(), [float(v).hex() for v in exe(jnp.linspace(0.0, 1.0, 4096))])
"""


def test_loop_options_take_effect():
    """The options reach XLA: a scan is compiled as one small call, and its numbers are those without them."""
    import json
    import os
    import subprocess
    import sys

    def run(**env):
        out = subprocess.run([sys.executable, "-c", _SCAN], env={**os.environ, "JAXQ_CACHE_DIR": "off", **env},
                             capture_output=True, text=True, check=True).stdout.split(" ", 1)
        return out[0] == "True", json.loads(out[1].replace("'", '"'))

    on, with_option = run(XLA_FLAGS="", JAXQ_LOOP_OPTIONS="")
    off, without = run(XLA_FLAGS="", JAXQ_LOOP_OPTIONS="off")
    assert on and not off
    assert with_option == without


_ENGINE = """
import json
import numpy as np
import jaxq
r = jaxq.simulate("pss_T2T2", n=100, reps=8, seed=1, engine="event")
print(json.dumps([float(v).hex() for v in np.concatenate([r.samples["J"], np.ravel(r.samples["controls"])])]))
"""


def test_the_2x2_engine_with_its_controls_gives_the_same_numbers_with_and_without_the_loop_options():
    """Bit for bit: the event rule of a system with exponential, Erlang and hyperexponential laws, its costs and every
    control variate (the renewal clocks' mean residual lives included), with XLA:CPU's loop options and without."""
    import json
    import os
    import subprocess
    import sys

    def run(**env):
        out = subprocess.run([sys.executable, "-c", _ENGINE], env={**os.environ, "JAXQ_CACHE_DIR": "off", **env},
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out)

    with_options = run(XLA_FLAGS="", JAXQ_LOOP_OPTIONS="")
    assert len(with_options) == 8 * 18
    assert with_options == run(XLA_FLAGS="", JAXQ_LOOP_OPTIONS="off")
