"""Clusters: ``jaxq run --distributed`` started as SLURM starts it.

Two processes on this machine see the variables an ``srun`` task sees (SLURM_JOB_ID, SLURM_NTASKS,
SLURM_PROCID, SLURM_LOCALID, SLURM_STEP_NODELIST, ...); ``jax.distributed.initialize()`` detects SLURM from
them, puts the coordinator on the first node of the step at port ``SLURM_JOB_ID % 4096 + 61440`` (gloo
collectives on CPU), and the runner splits the chunks round-robin between the two processes. What this covers
of experiments/slurm_example.sh: the detection, the coordinator, the barriers, the shared output folder, and
that the tables equal a single-process run's byte for byte. Not covered: several hosts, GPUs, ``srun`` itself.
"""

import json
import os
import random
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from jaxq.cli import main

TINY = """
[experiment]
name = "slurm_tiny"
study = "convergence"
systems = ["pss_PP"]
replications = 8
chunk = 2
seeds = [3]
[grid]
n = [16]
horizon = 2.0
times = [1.0]
"""
SLURM_PORT0 = 65536 - 4096  # jax's SLURM detection: coordinator port = SLURM_JOB_ID % 4096 + SLURM_PORT0
TIMEOUT_S = 240  # both processes together; the coordinator itself would wait 300 s for a missing task


def _free_slurm_port() -> int:
    """A port of SLURM's range that nothing listens on now (on every address, as the coordinator binds)."""
    for port in random.Random(os.getpid()).sample(range(SLURM_PORT0, 65536), 200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("", port))
            except OSError:
                continue
            return port
    pytest.fail("no free port in SLURM's coordinator range")


def _srun_env(job_id: int, procid: int) -> dict:
    """The environment of task ``procid`` of a 2-task step on one node, no other cluster manager's variables."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "OMPI_", "PMI_", "PMIX_", "JAX_COORDINATOR", "TPU_", "KUBERNETES_"))}
    env.update({
        "SLURM_JOB_ID": str(job_id), "SLURM_JOBID": str(job_id), "SLURM_STEP_ID": "0",
        "SLURM_NTASKS": "2", "SLURM_NPROCS": "2", "SLURM_PROCID": str(procid), "SLURM_LOCALID": str(procid),
        "SLURM_NODEID": "0", "SLURM_NNODES": "1", "SLURM_JOB_NUM_NODES": "1", "SLURM_STEP_NUM_NODES": "1",
        "SLURM_STEP_NUM_TASKS": "2", "SLURM_NODELIST": "localhost", "SLURM_JOB_NODELIST": "localhost",
        "SLURM_STEP_NODELIST": "localhost", "SLURM_TASKS_PER_NODE": "2",
    })
    return env


# about 25 s of CPU (two fresh processes compile the study); the round-robin split itself is checked in the fast
# set in one process (tests/studies/test_runner.py::test_chunk_size_and_process_split_do_not_change_the_numbers)
@pytest.mark.slow
def test_two_slurm_tasks_write_the_single_process_tables(tmp_path, capsys):
    exp = tmp_path / "tiny.toml"
    exp.write_text(TINY)
    single, shared = tmp_path / "single", tmp_path / "shared"
    assert main(["run", str(exp), "--out", str(single), "--json", "--no-progress"]) == 0
    expected = json.loads(capsys.readouterr().out)

    job_id = 7 * 4096 + _free_slurm_port() - SLURM_PORT0
    cmd = [sys.executable, "-m", "jaxq", "run", str(exp), "--out", str(shared), "--distributed", "--json",
           "--no-progress"]
    procs = [subprocess.Popen(cmd, env=_srun_env(job_id, p), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for p in (0, 1)]
    outs = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        for p in procs:
            outs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic())))
    except subprocess.TimeoutExpired:
        pytest.fail(f"the two SLURM tasks did not finish in {TIMEOUT_S} s")
    finally:
        for p in procs:  # never leave a task waiting for its peer
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    got, (quiet, _) = json.loads(outs[0][0]), outs[1]
    assert quiet == ""  # process 0 reports, process 1 only computes

    assert got["tables"] == expected["tables"]
    assert [got[k] for k in ("replications", "events", "chunks")] == [expected[k] for k in
                                                                     ("replications", "events", "chunks")]
    for f in ("records.csv", "summary.csv", "fits.csv"):
        assert (shared / f).read_bytes() == (single / f).read_bytes(), f
    run_json = json.loads((shared / "run.json").read_text())
    assert run_json["processes"] == 2
    writers = [json.loads(np.load(f)["__meta__"].tobytes())["process"] for f in (shared / "chunks").rglob("*.npz")]
    assert expected["chunks"] == 4 and sorted(writers) == [0, 0, 1, 1]  # round-robin: chunk c on process c % 2
    assert got["chunks_computed"] == 2  # process 0 counts its own


@pytest.mark.parametrize("procid,says", [(0, "process 1 of 2 never joined within 3 s"),
                                         (1, "did not answer within 3 s")])
@pytest.mark.slow  # a second check: -m slow
def test_a_task_whose_peer_never_comes_ends_in_its_timeout_with_one_line(tmp_path, procid, says):
    """One task of a 2-task step alone: it ends after --distributed-timeout with one line naming what is missing
    and exit code 2 (JAX's own wait aborted the process after 5 minutes with a C++ stack trace)."""
    exp = tmp_path / "tiny.toml"
    exp.write_text(TINY)
    job_id = 7 * 4096 + _free_slurm_port() - SLURM_PORT0
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "jaxq", "run", str(exp), "--out", str(tmp_path / "o"), "--distributed",
                        "--distributed-timeout", "3"], env=_srun_env(job_id, procid), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stderr[-2000:])
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("jaxq: error: --distributed: ") and says in r.stderr, r.stderr
    assert time.monotonic() - t0 < 60
    assert not (tmp_path / "o").exists()  # nothing written


def test_the_timeout_belongs_to_distributed(tmp_path):
    exp = tmp_path / "tiny.toml"
    exp.write_text(TINY)
    assert main(["run", str(exp), "--out", str(tmp_path / "o"), "--distributed-timeout", "5"]) == 2
