#!/bin/bash
# A capplan sweep as a Slurm job array: each array task runs every N-th point
# (N = the array size) and writes per-point files to a shared directory; a
# dependent job merges them. Submit with:
#   sbatch --array=0-15 examples/cluster/sweep_slurm.sh          # 16 shards
#   sbatch --dependency=afterok:<jobid> --wrap \
#     "capplan sweep --merge $SWEEP_OUT"                          # merge step
# capplan reads SLURM_ARRAY_TASK_ID (minus SLURM_ARRAY_TASK_MIN) and
# SLURM_ARRAY_TASK_COUNT itself, so no --shard-* flags are needed. Failed
# tasks can simply be resubmitted: finished points are skipped.
#SBATCH --job-name=capplan-sweep
#SBATCH --cpus-per-task=4
#SBATCH --time=01:00:00
#SBATCH --output=capplan-sweep-%A_%a.log
set -euo pipefail

SCENARIO=${SCENARIO:-scenarios/kimi-k2.6-kv-fp8.json}
SWEEP_OUT=${SWEEP_OUT:-$HOME/capplan-sweeps/kimi-kv}   # must be on a shared filesystem

capplan sweep "$SCENARIO" \
  --grid deployment.kv_cache=bf16,fp8 \
  --grid workload.concurrency=1,2,4,8,16,32,64 \
  --jobs "${SLURM_CPUS_PER_TASK:-1}" \
  --out "$SWEEP_OUT"
