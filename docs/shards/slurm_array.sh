#!/bin/bash
# One experiment as a Slurm job array: task K of the array runs shard K of N (docs/shards.md,
# recipe 2). Submit from the netloop checkout (on a file system every node sees):
#
#   sbatch --array=1-4 docs/shards/slurm_array.sh experiments/sanap_grid_inter_ros2.yaml
#
# then, when every task has ended, merge the shards into one campaign and report:
#
#   bin/netloop report results/shards-$SLURM_ARRAY_JOB_ID/*-shard*of4-*
#
# N is the array's size, K the task's place in it: netloop reads SLURM_ARRAY_TASK_ID,
# SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP and SLURM_ARRAY_TASK_COUNT (--shard auto), so
# --array=1-4 and --array=0-3 both make shards 1/4 .. 4/4. Other links than loopback need root on
# the node (namespaces, tc, taps): run netloop through sudo there (NETLOOP='sudo bin/netloop').
# NETLOOP_RUN_ARGS passes more options of 'netloop run' (e.g. --quick, --transports tcp,udp).
#SBATCH --job-name=netloop-shard
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=2
#SBATCH --exclusive
#SBATCH --output=netloop-shard-%A_%a.log
set -euo pipefail
experiment=${1:?usage: sbatch --array=1-N $0 EXPERIMENT}
: "${SLURM_ARRAY_TASK_ID:?not a task of a Slurm job array (sbatch --array=1-N)}"
cd "${SLURM_SUBMIT_DIR:-.}"
out=results/shards-${SLURM_ARRAY_JOB_ID:-local}
echo "netloop shard: task $SLURM_ARRAY_TASK_ID of array ${SLURM_ARRAY_JOB_ID:-?} on $(hostname)"
# shellcheck disable=SC2086  # NETLOOP and NETLOOP_RUN_ARGS are word lists
exec ${NETLOOP:-bin/netloop} run --shard auto --out "$out" ${NETLOOP_RUN_ARGS:-} "$experiment"
