#!/usr/bin/env bash
# Starts (or resumes) training in the background at the lowest CPU priority, with OpenBLAS
# (OpenMP) in place of the reference BLAS Debian's torch links, on one thread (see train.py --threads). Arguments go to
# train.py (the same ones on every resume: the data of a step depends on --seed and --steps).
# Output: RUN/train.out (progress) and RUN/log.jsonl; RUN defaults to /work/canary-data/run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run=/work/canary-data/run
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do [ "${args[$i]}" = "--run" ] && run="${args[$((i + 1))]}"; done
blas=/usr/lib/x86_64-linux-gnu/openblas-openmp
[ -d "$blas" ] || { echo "train.sh: $blas is missing: run models/canary/setup.sh" >&2; exit 1; }
mkdir -p "$run"
export LD_LIBRARY_PATH="$blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMP_NUM_THREADS=1
nohup nice -n 19 /usr/bin/python3 "$here/train.py" "$@" >> "$run/train.out" 2>&1 &
echo "train.sh: training in the background (pid $!); progress in $run/train.out"
