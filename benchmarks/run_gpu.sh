#!/usr/bin/env bash
# GPU benchmark: one prepared run of every section of `jaxq bench` on a GPU machine, within one device call.
#
# Usage (on the GPU machine, in the repository root):  bash benchmarks/run_gpu.sh [--full]
#   Writes $OUT/gpu.json and $OUT/gpu.txt (or benchmarks/results/ when OUT is unset), updated after every
#   section, so a run cut short still returns the sections that finished.
# The GPU machine has jax with CUDA, numpy, scipy, optax, chex, matplotlib, tqdm and numba, no registry, and no
# pydantic or Ciw: run `bash benchmarks/gpu_wheels.sh` here first and carry `.whl` (installed below into
# /tmp/jaxq-site, never over the image's own packages). jaxq itself is used from the checkout (PYTHONPATH), so
# nothing is built there, and so are its baselines (benchmarks/baselines, found beside the jaxq package by
# jaxq.bench.baseline; numba kernels, Ciw for M/M/c): a baseline that cannot load leaves its columns empty.
# Each section runs in its own process under its own time limit (seconds, JAXQ_GPU_LIMITS="pss2x2=190 ..."):
# a slow or failing section costs only its unmeasured rows (each row is saved as it is measured, except the
# per-family and mixed rows, measured in interleaved rounds and saved when their last round ends: a process
# stopped before that loses its part's rows, which is why each of those parts has a process of its own). The
# 2x2 section runs as three processes: "pss2x2" (the event engine per renewal family: exponential, erlang:0.5,
# hyperexponential:3, lognormal:2, gamma:2, gamma:0.5, then the Marsaglia-Tsang gamma shapes), "pss2x2-mixed"
# (the dual-mode systems with mixed primitives at 10^6 replications) and "pss2x2-engines" (the controlled run's
# effective rate, the event and uniformised engines at n = 100 and 10^4), merged into one section. The
# defaults add up to 9.3 minutes (call the device with timeout_s 600); sizes follow
# jax.default_backend() (jaxq/bench/sizes.py: 10^4-10^6 replications for the lockstep engines and the event
# engine's families on an accelerator); the default is the --quick grid, --full the larger one. The section
# "optimal" (policy iteration in numpy against scipy's SuperLU) is CPU-only and not run here: both solvers run on
# the host, so benchmarks/run_cpu.sh measures it.
# Dry run on a CPU (about a minute):  JAX_PLATFORMS=cpu JAXQ_BENCH_TINY=1 OUT=/tmp/gpu bash benchmarks/run_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
dest=${OUT:-benchmarks/results}
mkdir -p "$dest"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/jaxq-site .whl/*.whl \
    || { echo "run_gpu.sh: installing the carried wheels failed" >&2; exit 1; }
  export PYTHONPATH="$PYTHONPATH:/tmp/jaxq-site"  # after the image's site-packages: only what it lacks is used
fi
python3 - <<'PY' || { echo "run_gpu.sh: jaxq does not import here (missing pydantic? run benchmarks/gpu_wheels.sh and carry .whl)" >&2; exit 1; }
import importlib.metadata as md
import jax
import jaxq, jaxq.model  # noqa: F401  (pydantic)
print("backend:", jax.default_backend(), jax.devices())
for name in ("jax", "jaxlib", "numpy", "pydantic", "numba", "ciw"):
    try:
        print(f"  {name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"  {name}: not installed")
from jaxq.bench import SECTIONS, baseline, baseline_note
for name in SECTIONS:
    mod = baseline(name)
    print(f"  baseline {name}: {mod.__file__ if mod else baseline_note(name)}")
PY
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

quick=--quick
[ "${1:-}" = "--full" ] && quick=
declare -A limit=([pss2x2]=150 [pss2x2-mixed]=100 [pss2x2-engines]=130 [mmc]=45 [sde]=60 [network]=40 [fastslow]=30)
declare -A pss_parts=([pss2x2]="families" [pss2x2-mixed]="mixed" [pss2x2-engines]="effective,engines")
for kv in ${JAXQ_GPU_LIMITS:-}; do limit[${kv%%=*}]=${kv#*=}; done
parts=$(mktemp -d)
start=$(date +%s)
for s in pss2x2 pss2x2-mixed pss2x2-engines mmc sde network fastslow; do
  t0=$(date +%s)
  if JAXQ_BENCH_PSS2X2_PARTS="${pss_parts[$s]:-}" timeout "${limit[$s]}" \
      python3 -m jaxq bench $quick --only "${s%%-*}" --out "$parts/$s.json" > /dev/null; then
    echo "bench: $s done in $(( $(date +%s) - t0 )) s"
  else  # --out rewrote the file after every row: the rows measured before the stop are kept
    echo "bench: $s failed or passed its ${limit[$s]} s limit (exit $?); only the rows measured by then are kept" >&2
  fi
  python3 - "$dest" "$parts" <<'PY'
import json, pathlib, sys
from jaxq.bench import SECTIONS, combine
from jaxq.cli.bench import render
dest = pathlib.Path(sys.argv[1])
order = ["pss2x2", "pss2x2-mixed", "pss2x2-engines"] + list(SECTIONS[1:])
parts = sorted(pathlib.Path(sys.argv[2]).glob("*.json"), key=lambda p: order.index(p.stem))
if parts:
    loaded = [json.loads(p.read_text()) for p in parts]
    acc = None  # the "pss2x2*" processes' rows, joined in order into one section (the last one holds them all)
    for a, b in zip(parts, loaded):
        if a.stem.split("-")[0] == "pss2x2" and "pss2x2" in b["sections"]:
            b["sections"] = {"pss2x2": b["sections"]["pss2x2"]}
            sec = b["sections"]["pss2x2"]
            if acc is not None:
                sec["rows"] = acc["rows"] + sec["rows"]
                sec["wall_s"] += acc["wall_s"]
            acc = sec
    result = combine(loaded)
    (dest / "gpu.json.tmp").write_text(json.dumps(result, indent=1))
    (dest / "gpu.json.tmp").replace(dest / "gpu.json")
    (dest / "gpu.txt").write_text(render(result) + "\n")
PY
done
[ -f "$dest/gpu.txt" ] && cat "$dest/gpu.txt"
echo "bench: $(( $(date +%s) - start )) s in all"
