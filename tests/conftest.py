import os

# Tests compile from scratch, as on a fresh CI machine (the CLI's persistent compile cache is off).
os.environ.setdefault("JAXQ_CACHE_DIR", "off")
# Keep XLA to the cores we have and make tests deterministic in their threading.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
# Progress reports of jobs that run long on a loaded machine must not change what tests read on stderr: they are
# off here (no job counts as long: jaxq.progress) and tested where they are the subject (tests/cli/test_progress.py).
os.environ.setdefault("JAXQ_LONG_JOB_S", "1e9")

import jax  # noqa: E402

import jaxq  # noqa: E402,F401  (its XLA flags before the backend starts)

# Tests call jaxq's internals directly; the public API and the CLI turn float64 on themselves (the API per call,
# the CLI for its process), the internals expect it on, as a script that uses them must turn it on.
jax.config.update("jax_enable_x64", True)
from hypothesis import settings  # noqa: E402

# Property tests draw the same examples on every run (CI must not pass or fail by chance); explore new ones
# locally with --hypothesis-seed=random or HYPOTHESIS_PROFILE=explore.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
