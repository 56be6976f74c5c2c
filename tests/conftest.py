import atexit
import os
import shutil
import tempfile

# One persistent XLA compilation cache for the test session: every program is compiled from scratch once (as on
# a fresh CI machine) and then loaded by every other test, xdist worker and `jaxq` subprocess that builds it again.
# The first process (the xdist controller, or a plain run) makes a temporary folder and removes it at exit; the
# workers and subprocesses inherit it through the environment. Set JAXQ_TEST_CACHE_DIR to keep a cache between
# local runs (it is then never removed).
_cache = os.environ.get("JAXQ_TEST_CACHE_DIR")
if not _cache:
    _cache = tempfile.mkdtemp(prefix="jaxq-tests-xla-")
    os.environ["JAXQ_TEST_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, True)
os.environ["JAXQ_CACHE_DIR"] = _cache  # the jaxq command
os.environ["JAX_COMPILATION_CACHE_DIR"] = _cache  # any other process that imports jax (scripts, notebooks)
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
# Keep XLA to the cores we have and make tests deterministic in their threading: one host device per process (the
# xdist workers fill the cores; a second device would compile every program twice), the default of one device per
# core tested where it is the subject (tests/test_xla_flags.py, tests/mc/test_replications.py).
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("JAXQ_HOST_DEVICES", "1")
# Progress reports of jobs that run long on a loaded machine must not change what tests read on stderr: they are
# off here (no job counts as long: jaxq.progress) and tested where they are the subject (tests/cli/test_progress.py).
os.environ.setdefault("JAXQ_LONG_JOB_S", "1e9")

import jax  # noqa: E402

import jaxq  # noqa: E402,F401  (its XLA flags before the backend starts)

# Tests call jaxq's internals directly; the public API and the CLI turn float64 on themselves (the API per call,
# the CLI for its process), the internals expect it on, as a script that uses them must turn it on.
jax.config.update("jax_enable_x64", True)
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from jaxq.cli import enable_compile_cache  # noqa: E402


def _atomic_cache_writes() -> None:
    """Cache entries appear whole: written to a temporary name and renamed (JAX writes them in place, so that a
    worker could read another's half-written entry, warn and compile again)."""
    try:
        from jax._src import lru_cache
    except ImportError:  # another jax: its own writes
        return
    put, suffix = getattr(lru_cache.LRUCache, "put", None), getattr(lru_cache, "_CACHE_SUFFIX", None)
    if put is None or suffix is None:
        return

    def atomic_put(self, key, value):
        if getattr(self, "eviction_enabled", True) or not key:
            return put(self, key, value)
        final = self.path / f"{key}{suffix}"
        if final.exists():
            return None
        tmp = self.path / f".{key}.{os.getpid()}.tmp"
        tmp.write_bytes(value)
        os.replace(str(tmp), str(final))
        return None

    lru_cache.LRUCache.put = atomic_put


_atomic_cache_writes()
enable_compile_cache()

# Property tests draw the same examples on every run (CI must not pass or fail by chance); explore new ones
# locally with --hypothesis-seed=random or HYPOTHESIS_PROFILE=explore.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))



@pytest.fixture
def experiment_script():
    """A loader of ``experiments/<name>.py`` as a module (the experiment scripts are not a package); registered in
    ``sys.modules`` under ``name`` so that its dataclasses and pickles resolve."""
    import importlib.util
    import sys
    from pathlib import Path

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "experiments"
                                                      / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    return load
