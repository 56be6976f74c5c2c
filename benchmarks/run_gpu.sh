#!/usr/bin/env bash
# GPU benchmark (one prepared run, a few minutes on an H200): needs jax with CUDA on the machine.
# Usage: bash benchmarks/run_gpu.sh [--full]   (writes $OUT/gpu.json when OUT is set, else benchmarks/results/)
# Sizes follow jax.default_backend() (jaxq/bench/sizes.py): the lockstep engines run 10^4-10^6
# replications on an accelerator; the default is the --quick grid, --full the larger one.
# Dry run on a CPU: JAX_PLATFORMS=cpu JAXQ_BENCH_TINY=1 OUT=/tmp/gpu bash benchmarks/run_gpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
dest=${OUT:-benchmarks/results}
mkdir -p "$dest"
python3 -c "import jaxq" 2>/dev/null || python3 -m pip install -q --no-deps -e .
python3 -c "import jax; print(jax.default_backend(), jax.devices())"
quick=--quick
[ "${1:-}" = "--full" ] && quick=
start=$(date +%s)
python3 -m jaxq bench $quick --json > "$dest/gpu.json"
python3 -c "import json; from jaxq.cli.bench import render; print(render(json.load(open('$dest/gpu.json'))))"
echo "bench: $(( $(date +%s) - start )) s"
