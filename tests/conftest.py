import os

# Keep XLA to the cores we have and make tests deterministic in their threading.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jaxq  # noqa: E402,F401  (enables float64 before any test creates arrays)
