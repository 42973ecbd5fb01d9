#!/bin/sh
# Slurm TaskProlog: puts the NCCL settings rocemend wrote for this job (the `nccl` actuator's
# nccl.qps, docs/actuators.md) into each task's environment, so the job's next communicators
# use them. Slurm exports every line a TaskProlog prints as `export NAME=value`.
#
#   slurm.conf:  TaskProlog=/usr/local/libexec/rocemend/nccl-taskprolog.sh
#
# ROCEMEND_NCCL_DIR is the actuator's env_dir (default /etc/rocemend/nccl-jobs). The job's file is
# <dir>/<job name>.env, else <dir>/<job id>.env: name the files as the jobs' `job` label does.
# Only `export NCCL_…=…` lines of plain values are passed on.
dir="${ROCEMEND_NCCL_DIR:-/etc/rocemend/nccl-jobs}"
for job in "$SLURM_JOB_NAME" "$SLURM_JOB_ID"; do
    case "$job" in
        '' | .* | *[!A-Za-z0-9._-]*) continue ;;
    esac
    file="$dir/$job.env"
    if [ -r "$file" ]; then
        grep -E '^export NCCL_[A-Z0-9_]+=[A-Za-z0-9^,._-]*$' "$file"
        exit 0
    fi
done
exit 0
