#!/usr/bin/env bash
# Full CPU benchmark: jaxq engines beside numba and Ciw, written to benchmarks/results/cpu.json (rewritten
# after every measured row), then the table and the README's summary (python -m jaxq.bench.report).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e ".[bench]"
mkdir -p benchmarks/results
jaxq bench --out benchmarks/results/cpu.json > /dev/null
python3 -c "import json,sys; from jaxq.cli.bench import render; print(render(json.load(open('benchmarks/results/cpu.json'))))"
python3 -m jaxq.bench.report benchmarks/results/cpu.json
