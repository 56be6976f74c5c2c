#!/bin/bash
# Run a jaxq experiment on several nodes with SLURM: one process per node (each uses all of its GPUs),
# chunks shared round-robin between processes (process p runs the chunks c with c % P == p), all writing
# to one shared output directory; process 0 aggregates after a barrier and writes tables and figures.
#
#   sbatch experiments/slurm_example.sh experiments/convergence_Jn.toml /shared/results/convergence_Jn
#
# Resubmitting the same command after a time-out or a preemption continues the run (--resume keeps the
# finished chunk files), and the final numbers are identical to an uninterrupted run.
#SBATCH --job-name=jaxq-run
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH --cpus-per-task=16
#SBATCH --time=04:00:00
#SBATCH --requeue
#SBATCH --output=jaxq-run-%j.out

set -euo pipefail
EXPERIMENT=${1:?usage: sbatch slurm_example.sh EXPERIMENT.toml OUT_DIR}
OUT=${2:?usage: sbatch slurm_example.sh EXPERIMENT.toml OUT_DIR}   # must be on a shared file system

# Optional: a shared compile cache, so that every process does not recompile the same programs.
export JAXQ_CACHE_DIR=${JAXQ_CACHE_DIR:-$OUT/.xla-cache}

# jax.distributed.initialize() (called by --distributed) reads the SLURM environment: coordinator
# address (the step's first node, port SLURM_JOB_ID % 4096 + 61440), number of processes and process id.
# One srun task per node.
#
# Tested: tests/studies/test_distributed.py starts two `jaxq run --distributed` processes on one machine
# with the environment of two srun tasks (SLURM_JOB_ID, SLURM_NTASKS=2, SLURM_PROCID, SLURM_LOCALID,
# SLURM_STEP_NODELIST=localhost, ...) and checks that the coordinator is found, the chunks are split
# between the processes, and the tables equal a single-process run's byte for byte (CPU, gloo collectives).
# Not tested there: several hosts, GPUs, a shared network file system, srun itself.
srun --kill-on-bad-exit=1 jaxq run "$EXPERIMENT" --out "$OUT" --resume --distributed --no-progress
