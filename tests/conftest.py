import os

# Tests compile from scratch, as on a fresh CI machine (the CLI's persistent compile cache is off).
os.environ.setdefault("JAXQ_CACHE_DIR", "off")
# Keep XLA to the cores we have and make tests deterministic in their threading.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import jaxq  # noqa: E402,F401  (enables float64 before any test creates arrays)
