"""Where should a small run go on an accelerator machine? The 2x2 event and uniformised engines at a few replication
counts, on the default placement (``devices=None``: the host CPU below ``jaxq.mc.replications.HOST_BELOW``
replications), forced onto the accelerator and forced onto the host CPU. Events per second (compilation excluded,
the second of two runs); the estimates agree within rounding across placements.

Usage (on the GPU machine, repository root on PYTHONPATH):  python3 benchmarks/gpu_small_batches.py [OUT.json]
"""

from __future__ import annotations

import json
import sys

import jax

import jaxq
from jaxq.sim import pss2x2
from jaxq.mc.replications import HOST_BELOW, Batching, small_run_devices


def main(out: str | None = None) -> list[dict]:
    system = jaxq.load("pss_P")
    places = {"auto": None, "accelerator": [jax.devices()[0]], "host": jax.devices("cpu")[:1]}
    rows = []
    with jax.enable_x64(True):
        for engine in ("event", "uniformized"):
            for reps in (100, 1000, 4096):
                for name, devices in places.items():
                    for _ in range(2):
                        r = pss2x2.simulate(system, 100, reps, seed=1, truncation=pss2x2.Truncation(engine=engine),
                                            outputs=pss2x2.Outputs(cv=False, diagnostics=False),
                                            batching=Batching(devices=small_run_devices(reps) if name == "auto"
                                                              else devices))  # "auto": what jaxq.simulate picks
                    rows.append({"engine": engine, "reps": reps, "placement": name, "events_per_s": r.events_per_s,
                                 "J_hat": r.value, "stderr": r.stderr})
                    print(f"{engine:12s} {reps:6d} {name:12s} {r.events_per_s:10.3g} ev/s  J {r.value:.5f} "
                          f"+- {r.stderr:.5f}", flush=True)
    print(f"backend {jax.default_backend()}, HOST_BELOW {HOST_BELOW}")
    if out:
        with open(out, "w") as f:
            json.dump({"backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()],
                       "host_below": HOST_BELOW, "rows": rows}, f, indent=1)
    return rows


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
