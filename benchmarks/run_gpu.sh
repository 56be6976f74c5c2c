#!/usr/bin/env bash
# GPU benchmark (one prepared run, a few minutes): needs jax with CUDA on the machine.
# Usage: bash benchmarks/run_gpu.sh   (writes $OUT/gpu.json when OUT is set, else benchmarks/results/)
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
dest=${OUT:-benchmarks/results}
mkdir -p "$dest"
python3 -m pip install -q --no-deps -e . 2>/dev/null || true
python3 -c "import jax; print(jax.devices())"
JAXQ_BENCH_GPU=1 python3 -m jaxq bench --json > "$dest/gpu.json"
python3 -c "import json; from jaxq.cli.bench import render; print(render(json.load(open('$dest/gpu.json'))))"
