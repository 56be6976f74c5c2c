#!/usr/bin/env bash
# Full CPU benchmark: the jaxq engines of this checkout beside their baselines (benchmarks/baselines: numba, Ciw),
# written to $OUT/cpu.json (default benchmarks/results/; rewritten after every measured row), then the table and
# the README's summary (python -m jaxq.bench.report).
#
# jaxq runs from this checkout (PYTHONPATH), whatever jaxq is installed; the baselines' requirements (the `bench`
# extra of pyproject.toml: numba, Ciw) are installed when missing, nothing else is.
# Dry run at tiny sizes (a few minutes on a CPU):  JAXQ_BENCH_TINY=1 OUT=/tmp/cpu bash benchmarks/run_cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
missing=$(python3 - <<'PY'
import importlib.util, re, tomllib
with open("pyproject.toml", "rb") as f:
    extra = tomllib.load(f)["project"]["optional-dependencies"]["bench"]
print(" ".join(r for r in extra if importlib.util.find_spec(re.split(r"[<>=!~ \[;]", r)[0]) is None))
PY
)
if [ -n "$missing" ]; then
  # shellcheck disable=SC2086
  python3 -m pip install -q $missing
fi
dest=${OUT:-benchmarks/results}
mkdir -p "$dest"
python3 -m jaxq bench --out "$dest/cpu.json" > /dev/null
python3 -c "import json,sys; from jaxq.cli.bench import render; print(render(json.load(open(sys.argv[1]))))" "$dest/cpu.json"
python3 -m jaxq.bench.report "$dest/cpu.json"
