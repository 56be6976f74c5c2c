"""jaxq.xla_flags: the 512-bit vector preference is added on AVX-512 CPUs only, never over the user's choice."""

from jaxq import xla_flags


def _cpuinfo(tmp_path, flags):
    p = tmp_path / "cpuinfo"
    p.write_text(f"processor\t: 0\nflags\t\t: fpu sse2 avx2 {flags}\n")
    return str(p)


def test_added_on_avx512_only(tmp_path):
    env = {}
    assert xla_flags.configure(env, _cpuinfo(tmp_path, "avx512f avx512bw")) == "--xla_cpu_prefer_vector_width=512"
    assert env["XLA_FLAGS"] == "--xla_cpu_prefer_vector_width=512"
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    xla_flags.configure(env, _cpuinfo(tmp_path, "avx512f"))
    assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=2 --xla_cpu_prefer_vector_width=512"
    env = {}
    assert xla_flags.configure(env, _cpuinfo(tmp_path, "avx512vl")) is None and "XLA_FLAGS" not in env
    assert xla_flags.configure(env, str(tmp_path / "missing")) is None and "XLA_FLAGS" not in env


def test_the_users_choice_wins(tmp_path):
    avx = _cpuinfo(tmp_path, "avx512f")
    env = {"XLA_FLAGS": "--xla_cpu_prefer_vector_width=256"}
    assert xla_flags.configure(env, avx) is None and env["XLA_FLAGS"] == "--xla_cpu_prefer_vector_width=256"
    env = {"JAXQ_VECTOR_WIDTH": "256"}
    assert xla_flags.configure(env, avx) is None and "XLA_FLAGS" not in env
    env = {"JAXQ_VECTOR_WIDTH": "512"}
    assert xla_flags.configure(env, _cpuinfo(tmp_path, "avx2")) == "--xla_cpu_prefer_vector_width=512"
