#!/usr/bin/env bash
# Trains canary variants one after another in one background process (one torch thread at the
# lowest CPU priority, OpenBLAS as train.sh loads it): each resumes from RUNS/<variant>/checkpoint.pt
# when it exists and trains to --steps, then the next starts. `kill -- -PID` (the process group
# this script prints) or `kill` of the running train.py stops it: train.py finishes its step,
# saves its checkpoint and exits, and the queue ends; the same command again resumes there.
#   train_variants.sh [--runs DIR] VARIANT... [-- TRAIN.PY ARGUMENTS]
# RUNS defaults to models/canary/runs (RUNS/<variant>/checkpoint.pt, log.jsonl, train.out: the
# checkpoint and log are small enough to commit). Arguments after -- go to every train.py (the
# same ones on every resume), e.g. -- --steps 6000 --eval-every 400.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ "${1:-}" != --foreground ]; then
  # Its own session and process group, so that it outlives the shell that started it and
  # `kill -- -PID` reaches the queue and its train.py together.
  setsid nohup "${BASH_SOURCE[0]}" --foreground "$@" < /dev/null > /dev/null 2>&1 &
  echo "train_variants.sh: training in the background (pid and process group $!); progress in" \
    "models/canary/runs/<variant>/train.out (or --runs DIR), the queue's steps in runs/queue.log"
  exit 0
fi
shift
runs="$here/runs"
variants=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --) shift; break ;;
    *) variants+=("$1"); shift ;;
  esac
done
[ ${#variants[@]} -gt 0 ] || { echo "usage: train_variants.sh [--runs DIR] VARIANT... [-- ARGS]" >&2; exit 2; }
blas=/usr/lib/x86_64-linux-gnu/openblas-openmp
[ -d "$blas" ] || { echo "train_variants.sh: $blas is missing: run models/canary/setup.sh" >&2; exit 1; }
export LD_LIBRARY_PATH="$blas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMP_NUM_THREADS=1
mkdir -p "$runs"
queue() {
  for v in "${variants[@]}"; do
    mkdir -p "$runs/$v"
    echo "train_variants.sh: $(date -u +%FT%TZ) $v starts (pid $$)" >> "$runs/queue.log"
    if ! nice -n 19 /usr/bin/python3 "$here/train.py" --variant "$v" --run "$runs/$v" "$@" \
        >> "$runs/$v/train.out" 2>&1; then
      echo "train_variants.sh: $(date -u +%FT%TZ) $v stopped; the queue ends" >> "$runs/queue.log"
      return
    fi
    echo "train_variants.sh: $(date -u +%FT%TZ) $v done" >> "$runs/queue.log"
  done
}
queue "$@"
