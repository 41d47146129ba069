#!/bin/bash
# rightsize extract as a Slurm array: 1 task(s), one contiguous shard range each;
# a killed or requeued task redoes only its missing shards (docs/extract_slurm.md).
#SBATCH --job-name=rightsize-extract
#SBATCH --array=0
#SBATCH --cpus-per-task=2
#SBATCH --mem=8192M
#SBATCH --time=0-00:14:00
#SBATCH --requeue
#SBATCH --output=data/ecg_tokens/slurm/task_%a.log
#SBATCH --open-mode=append
set -euo pipefail
export OMP_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"
echo "rightsize: task ${SLURM_ARRAY_TASK_ID} of job ${SLURM_ARRAY_JOB_ID:-?} on $(hostname), restart ${SLURM_RESTART_COUNT:-0}"
exec rightsize extract --params params.yaml --out data/ecg_tokens --executor local --task "${SLURM_ARRAY_TASK_ID}/1"
