#!/usr/bin/env bash
# Wheels of the pure-Python dependencies that the GPU machine's image lacks (it has jax with CUDA, numpy, scipy,
# optax, chex, matplotlib, tqdm, numba and networkx, but not pydantic or Ciw, and it cannot reach a registry):
# pydantic for jaxq itself, Ciw for the M/M/c baselines (benchmarks/baselines/mmc.py; without it their columns stay
# empty).
# Run here, once, before the device run; .whl/ is git-ignored and travels with `carry: [".whl"]`:
#   bash benchmarks/gpu_wheels.sh && (device run) carry .whl, command: bash benchmarks/run_gpu.sh
# Versions are the ones installed on this machine (pydantic pins pydantic-core exactly), for CPython 3.12.
set -euo pipefail
cd "$(dirname "$0")/.."
pins=$(python3 - <<'PY'
from importlib.metadata import version
names = ["pydantic", "pydantic-core", "annotated-types", "typing-inspection", "ciw"]
print(" ".join(f"{n}=={version(n)}" for n in names))
PY
)
plat=""
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  plat="$plat --platform $p"
done
rm -rf .whl && mkdir -p .whl
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $plat -d .whl $pins
ls -1 .whl
du -sh .whl
