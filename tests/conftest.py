import os

# Tests compile from scratch, as on a fresh CI machine (the CLI's persistent compile cache is off).
os.environ.setdefault("JAXQ_CACHE_DIR", "off")
# Keep XLA to the cores we have and make tests deterministic in their threading.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import jaxq  # noqa: E402,F401  (enables float64 before any test creates arrays)
from hypothesis import settings  # noqa: E402

# Property tests draw the same examples on every run (CI must not pass or fail by chance); explore new ones
# locally with --hypothesis-seed=random or HYPOTHESIS_PROFILE=explore.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
