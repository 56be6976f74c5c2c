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
                                                "--xla_force_host_platform_device_count=2"]
